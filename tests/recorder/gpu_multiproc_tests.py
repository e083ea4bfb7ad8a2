#!/usr/bin/env python3
"""gpu suite for the recorder, several processes, threads and streams:
exec (of a shell, and after CUDA has started), torch.multiprocessing with
two spawned workers, DDP with two ranks under torchrun (one trace, and one
file per process with -o 'trace.%p.db'), the backend:cudaMallocAsync
fallback when the PyTorch bridge cannot be had, and four threads on four
streams in one PyTorch process. Each process must have its row, and each
process's request-layer figures must equal PyTorch's own for that process.

Exits 77 where no GPU is; a case that needs PyTorch or two GPUs says so as
a TAP skip. Environment as gpu_tests.py (gpu_common.py): MEMTRACE,
TRACE_DUMP, SAMPLES (the built samples: sample-sync), MT_SOURCE_ROOT.
NCCL_NVLS_ENABLE=0 is set for the DDP runs (NVLink multicast off).
Prints one "ok"/"not ok" line per check (TAP) and exits 1 on any failure.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_trace import Trace  # noqa: E402
from gpu_common import (DUMP, HERE, SRC, MiB, check, gpu_count, have_torch, main_of,  # noqa: E402
                        record, sample, sizes, skip, tail, torchrun_cmd, warnings)

SYNC_SIZES = [MiB, 3 * MiB + 17, 256, 64 * MiB]  # samples/cuda/sync.cu, per round
TORCH_TIMEOUT = 300  # the first PyTorch run may build the bridge (cached afterwards)
# What happens on a device: these must be on the device the process uses.
DEVICE_KINDS = ("alloc", "free", "alloc_failed", "kernel", "memcpy", "memset", "pool")
# Kept on a device row too (host-side ranges; samples of the devices the
# process has rows for): a process that uses one GPU should name no other.
HOST_KINDS = ("range", "sample")


def figure_lines(stdout, prefix):
    """JSON objects of the stdout lines that start with `prefix `."""
    out = []
    for line in stdout.splitlines():
        if line.startswith(prefix + " "):
            out.append(json.loads(line[len(prefix) + 1:]))
    return out


def last_json(stdout):
    lines = [l for l in stdout.strip().splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def uuid_key(u):
    """A device uuid as the trace ("GPU-xxxxxxxx-...") or PyTorch writes it."""
    u = (u or "").lower()
    return u[4:] if u.startswith("gpu-") else u


def torch_env(**extra):
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.update(extra)
    return env


def need_torch(name):
    if not have_torch():
        skip(name, "no PyTorch for %s" % sys.executable)
        return False
    return True


# ---- exec -----------------------------------------------------------------

def test_exec_shell(tmp):
    """A shell that never starts CUDA execs a CUDA sample: the sample is the
    one process recorded, with sync's exact sizes."""
    out = os.path.join(tmp, "exec-sh.db")
    p = record(out, "/bin/sh", "-c", 'exec "$0" 2', sample("sync"))
    check("exec (sh): exit status 0", p.returncode == 0, tail(p.stderr))
    t = Trace(DUMP, out)
    check("exec (sh): trace readable", t.rc == 0, t.error)
    check("exec (sh): one process row, a root (the shell never started CUDA)",
          len(t.processes) == 1 and t.processes[0]["parent"] == 0, t.processes)
    a = t.allocs("driver", mem="device")
    check("exec (sh): 8 driver allocs of sync's sizes", sizes(a) == sorted(SYNC_SIZES * 2), sizes(a))
    check("exec (sh): allocs say cudaMalloc", a and all(e["api"] == "cudaMalloc" for e in a),
          {e["api"] for e in a})
    check("exec (sh): every free pairs with its alloc", t.pairing("driver") == (8, 0, 0, 0),
          t.pairing("driver"))
    check("exec (sh): meta capture is the driver API's",
          t.meta.get("capture", "").startswith("requests"), t.meta.get("capture"))


