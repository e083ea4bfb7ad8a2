// panels.js — what the page says about one moment and one allocation: the
// anatomy (as mt_anatomy_compute splits the sampled device memory), the
// segment maps of the recorded allocator and each policy nearest to the
// moment, and the details of a hovered allocation.

MT.PART_KEYS = ["other_processes", "cuda_context_and_libraries", "allocator_cache",
  "fragmentation", "live_allocations", "unexplained"];
MT.PART_LABELS = ["outside this process", "CUDA context and libraries",
  "allocator cache (segments with nothing live)", "fragmentation (free space in segments with live blocks)",
  "live tensors", "unexplained"];

// The anatomy at `at` (ns since t0), as analyze/anatomy.c computes it.
MT.anatomy = function (data, at) {
  const m = data.meta, s = data.samples, n = s.t.length;
  const segments = m.layer === 1 && m.segments;
  const drv = segments ? (t) => MT.Data.valueAt(data.reserved, t)
    : m.layer === 0 ? (t) => data.liveAt(t) : null;
  let lo = MT.lowerBound(s.t, at + 0.5, 0, n), pick = -1, same = false;
  if (n) {
    let before = lo, after = lo;
    const driverAt = drv ? drv(at) : 0;
    for (let tries = 0; drv && tries < 64 && (before || after < n); tries++) {
      let c;
      if (before && (after === n || at - s.t[before - 1] <= s.t[after] - at)) c = --before;
      else c = after++;
      if (drv(s.t[c]) === driverAt) { same = true; pick = c; break; }
    }
    if (!same) pick = !lo ? 0 : lo < n && s.t[lo] - at < at - s.t[lo - 1] ? lo : lo - 1;
  }
  const when = pick >= 0 && !same ? s.t[pick] : at;
  const a = { at: at, measured_at: when, parts: [0, 0, 0, 0, 0, 0], cache_known: !!segments };
  const allocated = data.liveAt(when);
  a.parts[4] = allocated;
  if (segments) {
    const reserved = MT.Data.valueAt(data.reserved, when);
    const cache = data.cacheAt(when), out = MT.Data.valueAt(data.outside, when);
    a.parts[2] = cache;
    a.parts[3] = reserved - cache - (allocated - out);
    a.reserved = a.driver_live = reserved;
  } else {
    a.reserved = a.driver_live = allocated;
  }
  if (pick < 0) { a.available = false; return a; }
  a.available = true;
  a.sample_at = s.t[pick];
  a.sampled = s.used[pick];
  let processUse = s.used[pick];
  if (s.proc[pick] && s.proc[pick] < s.used[pick]) {
    a.process_bytes = s.proc[pick];
    processUse = s.proc[pick];
    a.parts[0] = s.used[pick] - s.proc[pick];
  }
  if (processUse > a.driver_live) a.parts[1] = processUse - a.driver_live;
  let rest = s.used[pick];
  for (let k = 0; k < 5; k++) rest -= a.parts[k];
  a.parts[5] = rest;
  return a;
};

MT.drawAnatomy = function (data, at, bar, table) {
  const a = MT.anatomy(data, at), ctx = bar.getContext("2d");
  const w = bar.width = bar.clientWidth * devicePixelRatio, h = bar.height = bar.clientHeight * devicePixelRatio;
  ctx.clearRect(0, 0, w, h);
  let rows = "";
  const total = a.available ? a.sampled : a.parts[4] + a.parts[2] + Math.max(0, a.parts[3]);
  let x = 0;
  for (let k = 0; k < 6; k++) {
    const v = a.parts[k];
    if (!a.available && (k < 2 || k === 5)) continue;
    if (v > 0 && total > 0) {
      ctx.fillStyle = MT.parts[k];
      const pw = v / total * w;
      ctx.fillRect(x, 0, pw, h);
      x += pw;
    }
    const unknown = !a.cache_known && (k === 2 || k === 3);
    rows += "<tr><td><span class=sw style='background:" + MT.parts[k] + "'></span></td><td class=n>" +
      (unknown ? "unknown" : MT.bytes(v)) + "</td><td class=n>" +
      (unknown || !total ? "" : (100 * v / total).toFixed(1) + "%") + "</td><td>" +
      (k === 4 && data.meta.layer !== 1 ? "live allocations" : MT.PART_LABELS[k]) + "</td></tr>";
  }
  // in the words of mt_anatomy_reading
  const away = Math.abs(a.sample_at - at);
  const reading = !a.available ? "no reading of the device memory in use"
    : "the reading at +" + MT.dur(a.sample_at) + (away === 0 ? ", taken at that moment"
      : ", " + MT.dur(away) + (a.sample_at > at ? " after" : " before") + ", when the allocator held " +
        (a.measured_at === a.at ? "the same segments" : "other segments (every part is measured then)"));
  const head = "<tr><td></td><td class=n>" + (a.available ? MT.bytes(a.sampled) : "") +
    "</td><td></td><td>device memory in use: " + MT.esc(reading) + "</td></tr>";
  table.innerHTML = "<tr><td colspan=4><b>at +" + MT.dur(at) + "</b> (" + at + " ns)</td></tr>" + head + rows;
  return a;
};

