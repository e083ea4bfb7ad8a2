#!/usr/bin/env python3
"""Runs a PyTorch script with memtrace's bridge attached to PyTorch's
allocator hook but no recorder behind it: the bridge hands every event to
hook-floor.c's do-nothing functions. What request capture costs at the
least: PyTorch building a TraceEntry and calling the hook for each event,
and with --python-sites the bridge's walk of the Python frames and the
autograd wrapper. run.py --hook-floor runs the workloads this way.

Usage: hook_floor.py --noop LIB --recorder DIR [--python-sites] SCRIPT [ARGS]
  LIB  libhook-floor.so (built beside this script)
  DIR  the folder with torch-bridge.cpp and python/sitecustomize.py (the
       build's recorder/ folder, or an installed lib/memtrace)
"""
import argparse
import ctypes
import importlib.util
import os
import runpy
import sys


def load_sitecustomize(recorder):
    """memtrace's startup hook as a module, for its bridge cache, without
    its import watch (which attaches the real recorder)."""
    os.environ["MEMTRACE_TORCH_BRIDGE"] = os.path.join(recorder, "torch-bridge.cpp")
    os.environ["MEMTRACE_CAPTURE"] = "hook-floor"  # not 'requests': no import watch
    path = os.path.join(recorder, "python", "sitecustomize.py")
    spec = importlib.util.spec_from_file_location("memtrace_sitecustomize", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def attacher(noop_lib, recorder, python_sites):
    """A function that attaches the bridge, with nothing behind it, once
    torch.cuda has initialised (pass it to torch.cuda._lazy_call); it also
    wraps autograd as memtrace does when python_sites. Exits if there is no
    bridge for this PyTorch."""
    site = load_sitecustomize(recorder)
    so, why = site._bridge_for(importlib.util.find_spec("torch"))
    if not so:
        sys.exit("hook_floor: no bridge: " + why)
    import torch  # the bridge links against torch's own libraries

    noop = ctypes.CDLL(noop_lib)
    bridge = ctypes.CDLL(so)
    if python_sites:
        site._BRIDGE["so"] = so
        site._wrap_autograd(torch)

    def attach():
        bridge.memtrace_torch_bridge_attach.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
        rc = bridge.memtrace_torch_bridge_attach(
            ctypes.cast(noop.mt_bench_event, ctypes.c_void_p),
            ctypes.cast(noop.mt_bench_intern, ctypes.c_void_p),
            ctypes.cast(noop.mt_bench_clock, ctypes.c_void_p), int(python_sites))
        if rc != 0:
            sys.exit("hook_floor: PyTorch refused the hook")
    return attach


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--noop", required=True)
    p.add_argument("--recorder", required=True)
    p.add_argument("--python-sites", action="store_true")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    attach = attacher(a.noop, a.recorder, a.python_sites)
    import torch

    torch.cuda._lazy_call(attach)
    sys.argv = [a.script] + a.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
    runpy.run_path(a.script, run_name="__main__")


if __name__ == "__main__":
    main()
