#!/usr/bin/env python3
"""test-compare.py — `memtrace compare A.db B.db`: a run against itself
changes nothing; against another run every figure is the one `memtrace
report --json` gives for that run (peaks, per-range peaks and bytes, bytes
at the peak by call site, failed allocations); what only one run allocated
is counted on that side alone; usage errors exit 2; `render --compare`
draws a picture."""
import json
import os
import subprocess
import sys
import tempfile

M = os.environ["MEMTRACE"]
ROOT = os.environ["MT_SOURCE_ROOT"]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr)


def run(*args, rc=0):
    r = subprocess.run([M] + list(args), capture_output=True, text=True)
    check(r.returncode == rc, "memtrace %s: exit %d, expected %d (%s)" % (" ".join(args), r.returncode, rc,
                                                                         r.stderr.strip()))
    return r.stdout


def main():
    with tempfile.TemporaryDirectory(prefix="mt-compare-test-") as work:
        return check_compare(work)


def check_compare(work):
    a = os.path.join(work, "a.db")
    b = os.path.join(work, "b.db")
    run("synth", "--pattern", "train", "--events", "20000", "--seed", "3", "-o", a)
    run("synth", "--pattern", "train", "--events", "40000", "--seed", "5", "-o", b)
    stacks = os.path.join(ROOT, "samples", "traces", "gpt2-train-stacks.db")

    same = json.loads(run("compare", stacks, stacks, "--json"))
    ra, rb = same["runs"]
    check(ra["peak_live_bytes"] == rb["peak_live_bytes"] and ra["peak_reserved_bytes"] == rb["peak_reserved_bytes"],
          "a run against itself: peaks differ")
    check(all(s["bytes"][0] == s["bytes"][1] for s in same["at_peak_by_site"]),
          "a run against itself: bytes at the peak differ by call site")
    check(all(o["allocations"] == 0 for o in same["only_in"]), "a run against itself: allocations in one run only")
    check(any(":" in s["name"] for s in same["at_peak_by_site"]), "call sites are not named by their Python line")

    out = json.loads(run("compare", a, b, "--json"))
    for side, path in enumerate((a, b)):
        rep = json.loads(run("report", path, "--json"))
        got = out["runs"][side]
        check(got["peak_live_bytes"] == rep["peak_live_bytes"], "run %d: peak live %s, report %s"
              % (side, got["peak_live_bytes"], rep["peak_live_bytes"]))
        check(got["peak_at_ns"] == rep["peak_at_ns"], "run %d: peak moment" % side)
        check(got["oom_count"] == len(rep["ooms"]), "run %d: OOM count" % side)
        for g in out["ranges"]:
            want = [r for r in rep["ranges"] if r["name"] == g["name"]]
            if want:
                check(g["peak_live_bytes"][side] == want[0]["peak_live_bytes"] and
                      g["bytes_allocated"][side] == want[0]["bytes_allocated"],
                      "run %d: range %s differs from the report" % (side, g["name"]))
            else:
                check(g["bytes_allocated"][side] == 0, "run %d: range %s is not in the report" % (side, g["name"]))
        check(sum(s["bytes"][side] for s in out["at_peak_by_site"]) == rep["peak_live_bytes"],
              "run %d: bytes at the peak by call site do not add up to the peak" % side)
        alone = out["only_in"][side]
        check(alone["allocations"] <= got["allocations"], "run %d: more allocations alone than in all" % side)
        check(all(s["count"][1 - side] == 0 and s["count"][side] > 0 for s in alone["largest"]),
              "run %d: an allocation listed as alone was made by the other run too" % side)
    changes = [abs(s["bytes"][1] - s["bytes"][0]) for s in out["at_peak_by_site"]]
    check(changes == sorted(changes, reverse=True), "call sites are not sorted by change")

    text = run("compare", a, b)
    check("peak live" in text and "Only in B" in text, "text output lacks its sections")
    run("compare", a, rc=2)
    run("compare", a, b, "--bogus", rc=2)
    run("compare", a, os.path.join(work, "missing.db"), rc=1)
    if "render" in run("--help"):
        pic = os.path.join(work, "compare.png")
        run("render", a, pic, "--compare", b)
        check(os.path.exists(pic) and os.path.getsize(pic) > 1000, "render --compare drew nothing")
    if failures:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
