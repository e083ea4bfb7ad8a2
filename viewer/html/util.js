// util.js — number formats (as memtrace prints them), times in the CLI's
// forms, and the colours of the cairo views.

const MT = {};

// As mt_size_format / mt_duration_format: three significant digits.
MT.scaled = function (value, base, units) {
  if (value < base) return Math.round(value) + " " + units[0];
  let v = value, k = 0;
  do { v /= base; k++; } while (v >= base - 0.5 && k + 1 < units.length);
  if (v < 9.995) return v.toFixed(2) + " " + units[k];
  if (v < 99.95) return v.toFixed(1) + " " + units[k];
  return v.toFixed(0) + " " + units[k];
};
MT.bytes = function (b) {
  if (b < 0) return "-" + MT.bytes(-b);
  return MT.scaled(b, 1024, ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]);
};
MT.dur = function (ns) {
  if (ns < 0) return "-" + MT.dur(-ns);
  return MT.scaled(ns, 1000, ["ns", "us", "ms", "s"]);
};

// A count with thousands separators (one formatter for all: toLocaleString
// makes one a call, 8 us).
MT.countFormat = new Intl.NumberFormat("en");
MT.count = (n) => MT.countFormat.format(n);

// A TIME as the CLI reads it: "1.5" (seconds), "1.5s", "300ms", "20us",
// "100ns". Returns ns, or NaN.
MT.parseTime = function (text) {
  const m = /^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(s|ms|us|ns)?\s*$/i.exec(text || "");
  if (!m) return NaN;
  const scale = { s: 1e9, ms: 1e6, us: 1e3, ns: 1 }[(m[2] || "s").toLowerCase()];
  return Math.round(parseFloat(m[1]) * scale);
};

// Colours of viewer/palette.c.
MT.rgb = (r, g, b) => (255 << 24) | (b << 16) | (g << 8) | r; // ImageData order
MT.css = (c) => "rgb(" + (c & 255) + "," + ((c >> 8) & 255) + "," + ((c >> 16) & 255) + ")";
MT.bands = [[0x77, 0xaa, 0xdd], [0xee, 0x88, 0x66], [0xee, 0xdd, 0x88], [0xff, 0xaa, 0xbb],
  [0x99, 0xdd, 0xff], [0x44, 0xbb, 0x99], [0xbb, 0xcc, 0x33], [0xaa, 0xaa, 0x00]]
  .map((c) => MT.rgb(c[0], c[1], c[2]));
MT.phases = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#777777"];
MT.parts = ["#bbbbbb", "#9467bd", "#c7c7c7", "#ff9896", "#1f77b4", "#f7f7f7"];
MT.text = "#222", MT.muted = "#777", MT.grid = "#e6e6e6", MT.axis = "#555";
MT.reserved = "#d62728", MT.used = "#7f7f7f", MT.oom = "#d62728", MT.peak = "#000";
MT.pinned = MT.rgb(0xd6, 0x27, 0x28);

// A grey for the call-site groups of allocations below a pixel.
MT.groupColor = function (site) {
  const g = 150 + ((site * 37) % 60);
  return MT.rgb(g, g, g + 10 > 255 ? 255 : g + 10);
};
// A colour made pale (for everything but a pinned call site).
MT.fade = function (c) {
  const f = (v) => Math.round(v + (255 - v) * 0.7);
  return MT.rgb(f(c & 255), f((c >> 8) & 255), f((c >> 16) & 255));
};

// Ticks for [v0, v1] at about n steps of 1, 2 or 5 times a power of ten (or
// of 1024 for bytes).
MT.ticks = function (v0, v1, n, binary) {
  const span = v1 - v0;
  if (!(span > 0)) return [v0];
  const raw = span / n;
  let step;
  if (binary && raw >= 1) {
    const p = Math.pow(1024, Math.floor(Math.log(raw) / Math.log(1024)));
    const q = raw / p;
    step = p * (q <= 1 ? 1 : q <= 2 ? 2 : q <= 4 ? 4 : q <= 8 ? 8 : q <= 16 ? 16 : q <= 32 ? 32
      : q <= 64 ? 64 : q <= 128 ? 128 : q <= 256 ? 256 : q <= 512 ? 512 : 1024);
  } else {
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const q = raw / p;
    step = p * (q <= 1 ? 1 : q <= 2 ? 2 : q <= 5 ? 5 : 10);
  }
  const out = [];
  for (let v = Math.ceil(v0 / step) * step; v <= v1 + step * 1e-9; v += step) out.push(v);
  return out;
};

// Index of the first element of a sorted typed array >= v, in [lo, hi).
MT.lowerBound = function (arr, v, lo, hi) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] < v) lo = mid + 1; else hi = mid;
  }
  return lo;
};

// Sorts v[0..n) (integers in [0, 2^32)) in place, and w[0..n) along with
// them, by passes of 12 bits (as many as the largest needs) through tmp and
// wtmp (each at least n long). Returns v.
MT.radixSort = function (v, w, n, tmp, wtmp) {
  const count = MT.radixCount || (MT.radixCount = new Int32Array(4096));
  let most = 0;
  for (let k = 0; k < n; k++) most |= v[k];
  let src = v, dst = tmp, wsrc = w, wdst = wtmp;
  for (let shift = 0; shift < 32 && most >>> shift; shift += 12) {
    count.fill(0);
    for (let k = 0; k < n; k++) count[(src[k] >>> shift) & 4095]++;
    for (let c = 0, sum = 0; c < 4096; c++) { const x = count[c]; count[c] = sum; sum += x; }
    for (let k = 0; k < n; k++) {
      const at = count[(src[k] >>> shift) & 4095]++;
      dst[at] = src[k];
      wdst[at] = wsrc[k];
    }
    [src, dst, wsrc, wdst] = [dst, src, wdst, wsrc];
  }
  if (src !== v) { v.set(src.subarray(0, n)); w.set(wsrc.subarray(0, n)); }
  return v;
};

// Sorts v[lo..hi) by key[v[k]] ascending (Shell sort: in place, no calls
// per comparison, close to insertion sort for the few of a column).
MT.sortBy = function (v, lo, hi, key) {
  for (const gap of [701, 301, 132, 57, 23, 10, 4, 1]) {
    for (let p = lo + gap; p < hi; p++) {
      const o = v[p], t = key[o];
      let q = p - gap;
      for (; q >= lo && key[v[q]] > t; q -= gap) v[q + gap] = v[q];
      v[q + gap] = o;
    }
  }
};