EXEC_AFTER_CUDA = r"""
import ctypes, os, sys, time
n, prog = int(sys.argv[1]), sys.argv[2]
cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
cuda.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
cuda.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
dev, ctx, ptr = ctypes.c_int(0), ctypes.c_void_p(), ctypes.c_uint64(0)
for rc in (cuda.cuInit(0), cuda.cuDeviceGet(ctypes.byref(dev), 0),
           cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), cuda.cuCtxSetCurrent(ctx),
           cuda.cuMemAlloc_v2(ctypes.byref(ptr), n), cuda.cuMemFree_v2(ptr.value)):
    if rc != 0:
        sys.exit("CUDA error %d" % rc)
print("pid %d" % os.getpid(), flush=True)
# exec runs no exit handlers: wait out more than one ~200 ms flush interval
# so that the alloc/free above are in the trace before the image goes.
time.sleep(0.6)
os.execv(prog, [prog, "1"])
"""


def test_exec_after_cuda(tmp):
    """A Python process starts CUDA, allocates, then execs a CUDA sample:
    one pid, two images, two rows, each with its own allocations."""
    n = 5 * MiB + 3
    out = os.path.join(tmp, "exec-py.db")
    p = record(out, sys.executable, "-c", EXEC_AFTER_CUDA, str(n), sample("sync"))
    check("exec after CUDA: exit status 0", p.returncode == 0, tail(p.stderr))
    m = re.search(r"^pid (\d+)$", p.stdout, re.M)
    pid = int(m.group(1)) if m else -1
    t = Trace(DUMP, out)
    rows = sorted(t.process_of_pid(pid), key=lambda r: r["id"])
    check("exec after CUDA: two rows with the one pid (before and after exec)",
          len(rows) == 2 and len(t.processes) == 2, (pid, t.processes))
    if len(rows) != 2:
        return
    before, after = rows
    a0 = t.allocs("driver", process=before["id"])
    a1 = t.allocs("driver", process=after["id"])
    check("exec after CUDA: the first image's one cuMemAlloc of %d bytes" % n,
          sizes(a0) == [n] and a0[0]["api"] == "cuMemAlloc", [(e["bytes"], e["api"]) for e in a0])
    check("exec after CUDA: the first image's free pairs",
          t.pairing("driver", before["id"]) == (1, 0, 0, 0), t.pairing("driver", before["id"]))
    check("exec after CUDA: the exec'd sample's 4 allocs of sync's sizes",
          sizes(a1) == sorted(SYNC_SIZES), sizes(a1))
    check("exec after CUDA: the exec'd sample's frees pair",
          t.pairing("driver", after["id"]) == (4, 0, 0, 0), t.pairing("driver", after["id"]))
    check("exec after CUDA: the exec'd image names no one else as its parent",
          after["parent"] in (0, before["id"]), (before, after))


# ---- torch.multiprocessing ------------------------------------------------

