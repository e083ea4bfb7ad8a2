"""Many streams and threads in one PyTorch process, for the gpu suite
(gpu_multiproc_tests.py).

THREADS Python threads, each with its own torch.cuda.Stream, start together
(a barrier) and each does ROUNDS rounds: allocate the uint8 tensors
sizes_of(t) on its stream, fill them there, free them. Nothing is
allocated on the default stream. Prints PyTorch's own figures as JSON on
the last line (allocs, requested_bytes.all.peak, live, and the expected
sizes per thread).
"""
import json
import threading

import torch

THREADS = 4
ROUNDS = 10
K = 25


def sizes_of(t):
    """Distinct per thread: (t+1) * 64 KiB + k*512 + t + 1 bytes, k = 0..K-1."""
    return [(t + 1) * 65536 + k * 512 + t + 1 for k in range(K)]


def main():
    torch.cuda.init()
    streams = [torch.cuda.Stream() for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    errors = []

    def work(t):
        try:
            with torch.cuda.stream(streams[t]):
                barrier.wait()
                for r in range(ROUNDS):
                    keep = [torch.empty(n, dtype=torch.uint8, device="cuda") for n in sizes_of(t)]
                    for i in range(len(keep)):
                        keep[i].fill_(r)
                    del keep
            streams[t].synchronize()
        except Exception as e:  # reported on stdout, the exit status says it
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    print(json.dumps({
        "allocs": stats["allocation.all.allocated"],
        "requested_peak": stats["requested_bytes.all.peak"],
        "live": stats["allocation.all.current"],
        "sizes": {str(t): sizes_of(t) for t in range(THREADS)},
        "rounds": ROUNDS,
        "errors": errors,
    }))
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
