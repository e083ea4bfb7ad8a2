#!/usr/bin/env python3
"""gpu suite for the recorder: records the CUDA samples (samples/cuda) under
`memtrace record` and checks exact counts, sizes, streams and pairing; a
PyTorch run's recorded peak against PyTorch's own figures; and the
robustness cases (abort, segfault, SIGKILL, SIGINT, a second CUPTI
subscriber, an unwritable output, a full disk). Exits 77 where no GPU is.

Environment: MEMTRACE (the binary), TRACE_DUMP, SAMPLES (folder of the
built samples: sample-sync, ..., second-subscriber), MT_SOURCE_ROOT.
Prints one "ok"/"not ok" line per check (TAP) and exits 1 on any failure.
"""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_trace import Trace, caching_peak_allocated  # noqa: E402
from gpu_common import (DUMP, MEMTRACE, SAMPLES, MiB, check, main_of, record,  # noqa: E402
                        sample, sizes, skip, warnings)


def test_sync(tmp):
    out = os.path.join(tmp, "sync.db")
    p = record(out, sample("sync"), "3")
    check("sync: exit status 0", p.returncode == 0, p.stderr)
    t = Trace(DUMP, out)
    a = t.allocs("driver", mem="device")
    expected = sorted([MiB, 3 * MiB + 17, 256, 64 * MiB] * 3)
    check("sync: 12 driver allocs of the known sizes", sizes(a) == expected, sizes(a))
    check("sync: allocs say cudaMalloc", all(e["api"] == "cudaMalloc" for e in a),
          {e["api"] for e in a})
    check("sync: synchronous allocs on stream 0 (default or unknown)",
          {e["stream"] for e in a} == {0}, {e["stream"] for e in a})
    check("sync: every free pairs with its alloc, same size",
          t.pairing("driver") == (12, 0, 0, 0), t.pairing("driver"))
    ts = [e["ts"] for k in ("alloc", "free") for e in t.events[k]]
    merged = [e["ts"] for _, e in t.merged("driver")]
    check("sync: events read back in timestamp order", merged == sorted(merged) and len(ts) == 24)
    k = t.events["kernel"]
    check("sync: 3 kernels, named, at their launch times (the default --kernels launch)",
          len(k) == 3 and all(e["named"] and e["end"] == e["ts"] for e in k)
          and t.meta.get("kernels") == "launch", (k, t.meta.get("kernels")))
    check("sync: no copy or set records with --kernels launch",
          not t.events["memcpy"] and not t.events["memset"])
    gpu_out = os.path.join(tmp, "sync-gpu.db")
    p_gpu = record(gpu_out, sample("sync"), "3", opts=["--kernels", "gpu"])
    g = Trace(DUMP, gpu_out)
    check("sync --kernels gpu: 3 kernels with GPU start and end",
          p_gpu.returncode == 0 and len(g.events["kernel"]) == 3
          and all(e["end"] > e["ts"] for e in g.events["kernel"]), g.events["kernel"])
    launch_names, gpu_names = kernel_names(out), kernel_names(gpu_out)
    check("sync --kernels gpu: the same kernel names as --kernels launch",
          launch_names == gpu_names and len(launch_names) == 3 and all(launch_names),
          (launch_names, gpu_names))
    cp = g.events["memcpy"]
    check("sync --kernels gpu: 3 HtoD copies of 1 MiB",
          len(cp) == 3 and all(c["bytes"] == MiB and c["copy"] == 1 for c in cp), cp)
    check("sync --kernels gpu: 3 memsets", len(g.events["memset"]) == 3, len(g.events["memset"]))
    r = t.events["range"]
    check("sync: 3 NVTX ranges 'round', closed, depth 0",
          len(r) == 3 and all(x["name"] == "round" and x["end"] > x["ts"] and x["depth"] == 0
                              for x in r), r)
    check("sync: kernels inside their rounds", all(
        any(x["ts"] <= k["ts"] <= x["end"] for x in r) for k in t.events["kernel"]))
    check("sync: meta capture and zero dropped records",
          t.meta.get("capture", "").startswith("requests") and t.meta.get("dropped_records") == "0",
          t.meta)
    check("sync: one device row with name, uuid, total",
          len(t.devices) == 1 and t.devices[0]["total"] > 0 and t.devices[0]["uuid"].startswith("GPU-"),
          t.devices)
    check("sync: summary printed", "peak live" in p.stderr and "events:" in p.stderr, p.stderr)


