#!/usr/bin/env python3
"""cli suite: `memtrace record -- CMD` reaches every Python process CMD
starts, whatever starts it, without a GPU and without PyTorch.

The recorded program is a Python script that imports a stand-in `torch`
package (a folder with version.py and a torch.cuda._lazy_call that runs at
once, as if CUDA had started) and prints one line "PROBE {json}": its pid,
the sitecustomize it ran, MEMTRACE_PYTHON_HOOK, PYTORCH_CUDA_ALLOC_CONF,
and whether a user's own sitecustomize ran. The PyTorch bridge cannot be
built (MEMTRACE_CACHE_DIR lies under a regular file), so memtrace's hook
switches the fake torch to backend:cudaMallocAsync: a probe showing that
setting saw the hook prepare torch in that very process.

Each launcher of issue 16 that runs here: bash -c, sh script.sh, env, an
executable script with and without a shebang, make, python -m, a Python
program that starts another, uv run (skipped when uv is missing). Then: a
user's own PYTHONPATH and sitecustomize keep working; a PYTHONPATH replaced
on the way, and python -I, leave the hook out (the recorder then labels
that process segments only, checked on the GPU); and what `record` prints
after the run from a trace the program writes itself (a stand-in for the
injection library, with the Python sqlite3 module): the shared capture
label, "mixed" when processes differ, one warning line per process
recorded as segments only naming it and why (none for one that allocated
nothing), also with -o 'FILE.%p.db'.

Environment: MEMTRACE (the binary). Prints TAP; exits 1 on any failure.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap

MEMTRACE = os.environ.get("MEMTRACE", "memtrace")
PY = sys.executable
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print("%s %d - %s%s" % ("ok" if cond else "not ok", len(results), name,
                            "" if cond else "  # " + repr(detail)[:1500]), flush=True)


def skip(name, why):
    results.append(True)
    print("ok %d - %s # SKIP %s" % (len(results), name, why), flush=True)


def sanitizer_preload():
    """In a sanitized build, memtrace's hook libraries carry the ASan runtime,
    which must come first in the programs they are loaded into: the runtime
    memtrace itself links, to preload there (no leak checks: the programs
    are not memtrace's). Empty otherwise."""
    out = subprocess.run(["ldd", MEMTRACE], stdout=subprocess.PIPE, text=True).stdout
    libs = [l.split()[2] for l in out.splitlines() if "libasan" in l and "=>" in l]
    return {"LD_PRELOAD": libs[0], "ASAN_OPTIONS": "detect_leaks=0"} if libs else {}


def record(tmp, *cmd, opts=(), env=None):
    e = dict(os.environ)
    e.update(sanitizer_preload())
    for k in [k for k in e if k.startswith("MEMTRACE_") or k.startswith("PYTORCH_")]:
        del e[k]
    e.pop("PYTHONPATH", None)
    e["MEMTRACE_CACHE_DIR"] = os.path.join(tmp, "not-a-folder", "cache")
    e.update(env or {})
    return subprocess.run([MEMTRACE, "record", "-o", os.path.join(tmp, "t.db")] + list(opts)
                          + ["--"] + list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=e, cwd=tmp, timeout=120)


def probes(p):
    return [json.loads(l[6:]) for l in p.stdout.splitlines() if l.startswith("PROBE ")]


def write(path, text, mode=None):
    with open(path, "w") as f:
        f.write(textwrap.dedent(text).lstrip("\n"))
    if mode:
        os.chmod(path, mode)


PROG = """
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake"))
import torch  # the stand-in
site = sys.modules.get("sitecustomize")
print("PROBE " + json.dumps({
    "pid": os.getpid(),
    "site": os.path.abspath(getattr(site, "__file__", "") or ""),
    "hook": os.environ.get("MEMTRACE_PYTHON_HOOK"),
    "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    "user": os.environ.get("USER_SITE_RAN"),
    "path": sys.path,
}), flush=True)
"""


def setup(tmp):
    fake = os.path.join(tmp, "fake", "torch")
    os.makedirs(fake)
    write(os.path.join(fake, "__init__.py"), "from . import cuda\n")
    write(os.path.join(fake, "version.py"), "__version__ = '0.0.fake'\n")
    write(os.path.join(fake, "cuda.py"), "def _lazy_call(fn):\n    fn()\n")
    with open(os.path.join(tmp, "not-a-folder"), "w") as f:
        f.write("the bridge cache cannot be made here\n")
    write(os.path.join(tmp, "prog.py"), PROG)
    os.makedirs(os.path.join(tmp, "pkg"))
    write(os.path.join(tmp, "pkg", "__init__.py"), "")
    write(os.path.join(tmp, "pkg", "__main__.py"),
          "import runpy, os\nrunpy.run_path(os.path.join(os.path.dirname(__file__), '..', "
          "'prog.py'), run_name='__main__')\n")
    write(os.path.join(tmp, "run.sh"), '"%s" prog.py\n' % PY)
    write(os.path.join(tmp, "with-shebang"), '#!/bin/sh\nexec "%s" prog.py\n' % PY, 0o755)
    write(os.path.join(tmp, "no-shebang"), '"%s" prog.py\n' % PY, 0o755)
    write(os.path.join(tmp, "py-shebang"), "#!%s\n" % PY + PROG, 0o755)
    write(os.path.join(tmp, "Makefile"), "run:\n\t\"%s\" prog.py\n" % PY)
    write(os.path.join(tmp, "spawner.py"),
          "import subprocess, sys\nsys.exit(subprocess.run([sys.executable, 'prog.py']).returncode)\n")
    user = os.path.join(tmp, "user")
    os.makedirs(user)
    write(os.path.join(user, "sitecustomize.py"),
          "import os\nos.environ['USER_SITE_RAN'] = '1'\n")


def hooked(pr, hook_dir):
    """The probe of a process where memtrace's hook ran and prepared torch."""
    return (pr["site"] == os.path.join(hook_dir, "sitecustomize.py")
            and pr["hook"] == str(pr["pid"]) and "backend:cudaMallocAsync" in pr["conf"])


def test_launchers(tmp, hook_dir):
    cases = [
        ("bash -c", ["bash", "-c", '"%s" prog.py' % PY]),
        ("sh script.sh", ["sh", "run.sh"]),
        ("env", ["env", "N=5", PY, "prog.py"]),
        ("executable script with a shebang", ["./with-shebang"]),
        ("executable script without a shebang", ["./no-shebang"]),
        ("python script run by its shebang", ["./py-shebang"]),
        ("make", ["make", "-s", "run"]),
        ("python -m", [PY, "-m", "pkg"]),
    ]
    for name, cmd in cases:
        if not shutil.which(cmd[0]) and not cmd[0].startswith("./") and cmd[0] != PY:
            skip(name, "%s is not installed" % cmd[0])
            continue
        p = record(tmp, *cmd)
        pr = probes(p)
        check("%s: the program ran (status 0, one probe)" % name,
              p.returncode == 0 and len(pr) == 1, (p.returncode, p.stdout, p.stderr))
        check("%s: memtrace's hook ran in the Python process and prepared torch" % name,
              len(pr) == 1 and hooked(pr[0], hook_dir), (pr, p.stderr))
    p = record(tmp, PY, "spawner.py")
    pr = probes(p)
    check("a Python program starting another: the hook ran in the child, with its own pid",
          p.returncode == 0 and len(pr) == 1 and hooked(pr[0], hook_dir), (pr, p.stderr))
    uv = shutil.which("uv")
    if not uv:
        skip("uv run", "uv is not installed")
    else:
        p = record(tmp, uv, "run", "--no-project", "--offline", "--python", PY, "prog.py")
        pr = probes(p)
        check("uv run: the hook ran in the Python process and prepared torch",
              p.returncode == 0 and len(pr) == 1 and hooked(pr[0], hook_dir),
              (p.returncode, pr, p.stderr[-1500:]))


def test_user_setup(tmp, hook_dir):
    user = os.path.join(tmp, "user")
    p = record(tmp, "bash", "-c", '"%s" prog.py' % PY, env={"PYTHONPATH": user})
    pr = probes(p)
    check("a user's own sitecustomize runs too, and its PYTHONPATH stays on sys.path",
          len(pr) == 1 and hooked(pr[0], hook_dir) and pr[0]["user"] == "1"
          and user in pr[0]["path"], (pr, p.stderr))
    p = record(tmp, "bash", "-c", 'PYTHONPATH=%s "%s" prog.py' % (user, PY))
    pr = probes(p)
    check("PYTHONPATH replaced on the way: memtrace's hook does not run, nothing claims it did",
          len(pr) == 1 and pr[0]["hook"] is None and pr[0]["user"] == "1"
          and "backend" not in pr[0]["conf"], (pr, p.stderr))
    p = record(tmp, PY, "-I", "prog.py")
    pr = probes(p)
    check("python -I: the hook does not run, nothing claims it did",
          len(pr) == 1 and pr[0]["hook"] is None, (pr, p.stderr))
    p = record(tmp, "bash", "-c", '"%s" prog.py' % PY, opts=["--capture", "as-is"])
    pr = probes(p)
    check("--capture as-is: no hook in a Python descendant",
          len(pr) == 1 and pr[0]["hook"] is None and "backend" not in pr[0]["conf"], (pr, p.stderr))


# A stand-in for the injection library: writes a trace at MEMTRACE_OUTPUT
# with `memtrace synth` (one process that allocates) and gives its process
# the label argv[2]; with argv[3], adds a second process with that label,
# which allocates (a copy of the first one's chunks) unless argv[4] is
# "idle". With '%p', one file per label, named with the pid and the pid + 1,
# each with its one process.
WRITER = """
import os, sqlite3, subprocess, sys
memtrace, labels = sys.argv[1], sys.argv[2:4]
idle = sys.argv[4:] == ["idle"]
pattern = os.environ["MEMTRACE_OUTPUT"]
env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTRACE_")}
files = ([pattern.replace("%p", str(os.getpid() + i)) for i in range(len(labels))]
         if "%p" in pattern else [pattern])
for i, path in enumerate(files):
    subprocess.run([memtrace, "synth", "--pattern", "small", "--events", "200", "-o", path],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = sqlite3.connect(path)
    db.execute("UPDATE processes SET capture = ?, command_line = ?",
               (labels[i], "python3 rank%d.py" % i))
    if len(files) == 1 and len(labels) > 1:
        db.execute("INSERT INTO processes (id, pid, start_ns, command_line, hostname, capture)"
                   " VALUES (2, 4242, 1, 'python3 rank1.py', 'h', ?)", (labels[1],))
        if not idle:
            db.execute("INSERT INTO chunks (process, device, kind, first_ts, last_ts,"
                       " first_seq, count, codec, raw_bytes, layers, blob)"
                       " SELECT 2, device, kind, first_ts, last_ts, first_seq, count, codec,"
                       " raw_bytes, layers, blob FROM chunks")
    db.commit()
    db.close()
"""

HOOKED = "requests (PyTorch allocator hook)"
UNHOOKED = ("segments only (PyTorch's allocator was not hooked: memtrace's Python startup hook "
            "did not run in this process; PYTHONPATH replaced, or python -I, -E or -S?)")


def meta_capture(path):
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT value FROM meta WHERE key = 'capture'").fetchone()[0]
    finally:
        db.close()


def warning_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("memtrace record: warning: ")]


