// data.js — the page's data: the description (JSON) and the buffer of
// sections written by viewer/html-*.c (integers as byte planes), decoded
// into typed arrays,
// and the questions the views ask of them (which allocations touch a
// window, bytes live at a moment, a step series' value at a moment).

// Inflates the base64 text of the data element. Returns a Promise of
// Uint8Array.
MT.inflate = async function (text) {
  if (text === undefined) throw new Error("no data in the page");
  const z = Uint8Array.fromBase64 ? Uint8Array.fromBase64(text)
    : new Uint8Array(await (await fetch("data:application/octet-stream;base64," + text)).arrayBuffer());
  const stream = new Blob([z]).stream().pipeThrough(new DecompressionStream("deflate"));
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
    this.decodeAllocations();
    this.buildClasses();
    this.decodeSeries();
    this.decodeLevels();
  }

  // The second buffer: columns only hover and the panels read.
  attachDetail(buf) {
    const m = this.meta, lazy = (name) => this.lazy(name, buf, m.detail_sections);
    this.streamOf = lazy("a.stream");
    this.rangeOf = lazy("a.range");
    this.flagsOf = lazy("a.flags");
    if (m.detail_sections["c.on"]) {
      this.cacheOn = lazy("c.on");
      this.cacheOff = lazy("c.off");
      this.cacheSizes = m.cache_sizes;
      this.checkpoints = this.section("ck.v", Float64Array, true, true, buf, m.detail_sections);
    }
    this.detail = buf;
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

  decodeAllocations() {
    const start = this.section("a.start", Float64Array, true);
    const dur = this.section("a.dur");
    const n = start.length, end = new Float64Array(n), bytes = new Float64Array(n);
    const size = this.section("a.size", Uint32Array), req = this.section("size.req");
    this.sizeReq = req;
    this.sizeRound = this.section("size.round");
    for (let i = 0; i < n; i++) {
      const d = dur[i];
      end[i] = d === 0 ? Infinity : start[i] + d - 1;
      bytes[i] = req[size[i]];
    }
    this.n = n;
    this.start = start;
    this.end = end;
    this.bytes = bytes;
    this.size = size;
    this.site = this.section("a.site", Uint32Array);
  }

  // Allocations by duration class (class c: duration in [2^c, 2^(c+1));
  // class 63: never freed), each list in start order. Zero-length
  // allocations are never live and are left out.
  buildClasses() {
    const NC = 64, count = new Int32Array(NC + 1), n = this.n;
    const cls = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const d = this.end[i] - this.start[i];
      const c = d === Infinity ? 63 : d <= 0 ? 255 : d < 2147483648 ? 31 - Math.clz32(d)
        : Math.min(62, Math.floor(Math.log2(d)));
      cls[i] = c;
      if (c !== 255) count[c + 1]++;
    }
    for (let c = 0; c < NC; c++) count[c + 1] += count[c];
    const fill = count.slice(0, NC), list = new Int32Array(count[NC]);
    for (let i = 0; i < n; i++) if (cls[i] !== 255) list[fill[cls[i]]++] = i;
    this.classStart = count;
    this.classList = list;
    this.classStarts = new Float64Array(list.length); // starts, for binary search
    for (let k = 0; k < list.length; k++) this.classStarts[k] = this.start[list[k]];
  }

  // Calls f(i) for every allocation with start < b and end > a and a
  // duration in [minDur, maxDur) (maxDur Infinity: never freed ones too).
  touching(a, b, minDur, maxDur, f) {
    const cs = this.classStart, list = this.classList, st = this.classStarts;
    for (let c = 0; c < 64; c++) {
      const lo = Math.pow(2, c), hi = c === 63 ? Infinity : c === 62 ? Infinity : lo * 2;
      if (c === 63 ? maxDur !== Infinity : lo >= maxDur) continue;
      if (hi <= minDur && c !== 63) continue;
      let k = MT.lowerBound(st, c === 63 ? -Infinity : a - hi + 1, cs[c], cs[c + 1]);
      const last = cs[c + 1];
      for (; k < last && st[k] < b; k++) {
        const i = list[k], d = this.end[i] - this.start[i];
        if (this.end[i] > a && d >= minDur && (d < maxDur || maxDur === Infinity)) f(i);
      }
    }
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
    let v = MT.Data.valueAt(this.cacheSeg, t), from = -Infinity;
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

  decodeLevels() {
    this.levels = (this.meta.lod || []).map((lv, l) => {
      const m = this.section("lod" + l + ".m"), tot = this.section("lod" + l + ".t", Float64Array, true, true);
      const g = this.section("lod" + l + ".g", Uint32Array), s = this.section("lod" + l + ".s");
      const first = new Uint32Array(lv.n + 1);
      for (let j = 0; j < lv.n; j++) { m[j] += j * lv.w; first[j + 1] = first[j] + g[j]; }
      return { w: lv.w, n: lv.n, moment: m, total: tot, first: first, groups: s };
    });
  }

  // A segment map: [{bytes, blocks: [bytes * 2 + allocated, ...]}].
  map(set, k) {
    const v = this.section("map" + set + "." + k, Float64Array, false, false, this.detail, this.meta.detail_sections), out = [];
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