def test_async(tmp):
    out = os.path.join(tmp, "async.db")
    p = record(out, sample("async"), "4")
    check("async: exit status 0", p.returncode == 0, p.stderr)
    t = Trace(DUMP, out)
    a = t.allocs("driver", mem="async_pool")
    check("async: 24 async-pool allocs", len(a) == 24, len(a))
    by_stream = {}
    for e in a:
        by_stream.setdefault(e["stream"], set()).add(e["bytes"])
    want = {(i + 1) * MiB + i * 512 for i in range(3)}
    check("async: three streams, one size each, the known sizes",
          len(by_stream) == 3 and all(len(s) == 1 for s in by_stream.values())
          and set().union(*by_stream.values()) == want, by_stream)
    check("async: streams are real ids (not 0)", 0 not in by_stream, list(by_stream))
    check("async: allocs say cudaMallocAsync", all(e["api"] == "cudaMallocAsync" for e in a),
          {e["api"] for e in a})
    pr = t.pairing("driver")
    check("async: every free pairs", pr[0] == 24 and pr[1] == 0 and pr[2] == 0, pr)


def test_vmm(tmp):
    out = os.path.join(tmp, "vmm.db")
    p = record(out, sample("vmm"))
    check("vmm: exit status 0", p.returncode == 0, p.stderr)
    gran = int(re.search(r"4 x (\d+) bytes", p.stdout).group(1)) if "4 x" in p.stdout else -1
    t = Trace(DUMP, out)
    a = t.allocs("driver", mem="vmm")
    check("vmm: 4 mapped allocs of one granule each", sizes(a) == [gran] * 4, (sizes(a), gran))
    check("vmm: allocs say cuMemCreate", all(e["api"] == "cuMemCreate" for e in a))
    check("vmm: 4 unmaps pair with the maps", t.pairing("driver") == (4, 0, 0, 0), t.pairing("driver"))


def test_managed(tmp):
    out = os.path.join(tmp, "managed.db")
    p = record(out, sample("managed"))
    check("managed: exit status 0", p.returncode == 0, p.stderr)
    t = Trace(DUMP, out)
    check("managed: managed sizes", sizes(t.allocs("driver", mem="managed")) == [MiB + 3, 16 * MiB],
          sizes(t.allocs("driver", mem="managed")))
    check("managed: pinned host sizes", sizes(t.allocs("driver", mem="pinned_host")) == [2 * MiB, 4 * MiB],
          sizes(t.allocs("driver", mem="pinned_host")))
    check("managed: all freed", t.pairing("driver")[1:] == (0, 0, 0), t.pairing("driver"))


def test_oom(tmp):
    out = os.path.join(tmp, "oom.db")
    p = record(out, sample("oom"))
    check("oom: exit status 0", p.returncode == 0, p.stderr)
    t = Trace(DUMP, out)
    total = t.devices[0]["total"] if t.devices else 0
    f = t.events["alloc_failed"]
    check("oom: two failures recorded", len(f) == 2, f)
    check("oom: requested twice the device total", all(x["bytes"] == 2 * total for x in f), f)
    check("oom: runtime then driver API", [x["api"] for x in f] == ["cudaMalloc", "cuMemAlloc"], f)
    check("oom: error is out-of-memory (2)", all(x["error"] == 2 for x in f), f)
    check("oom: free memory at that moment is known", all(0 < x["free"] <= total for x in f), f)
    check("oom: the 1 MiB alloc and free", sizes(t.allocs("driver")) == [MiB]
          and t.pairing("driver") == (1, 0, 0, 0))


