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

// Appends k to a list of links next and prev whose head and tail is h.
MT.append = function (next, prev, h, k) {
  const last = prev[h];
  next[last] = k;
  prev[k] = last;
  next[k] = h;
  prev[h] = k;
};

// The rows [copyFrom[x], H) of columns x in (x0, x1) taken from column
// x - 1, row by row from `top`: runs between the columns drawn (a list of
// them by x, left as the rows pass their copyFrom). pix: W x H; d: the
// data (for scratch arrays). (Functions of their own: compiled apart from
// the columns' loop; and a row's loops in copyRow, not nested in the rows'
// loop, whose compiled code V8 would leave at each row's end.)
MT.copyRuns = function (d, pix, W, H, top, copyFrom, x0, x1) {
  const order = d.scratch("pOrder", Int32Array, W), byRow = d.scratch("pByRow", Int32Array, H - top + 2).fill(0, 0, H - top + 2);
  for (let x = x0; x < x1; x++) byRow[copyFrom[x] - top + 1]++;
  for (let r = 0; r <= H - top; r++) byRow[r + 1] += byRow[r];
  const at = d.scratch("pAt", Int32Array, H - top + 1);
  at.set(byRow.subarray(0, H - top + 1));
  for (let x = x0; x < x1; x++) order[at[copyFrom[x] - top]++] = x;
  const right = d.scratch("pRight", Int32Array, W + 1), left = d.scratch("pLeft", Int32Array, W + 1);
  for (let x = x0; x < x1; x++) { right[x] = x + 1; left[x + 1] = x; }
  for (let r = top, o = 0; r < H; r++) o = MT.copyRow(pix, r, W, right, left, order, o, x1 - x0, copyFrom, x0, x1);
};

// Row r of copyRuns: leaves the list the columns that copy from row r on
// (order[o..] by copyFrom), then fills the runs. Returns the new o.
MT.copyRow = function (pix, r, W, right, left, order, o, no, copyFrom, x0, x1) {
  for (; o < no && copyFrom[order[o]] <= r; o++) {
    const x = order[o];
    right[left[x]] = right[x];
    left[right[x]] = left[x];
  }
  const row = r * W;
  for (let x = x0; x < x1;) {
    const to = right[x];
    if (to - x > 16) pix.fill(pix[row + x], row + x + 1, row + to); // (a call: as dear as a few stores)
    else for (let p = row + x + 1, v = pix[row + x]; p < row + to; p++) pix[p] = v;
    x = to;
  }
  return o;
};

