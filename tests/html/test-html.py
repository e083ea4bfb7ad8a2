#!/usr/bin/env python3
"""test-html.py — the interactive HTML view in a real browser (Debian's
headless Chromium, driven through tests/html/cdp.py). For every sample trace
(samples/traces/*.db) and two synthetic ones (the larger one with the
level-of-detail pyramid and its allocations in several parts):
  - `memtrace render TRACE view.html` writes one file that loads nothing from
    elsewhere;
  - at the peak and at other moments, given through the URL state
    (#t=...&span=...&selftest), the page's self-test passes and what it shows
    equals `memtrace report --json --at` at that moment: the bytes live, the
    anatomy, and the 20 largest allocations live with size, start, stream,
    call site and NVTX range;
  - hovering each of those allocations with the mouse finds it;
  - the keyboard moves the moment and the URL follows;
  - screenshots equal the reference pictures in tests/html/reference/
    (tolerance as for the cairo views; MT_UPDATE_REFERENCES=1 rewrites
    them; on a mismatch NAME-actual.png and NAME-diff.png are left in the
    working folder).
Exits 77 (skip) where Chromium cannot start.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
import png  # noqa: E402

M = os.environ["MEMTRACE"]
ROOT = os.environ["MT_SOURCE_ROOT"]
REFS = os.path.join(ROOT, "tests", "html", "reference")
WIDTH, HEIGHT = 1200, 900
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def run(*args):
    r = subprocess.run([M] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("memtrace %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def report_at(trace, t):
    return json.loads(run("report", trace, "--json", "--at", "%dns" % t))


def check_file(name, html):
    text = open(html, encoding="utf-8").read()
    if re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) or "<link" in text:
        fail("%s: the page refers to something outside itself" % name)
    if not text.startswith("<!DOCTYPE html>") or not text.rstrip().endswith("</html>"):
        fail("%s: not one whole HTML document" % name)


def compare_moment(name, page, trace, t):
    rep = report_at(trace, t)
    res = page.eval("window.mtResult")
    if not res:
        fail("%s +%dns: no self-test result" % (name, t))
        return
    for c in res["checks"]:
        if not c["ok"]:
            fail("%s +%dns: page check '%s' failed: %s" % (name, t, c["name"], c["detail"]))
    if res["moment_ns"] != t:
        fail("%s: page moment %s, asked %d" % (name, res["moment_ns"], t))
    if res["live_bytes"] != rep["live_at_bytes"]:
        fail("%s +%dns: live %s, report %s" % (name, t, res["live_bytes"], rep["live_at_bytes"]))
    want = rep["anatomy"]
    got = res["anatomy"]
    if (want is None) != (got is None):
        fail("%s +%dns: anatomy %s, report %s" % (name, t, got is not None, want is not None))
    elif want:
        for key in ("at_ns", "measured_at_ns", "reading_at_ns", "reading_bytes", "parts"):
            if got[key] != want[key]:
                fail("%s +%dns: anatomy %s %s, report %s" % (name, t, key, got[key], want[key]))
    top = rep["top_at"]
    if len(res["top"]) != len(top):
        fail("%s +%dns: %d largest, report %d" % (name, t, len(res["top"]), len(top)))
    for k, (g, w) in enumerate(zip(res["top"], top)):
        for key, wkey in (("bytes", "bytes"), ("start_ns", "start_ns"), ("stream", "stream"),
                          ("site", "site"), ("range", "range"), ("age_ns", "age_ns")):
            if g[key] != w[wkey]:
                fail("%s +%dns: allocation %d %s %r, report %r" % (name, t, k + 1, key, g[key], w[wkey]))
    hovered = 0
    for g in res["top"]:
        if "hover" not in g:
            continue
        page.mouse(g["hover"]["x"], g["hover"]["y"])
        h = page.eval("MT.hovered(mtPage)")
        hovered += 1
        if not h or h.get("index") != g["index"]:
            fail("%s +%dns: hovering allocation #%d found %s" % (name, t, g["index"], h and h.get("index")))
        elif MT_bytes(g["bytes"]) not in h["tooltip"] or (g["site"] and g["site"] not in h["tooltip"]):
            fail("%s +%dns: tooltip of #%d lacks its size or call site: %s" % (name, t, g["index"], h["tooltip"]))
    if top and not hovered:
        fail("%s +%dns: no allocation tall enough to hover" % (name, t))
    page.mouse(1, 1)


def MT_bytes(b):
    """As MT.bytes and mt_size_format."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    if b < 1024:
        return "%d B" % b
    v, k = float(b), 0
    while True:
        v /= 1024
        k += 1
        if not (v >= 1024 - 0.5 and k + 1 < len(units)):
            break
    return ("%.2f" if v < 9.995 else "%.1f" if v < 99.95 else "%.0f") % v + " " + units[k]


def open_page(b, html, state):
    page = b.open("file://%s#%s" % (html, state), WIDTH, HEIGHT)
    page.wait("window.mtReady", timeout=120)
    return page


def check_keys(name, b, html, peak):
    page = open_page(b, html, "")
    page.key("p")
    h = page.eval("location.hash")
    if "t=%dns" % peak not in h:
        fail("%s: key p gave %s, not the peak %d" % (name, h, peak))
    page.key("]")
    t = page.eval("mtPage.moment")
    if not t > peak:
        fail("%s: key ] did not move the moment past the peak (%s)" % (name, t))
    page.key("+")
    page.key("Escape")
    if "span=" not in page.eval("location.hash"):
        fail("%s: the URL lost its span" % name)