def test_threads(tmp):
    out = os.path.join(tmp, "threads.db")
    p = record(out, sample("threads"), "50")
    check("threads: exit status 0", p.returncode == 0, p.stderr)
    t = Trace(DUMP, out)
    want = sorted([(k + 1) * 4096 + k for k in range(4)] * 50)
    check("threads: 200 allocs of the known sizes", sizes(t.allocs("driver")) == want)
    check("threads: all 200 paired", t.pairing("driver") == (200, 0, 0, 0), t.pairing("driver"))


def test_fork(tmp):
    out = os.path.join(tmp, "fork.db")
    p = record(out, sample("fork"))
    check("fork: exit status 0", p.returncode == 0, p.stderr)
    t = Trace(DUMP, out)
    check("fork: two process rows, the child names the parent",
          len(t.processes) == 2 and t.processes[1]["parent"] == t.processes[0]["id"], t.processes)
    per = {}
    for e in t.allocs("driver"):
        per.setdefault(e["process"], []).append(e["bytes"])
    check("fork: 1 alloc in the parent, 3 in the child",
          sorted(map(sorted, per.values())) == [[2 * MiB], [3 * MiB] * 3], per)


def test_crash(tmp, how, status):
    out = os.path.join(tmp, "crash-%s.db" % how)
    p = record(out, sample("crash"), "100", how)
    check("crash %s: exit status %d" % (how, status), p.returncode == status, (p.returncode, p.stderr))
    t = Trace(DUMP, out)
    check("crash %s: trace readable" % how, t.rc == 0, t.error)
    check("crash %s: all 100 allocations made before the crash" % how,
          len(t.allocs("driver")) == 100, len(t.allocs("driver")))


