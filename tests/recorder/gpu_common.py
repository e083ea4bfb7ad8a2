"""Shared by the recorder's gpu test files (gpu_tests.py, gpu_launcher_tests.py,
gpu_multiproc_tests.py): the environment they run in, TAP output, GPU
detection, and `memtrace record` with its output captured.

Environment: MEMTRACE (the binary), TRACE_DUMP, SAMPLES (folder of the
built CUDA samples), MT_SOURCE_ROOT.
"""
import ctypes
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile

MEMTRACE = os.environ.get("MEMTRACE", "memtrace")
DUMP = os.environ.get("TRACE_DUMP", "trace-dump")
SAMPLES = os.environ.get("SAMPLES", ".")
SRC = os.environ.get("MT_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20

results = []


def check(name, cond, detail=""):
    """One TAP line; a failing check prints its detail after '#'."""
    results.append(bool(cond))
    print("%s %d - %s%s" % ("ok" if cond else "not ok", len(results), name,
                            "" if cond else "  # " + str(detail).replace("\n", " | ")), flush=True)
    return bool(cond)


def skip(name, why):
    """A TAP skip: counts as a passing line with its reason."""
    results.append(True)
    print("ok %d - %s # SKIP %s" % (len(results), name, why), flush=True)


def gpu_count():
    """Devices the driver reports (0 without a driver or a GPU)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        n = ctypes.c_int(0)
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(n)) != 0:
            return 0
        return n.value
    except OSError:
        return 0


def have_gpu():
    return gpu_count() > 0


def have_torch():
    return importlib.util.find_spec("torch") is not None


def torchrun_cmd():
    """torchrun beside this Python, on PATH, or as a module."""
    for cand in (os.path.join(os.path.dirname(sys.executable), "torchrun"), shutil.which("torchrun")):
        if cand and os.access(cand, os.X_OK):
            return [cand]
    return [sys.executable, "-m", "torch.distributed.run"]


def record(out, prog, *args, opts=(), env=None, timeout=300, cwd=None):
    """`memtrace record` run to its end (a CompletedProcess). Past timeout
    seconds the whole process tree is killed (its own session: a launcher's
    children would otherwise hold the pipes open) and TimeoutExpired raised."""
    cmd = [MEMTRACE, "record", "-o", out] + list(opts) + ["--", prog] + list(args)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=cwd, start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr)


def sample(name):
    return os.path.join(SAMPLES, "sample-" + name)


def sizes(events):
    return sorted(e["bytes"] for e in events)


def warnings(stderr):
    return [l for l in stderr.splitlines() if l.startswith("memtrace: ")]


def tail(text, n=2000):
    return text[-n:] if text else ""


def run_cases(cases, prefix="memtrace-gpu-"):
    """Runs each case(tmp) in one temporary folder; a case that raises is
    one failing line and the others still run. Exits 77 (TAP skip) where
    there is no GPU. Returns the exit status."""
    if not have_gpu():
        print("1..0 # SKIP no GPU")
        return 77
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        for case in cases:
            try:
                case(tmp)
            except Exception as e:  # a broken case must not hide the others
                check("%s raised" % getattr(case, "__name__", "case"), False, repr(e))
    print("1..%d" % len(results), flush=True)
    return 0 if all(results) else 1


def main_of(cases, prefix="memtrace-gpu-"):
    sys.exit(run_cases(cases, prefix))
