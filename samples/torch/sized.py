"""Shared by the sized samples (memtrace predict's validation set, run by
samples/predict/validate.sh): a program whose memory follows one size
parameter N, run at one N or measured at many.

A sample script gives preload() (imports its heavy modules) and
setup(n) returning step(); main() then does one of:

  --size N [--json PATH] [--snapshot PATH]
                          warm-up and timed steps at N (the traces are
                          recorded this way; --snapshot also keeps PyTorch's
                          own memory history of the run, for memtrace
                          import); the sidecar holds PyTorch's own
                          figures under common.py's names:
                            torch_requested_bytes_peak        memory_stats()['requested_bytes.all.peak']
                            torch_max_memory_allocated        torch.cuda.max_memory_allocated()
                            torch_max_memory_reserved_native  torch.cuda.max_memory_reserved()
                          plus size, steps, script, gpu, torch_version,
                          transformers_version and, from cudaMemGetInfo after
                          the steps, device_total_bytes and device_free_bytes
  --truth PATH            the truth: each N of --table, then the largest N
                          whose steps complete, found by doubling past the
                          table and bisecting, every trial in a fresh process
                          (forked before CUDA starts, so that the model code
                          is imported once; a new interpreter per trial when
                          forking is refused); stops searching at --budget
                          seconds. Writes the points and the search's result.

A trial fails when it raises (torch.OutOfMemoryError, or any error whose
text says "out of memory", counts as an OOM; others are kept as errors) or
outlives --trial-timeout.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import common

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# torch.cuda.is_available() and device_count() through NVML, so that nothing
# imported before a fork starts the CUDA driver (a forked child could not).
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

DEFAULT_TABLE = "1,2,4,8,16,32,64,96,120"


def parse(description, steps, warmup):
    p = argparse.ArgumentParser(description=description.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__)
    p.add_argument("--size", type=int, help="the size parameter N of one run")
    p.add_argument("--json", metavar="PATH", help="with --size: write the sidecar here")
    p.add_argument("--snapshot", metavar="PATH",
                   help="with --size: PyTorch's memory history from before the model exists, "
                        "dumped here after the steps (torch.cuda.memory._dump_snapshot)")
    p.add_argument("--snapshot-stacks", choices=("python", "none"), default="python",
                   help="call stacks in the snapshot (default %(default)s; none: with gradient "
                        "checkpointing any stack makes torch 2.11's backward fail)")
    p.add_argument("--steps", type=int, default=steps, help="steps after the warm-up (default %(default)s)")
    p.add_argument("--warmup", type=int, default=warmup, help="steps first (default %(default)s)")
    p.add_argument("--truth", metavar="PATH", help="measure the table and search the largest N")
    p.add_argument("--table", default=DEFAULT_TABLE, help="sizes to measure (default %(default)s)")
    p.add_argument("--budget", type=float, default=120.0,
                   help="seconds after which no trial starts (default %(default)s)")
    p.add_argument("--trial-timeout", type=int, default=90,
                   help="seconds a trial may take (default %(default)s)")
    p.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if (args.size is None) == (args.truth is None):
        p.error("give either --size N or --truth PATH")
    if args.size is not None and args.size < 1:
        p.error("--size must be at least 1")
    if args.snapshot and args.size is None:
        p.error("--snapshot needs --size")
    return args


def _versions():
    import torch
    out = {"torch_version": torch.__version__}
    try:
        import transformers
        out["transformers_version"] = transformers.__version__
    except ImportError:
        pass
    return out


def measure(setup, n, steps):
    """Runs `steps` steps at size n in this process; PyTorch's figures."""
    import torch

    torch.manual_seed(0)
    step = setup(n)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    stats = torch.cuda.memory_stats()
    free, total = torch.cuda.mem_get_info()
    return {
        "size": n,
        "torch_requested_bytes_peak": stats.get("requested_bytes.all.peak", 0),
        "torch_max_memory_allocated": torch.cuda.max_memory_allocated(),
        "torch_max_memory_reserved_native": torch.cuda.max_memory_reserved(),
        "device_total_bytes": total,
        "device_free_bytes": free,
        "steps": steps,
        "steps_seconds": round(seconds, 3),
    }


def _measure_or_failure(setup, n, steps):
    """measure(), or what made it fail, as one result (never raises)."""
    try:
        import torch
        oom_type = getattr(torch, "OutOfMemoryError", ())
    except ImportError:
        oom_type = ()
    try:
        res = measure(setup, n, steps)
        res["fits"] = True
        return res
    except BaseException as e:  # noqa: B902 -- a trial reports every failure
        text = "%s: %s" % (type(e).__name__, str(e))
        oom = (oom_type and isinstance(e, oom_type)) or "out of memory" in text.lower()
        return {"size": n, "fits": False, "oom": bool(oom), "error": text[:1000]}