def child_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def kernel_names(trace):
    """The kernel names of trace, sorted, from `memtrace export` CSV (once
    a trace: export never replaces a file)."""
    csv_path = trace + ".csv"
    p = subprocess.run([MEMTRACE, "export", trace, "-o", csv_path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("memtrace export %s: %s" % (trace, p.stderr.strip()))
    with open(csv_path) as f:
        return sorted(r["name"] for r in csv.DictReader(f) if r["kind"] == "kernel")


def test_signal(tmp, sig, target, status, mode="hang"):
    """SIGKILL the recorded program, or SIGINT memtrace (forwarded). In mode
    'busy' the program keeps a kernel running at every flush."""
    name = signal.Signals(sig).name + ("" if mode == "hang" else " (%s)" % mode)
    out = os.path.join(tmp, "%s-%s.db" % (signal.Signals(sig).name, mode))
    # busy: CUPTI's kernel records, which a forced flush hands over
    kernels = ["--kernels", "gpu"] if mode == "busy" else []
    cmd = [MEMTRACE, "record", "-o", out] + kernels + ["--", sample("crash"), "100", mode]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    time.sleep(0.3)  # more than one flush interval after the last allocation
    victim = child_of(p.pid) if target == "program" else p.pid
    if victim:
        os.kill(victim, sig)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    check("%s: program was ready and the signal sent" % name, line.strip() == "ready" and victim)
    check("%s: exit status %d" % (name, status), p.returncode == status, (p.returncode, err))
    t = Trace(DUMP, out)
    check("%s: trace readable with all 100 allocations" % name,
          t.rc == 0 and len(t.allocs("driver")) == 100, (t.error, len(t.allocs("driver"))))
    if mode == "busy":
        check("%s: kernels that ran before the last flush are recorded, with times" % name,
              len(t.events["kernel"]) > 0 and all(k["end"] > k["ts"] for k in t.events["kernel"]),
              len(t.events["kernel"]))


def test_second_subscriber(tmp):
    out = os.path.join(tmp, "second.db")
    p = record(out, os.path.join(SAMPLES, "second-subscriber"))
    check("second subscriber: program ran to its end", p.returncode == 0 and p.stdout.strip() == "ok",
          (p.returncode, p.stdout, p.stderr))
    w = warnings(p.stderr)
    check("second subscriber: exactly one warning naming it",
          len(w) == 1 and "CUPTI subscriber" in w[0], w)


def test_unwritable(tmp):
    p = record("/nonexistent-dir/x/trace.db", sample("sync"), "1")
    check("unwritable output: program ran with status 0", p.returncode == 0, p.stderr)
    w = warnings(p.stderr)
    check("unwritable output: exactly one warning line", len(w) == 1, w)


def test_full_disk(tmp):
    d = os.path.join(tmp, "full")
    os.makedirs(d, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", d],
                      stderr=subprocess.DEVNULL).returncode != 0:
        skip("full disk", "cannot mount a small tmpfs")
        return
    try:
        p = record(os.path.join(d, "t.db"), sample("threads"), "2000")
        check("full disk: program ran with status 0", p.returncode == 0, p.stderr)
        w = warnings(p.stderr)
        check("full disk: exactly one warning line", len(w) == 1, w)
    finally:
        subprocess.run(["umount", d])


def test_exit_status(tmp):
    p = record(os.path.join(tmp, "none.db"), "/bin/sh", "-c", "exit 7")
    check("exit status of a program without CUDA is kept", p.returncode == 7, p.stderr)


def test_torch(tmp):
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("torch", "no PyTorch")
        return
    out = os.path.join(tmp, "torch.db")
    p = record(out, sys.executable, os.path.join(os.path.dirname(__file__), "torch_small.py"),
               timeout=900)
    check("torch: exit status 0", p.returncode == 0, p.stderr[-2000:])
    fig = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
    t = Trace(DUMP, out)
    req = t.allocs("request")
    check("torch: capture through the allocator hook",
          "hook" in t.meta.get("capture", ""), t.meta.get("capture"))
    check("torch: no call sites unless asked", t.meta.get("stacks") == "none"
          and not any(e["site"] for e in req), t.meta.get("stacks"))
    check("torch: every request recorded", len(req) == fig.get("allocs"), (len(req), fig.get("allocs")))
    pr = t.pairing("request")
    # Tensors alive when the figures were taken may be freed at exit.
    check("torch: every free pairs, sizes agree, at most the live ones unfreed",
          pr[1] == 0 and pr[3] == 0 and pr[2] <= fig.get("live", 0), (pr, fig.get("live")))
    peak = t.peak_live("request")
    check("torch: peak live == requested_bytes.all.peak",
          peak == fig.get("torch_requested_bytes_peak"), (peak, fig))
    check("torch: reader's peak agrees", t.peak.get("request") == peak, (t.peak, peak))
    rpeak = caching_peak_allocated(MEMTRACE, out)
    check("torch: caching replay's allocated peak within 0.1% of max_memory_allocated",
          abs(rpeak - fig.get("torch_max_memory_allocated", 0)) <= 0.001 * rpeak, (rpeak, fig))
    check("torch: reserved peak == max_memory_reserved",
          t.torch_reserved_peak() == fig.get("torch_max_memory_reserved"), (t.torch_reserved_peak(), fig))
    check("torch: request streams are CUPTI ids (two streams)",
          len({e["stream"] for e in req}) == 2 and 0 not in {e["stream"] for e in req},
          {e["stream"] for e in req})
    delayed = [e for e in t.frees("request") if e["reuse"] > 0]
    check("torch: record_stream frees carry a reuse delay", len(delayed) >= 1, len(delayed))
    # Requests are stamped on PyTorch's clock and mapped onto CUPTI's: the
    # request that made a segment (served from its start) comes after the
    # driver's allocation of it, and soon after.
    gaps = []
    for d in t.allocs("driver"):
        near = [r["ts"] - d["ts"] for r in req
                if r["addr"] == d["addr"] and abs(r["ts"] - d["ts"]) < 50_000_000]
        if near:
            gaps.append(min(near, key=abs))
    check("torch: each segment's first request after its driver allocation, within 50 ms",
          gaps and all(0 <= g < 50_000_000 for g in gaps), sorted(gaps)[:5])
    rep = subprocess.run([MEMTRACE, "report", out, "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        ctx = json.loads(rep.stdout)["devices"][0]["context"]
    except (ValueError, KeyError, IndexError):
        ctx = {}
    kernel = ctx.get("kernel") or {}
    check("torch: the report names the kernel launched last before the peak (launch times) "
          "and its NVTX range", ctx.get("kernel_times") == "launch"
          and "FillFunctor" in kernel.get("name", "") and ctx.get("range") == "peak-phase",
          (ctx.get("kernel_times"), kernel.get("name", "")[:80], ctx.get("range")))


def marker_lines(path):
    """{marker: line number} for the '# SITE-...' comments of a script."""
    found = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# (SITE-[A-Z]+)", line)
            if m:
                found[m.group(1)] = n
    return found


def test_stacks_native(tmp):
    out = os.path.join(tmp, "native.db")
    p = record(out, sample("sync"), "3", opts=["--stacks", "native"])
    check("native stacks: exit status 0", p.returncode == 0, p.stderr)
    t = Trace(DUMP, out)
    a = t.allocs("driver", mem="device")
    check("native stacks: meta stacks native", t.meta.get("stacks") == "native", t.meta)
    check("native stacks: every cudaMalloc has a site naming the sample binary",
          len(a) == 12 and all(any("sample-sync" in fr for fr in e["site"]) for e in a),
          [e["site"][:3] for e in a[:2]])
    check("native stacks: no frame of the recorder itself",
          not any("libmemtrace-inject" in fr for e in a for fr in e["site"]),
          [e["site"][:2] for e in a[:2]])


def test_stacks_python(tmp):
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("torch sites", "no PyTorch")
        return
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_sites.py")
    lines = marker_lines(script)
    out = os.path.join(tmp, "sites.db")
    p = record(out, sys.executable, script, opts=["--stacks", "python"], timeout=600)
    check("python stacks: exit status 0", p.returncode == 0, p.stderr[-2000:])
    t = Trace(DUMP, out)
    req = t.allocs("request")
    check("python stacks: said in meta", t.meta.get("stacks") == "python", t.meta)

    def innermost(size):
        return [e["site"][0] if e["site"] else "" for e in req if e["bytes"] == size]

    def at(marker):
        return "%s:%d:<module>" % (script, lines[marker])
    check("python stacks: a plain allocation names its line",
          innermost(1 << 20) == [at("SITE-PLAIN")], innermost(1 << 20))
    check("python stacks: an allocation inside an NVTX range names its line",
          innermost(3 << 20) == [at("SITE-RANGE")], innermost(3 << 20))
    ranges = t.events["range"]
    y = [e for e in req if e["bytes"] == 3 << 20]
    check("python stacks: torch.cuda.nvtx range recorded around its allocation",
          len(y) == 1 and any(r["name"] == "phase-a" and r["ts"] <= y[0]["ts"] <= r["end"]
                              for r in ranges), [(r["name"], r["ts"], r["end"]) for r in ranges][:5])
    # w is 300 x 200 floats; in backward, autograd's own thread makes the
    # gradient's tensors of the same size
    leaf = [e for e in req if e["bytes"] == 300 * 200 * 4]
    check("python stacks: the leaf tensor names its line, and tensors made on autograd's "
          "thread the backward() line",
          len(leaf) >= 2 and leaf[0]["site"][:1] == [at("SITE-LEAF")]
          and all(at("SITE-BACKWARD") in e["site"] for e in leaf[1:]),
          [e["site"][:3] for e in leaf])
    ops = {r["name"] for r in ranges if r["name"].startswith("aten::")}
    check("python stacks: emit_nvtx operator ranges recorded, without per-call annotations",
          "aten::mm" in ops and not any(", seq = " in n for n in ops), sorted(ops)[:10])
    fig = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
    check("python stacks: every request still recorded", len(req) == fig.get("allocs"),
          (len(req), fig))


CASES = (test_sync, test_async, test_vmm, test_managed, test_oom, test_threads, test_fork,
         lambda d: test_crash(d, "abort", 134),
         lambda d: test_crash(d, "segv", 139),
         lambda d: test_signal(d, signal.SIGKILL, "program", 137),
         lambda d: test_signal(d, signal.SIGKILL, "program", 137, "busy"),
         lambda d: test_signal(d, signal.SIGINT, "memtrace", 130),
         test_second_subscriber, test_unwritable, test_full_disk, test_exit_status, test_torch,
         test_stacks_native, test_stacks_python)


if __name__ == "__main__":
    main_of(CASES)
