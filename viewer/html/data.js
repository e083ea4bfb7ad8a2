// data.js — the page's data: the description (JSON), the first buffer of
// sections written by viewer/html-*.c (integers as byte planes) and the
// parts that follow the scripts in the file (the details, the finer levels
// of the pyramid, the allocations in chunks of meta.chunk), each decoded
// into typed arrays as it arrives; and the questions the views ask of them
// (which allocations touch a window, bytes live at a moment, a step
// series' value at a moment).

// The parts received so far: view-html.c writes `MT.part(NAME, "BASE64")`
// after the scripts, and the browser runs each while the page already
// draws.
MT.partText = {};
MT.partWaiting = {};
MT.part = function (name, text) {
  MT.partText[name] = text;
  const wake = MT.partWaiting[name];
  if (wake) { delete MT.partWaiting[name]; wake(); }
};
// A Promise of the text of part `name`, which is then forgotten.
MT.partArrival = function (name) {
  const take = () => { const t = MT.partText[name]; delete MT.partText[name]; return t; };
  if (name in MT.partText) return Promise.resolve(take());
  return new Promise((resolve) => { MT.partWaiting[name] = () => resolve(take()); });
};

// Base64 text into bytes.
MT.base64 = function (text) {
  if (text === undefined) throw new Error("no data in the page");
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
  const bin = atob(text), out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

// Inflates base64 text of zlib-compressed bytes. Returns a Promise of
// Uint8Array.
MT.inflate = async function (text) {
  const stream = new Blob([MT.base64(text)]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
};

// Byte planes (viewer/html-buf.c) into numbers.
MT.planesF64 = function (p, off, n, width) {
  const v = new Float64Array(n);
  for (let k = width - 1; k >= 0; k--) {
    const base = off + k * n;
    for (let i = 0; i < n; i++) v[i] = v[i] * 256 + p[base + i];
  }
  return v;
};
MT.planesU32 = function (p, off, n, width) {
  const v = new Uint32Array(n);
  for (let k = width - 1; k >= 0; k--) {
    const base = off + k * n;
    for (let i = 0; i < n; i++) v[i] = (v[i] << 8) | p[base + i];
  }
  return v;
};
MT.unzigzagDelta = function (v, zigzag, delta) {
  let acc = 0;
  for (let i = 0; i < v.length; i++) {
    let x = v[i];
    if (zigzag) x = x % 2 ? -(x + 1) / 2 : x / 2;
    if (delta) { acc += x; x = acc; }
    v[i] = x;
  }
};

MT.Data = class {
  constructor(meta, buf) {
    this.meta = meta;
    this.buf = buf;
    this.sections = meta.sections;
    this.span = meta.span;
    const n = this.n = meta.allocations || 0;
    this.start = new Float64Array(n);
    this.end = new Float64Array(n);
    this.bytes = new Float64Array(n);
    this.size = new Uint32Array(n);
    this.site = new Uint32Array(n);
    this.sizeReq = this.section("size.req");
    this.sizeRound = this.section("size.round");
    this.longW = meta.long_w || 0;
    this.chunk = meta.chunk || 1;
    this.chunkFirst = Float64Array.from(meta.chunks || []);
    this.chunkReady = new Uint8Array(this.chunkFirst.length);
    this.complete = false;
    this.version = 0; // counts the parts decoded (frames of older versions are drawn again)
    this.levels = (meta.lod || []).map((lv) => ({ w: lv.w, n: lv.n, ready: false }));
    // (the fields set later, here first: one shape for the data, so that
    // code compiled early is kept as the parts arrive)
    this.scratches = {};
    this.found = this.foundStart = this.foundEnd = null;
    this.classStart = this.classList = this.classStarts = this.long = this.startsBefore = null;
    this.inHandW = 0;
    this.decodeLong();
    this.decodeSeries();
    this.levels.forEach((lv, l) => { if (this.sections["lod" + l + ".m"]) this.decodeLevel(l, buf, this.sections); });
    if (this.sections["lod.n"]) this.startsBefore = this.section("lod.n", Float64Array, true);
  }

  // The parts in the order of the file, each decoded as it arrives;
  // onPart() after each. Resolves once all are in.
  async readParts(onPart) {
    for (const p of this.meta.parts || []) {
      const buf = await MT.inflate(await MT.partArrival(p.name));
      if (p.name === "detail") this.attachDetail(buf, p.sections);
      else if (p.name === "long") this.putLong(this.columns("long", buf, p.sections));
      else if (p.name === "fine") {
        for (let l = 0; l < this.levels.length; l++) {
          if (this.levels[l].ready) continue;
          this.decodeLevel(l, buf, p.sections);
          await new Promise((resolve) => setTimeout(resolve, 0)); // events between levels
        }
      } else this.addChunk(parseInt(p.name.slice(1), 10), buf, p.sections);
      this.version++;
      onPart();
    }
    this.buildClasses(this.n, null);
    this.complete = true;
    this.version++;
  }

  // The second buffer: columns only hover and the panels read.
  attachDetail(buf, sections) {
    const lazy = (name) => this.lazy(name, buf, sections);
    this.streamOf = lazy("a.stream");
    this.rangeOf = lazy("a.range");
    this.flagsOf = lazy("a.flags");
    if (sections["c.on"]) {
      this.cacheOn = lazy("c.on");
      this.cacheOff = lazy("c.off");
      this.cacheSizes = this.meta.cache_sizes;
      this.checkpoints = this.section("ck.v", Float64Array, true, true, buf, sections);
    }
    this.detail = buf;
    this.detailSections = sections;
    this.hasDetail = true;
  }

  // Values of a section into a new array of type T (Float64Array by default).
  // delta: prefix sums; zigzag: signed values.
  section(name, T, delta, zigzag, buf, sections) {
    const s = (sections || this.sections)[name] || [0, 0, 0];
    buf = buf || this.buf;
    if (T && T !== Float64Array && !delta && !zigzag && s[2] <= 4) {
      const out = new T(s[1]);
      out.set(MT.planesU32(buf, s[0], s[1], s[2]));
      return out;
    }
    const v = MT.planesF64(buf, s[0], s[1], s[2]);
    if (zigzag || delta) MT.unzigzagDelta(v, !!zigzag, !!delta);
    if (!T || T === Float64Array) return v;
    const out = new T(v.length);
    out.set(v);
    return out;
  }

  // A section read value by value where asked (columns only hover needs).
  lazy(name, buf, sections) {
    const s = (sections || this.sections)[name] || [0, 0, 0], p = buf || this.buf, off = s[0], n = s[1], w = s[2];
    if (w === 0) return () => 0;
    if (w === 1) return (i) => p[off + i];
    return (i) => { let v = 0; for (let k = w - 1; k >= 0; k--) v = v * 256 + p[off + k * n + i]; return v; };
  }

  // Allocations k * chunk on, into the columns.
  addChunk(k, buf, sections) {
    this.put(k * this.chunk, this.columns("a", buf, sections), this.chunkFirst[k]);
    this.chunkReady[k] = 1;
  }

  // The allocations the first frame draws one by one (at least level 0's
  // bins long, or never freed), with their duration classes; the others of
  // at least longW ns come in their part (putLong). inHandW: allocations
  // at least that long are in hand.
  decodeLong() {
    const c = this.columns("top", this.buf, this.sections);
    this.put(c.index, c, 0);
    this.inHandW = this.levels.length ? this.levels[0].w : Infinity;
    if (this.longW) this.buildClasses(c.index.length, c.index);
  }

  putLong(c) {
    this.put(c.index, c, 0);
    if (!this.longW) return;
    this.long = c;
    this.buildClasses(c.index.length, c.index);
    this.inHandW = this.longW;
  }

  // The columns the timeline draws of a chunk or of long allocations (and
  // their indices).
  columns(pre, buf, sections) {
    const sec = (name, T, delta) => this.section(pre + "." + name, T, delta, false, buf, sections);
    return { start: sec("start", Float64Array, true), dur: sec("dur"), size: sec("size", Uint32Array),
      site: sec("site", Uint32Array), index: sec("i", Float64Array, true) };
  }

  // Allocations into the columns: c's j-th at index at[j] (an array) or
  // at + j (a number); starts from base.
  put(at, c, base) {
    const req = this.sizeReq;
    for (let j = 0; j < c.start.length; j++) {
      const i = typeof at === "number" ? at + j : at[j];
      const s = c.start[j] + base, d = c.dur[j];
      this.start[i] = s;
      this.end[i] = d === 0 ? Infinity : s + d - 1;
      this.size[i] = c.size[j];
      this.bytes[i] = req[c.size[j]];
      this.site[i] = c.site[j];
    }
  }

  // The chunks that may hold starts in [t0, t1): [k0, k1).
  chunksOf(t0, t1) {
    const cf = this.chunkFirst, nc = cf.length;
    return [Math.max(0, MT.lowerBound(cf, t0, 0, nc) - 1), MT.lowerBound(cf, t1, 0, nc)];
  }

  // Whether every allocation that touches [a, b) is in hand (the long ones
  // always are; the others start after a - longW).
  covers(a, b) {
    if (this.complete) return true;
    if (!this.longW || this.inHandW > this.longW) return false;
    const [k0, k1] = this.chunksOf(a - this.longW, b);
    for (let k = k0; k < k1; k++) if (!this.chunkReady[k]) return false;
    return true;
  }

  // Allocations starting in [a, b): exact when every allocation is in
  // hand, else counted by the finest level's bins that [a, b) touches.
  startsIn(a, b) {
    const p = this.startsBefore;
    if (!p || this.complete) return MT.lowerBound(this.start, b, 0, this.n) - MT.lowerBound(this.start, a, 0, this.n);
    const w = this.levels[this.levels.length - 1].w, nb = p.length;
    const j0 = Math.max(0, Math.min(nb, Math.floor(a / w))), j1 = Math.max(j0, Math.min(nb, Math.floor((b - 1) / w) + 1));
    return (j1 ? p[j1 - 1] : 0) - (j0 ? p[j0 - 1] : 0);
  }

  // Level l, or undefined while its part has not arrived.
  level(l) {
    return this.levels[l].ready ? this.levels[l] : undefined;
  }

  decodeLevel(l, buf, sections) {
    const lv = this.levels[l], sec = (name, T, delta, zigzag) => this.section(name, T, delta, zigzag, buf, sections);
    const m = sec("lod" + l + ".m"), tot = sec("lod" + l + ".t", Float64Array, true, true);
    const g = sec("lod" + l + ".g", Uint32Array), first = new Uint32Array(lv.n + 1);
    for (let j = 0; j < lv.n; j++) { m[j] += j * lv.w; first[j + 1] = first[j] + g[j]; }
    Object.assign(lv, { moment: m, total: tot, first: first, groups: sec("lod" + l + ".s"), ready: true });
  }

  // Allocations by duration class (class c: duration in [2^c, 2^(c+1));
  // class 63: never freed), each list in start order: the long ones
  // (index: theirs) until every allocation is in hand, then all (index
  // null). Zero-length allocations are never live and are left out.
  buildClasses(count, index) {
    const NC = 64, first = new Int32Array(NC + 1), cls = new Uint8Array(count);
    for (let k = 0; k < count; k++) {
      const i = index ? index[k] : k, d = this.end[i] - this.start[i];
      const c = d === Infinity ? 63 : d <= 0 ? 255 : d < 2147483648 ? 31 - Math.clz32(d)
        : Math.min(62, Math.floor(Math.log2(d)));
      cls[k] = c;
      if (c !== 255) first[c + 1]++;
    }
    for (let c = 0; c < NC; c++) first[c + 1] += first[c];
    const fill = first.slice(0, NC), list = new Int32Array(first[NC]);
    for (let k = 0; k < count; k++) if (cls[k] !== 255) list[fill[cls[k]]++] = index ? index[k] : k;
    this.classStart = first;
    this.classList = list;
    this.classStarts = new Float64Array(list.length); // starts, for binary search
    for (let k = 0; k < list.length; k++) this.classStarts[k] = this.start[list[k]];
  }

  // The allocations with start < b and end > a and a duration in [minDur,
  // maxDur) (maxDur Infinity: never freed ones too): those of the class
  // lists, then, until every allocation is in hand, the shorter ones of the
  // chunks that arrived. Returns their number n, with their indices, starts
  // and ends in this.found, foundStart and foundEnd [0, n) (scratch: until
  // the next call).
  collect(a, b, minDur, maxDur) {
    const cs = this.classStart, list = this.classList, st = this.classStarts, start = this.start, end = this.end;
    // the ranges of the class lists (then of the chunks) to read, to size
    // the arrays first
    const from = this.scratch("collectFrom", Int32Array, 64), to = this.scratch("collectTo", Int32Array, 64);
    let most = 0;
    for (let c = 0; c < 64; c++) {
      from[c] = to[c] = 0;
      const lo = Math.pow(2, c), hi = c === 63 ? Infinity : c === 62 ? Infinity : lo * 2;
      if (!cs || (c === 63 ? maxDur !== Infinity : lo >= maxDur) || (hi <= minDur && c !== 63)) continue;
      from[c] = MT.lowerBound(st, c === 63 ? -Infinity : a - hi + 1, cs[c], cs[c + 1]);
      to[c] = MT.lowerBound(st, b, from[c], cs[c + 1]);
      most += to[c] - from[c];
    }
    const L = this.longW, [k0, k1] = this.complete || !L || minDur >= L ? [0, 0] : this.chunksOf(a - L, b), K = this.chunk;
    for (let k = k0; k < k1; k++) if (this.chunkReady[k]) most += Math.min(this.n, (k + 1) * K) - k * K;
    const ids = this.found = this.scratch("found", Int32Array, most);
    const fs = this.foundStart = this.scratch("foundStart", Float64Array, most);
    const fe = this.foundEnd = this.scratch("foundEnd", Float64Array, most);
    let n = 0;
    for (let c = 0; c < 64; c++) {
      for (let k = from[c]; k < to[c]; k++) {
        const i = list[k], s = st[k], e = end[i], d = e - s;
        if (e > a && d >= minDur && (d < maxDur || maxDur === Infinity)) { ids[n] = i; fs[n] = s; fe[n++] = e; }
      }
    }
    for (let k = k0; k < k1; k++) {
      if (!this.chunkReady[k]) continue;
      const last = Math.min(this.n, (k + 1) * K);
      for (let i = MT.lowerBound(start, a - L + 1, k * K, last); i < last && start[i] < b; i++) {
        const s = start[i], e = end[i], d = e - s;
        if (d > 0 && d < L && e > a && d >= minDur && d < maxDur) { ids[n] = i; fs[n] = s; fe[n++] = e; }
      }
    }
    return n;
  }

  // Calls f(i) for each allocation that collect(a, b, minDur, maxDur)
  // finds (f must not ask for more).
  touching(a, b, minDur, maxDur, f) {
    const n = this.collect(a, b, minDur, maxDur), ids = this.found;
    for (let k = 0; k < n; k++) f(ids[k]);
  }

  // At least as many as the allocations in hand at least minDur long that
  // touch [a, b) (what collect(a, b, minDur, Infinity) finds of the
  // class lists), by two binary searches a duration class.
  longCount(a, b, minDur) {
    const cs = this.classStart, st = this.classStarts;
    let count = 0;
    for (let c = 0; cs && c < 64; c++) {
      const hi = c >= 62 ? Infinity : Math.pow(2, c + 1);
      if (hi <= minDur && c !== 63) continue;
      const k = c === 63 ? cs[c] : MT.lowerBound(st, a - hi + 1, cs[c], cs[c + 1]);
      count += MT.lowerBound(st, b, k, cs[c + 1]) - k;
    }
    return count;
  }

  // Bytes live at t (start <= t < end).
  liveAt(t) {
    let sum = 0;
    this.touching(t, t + 1, 0, Infinity, (i) => { if (this.start[i] <= t) sum += this.bytes[i]; });
    return sum;
  }

  // The allocator cache at t (bytes of live segments holding nothing live):
  // the checkpoint at or before t, then the changes since (html-segments.c).
  cacheAt(t) {
    const CK = this.meta.checkpoint, ck = this.checkpoints;
    let lo = 0, hi = ck.length;
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (this.start[mid * CK] <= t) lo = mid + 1; else hi = mid; }
    let v = MT.Data.valueAt(this.cacheSeg, t), from = -Infinity; // every allocation in hand
    if (lo) {
      from = this.start[(lo - 1) * CK];
      v += ck[lo - 1] - MT.Data.valueAt(this.cacheSeg, from);
    }
    const i0 = MT.lowerBound(this.start, from + 0.5, 0, this.n), i1 = MT.lowerBound(this.start, t + 0.5, 0, this.n);
    const sizes = this.cacheSizes;
    for (let i = i0; i < i1; i++) { const k = this.cacheOn(i); if (k) v -= sizes[k - 1]; }
    this.touching(from, t + 1, 0, Infinity, (i) => {
      if (this.end[i] <= t) { const k = this.cacheOff(i); if (k) v += sizes[k - 1]; }
    });
    return v;
  }

  // A step series {t, v} (value holds until the next point; 0 before).
  series(tname, vname) {
    return { t: this.section(tname, Float64Array, true), v: this.section(vname, Float64Array, true, true) };
  }

  static valueAt(s, t) {
    const k = MT.lowerBound(s.t, t + 0.5, 0, s.t.length);
    return k ? s.v[k - 1] : 0;
  }

  decodeSeries() {
    const m = this.meta;
    this.reserved = m.sections["res.t"] ? this.series("res.t", "res.v") : null;
    this.outside = m.sections["out.t"] ? this.series("out.t", "out.v") : null;
    this.cacheSeg = m.sections["cseg.t"] ? this.series("cseg.t", "cseg.v") : null;
    this.samples = {
      t: this.section("smp.t", Float64Array, true),
      used: this.section("smp.used"),
      proc: this.section("smp.proc"),
    };
    this.phases = {
      s: this.section("ph.s"), e: this.section("ph.e"), k: this.section("ph.k", Uint8Array),
    };
    this.policies = (m.policies || []).map((p, k) =>
      Object.assign({ line: this.series("pol" + k + ".t", "pol" + k + ".v") }, p));
  }

  // A typed array of type T, at least n long, kept under `name` for the
  // next frame too (one frame is drawn at a time); keep: elements to carry
  // over when it grows.
  scratch(name, T, n, keep) {
    const s = this.scratches;
    let v = s[name];
    if (!v || v.length < n) {
      const g = new T(Math.max(n, v ? 2 * v.length : 1024));
      if (v && keep) g.set(v.subarray(0, keep));
      v = s[name] = g;
    }
    return v;
  }

  // A segment map: [{bytes, blocks: [bytes * 2 + allocated, ...]}].
  map(set, k) {
    const v = this.section("map" + set + "." + k, Float64Array, false, false, this.detail, this.detailSections), out = [];
    for (let p = 0; p < v.length;) {
      const seg = { bytes: v[p], blocks: v.subarray(p + 2, p + 2 + v[p + 1]) };
      p += 2 + v[p + 1];
      out.push(seg);
    }
    return out;
  }

  // The call-site frame that names an allocation (as `memtrace report`).
  siteFrame(site) {
    const s = this.meta.sites[site];
    return s && s.shown >= 0 ? s.stack[s.shown] : null;
  }
};