class _Trials:
    """Runs one measurement per call, each in a fresh process."""

    def __init__(self, setup, steps, timeout, script_argv):
        self.setup, self.steps, self.timeout = setup, steps, timeout
        self.argv = script_argv
        self.fork = not _cuda_started()
        self.mode_note = "fork" if self.fork else "interpreter (CUDA started before the fork)"

    def __call__(self, n):
        t0 = time.perf_counter()
        res = self._forked(n) if self.fork else self._spawned(n)
        if self.fork and not res["fits"] and _fork_refused(res.get("error", "")):
            self.fork, self.mode_note = False, "interpreter (forking refused: %s)" % res["error"][:200]
            res = self._spawned(n)
        res["trial_seconds"] = round(time.perf_counter() - t0, 2)
        return res

    def _forked(self, n):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            signal.alarm(self.timeout)
            res = _measure_or_failure(self.setup, n, self.steps)
            with os.fdopen(wfd, "w") as f:
                json.dump(res, f)
            os._exit(0)
        os.close(wfd)
        with os.fdopen(rfd) as f:
            text = f.read()
        _, status = os.waitpid(pid, 0)
        if not text:
            return {"size": n, "fits": False, "oom": False,
                    "error": "trial process ended (wait status %d) with no result" % status}
        return json.loads(text)

    def _spawned(self, n):
        argv = [sys.executable] + self.argv + ["--measure", "--size", str(n)]
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return {"size": n, "fits": False, "oom": False, "error": "timed out"}
        lines = r.stdout.strip().splitlines()
        if not lines:
            return {"size": n, "fits": False, "oom": False,
                    "error": "trial process exited %d with no result" % r.returncode}
        return json.loads(lines[-1])


def _cuda_started():
    import torch
    return torch.cuda.is_initialized()


def _fork_refused(error):
    e = error.lower()
    return "forked subprocess" in e or "initialization error" in e or "cuda_error_not_initialized" in e


def search(trial, table, deadline, clock=time.monotonic, progress=print):
    """The truth table and the largest size that fits: trial(n) -> result
    with "fits". Measures the sizes of `table` in order up to the first that
    fails, doubles past the table while sizes fit, then bisects between the
    largest size that fit and the smallest that failed. No trial starts
    after `deadline` (clock's time). Returns (points, max_fit, first_fail,
    complete): complete when first_fail = max_fit + 1 (max_fit 0: even the
    smallest failed)."""
    points, fit, fail = [], 0, None

    def run(n):
        nonlocal fit, fail
        res = trial(n)
        points.append(res)
        if res["fits"]:
            fit = max(fit, n)
        elif fail is None or n < fail:
            fail = n
        progress("  N=%d: %s" % (n, _describe(res)))
        return res["fits"]

    for n in sorted(set(table)):
        if clock() >= deadline or not run(n):
            break
    n = 2 * fit
    while fail is None and fit and clock() < deadline:
        run(n)
        n *= 2
    while fail is not None and fail - fit > 1 and clock() < deadline:
        run((fit + fail) // 2)
    complete = fail is not None and fail - fit == 1
    return points, fit, fail, complete


def _describe(res):
    if res["fits"]:
        return "requested peak %.3f GiB, reserved %.3f GiB (%.1f s)" % (
            res["torch_requested_bytes_peak"] / 2**30,
            res["torch_max_memory_reserved_native"] / 2**30, res.get("trial_seconds", 0))
    return ("OOM" if res.get("oom") else "error: " + res.get("error", "")[:160]) + \
        " (%.1f s)" % res.get("trial_seconds", 0)


def main(description, preload, setup, steps=2, warmup=1):
    """The entry point of a sized sample script."""
    args = parse(description, steps, warmup)
    script = os.path.basename(sys.argv[0])
    if args.measure:
        print(json.dumps(_measure_or_failure(setup, args.size, args.warmup + args.steps)))
        return
    if args.size is not None:
        import torch
        if args.snapshot:
            # with any stack, gradient checkpointing's recomputation fails
            # inside autograd (SystemError, torch 2.11): --snapshot-stacks none
            if args.snapshot_stacks == "none":
                torch.cuda.memory._record_memory_history(max_entries=10000000, context=None)
            else:
                torch.cuda.memory._record_memory_history(max_entries=10000000, stacks="python")
        res = measure(setup, args.size, args.warmup + args.steps)
        if args.snapshot:
            torch.cuda.memory._dump_snapshot(args.snapshot)
        res.update(_versions())
        res.update({"script": script, "gpu": torch.cuda.get_device_name(),
                    "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")})
        print(json.dumps(res, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
                f.write("\n")
        return
    t0 = time.monotonic()
    preload()
    table = [int(x) for x in args.table.split(",") if x]
    trials = _Trials(setup, args.warmup + args.steps, args.trial_timeout,
                     common._drop_options(sys.argv, ("--truth",)))
    print("%s: truth table %s, budget %.0f s" % (script, args.table, args.budget), flush=True)
    points, fit, fail, complete = search(trials, table, t0 + args.budget,
                                         progress=lambda s: print(s, flush=True))
    out = {
        "script": script,
        "description": description.strip(),
        "steps": args.warmup + args.steps,
        "table": table,
        "points": points,
        "max_fit": fit,
        "first_fail": fail,
        "search_complete": complete,
        "trials": trials.mode_note,
        "seconds": round(time.monotonic() - t0, 1),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }
    out.update(_versions())
    with open(args.truth, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("%s: largest N that fits %d%s, %d trials, %.0f s" % (
        script, fit, "" if complete else " (search not complete)", len(points), out["seconds"]),
        flush=True)