def test_torch_mp(tmp):
    if not need_torch("torch.multiprocessing"):
        return
    # The figures are written once, in torch_mp.py; read them without importing torch here.
    with open(os.path.join(HERE, "torch_mp.py")) as fh:
        src = fh.read()
    nprocs = int(re.search(r"^NPROCS = (\d+)", src, re.M).group(1))
    parent_bytes = int(re.search(r"^PARENT_BYTES = (\d+)", src, re.M).group(1))

    out = os.path.join(tmp, "mp.db")
    p = record(out, sys.executable, os.path.join(HERE, "torch_mp.py"), env=torch_env(),
               timeout=TORCH_TIMEOUT)
    check("mp: exit status 0", p.returncode == 0, tail(p.stderr))
    figs = figure_lines(p.stdout, "figures")
    ranks = {f["rank"]: f for f in figs}
    check("mp: figures from the parent and %d workers" % nprocs,
          sorted(ranks) == [-1] + list(range(nprocs)), p.stdout[-1000:])
    t = Trace(DUMP, out)
    check("mp: trace readable", t.rc == 0, t.error)
    check("mp: capture through the allocator hook", "hook" in t.meta.get("capture", ""),
          t.meta.get("capture"))
    check("mp: no process had the hook refused",
          not any("refused" in w for w in warnings(p.stderr)), warnings(p.stderr))
    if -1 not in ranks:
        return
    parent = t.process_of_pid(ranks[-1]["pid"])
    check("mp: %d process rows: the parent and its workers" % (nprocs + 1),
          len(t.processes) == nprocs + 1 and len(parent) == 1, t.processes)
    if len(parent) != 1:
        return
    root = parent[0]
    check("mp: the parent's row is a root", root["parent"] == 0, root)
    pa = t.allocs("request", process=root["id"])
    check("mp: the parent's one request of %d bytes" % parent_bytes, sizes(pa) == [parent_bytes],
          sizes(pa))
    req_devices = {e["device"] for e in t.allocs("request")}
    check("mp: every request on the one device row of GPU 0",
          [(t.device(d) or {}).get("ordinal") for d in req_devices] == [0],
          [t.device(d) for d in req_devices])
    for r in range(nprocs):
        f = ranks.get(r)
        if not f:
            check("mp rank %d: figures printed" % r, False, p.stdout[-1000:])
            continue
        rows = t.process_of_pid(f["pid"])
        check("mp rank %d: one row naming the parent's row" % r,
              len(rows) == 1 and rows[0]["parent"] == root["id"], (f["pid"], t.processes))
        if len(rows) != 1:
            continue
        row = rows[0]["id"]
        a = t.allocs("request", process=row)
        check("mp rank %d: requests are exactly its sizes" % r, sizes(a) == sorted(f["sizes"]),
              (sizes(a), f["sizes"]))
        check("mp rank %d: request count == allocation.all.allocated" % r,
              len(a) == f["allocs"], (len(a), f["allocs"]))
        check("mp rank %d: every free pairs" % r,
              t.pairing("request", row) == (len(f["sizes"]), 0, 0, 0), t.pairing("request", row))
        peak = t.peak_live("request", process=row)
        check("mp rank %d: peak live == requested_bytes.all.peak" % r, peak == f["requested_peak"],
              (peak, f["requested_peak"]))
        rp = t.torch_reserved_peak(row)
        check("mp rank %d: reserved peak == max_memory_reserved" % r,
              rp == f["max_memory_reserved"], (rp, f["max_memory_reserved"]))


# ---- DDP ------------------------------------------------------------------

def ddp_record(tmp, out, tag):
    figdir = os.path.join(tmp, "ddp-figures-" + tag)
    os.makedirs(figdir, exist_ok=True)
    launcher = torchrun_cmd()
    args = launcher[1:] + ["--standalone", "--nproc_per_node=2",
                           os.path.join(SRC, "samples", "torch", "ddp_train.py"), "--steps", "4",
                           "--json", os.path.join(figdir, "rank{rank}.json")]
    env = torch_env(NCCL_NVLS_ENABLE="0", OMP_NUM_THREADS="1")
    p = record(out, launcher[0], *args, env=env, timeout=TORCH_TIMEOUT)
    figs = {}
    for r in range(2):
        try:
            with open(os.path.join(figdir, "rank%d.json" % r)) as fh:
                figs[r] = json.load(fh)
        except (OSError, ValueError):
            pass
    return p, figs


def ddp_rank_figures(t, tag, r, f, row):
    """The request-layer figures of one rank against PyTorch's own."""
    peak = t.peak_live("request", process=row)
    check("ddp%s rank %d: request peak == requested_bytes.all.peak" % (tag, r),
          peak == f["torch_requested_bytes_peak"], (peak, f["torch_requested_bytes_peak"]))
    res = t.torch_reserved_peak(row)
    check("ddp%s rank %d: bridge's reserved peak == max_memory_reserved" % (tag, r),
          res == f["torch_max_memory_reserved"], (res, f["torch_max_memory_reserved"]))
    pr = t.pairing("request", row)
    check("ddp%s rank %d: request frees pair, sizes agree" % (tag, r),
          pr[0] > 0 and pr[1] == 0 and pr[3] == 0, pr)