def synth_pid(path):
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT pid FROM processes ORDER BY id").fetchone()[0]
    finally:
        db.close()


def test_after_the_run(tmp):
    write(os.path.join(tmp, "writer.py"), WRITER)
    out = os.path.join(tmp, "t.db")
    p = record(tmp, PY, "writer.py", MEMTRACE, HOOKED, HOOKED)
    check("all processes alike: the summary says their label, no warning",
          p.returncode == 0 and "2 processes, capture " + HOOKED in p.stderr
          and not warning_lines(p.stderr) and meta_capture(out) == HOOKED, p.stderr)
    p = record(tmp, PY, "writer.py", MEMTRACE, UNHOOKED, HOOKED)
    w = warning_lines(p.stderr)
    check("processes differ: meta capture says mixed",
          meta_capture(out).startswith("mixed") and "capture mixed" in p.stderr,
          (meta_capture(out), p.stderr))
    check("one warning line for the process recorded as segments only, naming it and why",
          len(w) == 1 and "process %d (python3 rank0.py)" % synth_pid(out) in w[0]
          and w[0].endswith(UNHOOKED), w)
    p = record(tmp, PY, "writer.py", MEMTRACE, HOOKED, UNHOOKED, "idle")
    check("a process that allocated nothing (torchrun's agent): no warning, and the label "
          "is the one of those that allocated",
          p.returncode == 0 and not warning_lines(p.stderr) and meta_capture(out) == HOOKED,
          (p.stderr, meta_capture(out)))
    d = os.path.join(tmp, "per-process")
    os.makedirs(d)
    with open(os.path.join(d, "t.99999999.db"), "w") as f:
        f.write("a file of the pattern from long ago")
    os.utime(os.path.join(d, "t.99999999.db"), (1, 1))
    p = subprocess.run([MEMTRACE, "record", "-o", os.path.join(d, "t.%p.db"), "--", PY,
                        os.path.join(tmp, "writer.py"), MEMTRACE, HOOKED, UNHOOKED],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    w = warning_lines(p.stderr)
    check("-o FILE.%p.db: the files of this run counted, the warning for the one process",
          "(2 files)" in p.stderr and len(w) == 1 and "(python3 rank1.py)" in w[0], p.stderr)


def main():
    hook_dir = os.path.join(os.path.dirname(os.path.realpath(shutil.which(MEMTRACE) or MEMTRACE)),
                            "..", "recorder", "python")
    hook_dir = os.path.realpath(hook_dir)
    with tempfile.TemporaryDirectory(prefix="memtrace-launchers-") as tmp:
        setup(tmp)
        test_launchers(tmp, hook_dir)
        test_user_setup(tmp, hook_dir)
        test_after_the_run(tmp)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
