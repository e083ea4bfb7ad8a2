// selftest.js — what tests and benchmarks ask of the page (the URL's
// "selftest" flag runs MT.selftest once every part of the data is in):
//  - MT.selftest: at the moment in the URL, the bytes live, the anatomy,
//    the 20 largest allocations live (as `memtrace report --at` lists them)
//    with where each is drawn, and the page's own checks (its columns hold
//    every byte live; hovering each allocation finds it; the columns of
//    those drawn one by one; a pan paints as a full paint);
//  - MT.hovered: the allocation under the mouse, as the tooltip shows it;
//  - MT.bench: the page's own timings of loading and of pan and zoom frames.

MT.selftest = function (page) {
  const d = page.data, F = page.frame, P = page.plot, t = page.moment;
  const r = page.canvas.getBoundingClientRect();
  const live = [];
  d.touching(t, t + 1, 0, Infinity, (i) => { if (d.start[i] <= t) live.push(i); });
  live.sort((p, q) => d.bytes[q] - d.bytes[p] || p - q);
  const x = F.firstColumnAtOrAfter(t), checks = [];
  const check = (name, ok, detail) => checks.push({ name: name, ok: !!ok, detail: detail });
  const liveBytes = live.reduce((s, i) => s + d.bytes[i], 0);
  check("live bytes by query equal liveAt", liveBytes === d.liveAt(t), liveBytes + " vs " + d.liveAt(t));
  const exact = x < F.W && F.moment[x] === t;
  check("a column shows the moment", exact, "column " + x + " moment " + F.moment[x]);
  if (exact) check("the column holds every byte live", F.total[x] === liveBytes && F.stacked[x] === liveBytes,
    F.total[x] + " / " + F.stacked[x] + " vs " + liveBytes);
  const top = live.slice(0, 20).map((i) => {
    const det = MT.details(d, i), below = exact ? F.below(x, i) : -1;
    det.age_ns = det.start_ns === null ? null : t - det.start_ns;
    const h = d.bytes[i] * page.scale;
    if (below >= 0 && h >= 2) {
      const py = P.y + P.h - (below + d.bytes[i] / 2) * page.scale;
      det.hover = { x: r.left + (P.x + x + 0.5) / page.dpr, y: r.top + py / page.dpr };
      const hit = F.hit(x, below + d.bytes[i] / 2);
      check("hit test finds allocation #" + i, hit && hit.kind === "alloc" && hit.i === i, JSON.stringify(hit));
    }
    return det;
  });
  // the columns of each allocation drawn one by one (computeIndividuals'
  // index of the moments) are those firstColumnAtOrAfter finds
  let wrong = -1;
  for (let k = 0; k < F.ind.length && wrong < 0; k++) {
    const i = F.ind[k];
    if (F.indStart[k] !== F.firstColumnAtOrAfter(d.start[i]) || F.indEnd[k] !== F.firstColumnAtOrAfter(d.end[i])) wrong = k;
  }
  check("the columns of each allocation drawn one by one", wrong < 0,
    wrong < 0 ? F.ind.length + " allocations" : "allocation #" + F.ind[wrong]);
  // a pan by whole columns moves the columns it keeps and paints the new
  // ones: the same pixels as a full paint of that frame (then back)
  const [a0, b0] = [page.a, page.b];
  page.pan(0.05);
  page.draw();
  const moved = page.pixels.slice(), movedTop = page.painted.top, panned = page.a;
  page.painted = null;
  page.draw();
  let same = page.painted.top === movedTop;
  for (let p = movedTop * P.w; same && p < moved.length; p++) same = moved[p] === page.pixels[p];
  check("a pan paints as a full paint", same, "window at +" + panned + " ns");
  page.setWindow(a0, b0);
  page.draw();
  const a = page.anatomyShown, parts = {};
  MT.PART_KEYS.forEach((k, n) => { parts[k] = a.parts[n]; });
  const out = {
    moment_ns: t, live_bytes: liveBytes, live_count: live.length,
    anatomy: a.available ? { at_ns: a.at, measured_at_ns: a.measured_at, reading_at_ns: a.sample_at,
      reading_bytes: a.sampled, parts: parts } : null,
    top: top, checks: checks, ok: checks.every((c) => c.ok),
    level: F.level, timings: MT.timings(page),
  };
  const pre = document.getElementById("mt-result");
  pre.textContent = JSON.stringify(out);
  window.mtResult = out;
  return out;
};