def ddp_ready(name):
    if not need_torch(name):
        return False
    n = gpu_count()
    if n < 2:
        skip(name, "needs 2 GPUs, this machine has %d" % n)
        return False
    return True


def test_ddp(tmp):
    if not ddp_ready("ddp (2 ranks, torchrun, one trace)"):
        return
    out = os.path.join(tmp, "ddp.db")
    p, figs = ddp_record(tmp, out, "one")
    check("ddp: exit status 0", p.returncode == 0, tail(p.stderr, 3000))
    check("ddp: both ranks wrote their figures", sorted(figs) == [0, 1], tail(p.stdout))
    if sorted(figs) != [0, 1]:
        return
    t = Trace(DUMP, out)
    check("ddp: trace readable", t.rc == 0, t.error)
    check("ddp: capture through the allocator hook", "hook" in t.meta.get("capture", ""),
          t.meta.get("capture"))
    # torchrun never starts CUDA, so the injection library never loads in it:
    # no launcher row, and the ranks are roots (no recorded parent).
    pids = {r: f["pid"] for r, f in figs.items()}
    check("ddp: exactly one row per rank, none for the torchrun launcher",
          sorted(p_["pid"] for p_ in t.processes) == sorted(pids.values()), (pids, t.processes))
    rows = {}
    for r in (0, 1):
        rr = t.process_of_pid(pids[r])
        if len(rr) == 1:
            rows[r] = rr[0]
    check("ddp: each rank's row is a root", len(rows) == 2 and all(
        x["parent"] == 0 for x in rows.values()), rows)
    if len(rows) != 2:
        return
    dev = {}
    for r in (0, 1):
        row, f = rows[r]["id"], figs[r]
        d = t.device_rows_of(row, DEVICE_KINDS)
        check("ddp rank %d: its device events on one device row" % r, len(d) == 1,
              [t.device(x) for x in d])
        if len(d) != 1:
            continue
        dev[r] = t.device(next(iter(d)))
        check("ddp rank %d: that row is GPU %d" % (r, f["local_rank"]),
              dev[r]["ordinal"] == f["local_rank"], dev[r])
        if f.get("device_uuid"):
            check("ddp rank %d: that row's uuid is PyTorch's for its device" % r,
                  uuid_key(dev[r]["uuid"]) == uuid_key(f["device_uuid"]), (dev[r], f["device_uuid"]))
        rd = t.device_rows_of(row, HOST_KINDS)
        check("ddp rank %d: its NVTX ranges and memory samples on no other device row" % r,
              rd <= {dev[r]["id"]}, ([t.device(x) for x in rd], dev[r]))
        check("ddp rank %d: has requests" % r, len(t.allocs("request", process=row)) > 0)
        ddp_rank_figures(t, "", r, f, row)
    if len(dev) == 2:
        check("ddp: two device rows with different uuids",
              dev[0]["id"] != dev[1]["id"] and dev[0]["uuid"] != dev[1]["uuid"]
              and dev[0]["uuid"].startswith("GPU-"), dev)



