#!/usr/bin/env python3
"""cli suite for `memtrace record` without a GPU: argument errors, the
environment the launcher gives the program, exit statuses (code and
128+signal), keeping FILE.N, a missing program, CUPTI not found, and that the
Python startup hook leaves an ordinary Python program alone.

Environment: MEMTRACE (the binary). Prints TAP; exits 1 on any failure.
"""
import os
import subprocess
import sys
import tempfile

MEMTRACE = os.environ.get("MEMTRACE", "memtrace")
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print("%s %d - %s%s" % ("ok" if cond else "not ok", len(results), name,
                            "" if cond else "  # " + repr(detail)), flush=True)


def run(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([MEMTRACE, "record"] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=e, cwd=cwd, timeout=120)


def one_error_line(p, status, word):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    return (p.returncode == status and len(lines) == 1 and lines[0].startswith("memtrace record: ")
            and word in lines[0])


def main():
    with tempfile.TemporaryDirectory(prefix="memtrace-rec-") as tmp:
        p = run("--help")
        check("--help on stdout, status 0",
              p.returncode == 0 and p.stdout.startswith("Usage: memtrace record") and not p.stderr)
        check("no program: usage error", one_error_line(run(), 2, "no program"), run().stderr)
        p = run("--capture", "everything", "true")
        check("bad --capture: usage error", one_error_line(p, 2, "--capture"), p.stderr)
        p = run("--sample-ms", "soon", "true")
        check("bad --sample-ms: usage error", one_error_line(p, 2, "--sample-ms"), p.stderr)
        p = run("--frobnicate", "true")
        check("unknown option: usage error", one_error_line(p, 2, "--frobnicate"), p.stderr)

        out = os.path.join(tmp, "t.db")
        script = ('echo "$CUDA_INJECTION64_PATH"; echo "$NVTX_INJECTION64_PATH"; '
                  'echo "$MEMTRACE_OUTPUT"; echo "$MEMTRACE_KERNELS $MEMTRACE_SAMPLE_MS"; '
                  'echo "$MEMTRACE_STACKS"; exit 7')
        p = run("-o", "t.db", "--no-kernels", "--sample-ms", "20", "--", "/bin/sh", "-c", script,
                cwd=tmp)
        lines = p.stdout.splitlines()
        check("program's exit status is memtrace's", p.returncode == 7, (p.returncode, p.stderr))
        check("CUDA_INJECTION64_PATH names the injection library",
              len(lines) == 5 and os.path.isfile(lines[0])
              and lines[0].endswith("libmemtrace-inject.so"), lines)
        check("NVTX_INJECTION64_PATH names it too (it hands NVTX to its CUPTI)",
              len(lines) == 5 and lines[1] == lines[0], lines)
        check("the output path is made absolute", len(lines) == 5 and lines[2] == out, lines)
        check("--no-kernels (kernels none) and --sample-ms reach the program",
              len(lines) == 5 and lines[3] == "none 20", lines)
        check("no call sites by default",
              len(lines) == 5 and lines[4] == "none", lines)
        kernels = 'echo "$MEMTRACE_KERNELS"'
        p = run("-o", "t.db", "--", "/bin/sh", "-c", kernels, cwd=tmp)
        check("kernels launch by default", p.stdout.strip() == "launch", p.stdout)
        for mode in ("gpu", "launch", "none"):
            p = run("-o", "t.db", "--kernels", mode, "--", "/bin/sh", "-c", kernels, cwd=tmp)
            check("--kernels %s reaches the program" % mode, p.stdout.strip() == mode, p.stdout)
        p = run("-o", "t.db", "--kernels", "launch", "--no-kernels", "--", "/bin/sh", "-c",
                kernels, cwd=tmp)
        check("the last of --kernels and --no-kernels wins", p.stdout.strip() == "none", p.stdout)
        p = run("-o", "t.db", "--kernels", "Launch", "--", "/bin/sh", "-c", kernels, cwd=tmp)
        check("bad --kernels: usage error", one_error_line(p, 2, "--kernels"), p.stderr)
        p = run("-o", "t.db", "--kernels", "--", "/bin/sh", "-c", kernels, cwd=tmp)
        check("--kernels without a mode: usage error", one_error_line(p, 2, "--kernels"),
              p.stderr)
        p = run("-o", "t.db", "--stacks", "native", "--", "/bin/sh", "-c", 'echo "$MEMTRACE_STACKS"',
                cwd=tmp)
        check("--stacks native reaches the program", p.stdout.strip() == "native", p.stdout)
        p = run("-o", "t.db", "--", sys.executable, "-c",
                'import os; print(os.environ["MEMTRACE_STACKS"])', cwd=tmp)
        check("a Python program records no call sites unless asked",
              p.stdout.strip().splitlines()[-1:] == ["none"], (p.stdout, p.stderr))
        p = run("--stacks", "perl", "true")
        check("bad --stacks: usage error", one_error_line(p, 2, "--stacks"), p.stderr)

        p = run("-o", out, "--", "/bin/sh", "-c", "kill -TERM $$")
        check("killed by SIGTERM: status 143", p.returncode == 143, p.returncode)

        with open(out, "w") as f:
            f.write("not a trace")
        p = run("-o", out, "--", "/bin/true")
        with open(out) as f:
            left = f.read()
        check("a file there that is not a trace: refused, one line, left alone",
              one_error_line(p, 1, "not replacing it") and left == "not a trace",
              (p.returncode, p.stderr, left))
        os.unlink(out)
        for seed in ("1", "2"):
            subprocess.run([MEMTRACE, "synth", "-n", "100", "-s", seed, "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        p = run("-o", out, "--", "/bin/true")
        check("earlier traces are kept as FILE.1 and FILE.2",
              os.path.exists(out + ".1") and os.path.exists(out + ".2"),
              (p.returncode, p.stderr, os.listdir(tmp)))

        p = run("-o", out, "--", os.path.join(tmp, "no-such-program"))
        check("missing program: status 127, one line", one_error_line(p, 127, "no-such-program"),
              (p.returncode, p.stderr))

        p = run("-o", out, "--", "/bin/true", env={"MEMTRACE_CUPTI_PATH": os.path.join(tmp, "none")})
        check("CUPTI not found: one line naming MEMTRACE_CUPTI_PATH",
              one_error_line(p, 1, "MEMTRACE_CUPTI_PATH"), p.stderr)

        code = "import os, sys; print(os.environ.get('PYTHONPATH', '')); print(sum(range(5)))"
        p = run("-o", out, "--", sys.executable, "-c", code)
        lines = p.stdout.splitlines()
        check("python: the startup hook is on PYTHONPATH and the program runs as usual",
              p.returncode == 0 and len(lines) == 2 and os.path.isfile(
                  os.path.join(lines[0].split(os.pathsep)[0], "sitecustomize.py"))
              and lines[1] == "10", (p.returncode, p.stdout, p.stderr))
        p = run("-o", out, "--capture", "as-is", "--", sys.executable, "-c", code)
        check("python --capture as-is: no startup hook",
              p.returncode == 0 and "sitecustomize" not in p.stdout
              and not any(os.path.isfile(os.path.join(d, "sitecustomize.py"))
                          for d in p.stdout.splitlines()[0].split(os.pathsep) if d),
              p.stdout)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