MT.hovered = function (page) {
  const h = page.hovered;
  if (!h) return null;
  if (h.kind === "group") return { group: true, site: page.data.siteFrame(h.site), count: h.count, bytes: h.bytes };
  const det = MT.details(page.data, h.i);
  det.tooltip = page.tip.hidden ? "" : page.tip.textContent;
  return det;
};

MT.timings = function (page) {
  const t = page.timings;
  return { script_start_ms: t.start, first_buffer_ms: t.read, decoded_ms: t.decoded, interactive_ms: t.interactive,
    complete_ms: t.complete, warm_ms: t.warm };
};

// Pan and zoom frames as a person would make them: from the whole trace
// zoom in by 1.25 steps towards `centre` (ns since t0; the peak by
// default) down to a few microseconds, pan across at that depth and at
// two wider ones, then zoom back out. Each step: [what, set], set() putting
// the page's window where that frame draws.
MT.benchSteps = function (page, centre) {
  const span = page.data.span, c = centre === undefined || centre === null ? page.data.meta.peak_at : centre;
  const steps = [["whole", () => { page.setWindow(0, span); page.moment = c; page.fixed = true; }]];
  for (let w = span; w > 2000; w /= 1.25) { const x = w; steps.push(["zoom in", () => page.setWindow(c - x / 2, c + x / 2)]); }
  for (const w of [span / 8, span / 512, 4000])
    for (let k = 0; k < 20; k++)
      steps.push(["pan", k ? () => page.pan(0.05) : () => { page.setWindow(c - w / 2, c + w / 2); page.pan(0.05); }]);
  for (let w = 4000; w < span; w *= 1.25) { const x = w; steps.push(["zoom out", () => page.setWindow(c - x / 2, c + x / 2)]); }
  return steps;
};

// The bench's figures from its frames: p50, p95 and max of all and per
// scenario, and the mean of each part of a frame (compute: the columns and
// the allocations drawn one by one; paint: their pixels; put: onto the
// canvas; lines: axes, lines, phases).
MT.benchStats = function (page, frames) {
  const stats = (fs) => {
    const ms = fs.map((f) => f.ms).sort((p, q) => p - q);
    const q = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))];
    return { frames: ms.length, p50_ms: q(0.5), p95_ms: q(0.95), max_ms: ms[ms.length - 1],
      over_16ms: ms.filter((v) => v > 16).length };
  };
  const scenarios = {}, phases_ms = {};
  for (const what of ["zoom in", "pan", "zoom out"]) scenarios[what] = stats(frames.filter((f) => f.what === what));
  for (const k of ["compute", "paint", "put", "lines"]) phases_ms[k] = frames.reduce((s, f) => s + f[k], 0) / frames.length;
  return Object.assign(stats(frames), { scenarios: scenarios, phases_ms: phases_ms, timings: MT.timings(page),
    detail: frames });
};

// One bench frame: the step's window set, the page drawn, timed.
MT.benchFrame = function (page, frames, step) {
  step[1]();
  const t0 = performance.now();
  page.draw();
  frames.push(Object.assign({ what: step[0], ms: performance.now() - t0, level: page.frame.level,
    drawn: page.frame.ind.length, span: page.b - page.a, a: page.a,
    since_interactive_ms: t0 - page.timings.interactive, partial: !!page.frame.partial }, page.lastPhases));
};

// The frames one after another, in one task (the page loaded and warm).
MT.bench = function (page, centre) {
  const frames = [];
  for (const step of MT.benchSteps(page, centre)) MT.benchFrame(page, frames, step);
  return MT.benchStats(page, frames);
};

// The same frames from the moment the page is interactive, each a task of
// its own, so that the page reads its parts and warms up in between, as it
// does under a person's first zooms.
MT.benchEarly = async function (page, centre) {
  const frames = [];
  for (const step of MT.benchSteps(page, centre)) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    MT.benchFrame(page, frames, step);
  }
  return MT.benchStats(page, frames);
};