def test_ddp_per_process(tmp):
    """The same with one file per process."""
    if not ddp_ready("ddp (2 ranks, torchrun, -o trace.%p.db)"):
        return
    d = os.path.join(tmp, "ddp-per-process")
    os.makedirs(d)
    p, figs = ddp_record(tmp, os.path.join(d, "trace.%p.db"), "pp")
    tag = " -o trace.%p.db"
    check("ddp%s: exit status 0" % tag, p.returncode == 0, tail(p.stderr, 3000))
    check("ddp%s: the launcher says one trace per process" % tag,
          "one trace per process" in p.stderr, tail(p.stderr))
    check("ddp%s: both ranks wrote their figures" % tag, sorted(figs) == [0, 1], tail(p.stdout))
    files = sorted(os.listdir(d))
    traces = sorted(x for x in files if re.fullmatch(r"trace\.\d+\.db", x))
    check("ddp%s: no literal trace.%%p.db left" % tag,
          not any("%p" in x for x in files), files)
    if sorted(figs) != [0, 1]:
        return
    want = sorted("trace.%d.db" % f["pid"] for f in figs.values())
    check("ddp%s: one file per rank, named by its pid, none for the launcher" % tag,
          traces == want, (files, want))
    for r, f in sorted(figs.items()):
        path = os.path.join(d, "trace.%d.db" % f["pid"])
        if not os.path.exists(path):
            continue
        t = Trace(DUMP, path)
        check("ddp%s rank %d: its file is a trace with its one process row" % (tag, r),
              t.rc == 0 and [x["pid"] for x in t.processes] == [f["pid"]]
              and t.processes[0]["parent"] == 0, (t.error, t.processes))
        check("ddp%s rank %d: capture through the allocator hook" % (tag, r),
              "hook" in t.meta.get("capture", ""), t.meta.get("capture"))
        if len(t.processes) != 1:
            continue
        row = t.processes[0]["id"]
        devs = [t.device(x) for x in t.device_rows_of(row, DEVICE_KINDS)]
        check("ddp%s rank %d: its device events on GPU %d only" % (tag, r, f["local_rank"]),
              [x["ordinal"] for x in devs if x] == [f["local_rank"]], devs)
        ddp_rank_figures(t, tag, r, f, row)


# ---- cudaMallocAsync fallback ---------------------------------------------

REFERENCE = r"""
import json, runpy, sys
import torch
try:
    torch.cuda.memory._record_memory_history(max_entries=1000000)
    history = True
except Exception:
    history = False
runpy.run_path(sys.argv[1], run_name="__main__")
sizes = None
if history:
    snap = torch.cuda.memory._snapshot()
    sizes = sorted(e["size"] for tr in snap["device_traces"] for e in tr if e["action"] == "alloc")
print("history " + json.dumps(sizes))
"""

STATUS = 3
WRAPPED = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__'); sys.exit(%d)" % STATUS


def test_fallback(tmp):
    name = "cudaMallocAsync fallback"
    if not need_torch(name):
        return
    small = os.path.join(HERE, "torch_small.py")
    env = torch_env()
    for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        env.pop(k, None)
    # PyTorch's own request stream, native allocator, not recorded.
    ref = subprocess.run([sys.executable, "-c", REFERENCE, small], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=TORCH_TIMEOUT)
    check("fallback: reference run (native allocator, unrecorded) exit status 0",
          ref.returncode == 0, tail(ref.stderr))
    fig = last_json(ref.stdout)
    hist = figure_lines(ref.stdout, "history")
    hist = hist[0] if hist else None
    if hist is not None:
        check("fallback: reference history holds torch_small's allocation count",
              len(hist) == fig.get("allocs"), (len(hist), fig.get("allocs")))

    # No bridge: the cache folder cannot be created (a path under a regular
    # file fails even for root) and no bridge is cached there.
    blocker = os.path.join(tmp, "not-a-folder")
    with open(blocker, "w") as fh:
        fh.write("a file where the cache folder would be\n")
    env["MEMTRACE_CACHE_DIR"] = os.path.join(blocker, "cache")
    out = os.path.join(tmp, "fallback.db")
    p = record(out, sys.executable, "-c", WRAPPED, small, env=env, timeout=TORCH_TIMEOUT)
    check("fallback: the program's exit status %d is kept" % STATUS, p.returncode == STATUS,
          (p.returncode, tail(p.stderr)))
    w = warnings(p.stderr)
    check("fallback: stderr says the cudaMallocAsync fallback is used",
          any("no PyTorch allocator hook" in x and "backend:cudaMallocAsync" in x for x in w), w)
    t = Trace(DUMP, out)
    check("fallback: trace readable", t.rc == 0, t.error)
    check("fallback: meta capture names backend:cudaMallocAsync",
          "backend:cudaMallocAsync" in t.meta.get("capture", ""), t.meta.get("capture"))
    check("fallback: no request-layer events (no bridge)",
          not t.allocs("request") and not t.frees("request"), len(t.allocs("request")))
    a = t.allocs("driver", mem="async_pool")
    check("fallback: one async-pool alloc per request (allocation.all.allocated)",
          len(a) == fig.get("allocs"), (len(a), fig.get("allocs")))
    check("fallback: async-pool bytes sum to requested_bytes.all.allocated",
          sum(e["bytes"] for e in a) == fig.get("requested_total"),
          (sum(e["bytes"] for e in a), fig.get("requested_total")))
    if hist is not None:
        check("fallback: async-pool sizes are exactly the requested sizes", sizes(a) == hist,
              (len(a), len(hist), sorted(set(sizes(a)) ^ set(hist))[:10]))
    else:
        skip("fallback: async-pool sizes are exactly the requested sizes",
             "no torch.cuda.memory._record_memory_history here")
    check("fallback: allocs say cudaMallocAsync", a and all(e["api"] == "cudaMallocAsync" for e in a),
          {e["api"] for e in a})
    streams = {e["stream"] for e in a}
    check("fallback: on two streams (default and side)", len(streams) == 2, streams)
    pr = t.pairing("driver", mem="async_pool")
    check("fallback: async-pool frees pair, sizes agree, at most the live ones unfreed",
          pr[1] == 0 and pr[3] == 0 and pr[2] <= fig.get("live", 0), (pr, fig.get("live")))


