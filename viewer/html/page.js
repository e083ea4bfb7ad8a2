// page.js — the page: loads the data, draws the timeline of a window and
// the panels of a moment, and follows the mouse, the keyboard and the URL
// (#t=TIME&span=TIME&policy=NAME&pin=SITE&fit=1; TIME as the CLI reads it;
// fit: the byte axis fitted to the window).

MT.Page = class {
  constructor() {
    this.canvas = document.getElementById("mt-canvas");
    this.tip = document.getElementById("mt-tip");
    this.status = document.getElementById("mt-status");
    this.pin = -1;
    this.fit = false;
    this.policy = "recorded";
    this.timings = { start: performance.now() };
    // (the fields set later, here first: one shape for the page, so that
    // code compiled before the first click or key press is kept then)
    this.frame = this.frameKey = this.image = this.pixels = this.painted = this.plot = this.client = null;
    this.lastPhases = this.data = this.query = this.hovered = this.anatomyShown = this.panelsKey = this.lastHash = null;
    // (NaN: numbers, not small integers, from the start)
    this.a = this.b = this.moment = this.hoverMoment = this.ymax = this.ymaxAll = this.scale = this.dpr = NaN;
    this.lastFrameMs = NaN;
    this.panelsWidth = 0;
    this.fixed = this.pending = false;
  }

  // The first frame from the first buffer, before the browser reads on;
  // then the parts as it reads them (frames drawn without their
  // allocations are drawn again).
  async load() {
    const meta = JSON.parse(document.getElementById("mt-meta").textContent);
    const buf = MT.base64(MT_DATA);
    this.timings.read = performance.now();
    this.data = new MT.Data(meta, buf);
    this.timings.decoded = performance.now();
    document.getElementById("mt-title").textContent = "memtrace \u00b7 " + meta.trace;
    document.getElementById("mt-subtitle").textContent = meta.subtitle + " \u00b7 " +
      MT.count(this.data.n) + " allocations \u00b7 peak " + MT.bytes(meta.peak_bytes) +
      " at +" + MT.dur(meta.peak_at);
    this.ymaxAll = this.globalMax();
    this.moment = meta.peak_at;
    this.a = 0;
    this.b = meta.span;
    this.applyHash();
    this.bind();
    const parts = this.data.readParts(() => { if (!this.frame || this.frame.partial) this.redraw(); });
    if (!this.data.levels.length) await parts; // small traces: nothing to draw before
    this.draw();
    this.timings.interactive = performance.now();
    await parts;
    this.timings.complete = performance.now();
    this.draw();
    await MT.warm(this);
    this.timings.warm = performance.now();
  }

  globalMax() {
    const d = this.data;
    let m = d.meta.peak_bytes;
    const seriesMax = (s) => { for (let k = 0; k < s.length; k++) if (s[k] > m) m = s[k]; };
    if (d.reserved) seriesMax(d.reserved.v); // samples may run far above: clipped
    d.policies.forEach((p) => seriesMax(p.line.v));
    return m > 0 ? m : 1;
  }

  // ---- geometry ----
  // (The canvas's size is read again only after a resize: reading it
  // makes the browser lay the page out, which each frame's status line
  // would otherwise cost.)
  layout() {
    const dpr = window.devicePixelRatio || 1, c = this.canvas;
    if (!this.client) this.client = { w: c.clientWidth, h: c.clientHeight };
    const w = Math.max(200, Math.round(this.client.w * dpr)), h = Math.max(150, Math.round(this.client.h * dpr));
    if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
    this.dpr = dpr;
    const left = Math.round(78 * dpr), right = Math.round(12 * dpr), top = Math.round(44 * dpr);
    const bottom = Math.round(54 * dpr);
    this.plot = { x: left, y: top, w: w - left - right, h: h - top - bottom };
  }

  // ---- the window and the moment ----
  setWindow(a, b) {
    const span = this.data.span, min = Math.min(span, 64);
    let w = Math.max(b - a, min);
    if (w > span) w = span;
    if (a < 0) a = 0;
    if (a + w > span) a = span - w;
    this.a = a;
    this.b = a + w;
  }

  zoom(factor, about) {
    const c = about === undefined ? (this.a + this.b) / 2 : about;
    this.setWindow(c - (c - this.a) * factor, c + (this.b - c) * factor);
  }

  // (by whole columns once the plot is laid out: the columns kept move as
  // they are)
  pan(fraction) {
    const w = this.b - this.a, W = this.plot ? this.plot.w : 0, dx = W ? Math.round(fraction * W) * w / W : fraction * w;
    this.setWindow(this.a + dx, this.b + dx);
  }

  center(t) {
    const w = this.b - this.a;
    this.setWindow(t - w / 2, t + w / 2);
  }

  // ---- drawing ----
  draw() {
    const t0 = performance.now();
    this.layout();
    const P = this.plot, d = this.data;
    // the same window of the same data (the mouse moving the moment): the
    // same frame, and its pixels while the scale and the pin stay
    const key = this.a + "/" + this.b + "/" + P.w + "/" + P.h + "/" + d.version;
    if (key !== this.frameKey) {
      this.frame = new MT.Frame(d, this.a, this.b, P.w);
      this.frameKey = key;
    }
    const F = this.frame, t1 = performance.now();
    let ymax = this.ymaxAll;
    if (this.fit) { ymax = 1; for (let x = 0; x < P.w; x++) ymax = Math.max(ymax, F.total[x]); }
    const ticks = MT.ticks(0, ymax * 1.04, 6, true);
    this.ymax = ticks[ticks.length - 1] >= ymax ? ticks[ticks.length - 1] : ymax * 1.04;
    this.scale = P.h / this.ymax;
    const ctx = this.canvas.getContext("2d");
    if (!this.image || this.image.width !== P.w || this.image.height !== P.h) {
      this.image = ctx.createImageData(P.w, P.h);
      this.pixels = new Uint32Array(this.image.data.buffer);
      this.painted = null;
    }
    this.paint(F);
    const top = this.painted.top, t2 = performance.now();
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    if (top < P.h) ctx.putImageData(this.image, P.x, P.y, 0, top, P.w, P.h - top);
    const t3 = performance.now();
    this.drawAxes(ctx, ticks);
    this.drawLines(ctx);
    this.drawMarkers(ctx);
    this.drawPhases(ctx);
    this.drawMoment(ctx);
    const t4 = performance.now();
    this.lastFrameMs = t4 - t0;
    this.lastPhases = { compute: t1 - t0, paint: t2 - t1, put: t3 - t2, lines: t4 - t3 }; // MT.bench reads them
    this.drawPanels();
    this.writeStatus();
  }

  // The frame's pixels, where they are not those painted last. A frame
  // that is the one painted before moved by whole columns (the same level,
  // scale, pin and data, each column kept at the same moment) moves those
  // columns and paints only the new ones.
  paint(F) {
    const W = F.W, H = this.plot.h, pix = this.pixels, was = this.painted;
    const key = this.scale + "/" + this.pin + "/" + F.level + "/" + F.minDur + "/" + this.data.version;
    if (was && was.frame === F && was.key === key) return;
    const k = was && was.key === key ? Math.round((F.a - was.a) / F.pxw) : 0; // new column x was x + k
    const src = Math.max(0, k), dst = Math.max(0, -k), len = W - Math.abs(k);
    let moved = k !== 0 && len > 0;
    for (let x = dst; moved && x < dst + len; x++) moved = F.moment[x] === was.moment[x + k];
    let top;
    if (moved) {
      for (let r = was.top; r < H; r++) pix.copyWithin(r * W + dst, r * W + src, r * W + src + len);
      F.stacked.set(was.stacked.subarray(src, src + len), dst);
      top = F.paint(pix, H, this.scale, this.pin, k > 0 ? len : 0, k > 0 ? W : -k);
      for (let r = top; r < was.top; r++) pix.fill(MT.rgb(255, 255, 255), r * W + dst, r * W + dst + len);
    } else top = F.paint(pix, H, this.scale, this.pin);
    const p = was && was.moment.length === W ? was : { moment: new Float64Array(W), stacked: new Float64Array(W) };
    p.moment.set(F.moment);
    p.stacked.set(F.stacked);
    Object.assign(p, { frame: F, key: key, a: F.a, top: top });
    this.painted = p;
  }

  xOf(t) { return this.plot.x + (t - this.a) / (this.b - this.a) * this.plot.w; }
  yOf(v) { return this.plot.y + this.plot.h - v * this.scale; }

  tickLabel(v, step) {
    const unit = step >= 1e9 ? [1e9, "s"] : step >= 1e6 ? [1e6, "ms"] : step >= 1e3 ? [1e3, "us"] : [1, "ns"];
    const dec = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / unit[0] + 1e-12))));
    return (v / unit[0]).toFixed(dec) + " " + unit[1];
  }

  drawAxes(ctx, yticks) {
    const P = this.plot, dpr = this.dpr;
    ctx.font = Math.round(11 * dpr) + "px DejaVu Sans, sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    ctx.lineWidth = 1;
    for (const v of yticks) {
      const y = Math.round(this.yOf(v)) + 0.5;
      if (y < P.y - 1) continue;
      ctx.strokeStyle = MT.grid;
      ctx.beginPath(); ctx.moveTo(P.x, y); ctx.lineTo(P.x + P.w, y); ctx.stroke();
      ctx.fillStyle = MT.text;
      ctx.fillText(MT.bytes(v), P.x - 6 * dpr, y);
    }
    const xt = MT.ticks(this.a, this.b, Math.max(2, Math.floor(P.w / (110 * dpr))), false);
    const step = xt.length > 1 ? xt[1] - xt[0] : this.b - this.a;
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    const yAxis = P.y + P.h + 18 * dpr;
    for (const v of xt) {
      const x = Math.round(this.xOf(v)) + 0.5;
      ctx.strokeStyle = MT.axis;
      ctx.beginPath(); ctx.moveTo(x, yAxis - 3 * dpr); ctx.lineTo(x, yAxis); ctx.stroke();
      ctx.fillStyle = MT.text;
      ctx.fillText(this.tickLabel(v, step), x, yAxis + 2 * dpr);
    }
    ctx.strokeStyle = MT.axis;
    ctx.strokeRect(P.x - 0.5, P.y - 0.5, P.w + 1, P.h + 1);
    ctx.textAlign = "left";
    ctx.fillStyle = MT.muted;
    ctx.fillText("time since the start of the trace", P.x, yAxis + 17 * dpr);
  }

  // A step series (times t, values v: as MT.Data.valueAt) drawn through
  // the columns' moments, which are in order: its points are walked along.
  stepLine(ctx, t, v, color, width, dash) {
    const P = this.plot, F = this.frame, n = t.length;
    ctx.strokeStyle = color;
    ctx.lineWidth = width * this.dpr;
    ctx.setLineDash(dash ? [5 * this.dpr, 4 * this.dpr] : []);
    ctx.beginPath();
    let prev = null, k = MT.lowerBound(t, F.moment[0] + 0.5, 0, n);
    for (let x = 0; x < P.w; x++) {
      while (k < n && t[k] < F.moment[x] + 0.5) k++;
      const y = Math.round(this.yOf(k ? v[k - 1] : 0)) + 0.5;
      if (prev === null) ctx.moveTo(P.x + x, y);
      else if (y !== prev) ctx.lineTo(P.x + x, prev), ctx.lineTo(P.x + x, y);
      prev = y;
    }
    ctx.lineTo(P.x + P.w, prev);
    ctx.stroke();
    ctx.setLineDash([]);
  }

  drawLines(ctx) {
    const d = this.data, P = this.plot, dpr = this.dpr;
    ctx.save();
    ctx.beginPath(); ctx.rect(P.x, P.y, P.w, P.h); ctx.clip();
    const legend = [];
    if (d.samples.t.length) {
      const s = d.samples;
      this.stepLine(ctx, s.t, s.used, MT.used, 1.2, true);
      legend.push([MT.used, "device memory in use (samples)", true]);
    }
    d.policies.forEach((p) => {
      const color = p.color;
      this.stepLine(ctx, p.line.t, p.line.v, color, p.name === this.policy ? 2.4 : 1.3, false);
      legend.push([color, "reserved: " + p.name + " (" + (p.saved ? "saved replay: " : "replayed: ") +
        p.conditions + ")", false]);
    });
    if (d.reserved) {
      this.stepLine(ctx, d.reserved.t, d.reserved.v, MT.reserved, this.policy === "recorded" ? 2 : 1.3, false);
      legend.push([MT.reserved, "reserved (recorded segments)", false]);
    }
    ctx.restore();
    ctx.font = Math.round(11 * dpr) + "px DejaVu Sans, sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    let x = P.x, y = Math.round(12 * dpr);
    legend.unshift([MT.css(MT.bands[0]), "live allocations in allocation order (grey: shorter than a column, per call site)", false, true]);
    for (const [color, label, dash, fill] of legend) {
      if (x + 30 * dpr + ctx.measureText(label).width > this.canvas.width && x > P.x) {
        x = P.x; // a second row
        y += Math.round(14 * dpr);
      }
      ctx.strokeStyle = ctx.fillStyle = color;
      if (fill) ctx.fillRect(x, y - 4 * dpr, 14 * dpr, 8 * dpr);
      else {
        ctx.lineWidth = 2 * dpr;
        ctx.setLineDash(dash ? [4 * dpr, 3 * dpr] : []);
        ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x + 14 * dpr, y); ctx.stroke();
        ctx.setLineDash([]);
      }
      ctx.fillStyle = MT.text;
      ctx.fillText(label, x + 18 * dpr, y);
      x += 30 * dpr + ctx.measureText(label).width;
    }
  }

  drawMarkers(ctx) {
    const d = this.data, P = this.plot, dpr = this.dpr, m = d.meta;
    const tri = (x, y, color, down) => {
      ctx.fillStyle = color;
      ctx.beginPath();
      ctx.moveTo(x - 5 * dpr, y); ctx.lineTo(x + 5 * dpr, y); ctx.lineTo(x, y + (down ? 8 : -8) * dpr);
      ctx.closePath(); ctx.fill();
    };
    for (const o of m.ooms || []) {
      if (o.t < this.a || o.t > this.b) continue;
      const x = this.xOf(o.t);
      ctx.strokeStyle = MT.oom;
      ctx.setLineDash([3 * dpr, 3 * dpr]);
      ctx.lineWidth = dpr;
      ctx.beginPath(); ctx.moveTo(x, P.y); ctx.lineTo(x, P.y + P.h); ctx.stroke();
      ctx.setLineDash([]);
      tri(x, P.y - 8 * dpr, MT.oom, true);
    }
    if (m.peak_bytes && m.peak_at >= this.a && m.peak_at <= this.b) {
      const x = this.xOf(m.peak_at), y = this.yOf(m.peak_bytes);
      tri(x, y - 2 * dpr, MT.peak, false);
      ctx.fillStyle = MT.text;
      ctx.font = Math.round(11 * dpr) + "px DejaVu Sans, sans-serif";
      ctx.textAlign = x > P.x + P.w - 160 * dpr ? "right" : "left";
      ctx.textBaseline = "bottom";
      ctx.fillText("peak " + MT.bytes(m.peak_bytes) + " at +" + MT.dur(m.peak_at), x + (ctx.textAlign === "left" ? 7 : -7) * dpr, y - 4 * dpr);
    }
  }

  // The phase strip: one rectangle per instance, or per pixel column where
  // instances are narrower than one.
  drawPhases(ctx) {
    const d = this.data, P = this.plot, dpr = this.dpr, ph = d.phases, names = d.meta.phases || [];
    const y = P.y + P.h + 3 * dpr, h = 12 * dpr;
    if (!ph.s.length) return;
    const first = Math.max(0, MT.lowerBound(ph.s, this.a, 0, ph.s.length) - 1);
    const widths = names.map((n) => ctx.measureText(n).width);
    ctx.font = Math.round(10 * dpr) + "px DejaVu Sans, sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "center";
    let lastPixel = -1;
    for (let k = first; k < ph.s.length && ph.s[k] < this.b; k++) {
      if (ph.e[k] < this.a) continue;
      const x0 = Math.max(P.x, this.xOf(ph.s[k])), x1 = Math.min(P.x + P.w, this.xOf(ph.e[k]));
      if (x1 - x0 < 1) {
        if (Math.floor(x0) === lastPixel) continue;
        lastPixel = Math.floor(x0);
      }
      ctx.fillStyle = MT.phases[ph.k[k] % MT.phases.length];
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), h);
      if (x1 - x0 > widths[ph.k[k]] + 6 * dpr) {
        ctx.fillStyle = "#fff";
        ctx.fillText(names[ph.k[k]], (x0 + x1) / 2, y + h / 2);
      }
    }
  }

  drawMoment(ctx) {
    if (this.moment < this.a || this.moment > this.b) return;
    const P = this.plot, x = Math.round(this.xOf(this.moment)) + 0.5;
    ctx.strokeStyle = "rgba(0,0,0,0.55)";
    ctx.lineWidth = this.dpr;
    ctx.beginPath(); ctx.moveTo(x, P.y); ctx.lineTo(x, P.y + P.h); ctx.stroke();
  }

  // The panels of the moment, redrawn only when it or the policy changes.
  drawPanels() {
    if (!this.data.complete) {
      document.getElementById("mt-anatomy-table").textContent = "reading the allocations\u2026";
      return;
    }
    const key = this.moment + "/" + this.policy;
    if (key === this.panelsKey) return;
    this.panelsKey = key;
    this.anatomyShown = MT.drawAnatomy(this.data, this.moment, document.getElementById("mt-anatomy-bar"),
      document.getElementById("mt-anatomy-table"));
    MT.drawMaps(this.data, this.moment, document.getElementById("mt-map-list"), this.policy,
      (name) => { this.policy = name; this.draw(); this.writeHash(); });
    // widths depend on the layout: draw again on resize
    this.panelsWidth = this.canvas.clientWidth;
  }

  writeStatus() {
    const F = this.frame, pin = this.pin >= 0 ? " \u00b7 pinned call site: " +
      (this.data.siteFrame(this.pin) || "none recorded") + " (Esc unpins)" : "";
    this.status.textContent = "window +" + MT.dur(this.a) + " \u2026 +" + MT.dur(this.b) + " (" +
      MT.dur(this.b - this.a) + ", " + MT.dur(F.pxw) + " a column, " +
      (F.level < 0 ? "every allocation" : "level " + F.level) + ", " + MT.count(F.ind.length) +
      " drawn one by one" + (F.partial ? "; reading the allocations for more detail\u2026" : "") +
      ") \u00b7 moment +" + MT.dur(this.moment) + pin;
  }

  // ---- the mouse ----
  // The column and byte height under client coordinates.
  at(ev) {
    const r = this.canvas.getBoundingClientRect(), P = this.plot;
    const px = (ev.clientX - r.left) * this.dpr, py = (ev.clientY - r.top) * this.dpr;
    const x = Math.floor(px - P.x);
    return { x: x, inside: x >= 0 && x < P.w && py >= P.y && py < P.y + P.h, bytes: (P.y + P.h - py) / this.scale };
  }

  hover(ev) {
    const p = this.at(ev), F = this.frame;
    if (!p.inside) { this.tip.hidden = true; this.hovered = null; return; }
    this.hovered = F.hit(p.x, p.bytes);
    this.hoverMoment = F.moment[p.x];
    if (!this.fixed) { this.moment = F.moment[p.x]; this.redraw(); }
    if (!this.hovered) { this.tip.hidden = true; return; }
    this.tip.innerHTML = this.data.hasDetail ? MT.tipHtml(this.data, this.hovered, F.moment[p.x])
      : "reading the details\u2026";
    this.tip.hidden = false;
    const r = this.canvas.getBoundingClientRect(), pr = this.canvas.parentElement.getBoundingClientRect();
    let left = ev.clientX - pr.left + 14, top = ev.clientY - pr.top + 14;
    if (left + this.tip.offsetWidth > pr.width) left = ev.clientX - pr.left - this.tip.offsetWidth - 14;
    if (top + this.tip.offsetHeight > r.height) top = Math.max(0, ev.clientY - pr.top - this.tip.offsetHeight - 14);
    this.tip.style.left = left + "px";
    this.tip.style.top = top + "px";
  }

  // The next animation frame draws (once, however often asked).
  redraw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  }

  bind() {
    const c = this.canvas;
    let drag = null;
    c.addEventListener("mousemove", (ev) => {
      if (drag) {
        const dx = (ev.clientX - drag.x) * this.dpr / this.plot.w * (drag.b - drag.a);
        if (Math.abs(ev.clientX - drag.x) > 2) drag.moved = true;
        this.setWindow(drag.a - dx, drag.b - dx);
        this.draw();
        return;
      }
      this.hover(ev);
    });
    c.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, a: this.a, b: this.b, moved: false }; });
    window.addEventListener("mouseup", (ev) => {
      const d = drag;
      drag = null;
      if (!d) return;
      if (d.moved) { this.writeHash(); return; }
      this.click(ev);
    });
    c.addEventListener("mouseleave", () => { this.tip.hidden = true; });
    c.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const p = this.at(ev), t = this.a + (p.x + 0.5) * (this.b - this.a) / this.plot.w;
      this.zoom(Math.pow(1.0015, ev.deltaY), t);
      this.draw();
      this.writeHash();
    }, { passive: false });
    window.addEventListener("keydown", (ev) => this.key(ev));
    window.addEventListener("hashchange", () => { if (location.hash !== this.lastHash) { this.applyHash(); this.draw(); } });
    window.addEventListener("resize", () => { this.panelsKey = null; this.client = null; this.draw(); });
  }

  click(ev) {
    const p = this.at(ev);
    if (!p.inside) return;
    const hit = this.frame.hit(p.x, p.bytes);
    const site = hit ? (hit.kind === "alloc" ? this.data.site[hit.i] : hit.site) : -1;
    this.pin = site === this.pin ? -1 : site;
    this.moment = this.frame.moment[p.x];
    this.fixed = this.pin >= 0;
    this.draw();
    this.writeHash();
  }

  key(ev) {
    const k = ev.key, F = this.frame, m = this.data.meta;
    const step = (dir) => { // to the next column's moment (columns of one bin share theirs)
      let x = F.firstColumnAtOrAfter(this.moment);
      if (dir < 0) x--;
      else while (x < F.W && F.moment[x] <= this.moment) x++;
      x = Math.max(0, Math.min(F.W - 1, x));
      this.moment = F.moment[x];
      this.fixed = true;
    };
    if (k === "ArrowLeft") this.pan(-0.1);
    else if (k === "ArrowRight") this.pan(0.1);
    else if (k === "+" || k === "=") this.zoom(0.5, this.moment >= this.a && this.moment <= this.b ? this.moment : undefined);
    else if (k === "-" || k === "_") this.zoom(2, this.moment >= this.a && this.moment <= this.b ? this.moment : undefined);
    else if (k === "0" || k === "Home") this.setWindow(0, this.data.span);
    else if (k === "p") { this.moment = m.peak_at; this.fixed = true; this.center(m.peak_at); }
    else if (k === "o") {
      const next = (m.ooms || []).find((o) => o.t > this.moment) || (m.ooms || [])[0];
      if (!next) return;
      this.moment = next.t; this.fixed = true; this.center(next.t);
    }
    else if (k === "[") step(-1);
    else if (k === "]") step(1);
    else if (k === "Escape") { this.pin = -1; this.fixed = false; }
    else if (k === "y") this.fit = !this.fit;
    else return;
    ev.preventDefault();
    this.draw();
    this.writeHash();
  }

  // ---- the URL ----
  applyHash() {
    const q = new URLSearchParams(location.hash.replace(/^#/, ""));
    const span = this.data.span;
    const t = MT.parseTime(q.get("t")), w = MT.parseTime(q.get("span"));
    if (q.has("span") && w > 0) { const c = (this.a + this.b) / 2; this.setWindow(c - w / 2, c + w / 2); }
    else if (!q.has("t")) this.setWindow(0, span);
    if (q.has("t") && t >= 0) { this.moment = Math.min(t, span - 1); this.fixed = true; this.center(this.moment); }
    if (q.has("policy")) this.policy = q.get("policy");
    if (q.has("pin")) this.pin = parseInt(q.get("pin"), 10);
    if (q.has("fit")) this.fit = q.get("fit") !== "0";
    this.query = q;
  }

  writeHash() {
    const parts = ["t=" + Math.round(this.moment) + "ns", "span=" + Math.round(this.b - this.a) + "ns"];
    if (this.policy !== "recorded") parts.push("policy=" + encodeURIComponent(this.policy));
    if (this.pin >= 0) parts.push("pin=" + this.pin);
    if (this.fit) parts.push("fit=1");
    this.lastHash = "#" + parts.join("&");
    history.replaceState(null, "", this.lastHash);
  }
};

window.mtPage = new MT.Page();
window.mtReady = window.mtPage.load().then(() => {
  if (window.mtPage.query.has("selftest")) MT.selftest(window.mtPage);
  return true;
}, (e) => {
  document.getElementById("mt-status").textContent = "could not read the data: " + e;
  throw e;
});
