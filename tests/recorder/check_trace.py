"""Reads a trace through trace-dump (tests/recorder/trace-dump.c) into plain
Python data, and computes the figures the recorder's checks compare with
PyTorch's own: peak live bytes per layer (from the events, independently of
the reader's own peak), the peak of the bytes a `caching` replay hands out
(PyTorch's max_memory_allocated), the largest reserved total the PyTorch
bridge saw, and bytes per alloc/free event. The figures take `process` (a
process row id) to look at one process of a multi-process trace."""
import json
import subprocess
from collections import defaultdict


class Trace:
    def __init__(self, dump, path, events=True):
        args = [dump] + (["--events"] if events else []) + [path]
        out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.rc = out.returncode
        self.error = out.stderr.strip()
        self.meta, self.processes, self.devices = {}, [], []
        self.stats, self.peak, self.events = {}, {}, defaultdict(list)
        for line in out.stdout.splitlines():
            f = line.split(" ")
            tag = f[0]
            if tag == "meta":
                self.meta[f[1]] = " ".join(f[2:])
            elif tag == "process":
                capture = " ".join(f[4:])
                self.processes.append(dict(id=int(f[1]), parent=int(f[2]), pid=int(f[3]),
                                           capture="" if capture == "-" else capture))
            elif tag == "device":
                self.devices.append(dict(id=int(f[1]), ordinal=int(f[2]), total=int(f[3]),
                                         uuid=f[4], pci="" if f[5] == "-" else f[5],
                                         name=" ".join(f[6:])))
            elif tag == "stats":
                self.stats[f[1]] = dict(events=int(f[2]), chunks=int(f[3]), blob=int(f[4]))
            elif tag == "peak":
                self.peak[f[1]] = int(f[2])
            else:
                self.events[tag].append(self._event(tag, f))

    @staticmethod
    def _site(words):
        """The call site's frames, innermost first ([] when none)."""
        text = " ".join(words)
        return [] if text in ("", "-") else text.split("|")

    @staticmethod
    def _event(tag, f):
        e = dict(ts=int(f[1]), seq=int(f[2]), process=int(f[3]), device=int(f[4]))
        if tag in ("alloc", "free"):
            e.update(layer=f[5], api=f[6], mem=f[7], addr=int(f[8]), bytes=int(f[9]),
                     stream=int(f[10]), reuse=int(f[11]), site=Trace._site(f[12:]))
        elif tag == "alloc_failed":
            e.update(layer=f[5], api=f[6], bytes=int(f[7]), free=int(f[8]), error=int(f[9]),
                     stream=int(f[10]), site=Trace._site(f[11:]))
        elif tag == "kernel":
            e.update(end=int(f[5]), stream=int(f[6]), named=f[7] == "named")
        elif tag in ("memcpy", "memset"):
            e.update(end=int(f[5]), bytes=int(f[6]), stream=int(f[7]), copy=int(f[8]))
        elif tag == "range":
            e.update(end=int(f[5]), depth=int(f[6]), thread=int(f[7]), name=" ".join(f[8:]))
        elif tag == "sample":
            e.update(used=int(f[5]), process_bytes=int(f[6]))
        elif tag == "pool":
            e.update(pool=int(f[5]), reserved=int(f[6]), used=int(f[7]), op=int(f[8]))
        return e

    def allocs(self, layer=None, **match):
        return [e for e in self.events["alloc"] if (layer is None or e["layer"] == layer)
                and all(e[k] == v for k, v in match.items())]

    def frees(self, layer=None, **match):
        return [e for e in self.events["free"] if (layer is None or e["layer"] == layer)
                and all(e[k] == v for k, v in match.items())]

    def merged(self, layer, process=None, **match):
        """Alloc and free events of one layer (of one process; matching
        `match`, e.g. mem="async_pool") in trace order."""
        if process is not None:
            match["process"] = process
        ev = [("a", e) for e in self.allocs(layer, **match)] + \
             [("f", e) for e in self.frees(layer, **match)]
        ev.sort(key=lambda x: (x[1]["ts"], x[1]["process"], x[1]["seq"]))
        return ev

    def pairing(self, layer, process=None, **match):
        """(pairs, unmatched frees, never freed, size mismatches) by address."""
        live, pairs, unmatched, mismatched = {}, 0, 0, 0
        for kind, e in self.merged(layer, process, **match):
            key = (e["process"], e["device"], e["addr"])
            if kind == "a":
                live[key] = e
            elif key in live:
                a = live.pop(key)
                pairs += 1
                if e["bytes"] and e["bytes"] != a["bytes"]:
                    mismatched += 1
            else:
                unmatched += 1
        return pairs, unmatched, len(live), mismatched

    def peak_live(self, layer, process=None):
        live, cur, peak = {}, 0, 0
        for kind, e in self.merged(layer, process):
            key = (e["process"], e["device"], e["addr"])
            if kind == "a":
                b = e["bytes"]
                live[key] = b
                cur += b
                peak = max(peak, cur)
            elif key in live:
                cur -= live.pop(key)
        return peak

    def torch_reserved_peak(self, process=None):
        """Largest reserved total the PyTorch bridge reported (pool MT_TORCH_POOL).
        The bridge counts per process and device: with several processes
        (or devices) give `process` and look at one at a time."""
        torch_pool = 0x746f726368
        return max([e["reserved"] for e in self.events["pool"] if e["pool"] == torch_pool
                    and (process is None or e["process"] == process)] or [0])

    def process_of_pid(self, pid):
        """The process rows with this pid (an exec keeps the pid: two rows)."""
        return [p for p in self.processes if p["pid"] == pid]

    def device_rows_of(self, process, kinds=None):
        """Device row ids the events of one process are on (all kinds unless given)."""
        return {e["device"] for k, evs in self.events.items() if kinds is None or k in kinds
                for e in evs if e["process"] == process}

    def device(self, row):
        return next((d for d in self.devices if d["id"] == row), None)

    def bytes_per_alloc_free(self):
        n = self.stats.get("alloc", {}).get("events", 0) + self.stats.get("free", {}).get("events", 0)
        b = self.stats.get("alloc", {}).get("blob", 0) + self.stats.get("free", {}).get("blob", 0)
        return b / n if n else 0.0


def caching_peak_allocated(memtrace, path):
    """Peak of the bytes PyTorch's caching allocator hands out (its
    max_memory_allocated: rounded and split blocks), from a `caching` replay."""
    out = subprocess.run([memtrace, "replay", path, "--policy", "caching", "--backend", "sim",
                          "--json", "--no-save"], stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout)[0]["peak_allocated_rounded"] if out.returncode == 0 else -1