# ---- threads and streams --------------------------------------------------

def test_streams(tmp):
    if not need_torch("threads and streams"):
        return
    out = os.path.join(tmp, "streams.db")
    p = record(out, sys.executable, os.path.join(HERE, "torch_streams.py"), env=torch_env(),
               timeout=TORCH_TIMEOUT)
    check("streams: exit status 0", p.returncode == 0, tail(p.stderr))
    fig = last_json(p.stdout)
    check("streams: the threads ran without errors", fig.get("errors") == [], fig.get("errors"))
    t = Trace(DUMP, out)
    check("streams: capture through the allocator hook", "hook" in t.meta.get("capture", ""),
          t.meta.get("capture"))
    want = {int(k): v for k, v in fig.get("sizes", {}).items()}
    rounds = fig.get("rounds", 0)
    total = rounds * sum(len(v) for v in want.values())
    req = t.allocs("request")
    check("streams: every request recorded (%d)" % total,
          len(req) == total and len(req) == fig.get("allocs"), (len(req), total, fig.get("allocs")))
    expected = sorted(n for v in want.values() for n in v for _ in range(rounds))
    check("streams: requests are exactly the threads' sizes", sizes(req) == expected,
          (len(req), len(expected)))
    thread_of = {n: th for th, v in want.items() for n in v}
    by_thread = {}
    for e in req:
        by_thread.setdefault(thread_of.get(e["bytes"], -1), set()).add(e["stream"])
    check("streams: each thread's requests on one stream",
          want and sorted(by_thread) == sorted(want)
          and all(len(x) == 1 for x in by_thread.values()), by_thread)
    ids = set().union(*by_thread.values()) if by_thread else set()
    check("streams: %d distinct non-zero CUPTI stream ids" % len(want),
          len(ids) == len(want) > 0 and 0 not in ids, ids)
    frees = t.frees("request")
    fstreams = {}
    for e in frees:
        fstreams.setdefault(thread_of.get(e["bytes"], -1), set()).add(e["stream"])
    check("streams: frees on their allocation's stream", by_thread and fstreams == by_thread,
          (fstreams, by_thread))
    check("streams: every free pairs", total > 0 and t.pairing("request") == (total, 0, 0, 0),
          t.pairing("request"))
    peak = t.peak_live("request")
    check("streams: peak live == requested_bytes.all.peak", peak == fig.get("requested_peak"),
          (peak, fig.get("requested_peak")))


CASES = (test_exec_shell, test_exec_after_cuda, test_torch_mp, test_ddp, test_ddp_per_process,
         test_streams, test_fallback)

if __name__ == "__main__":
    main_of(CASES, "memtrace-multi-")