MT.Frame = class {
  // data: MT.Data; a, b: the window (ns since t0); W columns.
  constructor(data, a, b, W) {
    this.data = data;
    // (NaN first: fields of numbers, not of small integers, whatever the
    // window; a field that changes kind gives frames a second shape, and
    // code compiled for one deoptimized at each frame of the other)
    this.a = this.b = this.pxw = this.minDur = NaN;
    this.a = a;
    this.b = b;
    this.W = W;
    this.pxw = (b - a) / W;
    // (the arrays are the data's scratch: one frame is kept at a time)
    this.colStart = data.scratch("colStart", Float64Array, W + 1).subarray(0, W + 1);
    for (let x = 0; x <= W; x++) this.colStart[x] = Math.ceil(a + x * this.pxw);
    this.moment = data.scratch("moment", Float64Array, W).subarray(0, W);
    this.total = data.scratch("total", Float64Array, W).subarray(0, W);
    this.stacked = data.scratch("stacked", Float64Array, W).subarray(0, W); // by paint: equals total
    // per column, the groups [site, count, bytes, ...] at groups[gFrom[x]
    // .. gTo[x])
    this.gFrom = data.scratch("gFrom", Int32Array, W).fill(0, 0, W);
    this.gTo = data.scratch("gTo", Int32Array, W).fill(0, 0, W);
    // every field set here, in this order, so that frames share one shape
    // (the optimized code of their methods then serves them all)
    this.groups = null;
    this.partial = false;
    this.ind = this.indStart = this.indEnd = null;
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
    this.groups = lv.groups;
    for (let x = 0; x < W; x++) {
      const c0 = this.colStart[x], c1 = Math.max(this.colStart[x + 1], c0 + 1);
      let j0 = Math.floor(c0 / lv.w), j1 = Math.floor((c1 - 1) / lv.w);
      j0 = Math.max(0, Math.min(lv.n - 1, j0));
      j1 = Math.max(j0, Math.min(lv.n - 1, j1));
      let best = j0;
      for (let j = j0 + 1; j <= j1; j++) if (lv.total[j] > lv.total[best]) best = j;
      this.moment[x] = lv.moment[best];
      this.total[x] = lv.total[best];
      this.gFrom[x] = 3 * lv.first[best];
      this.gTo[x] = 3 * lv.first[best + 1];
    }
  }

  // Moments by a sweep of the window's starts and ends, column by column.
  computeRaw() {
    const d = this.data, W = this.W, cs = this.colStart;
    const a = cs[0], b = cs[W];
    this.minDur = Math.max(1, this.pxw);
    // live at a, and the ends inside the window bucketed by column
    const m = d.collect(a, b, 0, Infinity), found = d.found, fs = d.foundStart, fe = d.foundEnd;
    const endCol = d.scratch("endCol", Int32Array, m), endT = d.scratch("endT", Float64Array, m);
    const endB = d.scratch("endB", Float64Array, m);
    let live = 0, nEnd = 0;
    for (let k = 0; k < m; k++) {
      const s = fs[k], e = fe[k], bytes = d.bytes[found[k]];
      if (s <= a) live += bytes;
      if (e > a && e < b && s <= e) {
        let x = Math.min(W - 1, Math.max(0, this.columnOf(e)));
        while (x + 1 < W && cs[x + 1] <= e) x++;
        while (x > 0 && cs[x] > e) x--;
        endCol[nEnd] = x;
        endT[nEnd] = e;
        endB[nEnd++] = bytes;
      }
    }
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
    }
    this.rawGroups();
  }

  columnOf(t) {
    return Math.floor((t - this.a) / this.pxw);
  }

  // The cell of time t: its column by arithmetic, clamped to [0, W). (Both
  // steps keep order, so a moment in a cell before t's is before t, and
  // one in a cell after it is after t.)
  cellOf(t) {
    return Math.min(this.W - 1, Math.max(0, (t - this.a) / this.pxw)) | 0;
  }

  // An index of the moments (once they are set): {distinct: the distinct
  // moments in order (then Infinity), at: at[k] the first column at
  // distinct[k] (W past the last), cellFirst: [c] the distinct moments in
  // cells before c, span: a power of two above the most in one cell (a
  // few: a column's moment lies in its bins, which reach at most two
  // columns past it)}. (Scratch arrays, not fields: a Frame keeps one
  // shape.)
  indexMoments() {
    const d = this.data, W = this.W, mo = this.moment;
    const first = d.scratch("cellFirst", Int32Array, W + 1).fill(0, 0, W + 1);
    const at = d.scratch("distinctFirst", Int32Array, W + 1), dm = d.scratch("distinctFound", Float64Array, W);
    let nd = 0, most = 0;
    for (let x = 0; x < W; x++) {
      if (x > 0 && mo[x] === mo[x - 1]) continue;
      dm[nd] = mo[x];
      at[nd++] = x;
      first[this.cellOf(mo[x]) + 1]++;
    }
    at[nd] = W;
    for (let c = 0; c < W; c++) {
      most = Math.max(most, first[c + 1]);
      first[c + 1] += first[c];
    }
    let span = 1;
    while (span <= most) span *= 2;
    const distinct = d.scratch("distinct", Float64Array, nd + span);
    distinct.set(dm.subarray(0, nd));
    distinct.fill(Infinity, nd, nd + span);
    return { distinct: distinct, at: at, cellFirst: first, span: span };
  }

  // The first column whose moment is >= t (W if none): from the column of
  // t, a step or two away (moments are in order, each near its column).
  firstColumnAtOrAfter(t) {
    const mo = this.moment, W = this.W;
    let x = Math.floor((t - this.a) / this.pxw);
    x = x < 0 ? 0 : x > W ? W : x;
    while (x > 0 && mo[x - 1] >= t) x--;
    while (x < W && mo[x] < t) x++;
    return x;
  }

  // Raw windows: allocations shorter than a column, per column and site.
  // (Contributions gathered, then placed by column with a counting sort.)
  rawGroups() {
    const d = this.data, W = this.W;
    const nf = d.collect(this.moment[0], this.moment[W - 1] + 1, 0, this.minDur), found = d.found, fs = d.foundStart;
    const fe = d.foundEnd;
    let col = d.scratch("col", Int32Array, nf), who = d.scratch("who", Int32Array, nf), n = 0;
    for (let k = 0; k < nf; k++) {
      for (let x = this.firstColumnAtOrAfter(fs[k]); x < W && this.moment[x] < fe[k]; x++) {
        if (n === col.length) {
          col = d.scratch("col", Int32Array, 2 * n, n);
          who = d.scratch("who", Int32Array, 2 * n, n);
        }
        col[n] = x;
        who[n++] = found[k];
      }
    }
    const first = d.scratch("first", Int32Array, W + 1).fill(0, 0, W + 1), placed = d.scratch("placed", Int32Array, n);
    for (let k = 0; k < n; k++) first[col[k] + 1]++;
    for (let x = 0; x < W; x++) first[x + 1] += first[x];
    const fill = d.scratch("fill", Int32Array, W);
    fill.set(first.subarray(0, W));
    for (let k = 0; k < n; k++) placed[fill[col[k]]++] = who[k];
    const out = d.scratch("groups", Float64Array, 3 * n);
    let m = 0;
    for (let x = 0; x < W; x++) {
      const a = first[x], b = first[x + 1];
      this.gFrom[x] = m;
      let one = true;
      for (let k = a + 1; k < b && one; k++) one = d.site[placed[k]] === d.site[placed[a]];
      if (!one) MT.sortBy(placed, a, b, d.site);
      for (let k = a; k < b;) {
        const site = d.site[placed[k]];
        let count = 0, sum = 0;
        for (; k < b && d.site[placed[k]] === site; k++) { count++; sum += d.bytes[placed[k]]; }
        out[m++] = site;
        out[m++] = count;
        out[m++] = sum;
      }
      this.gTo[x] = m;
    }
    this.groups = out;
  }

  // Allocations drawn as themselves: at least minDur long and live at some
  // column's moment; in allocation order, each with its run of columns
  // (from the starts and ends found with them, then sorted along). The
  // columns of a start or end t: as firstColumnAtOrAfter(t), from t's cell
  // (the distinct moments in cells before it, then a search of a fixed
  // number of steps for a frame among the few of its own) without a branch
  // that depends on t: firstColumnAtOrAfter's walk, for the tens of
  // thousands of candidates of the heaviest frames, took a branch the
  // processor could not foresee on each (half their compute time). Inline
  // here: V8 did not inline it as a call.
  computeIndividuals() {
    const d = this.data, W = this.W, mo = this.moment;
    const ix = this.indexMoments();
    const n = d.collect(mo[0], mo[W - 1] + 1, this.minDur, Infinity), found = d.found, fs = d.foundStart, fe = d.foundEnd;
    const ids = d.scratch("ids", Int32Array, n), runs = d.scratch("runs", Int32Array, n);
    const a = this.a, pxw = this.pxw, last = W - 1, first = ix.cellFirst, D = ix.distinct, at = ix.at;
    const half = ix.span >> 1;
    let m = 0;
    for (let k = 0; k < n; k++) {
      const s = fs[k], e = fe[k];
      // (cellOf(s), cellOf(e), inline; Math.min and max, not branches that
      // a frame may take first, when it is compiled without them)
      let j0 = first[Math.min(last, Math.max(0, (s - a) / pxw)) | 0], j1 = first[Math.min(last, Math.max(0, (e - a) / pxw)) | 0];
      for (let h = half; h > 0; h >>= 1) {
        j0 += D[j0 + h - 1] < s ? h : 0;
        j1 += D[j1 + h - 1] < e ? h : 0;
      }
      const x0 = at[j0], x1 = at[j1];
      ids[m] = found[k];
      runs[m] = x0 * 65536 + x1; // columns [x0, x1) (a canvas is under 32768 pixels wide)
      m += x1 > x0 ? 1 : 0; // (kept where live at a column's moment; no branch: half are not)
    }
    MT.radixSort(ids, runs, m, d.scratch("sorting", Int32Array, m), d.scratch("sortingRuns", Int32Array, m));
    const xs = d.scratch("xs", Int32Array, m), xe = d.scratch("xe", Int32Array, m);
    for (let k = 0; k < m; k++) {
      xs[k] = runs[k] >>> 16;
      xe[k] = runs[k] & 65535;
    }
    this.ind = ids.subarray(0, m);
    this.indStart = xs.subarray(0, m);
    this.indEnd = xe.subarray(0, m);
  }

  // Draws the stack of columns [x0, x1) (all by default) into pixels
  // (Uint32Array of W x H, ImageData order) and this.stacked; scale: pixels
  // per byte. pinSite: call site to highlight (-1 none). Only the rows from
  // the highest column's top down are drawn (the rows above are left as
  // they were): returns the first of them.
  // Column by column with the allocations live there in a list in
  // allocation order: from one column to the next, those before the first
  // that ends or starts there stack as before, so their rows are the
  // previous column's (copied afterwards, row by row, as runs); only the
  // rest of the list is walked.
  paint(pix, H, scale, pinSite, x0 = 0, x1 = this.W) {
    const d = this.data, W = this.W, Hr = H + 0.5, bytes = d.bytes, site = d.site;
    const ind = this.ind, xs = this.indStart, xe = this.indEnd, n = ind.length, pinned = pinSite >= 0;
    const cum = this.stacked;
    let most = 0;
    for (let x = 0; x < W; x++) if (this.total[x] > most) most = this.total[x];
    const top = Math.max(0, Math.min(H, (Hr - most * scale) | 0)), white = MT.rgb(255, 255, 255);
    const bands = pinned ? MT.bands.map(MT.fade) : MT.bands;
    // the list: links by position in ind, n the head and tail; base: the
    // bytes below each where last walked
    const next = d.scratch("pNext", Int32Array, n + 1), prev = d.scratch("pPrev", Int32Array, n + 1);
    const base = d.scratch("pBase", Float64Array, n);
    next[n] = prev[n] = n;
    // the positions whose runs end at each column, in order
    const endFirst = d.scratch("pEndFirst", Int32Array, W + 2).fill(0, 0, W + 2), ends = d.scratch("pEnds", Int32Array, n);
    for (let k = 0; k < n; k++) endFirst[xe[k] + 1]++;
    for (let x = 0; x <= W; x++) endFirst[x + 1] += endFirst[x];
    const fill = d.scratch("pFill", Int32Array, W + 1);
    fill.set(endFirst.subarray(0, W + 1));
    for (let k = 0; k < n; k++) ends[fill[xe[k]]++] = k;
    let added = 0;
    for (; added < n && xs[added] <= x0; added++) if (xe[added] > x0) MT.append(next, prev, n, added);
    // copyFrom[x]: the first row that column x takes from column x - 1
    const copyFrom = d.scratch("pCopyFrom", Int32Array, W);
    for (let x = x0; x < x1; x++) {
      let anchor = n; // the last of the list that stacks as in column x - 1
      if (x > x0) {
        anchor = -1;
        for (let e = endFirst[x]; e < endFirst[x + 1]; e++) {
          const k = ends[e];
          if (anchor < 0) anchor = prev[k];
          next[prev[k]] = next[k];
          prev[next[k]] = prev[k];
        }
        if (anchor < 0) anchor = prev[n];
        for (; added < n && xs[added] === x; added++) MT.append(next, prev, n, added);
      }
      let y0 = anchor === n ? 0 : base[anchor] + bytes[ind[anchor]];
      let rEnd = Math.max(0, Math.min(H, (Hr - y0 * scale) | 0)); // rows [rEnd, H) are drawn
      copyFrom[x] = Math.max(top, rEnd);
      for (let k = next[anchor]; k !== n; k = next[k]) {
        const i = ind[k], y1 = y0 + bytes[i];
        base[k] = y0;
        let r = Math.max(0, (Hr - y1 * scale) | 0);
        if (r < rEnd) {
          const color = pinned && site[i] === pinSite ? MT.pinned : bands[i % 8];
          for (let p = r * W + x; r < rEnd; r++, p += W) pix[p] = color;
          rEnd = Math.max(0, (Hr - y1 * scale) | 0);
        }
        y0 = y1;
      }
      const g = this.groups;
      for (let j = this.gFrom[x], j1 = this.gTo[x]; j < j1; j += 3) {
        let color = MT.groupColor(g[j]);
        if (pinned) color = g[j] === pinSite ? MT.pinned : MT.fade(color);
        y0 += g[j + 2];
        let r = Math.max(0, (Hr - y0 * scale) | 0);
        const r1 = rEnd;
        rEnd = r;
        for (let p = r * W + x; r < r1; r++, p += W) pix[p] = color;
      }
      cum[x] = y0;
      for (let r = top, p = top * W + x; r < rEnd; r++, p += W) pix[p] = white;
    }
    MT.copyRuns(d, pix, W, H, top, copyFrom, x0, x1);
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
    const g = this.groups;
    for (let k = this.gFrom[x], k1 = this.gTo[x]; k < k1; k += 3) {
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