def check_parts(b, html):
    """A trace with the pyramid: the page has its levels and more than one
    part of allocations, and once all are in, a frame is not partial."""
    page = open_page(b, html, "")
    got = page.eval("[mtPage.data.levels.length, mtPage.data.chunkReady.length, mtPage.data.complete, "
                    "mtPage.data.long.index.length, mtPage.frame.partial === true, "
                    "mtPage.timings.interactive <= mtPage.timings.complete]")
    if got[0] < 1 or got[1] < 2 or not got[2] or got[3] < 1 or got[4] or not got[5]:
        fail("synth-large: levels, chunks, complete, long, partial, first frame first: %s" % got)
    # the warm-up (viewer/html/warm.js) ran after the last part and left the
    # window, the moment and the frame shown as they were
    got = page.eval("""(() => {
      const p = mtPage, d = p.data, F = p.frame, shown = [F.moment, F.total, F.ind].map((v) => v.slice());
      const G = new MT.Frame(d, p.a, p.b, p.plot.w); // (in the scratch arrays F reads: hence the copies)
      const same = (u, v) => u.length === v.length && u.every((x, k) => x === v[k]);
      return [p.timings.warm >= p.timings.complete, p.a === 0 && p.b === d.span, p.moment === d.meta.peak_at,
        same(shown[0], G.moment) && same(shown[1], G.total) && same(shown[2], G.ind)];
    })()""")
    if got != [True] * 4:
        fail("synth-large: warmed after the last part, window, moment, frame as shown: %s" % got)


def check_policies(b, html):
    """The saved replays: a reserved line and a segment map each, the one
    the URL names chosen."""
    page = open_page(b, html, "policy=bestfit")
    sets = page.eval("mtPage.data.meta.maps.map((s) => s.name + ':' + s.maps.length)")
    names = [s.split(":")[0] for s in sets]
    if names[:1] != ["recorded"] or not any(n.startswith("caching") for n in names) \
            or not any(n.startswith("bestfit") for n in names):
        fail("synth: segment maps of %s, expected recorded, caching and bestfit" % names)
    if any(s.endswith(":0") for s in sets):
        fail("synth: a policy without segment maps: %s" % sets)
    shown = page.eval("Array.from(document.querySelectorAll('.mt-map')).map((e) => e.className)")
    if len(shown) != len(sets) or sum("chosen" in c for c in shown) != 1:
        fail("synth: maps shown %s" % shown)
    lines = page.eval("mtPage.data.policies.map((p) => p.name + ':' + p.saved + ':' + p.line.t.length)")
    if len(lines) != 2 or any(not l.split(":")[-1].isdigit() or l.split(":")[-1] == "0" for l in lines) \
            or any(":true:" not in l for l in lines):
        fail("synth: policy lines %s" % lines)


def screenshot(b, html, state, name, hover_largest, work):
    page = open_page(b, html, state)
    if hover_largest:
        res = page.eval("MT.selftest(mtPage)")
        g = next((g for g in res["top"] if "hover" in g), None)
        if g:
            page.mouse(g["hover"]["x"], g["hover"]["y"])
    got = os.path.join(work, name + ".png")
    page.screenshot(got)
    ref = os.path.join(REFS, name + ".png")
    if os.environ.get("MT_UPDATE_REFERENCES") == "1":
        shutil.copy(got, ref)
        print("updated " + ref, file=sys.stderr)
        return
    if not os.path.exists(ref):
        fail("%s: no reference %s (MT_UPDATE_REFERENCES=1 makes it)" % (name, ref))
        return
    why = png.compare(got, ref, name + "-diff.png")
    if why:
        shutil.copy(got, name + "-actual.png")
        fail("%s: %s (wrote %s-actual.png and %s-diff.png)" % (name, why, name, name))


def main():
    work = tempfile.mkdtemp(prefix="mt-html-test-")
    try:
        b = cdp.Browser()
    except cdp.Unavailable as e:
        print("skip: %s" % e, file=sys.stderr)
        return 77
    try:
        traces = sorted(glob.glob(os.path.join(ROOT, "samples", "traces", "*.db")))
        synth = os.path.join(work, "synth.db")
        run("synth", "--pattern", "train", "--events", "20000", "--seed", "3", "-o", synth)
        run("replay", synth, "--policy", "caching,bestfit", "--backend", "sim")  # saved replays
        traces.append(synth)
        # more allocations than the page draws one by one: the pyramid, the
        # long allocations in the first buffer and the rest in parts
        large = os.path.join(work, "synth-large.db")
        run("synth", "--pattern", "train", "--events", "300000", "--seed", "5", "-o", large)
        traces.append(large)
        for trace in traces:
            name = os.path.basename(trace)[:-3]
            html = os.path.join(work, name + ".html")
            run("render", trace, html)
            check_file(name, html)
            if trace == large:
                check_parts(b, html)
            rep = json.loads(run("report", trace, "--json"))
            peak = rep["peak_at_ns"]
            moments = [peak, peak // 3 + 1] + [o["at_ns"] for o in rep["ooms"][:2]]
            for t in moments:
                page = open_page(b, html, "t=%dns&span=600ns&fit=1&selftest" % t)
                compare_moment(name, page, trace, t)
            check_keys(name, b, html, peak)
        check_policies(b, os.path.join(work, "synth.html"))
        stacks = os.path.join(ROOT, "samples", "traces", "gpt2-train-stacks.db")
        if stacks in traces:
            peak = json.loads(run("report", stacks, "--json"))["peak_at_ns"]
            screenshot(b, os.path.join(work, "gpt2-train-stacks.html"), "t=%dns&span=8ms" % peak,
                       "gpt2-peak-hover", True, work)
        screenshot(b, os.path.join(work, "synth.html"), "", "synth-whole", False, work)
    finally:
        b.close()
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d failures" % len(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
