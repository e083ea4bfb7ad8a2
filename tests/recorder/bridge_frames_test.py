#!/usr/bin/env python3
"""The PyTorch bridge's Python call sites without PyTorch or a GPU: builds
recorder/torch-bridge.cpp (with the call-site table, site-table.c) against this Python's headers and a stand-in for
c10's hook header (tests/recorder/stub-c10), then checks that the site it
names from inside nested Python calls is exactly those calls' file, line
and function, innermost first; that a stack seen twice is interned once;
and that a different line is a different site. TAP; exits 77 where there
is no C++ compiler or no Python.h, or the Python is one the bridge does not
read (it then names no sites, which is checked too)."""
import ctypes
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDER = os.path.join(HERE, "..", "..", "recorder")
# built as sitecustomize.py has PyTorch build them: the C table as C++ too
SOURCES = [os.path.join(RECORDER, f) for f in ("torch-bridge.cpp", "site-table.c")]
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print("%s %d - %s%s" % ("ok" if cond else "not ok", len(results), name,
                            "" if cond else "  # " + str(detail)))


def build(out):
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    inc = sysconfig.get_paths()["include"]
    if not cxx or not os.path.isfile(os.path.join(inc, "Python.h")):
        return None
    so = os.path.join(out, "bridge.so")
    subprocess.run([cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-I", os.path.join(HERE, "stub-c10"),
                    "-I", inc] + SOURCES + ["-o", so], check=True)
    return so


def main():
    with tempfile.TemporaryDirectory() as tmp:
        so = build(tmp)
        if not so:
            print("1..0 # SKIP no C++ compiler or no Python.h")
            return 77
        lib = ctypes.PyDLL(so)
        interned = []
        intern_type = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_char_p)
        event_type = ctypes.CFUNCTYPE(None)
        clock_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

        def intern(s):
            interned.append(s.decode())
            return len(interned)
        keep = (intern_type(intern), event_type(lambda: None), clock_type(lambda ticks_now: None))
        lib.memtrace_torch_bridge_attach.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
        lib.memtrace_torch_bridge_work_begin.restype = ctypes.c_uint32
        lib.memtrace_torch_bridge_work_end.argtypes = [ctypes.c_uint32]
        check("attach", lib.memtrace_torch_bridge_attach(
            ctypes.cast(keep[1], ctypes.c_void_p), ctypes.cast(keep[0], ctypes.c_void_p),
            ctypes.cast(keep[2], ctypes.c_void_p), 1) == 0)

        def site_here():
            # work_begin sets the site of its caller's callers (it leaves out
            # this frame) and returns the one before: the second call returns
            # what the first set
            lib.memtrace_torch_bridge_work_begin()
            return lib.memtrace_torch_bridge_work_begin()

        def inner():
            return site_here()  # LINE-INNER

        def outer():
            return inner()  # LINE-OUTER
        lines = {}
        for n, text in enumerate(open(__file__), 1):
            for tag in ("LINE-INNER", "LINE-OUTER", "LINE-CALL", "LINE-OTHER"):
                if "# " + tag in text and "for tag" not in text:
                    lines[tag] = n
        if not lib.memtrace_torch_bridge_python_sites():
            check("Python %d.%d: no sites named" % sys.version_info[:2], outer() == 0)
            print("1..%d" % len(results))
            return 0 if all(results) else 1
        first = outer()  # LINE-CALL
        second = []
        for _ in range(2):
            second.append(outer())  # LINE-OTHER
        me = __file__  # as Python names it in its code objects
        frames = interned[0].split("\n") if interned else []
        want = ["%s:%d:main.<locals>.inner" % (me, lines["LINE-INNER"]),
                "%s:%d:main.<locals>.outer" % (me, lines["LINE-OUTER"]),
                "%s:%d:main" % (me, lines["LINE-CALL"])]
        check("site names file:line:function, innermost first", frames[:3] == want,
              (frames[:3], want))
        check("a site is interned once per stack", first == 1 and second == [2, 2] and
              len(interned) == 2, (first, second, len(interned)))
        check("another calling line is another site",
              len(interned) == 2 and interned[1].split("\n")[2].endswith(":%d:main" % lines["LINE-OTHER"]),
              interned[1:])
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
