// timeline.js — the stacked allocation timeline of a window: one pixel
// column at a time, the allocations live at the column's moment (the first
// moment in it with the most bytes live) stacked in allocation order; those
// shorter than a column (or than the level's bins) merged per call site on
// top. Windows read the pyramid of viewer/html-lod.c where it has bins at
// most a column wide; narrower ones (at most meta.raw_max allocation
// starts) are computed here the same way.
// Until the allocations a window needs have arrived (data.covers), it is
// drawn at the finest level the first buffer holds (`partial`).

// The allocations a frame draws one by one, at most, per pixel column
// (chooseLevel; the others are drawn per call site).
MT.drawnPerColumn = 16;

MT.Frame = class {
  // data: MT.Data; a, b: the window (ns since t0); W columns.
  constructor(data, a, b, W) {
    this.data = data;
    this.a = a;
    this.b = b;
    this.W = W;
    this.pxw = (b - a) / W;
    this.colStart = new Float64Array(W + 1);
    for (let x = 0; x <= W; x++) this.colStart[x] = Math.ceil(a + x * this.pxw);
    this.moment = new Float64Array(W);
    this.total = new Float64Array(W);
    this.groups = []; // per column: [site, count, bytes, ...] or null
    this.level = this.chooseLevel(data.startsIn(a, b), data.covers(a, b));
    if (this.level < 0) this.computeRaw(); else this.computeLevel();
    this.computeIndividuals();
  }

  // The coarsest level with bins at most a column wide; the next coarser
  // one (bins at most two columns wide) where that would draw more than
  // MT.drawnPerColumn allocations a column one by one (those at least a
  // bin long); -1 (raw: every allocation in hand) where no level is that
  // fine and the window holds at most meta.raw_max starts. Until the
  // window's allocations are in hand (covered false), the finest level the
  // page has without them.
  chooseLevel(starts, covered) {
    const d = this.data, lv = d.levels, L = d.inHandW, n = lv.length, pxw = this.pxw;
    const crowded = (w) => d.longCount(this.a, this.b, w) > MT.drawnPerColumn * this.W;
    let l = 0;
    while (l < n && lv[l].w > pxw) l++;
    if (l > 0 && lv[l - 1].w <= 2 * pxw && crowded(l < n ? lv[l].w : pxw)) l--;
    if (l === n) {
      if (covered && (starts <= d.meta.raw_max || !n)) return -1;
      l = n - 1;
    }
    if ((covered || lv[l].w >= L) && d.level(l)) return l;
    if (covered) return -1;
    this.partial = true;
    const finest = l;
    l = 0;
    while (l + 1 <= finest && lv[l + 1].w >= L && d.level(l + 1)) l++;
    return l;
  }

  computeLevel() {
    const lv = this.data.level(this.level), W = this.W;
    this.minDur = lv.w;
    for (let x = 0; x < W; x++) {
      const c0 = this.colStart[x], c1 = Math.max(this.colStart[x + 1], c0 + 1);
      let j0 = Math.floor(c0 / lv.w), j1 = Math.floor((c1 - 1) / lv.w);
      j0 = Math.max(0, Math.min(lv.n - 1, j0));
      j1 = Math.max(j0, Math.min(lv.n - 1, j1));
      let best = j0;
      for (let j = j0 + 1; j <= j1; j++) if (lv.total[j] > lv.total[best]) best = j;
      this.moment[x] = lv.moment[best];
      this.total[x] = lv.total[best];
      const g0 = lv.first[best], g1 = lv.first[best + 1];
      this.groups.push(g1 > g0 ? lv.groups.subarray(3 * g0, 3 * g1) : null);
    }
  }

  // Moments by a sweep of the window's starts and ends, column by column.
  computeRaw() {
    const d = this.data, W = this.W, cs = this.colStart;
    const a = cs[0], b = cs[W];
    this.minDur = Math.max(1, this.pxw);
    // live at a, and the ends inside the window bucketed by column
    let live = 0, nEnd = 0;
    let endCol = d.scratch("endCol", Int32Array, 1024), endT = d.scratch("endT", Float64Array, 1024);
    let endB = d.scratch("endB", Float64Array, 1024);
    d.touching(a, b, 0, Infinity, (i) => {
      if (d.start[i] <= a) live += d.bytes[i];
      const e = d.end[i];
      if (e > a && e < b && d.start[i] <= e) {
        let x = Math.min(W - 1, Math.max(0, this.columnOf(e)));
        while (x + 1 < W && cs[x + 1] <= e) x++;
        while (x > 0 && cs[x] > e) x--;
        if (nEnd === endT.length) {
          endCol = d.scratch("endCol", Int32Array, 2 * nEnd, nEnd);
          endT = d.scratch("endT", Float64Array, 2 * nEnd, nEnd);
          endB = d.scratch("endB", Float64Array, 2 * nEnd, nEnd);
        }
        endCol[nEnd] = x;
        endT[nEnd] = e;
        endB[nEnd++] = d.bytes[i];
      }
    });
    const firstEnd = d.scratch("firstEnd", Int32Array, W + 1).fill(0, 0, W + 1);
    for (let k = 0; k < nEnd; k++) firstEnd[endCol[k] + 1]++;
    for (let x = 0; x < W; x++) firstEnd[x + 1] += firstEnd[x];
    const fill = d.scratch("fill", Int32Array, W), order = d.scratch("order", Int32Array, nEnd);
    fill.set(firstEnd.subarray(0, W));
    for (let k = 0; k < nEnd; k++) order[fill[endCol[k]]++] = k;
    for (let x = 0; x < W; x++) MT.sortBy(order, firstEnd[x], firstEnd[x + 1], endT); // each column's in time order
    // the starts after a, in the chunks in hand (none of [a, b] past n)
    const [k0, k1] = d.complete ? [0, Infinity] : d.chunksOf(a, b + 1), n = Math.min(d.n, k1 * d.chunk);
    let i = MT.lowerBound(d.start, a + 0.5, k0 * d.chunk, n);
    for (let x = 0; x < W; x++) {
      const c0 = cs[x], c1 = Math.max(cs[x + 1], c0 + 1), e1 = firstEnd[x + 1];
      // events at c0 itself belong to the state at c0
      let e = firstEnd[x];
      while (i < n && d.start[i] <= c0) live += d.bytes[i++];
      while (e < e1 && endT[order[e]] <= c0) live -= endB[order[e++]];
      let best = live, bestT = c0;
      for (;;) {
        let t = Infinity;
        if (i < n && d.start[i] < t) t = d.start[i];
        if (e < e1 && endT[order[e]] < t) t = endT[order[e]];
        if (t >= c1) break;
        while (i < n && d.start[i] === t) live += d.bytes[i++];
        while (e < e1 && endT[order[e]] === t) live -= endB[order[e++]];
        if (live > best) { best = live; bestT = t; }
      }
      // ends past c1 that fell in this column by rounding: apply now
      while (e < e1) live -= endB[order[e++]];
      this.moment[x] = bestT;
      this.total[x] = best;
      this.groups.push(null);
    }
    this.rawGroups();
  }

  columnOf(t) {
    return Math.floor((t - this.a) / this.pxw);
  }

  // The first column whose moment is >= t (W if none).
  firstColumnAtOrAfter(t) {
    return MT.lowerBound(this.moment, t, 0, this.W);
  }

  // Raw windows: allocations shorter than a column, per column and site.
  // (Contributions gathered, then placed by column with a counting sort.)
  rawGroups() {
    const d = this.data, W = this.W;
    let col = d.scratch("col", Int32Array, 1024), who = d.scratch("who", Int32Array, 1024), n = 0;
    d.touching(this.moment[0], this.moment[W - 1] + 1, 0, this.minDur, (i) => {
      for (let x = this.firstColumnAtOrAfter(d.start[i]); x < W && this.moment[x] < d.end[i]; x++) {
        if (n === col.length) {
          col = d.scratch("col", Int32Array, 2 * n, n);
          who = d.scratch("who", Int32Array, 2 * n, n);
        }
        col[n] = x;
        who[n++] = i;
      }
    });
    const first = d.scratch("first", Int32Array, W + 1).fill(0, 0, W + 1), placed = d.scratch("placed", Int32Array, n);
    for (let k = 0; k < n; k++) first[col[k] + 1]++;
    for (let x = 0; x < W; x++) first[x + 1] += first[x];
    const fill = d.scratch("fill", Int32Array, W);
    fill.set(first.subarray(0, W));
    for (let k = 0; k < n; k++) placed[fill[col[k]]++] = who[k];
    for (let x = 0; x < W; x++) {
      const a = first[x], b = first[x + 1];
      if (a === b) continue;
      const part = placed.subarray(a, b);
      let one = true;
      for (let k = 1; k < part.length && one; k++) one = d.site[part[k]] === d.site[part[0]];
      if (!one) MT.sortBy(placed, a, b, d.site);
      const out = [];
      for (let k = 0; k < part.length;) {
        const site = d.site[part[k]];
        let count = 0, sum = 0;
        for (; k < part.length && d.site[part[k]] === site; k++) { count++; sum += d.bytes[part[k]]; }
        out.push(site, count, sum);
      }
      this.groups[x] = Float64Array.from(out);
    }
  }

  // Allocations drawn as themselves: at least minDur long and live at some
  // column's moment; in allocation order, each with its run of columns.
  computeIndividuals() {
    const d = this.data, W = this.W, mo = this.moment;
    let ids = d.scratch("ids", Int32Array, 1024), nids = 0;
    d.touching(mo[0], mo[W - 1] + 1, this.minDur, Infinity, (i) => {
      if (nids === ids.length) ids = d.scratch("ids", Int32Array, 2 * nids, nids);
      ids[nids++] = i;
    });
    const idx = MT.radixSort(ids, nids, d.scratch("sorting", Int32Array, nids));
    const xs = d.scratch("xs", Int32Array, nids), xe = d.scratch("xe", Int32Array, nids);
    let m = 0, x0 = 0;
    for (let k = 0; k < nids; k++) {
      // starts come in order: x0 only moves on; x1 is at most the run away
      const i = idx[k], s = d.start[i], e = d.end[i];
      while (x0 < W && mo[x0] < s) x0++;
      let x1 = x0;
      if (e === Infinity) x1 = W;
      else while (x1 < W && mo[x1] < e) x1++;
      if (x1 <= x0) continue;
      idx[m] = i;
      xs[m] = x0;
      xe[m++] = x1; // columns [x0, x1)
    }
    this.ind = idx.subarray(0, m);
    this.indStart = xs.subarray(0, m);
    this.indEnd = xe.subarray(0, m);
  }

  // Draws the stack into pixels (Uint32Array of W x H, ImageData order),
  // scale: pixels per byte. pinSite: call site to highlight (-1 none).
  // Only the rows from the highest column's top down are drawn (the rows
  // above are left as they were): returns the first of them.
  paint(pix, H, scale, pinSite) {
    const d = this.data, W = this.W, cum = new Float64Array(W), Hr = H + 0.5;
    const ind = this.ind, xs = this.indStart, xe = this.indEnd, n = ind.length, pinned = pinSite >= 0;
    let most = 0;
    for (let x = 0; x < W; x++) if (this.total[x] > most) most = this.total[x];
    const top = Math.max(0, Math.min(H, (Hr - most * scale) | 0));
    pix.fill(MT.rgb(255, 255, 255), top * W, H * W);
    const colorOf = (i) => {
      const c = MT.bands[i % 8];
      return pinned ? (d.site[i] === pinSite ? MT.pinned : MT.fade(c)) : c;
    };
    // the first allocations, drawn across every column: one rectangle each
    let k = 0, base = 0;
    for (; k < n && xs[k] === 0 && xe[k] === W; k++) {
      const i = ind[k], y1 = base + d.bytes[i], color = colorOf(i);
      const r0 = Math.max(0, (Hr - y1 * scale) | 0), r1 = Math.min(H, (Hr - base * scale) | 0);
      for (let r = r0; r < r1; r++) pix.fill(color, r * W, r * W + W);
      base = y1;
    }
    cum.fill(base);
    for (; k < n; k++) {
      const i = ind[k], bytes = d.bytes[i], color = colorOf(i), x1 = xe[k];
      for (let x = xs[k]; x < x1; x++) {
        const y0 = cum[x], y1 = y0 + bytes;
        cum[x] = y1;
        let r0 = (Hr - y1 * scale) | 0, r1 = (Hr - y0 * scale) | 0;
        if (r1 <= r0) continue;
        if (r0 < 0) r0 = 0;
        if (r1 > H) r1 = H;
        for (let p = r0 * W + x; r0 < r1; r0++, p += W) pix[p] = color;
      }
    }
    for (let x = 0; x < W; x++) {
      const g = this.groups[x];
      if (!g) continue;
      for (let j = 0; j < g.length; j += 3) {
        let color = MT.groupColor(g[j]);
        if (pinned) color = g[j] === pinSite ? MT.pinned : MT.fade(color);
        const y0 = cum[x], y1 = y0 + g[j + 2];
        cum[x] = y1;
        let r0 = (Hr - y1 * scale) | 0, r1 = (Hr - y0 * scale) | 0;
        if (r0 < 0) r0 = 0;
        if (r1 > H) r1 = H;
        for (let p = r0 * W + x; r0 < r1; r0++, p += W) pix[p] = color;
      }
    }
    this.stacked = cum; // equals this.total per column
    return top;
  }

  // What the stack of column x holds at height `bytes`: {kind: "alloc", i}
  // or {kind: "group", site, count, bytes}, or null.
  hit(x, bytes) {
    if (x < 0 || x >= this.W || bytes < 0) return null;
    const d = this.data;
    let cum = 0;
    for (let k = 0; k < this.ind.length; k++) {
      if (this.indStart[k] > x || this.indEnd[k] <= x) continue;
      const i = this.ind[k];
      cum += d.bytes[i];
      if (bytes < cum) return { kind: "alloc", i: i, below: cum - d.bytes[i] };
    }
    const g = this.groups[x];
    for (let k = 0; g && k < g.length; k += 3) {
      cum += g[k + 2];
      if (bytes < cum) return { kind: "group", site: g[k], count: g[k + 1], bytes: g[k + 2], below: cum - g[k + 2] };
    }
    return null;
  }

  // The height below allocation i in column x, or -1 when it is not there.
  below(x, i) {
    let cum = 0;
    for (let k = 0; k < this.ind.length; k++) {
      if (this.indStart[k] > x || this.indEnd[k] <= x) continue;
      if (this.ind[k] === i) return cum;
      cum += this.data.bytes[this.ind[k]];
    }
    return -1;
  }
};
