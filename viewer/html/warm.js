// warm.js — the timeline's code made ready before the first pan or zoom.
// V8 runs a function's first calls unoptimized: the first frame at a
// level of the pyramid, or of a raw window, took 2-4 times as long as the
// same frame drawn again (up to 60 ms against 8; bench/RESULTS.md). So once
// every part of the data is in, the page draws, off screen, a window at
// each level about the peak and a few raw ones, each panned once, one task
// each (the mouse and the keyboard are served between them), MT.warmRounds
// times, and grows its scratch arrays on the way. Nothing shown changes:
// these frames paint into pixels of their own, and the page's own frame is
// computed again after each.

// (one round left most of the frame code at V8's middle tier, Maglev, and
// the heaviest first frames at 1.3 times their time drawn again; three
// take them to its optimizing one, TurboFan)
MT.warmRounds = 3;

// The windows [a, b) warmed for data d drawn W columns wide: per level,
// about the peak, bins a column wide; then raw ones, from the finest
// level's bins a column wide down to a few microseconds.
MT.warmWindows = function (d, W) {
  const lv = d.levels, span = d.span, peak = d.meta.peak_at || 0, out = [];
  const about = (w) => {
    w = Math.min(span, Math.max(w, 64));
    const a = Math.max(0, Math.min(span - w, peak - w / 2));
    out.push([a, a + w]);
  };
  lv.forEach((l) => about(l.w * W));
  if (lv.length) for (let w = lv[lv.length - 1].w * W / 2; w > 4000; w /= 16) about(w);
  return out;
};

// One frame of window [a, b) and its pan by 5 % of the columns, painted
// into pixels of their own; then the page's own frame computed again
// (these frames took over the scratch arrays it read; its pixels are
// painted again at the next draw).
MT.warmFrame = function (page, pixels, a, b) {
  const d = page.data, W = page.plot.w, shown = page.pixels;
  page.pixels = pixels;
  page.painted = null;
  try {
    page.paint(new MT.Frame(d, a, b, W));
    const dx = Math.round(0.05 * W) * (b - a) / W;
    if (b + dx <= d.span) page.paint(new MT.Frame(d, a + dx, b + dx, W));
  } finally {
    page.pixels = shown;
    page.painted = null;
    page.frameKey = null;
    page.frame = new MT.Frame(d, page.a, page.b, W);
  }
};

// Warms the page's timeline code (after its last part and its first draw
// of the whole data). Resolves when done.
MT.warm = async function (page) {
  const d = page.data;
  if (!d.levels.length || !page.plot) return; // small traces: every frame is cheap
  let pixels = null;
  for (let r = 0; r < MT.warmRounds; r++) {
    for (const [a, b] of MT.warmWindows(d, page.plot.w)) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (!pixels || pixels.length !== page.pixels.length) pixels = new Uint32Array(page.pixels.length);
      MT.warmFrame(page, pixels, a, b);
    }
  }
  page.draw();
};
