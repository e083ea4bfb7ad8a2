#!/usr/bin/env python3
"""What one device-memory reading costs (issue 16 item 3): the recorder's
reading is nvmlDeviceGetMemoryInfo plus nvmlDeviceGetComputeRunningProcesses_v3
on the device (recorder/inject-device.c, rec_device_usage). This times the
same two NVML calls, made the same way (the C library through ctypes, whose
own call overhead is measured too and subtracted), while this process holds
a CUDA context and memory, so that it is in the process list. With the
readings per second of readings.py it bounds what the readings add to a run.
Prints figures and asserts nothing.

Usage: reading_cost.py [--calls N] [--json PATH]
"""
import argparse
import ctypes
import json
import statistics
import time


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class Process(ctypes.Structure):  # nvmlProcessInfo_t (v2 layout, used by _v3)
    _fields_ = [("pid", ctypes.c_uint), ("used_gpu_memory", ctypes.c_ulonglong),
                ("gpu_instance_id", ctypes.c_uint), ("compute_instance_id", ctypes.c_uint)]


def timed(fn, calls):
    """Per-call times of fn in microseconds."""
    out = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t) / 1000.0)
    return out


def summary(us):
    us = sorted(us)
    return {"median_us": round(statistics.median(us), 2),
            "p99_us": round(us[int(len(us) * 0.99) - 1], 2),
            "mean_us": round(statistics.fmean(us), 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json")
    a = ap.parse_args()

    import torch  # a context and memory of our own, as in a recorded program
    held = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()

    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        raise SystemExit("reading_cost.py: nvmlInit_v2 failed")
    dev = ctypes.c_void_p()
    if nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) != 0:
        raise SystemExit("reading_cost.py: no NVML device 0")
    mem = Memory()
    procs = (Process * 64)()
    n = ctypes.c_uint()

    def reading():
        nvml.nvmlDeviceGetMemoryInfo(dev, ctypes.byref(mem))
        n.value = 64
        nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, ctypes.byref(n), procs)

    noop = ctypes.CDLL(None).getpid  # a C call through ctypes that does nothing much
    reading()
    base = summary(timed(noop, a.calls))
    cost = summary(timed(reading, a.calls))
    result = {
        "calls": a.calls,
        "device": torch.cuda.get_device_name(0),
        "processes_listed": n.value,
        "reading": cost,
        "ctypes_call": base,
        "reading_less_ctypes_median_us": round(cost["median_us"] - 2 * base["median_us"], 2),
    }
    print(f"one reading (nvmlDeviceGetMemoryInfo + ComputeRunningProcesses_v3), "
          f"{a.calls} calls on {result['device']}: median {cost['median_us']} us, "
          f"p99 {cost['p99_us']} us, mean {cost['mean_us']} us; a ctypes call alone "
          f"{base['median_us']} us; {n.value} process(es) listed")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    del held


if __name__ == "__main__":
    main()
