#!/usr/bin/env python3
"""The README's pictures of the interactive view and of two runs compared:
  html-view.png  the HTML view of samples/traces/gpt2-train-stacks.db at the
                 peak of live bytes, the largest allocation hovered (headless
                 Chromium, through tests/html/cdp.py);
  compare.png    `memtrace render A.db compare.png --compare B.db` of two
                 synthetic training runs (synth seeds 3 and 4: two model
                 shapes), B's phases stretched to A's.
Usage, from the repository root: docs/images/interactive.py [MEMTRACE]
(default build/cli/memtrace)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "html"))
import cdp  # noqa: E402


def main():
    m = sys.argv[1] if len(sys.argv) > 1 else "build/cli/memtrace"
    work = tempfile.mkdtemp(prefix="mt-images-")
    trace = os.path.join(ROOT, "samples", "traces", "gpt2-train-stacks.db")
    html = os.path.join(work, "view.html")
    subprocess.run([m, "render", trace, html], check=True)
    peak = json.loads(subprocess.run([m, "report", trace, "--json"], check=True,
                                     capture_output=True, text=True).stdout)["peak_at_ns"]
    with cdp.Browser() as b:
        page = b.open("file://%s#t=%dns&span=8ms" % (html, peak), 1600, 1000)
        page.wait("window.mtReady")
        res = page.eval("MT.selftest(mtPage)")
        g = next(g for g in res["top"] if "hover" in g)
        page.mouse(g["hover"]["x"], g["hover"]["y"])
        page.screenshot(os.path.join(HERE, "html-view.png"))
    a, bb = os.path.join(work, "a.db"), os.path.join(work, "b.db")
    for path, seed in ((a, "3"), (bb, "4")):
        subprocess.run([m, "synth", "--pattern", "train", "--events", "20000", "--seed", seed, "-o", path],
                       check=True, capture_output=True)
    subprocess.run([m, "render", a, os.path.join(HERE, "compare.png"), "--compare", bb], check=True)


if __name__ == "__main__":
    main()