// The saved map of each set nearest to `at`, drawn into the list.
MT.drawMaps = function (data, at, list, chosen, onChoose) {
  const sets = data.meta.maps || [];
  list.textContent = "";
  sets.forEach((set, si) => {
    if (!set.maps.length) return;
    let best = 0;
    set.maps.forEach((m, k) => { if (Math.abs(m.at - at) < Math.abs(set.maps[best].at - at)) best = k; });
    const info = set.maps[best], segs = data.map(si, best);
    // the allocator's memory split as the anatomy splits it
    let cache = 0, frag = 0;
    for (const seg of segs) {
      let live = 0;
      for (let k = 0; k < seg.blocks.length; k++) if (seg.blocks[k] % 2) live += Math.floor(seg.blocks[k] / 2);
      if (live) frag += seg.bytes - live; else cache += seg.bytes;
    }
    const div = document.createElement("div");
    div.className = "mt-map" + (set.name === chosen ? " chosen" : "");
    const title = document.createElement("div");
    title.className = "mt-map-title";
    title.textContent = set.name + " \u00b7 map at +" + MT.dur(info.at) + " (nearest to the moment) \u00b7 reserved " +
      MT.bytes(info.reserved) + ": allocated " + MT.bytes(info.allocated) + ", cache " + MT.bytes(cache) +
      ", fragmentation " + MT.bytes(frag) + " \u00b7 largest free " + MT.bytes(info.largest_free) + " \u00b7 " +
      info.segments + " segments";
    title.onclick = () => onChoose(set.name);
    div.appendChild(title);
    const canvas = document.createElement("canvas"), rows = Math.min(segs.length, 24), rh = 6;
    div.appendChild(canvas);
    list.appendChild(div);
    const w = canvas.width = Math.max(100, canvas.clientWidth * devicePixelRatio);
    canvas.height = (rows * rh + (segs.length > rows ? 12 : 0)) * devicePixelRatio;
    canvas.style.height = canvas.height / devicePixelRatio + "px";
    const ctx = canvas.getContext("2d"), largest = segs.length ? segs[0].bytes : 1;
    ctx.scale(devicePixelRatio, devicePixelRatio);
    const cw = w / devicePixelRatio;
    for (let r = 0; r < rows; r++) {
      const seg = segs[r], y = r * rh;
      let x = 0;
      for (let k = 0; k < seg.blocks.length; k++) {
        const v = seg.blocks[k], bytes = Math.floor(v / 2), bw = bytes / largest * cw;
        ctx.fillStyle = v % 2 ? "#4477aa" : "#dddddd";
        ctx.fillRect(x, y, Math.max(bw, 0.5), rh - 1);
        x += bw;
      }
    }
    if (segs.length > rows) {
      ctx.fillStyle = MT.muted;
      ctx.font = "10px DejaVu Sans, sans-serif";
      ctx.fillText("and " + (segs.length - rows) + " smaller segments", 0, rows * rh + 10);
    }
  });
};

// Details of allocation i for the tooltip and the self-test.
MT.details = function (data, i) {
  const m = data.meta, site = data.site[i], s = m.sites[site];
  return {
    index: i,
    bytes: data.bytes[i],
    rounded: data.sizeRound[data.size[i]],
    start_ns: data.flagsOf(i) & 1 ? null : data.start[i],
    end_ns: data.end[i] === Infinity ? null : data.end[i],
    stream: m.streams[data.streamOf(i)],
    site: data.siteFrame(site),
    stack: s ? s.stack : [],
    range: data.rangeOf(i) ? m.ranges[data.rangeOf(i)] : null,
  };
};

MT.esc = (t) => String(t).replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" }[c]));

MT.tipHtml = function (data, hit, moment) {
  if (hit.kind === "group") {
    const frame = data.siteFrame(hit.site);
    return "<b>" + hit.count + " allocation" + (hit.count === 1 ? "" : "s") + " shorter than a column</b>, " +
      MT.bytes(hit.bytes) + " in all<br><span class=k>call site</span>" + MT.esc(frame || "none recorded") +
      "<br><span class=k>moment</span>+" + MT.dur(moment) + "<br><span class=k></span>zoom in to see each";
  }
  const d = MT.details(data, hit.i);
  const life = d.start_ns === null ? "allocated before the trace" : "+" + MT.dur(d.start_ns);
  const end = d.end_ns === null ? "never freed" : "freed +" + MT.dur(d.end_ns) +
    (d.start_ns === null ? "" : ", lived " + MT.dur(d.end_ns - d.start_ns));
  let html = "<b>" + MT.bytes(d.bytes) + "</b> (" + d.bytes + " B)" +
    "<br><span class=k>requested</span>" + MT.bytes(d.bytes) + " \u00b7 rounded " + MT.bytes(d.rounded) +
    (d.rounded !== d.bytes ? " (+" + (d.rounded - d.bytes) + " B)" : "") +
    "<br><span class=k>call site</span>" + MT.esc(d.site || "none recorded") +
    "<br><span class=k>NVTX range</span>" + MT.esc(d.range || "none") +
    "<br><span class=k>stream</span>" + d.stream +
    "<br><span class=k>lifetime</span>" + life + " \u2192 " + end +
    "<br><span class=k>moment</span>+" + MT.dur(moment) + " \u00b7 allocation #" + d.index;
  if (d.stack.length > 1)
    html += "<div class=stack>" + d.stack.slice(0, 8).map(MT.esc).join("\n") + "</div>";
  return html;
};
