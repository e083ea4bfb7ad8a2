"""Data-parallel training with torch.nn.parallel.DistributedDataParallel
(NCCL): a small MLP (--layers Linear(--width, --width) + ReLU), AdamW,
random data, --steps steps. No downloads. One process per GPU, started by
torchrun:

  memtrace record -o ddp.db -- torchrun --standalone --nproc_per_node=2 \\
      samples/torch/ddp_train.py --json 'ddp-rank{rank}.json'

Without torchrun it runs as a single rank (world size 1). Each rank writes
PyTorch's own figures for its device -- torch_max_memory_allocated,
torch_requested_bytes_peak (memory_stats()['requested_bytes.all.peak']),
torch_max_memory_reserved, plus rank, local_rank, pid, device and its uuid
-- as one stdout line "ddp-figures {...}" and, with --json PATH, to PATH
('{rank}' in PATH becomes the rank). The figures are taken after the
process group is destroyed, so nothing allocated later can raise a peak.

On machines whose docs say so, leave NVLink multicast off with
NCCL_NVLS_ENABLE=0.
"""
import argparse
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--steps", type=int, default=5, help="training steps (default %(default)s)")
    p.add_argument("--batch", type=int, default=64, help="batch size per rank (default %(default)s)")
    p.add_argument("--width", type=int, default=2048, help="hidden width (default %(default)s)")
    p.add_argument("--layers", type=int, default=4, help="Linear layers (default %(default)s)")
    p.add_argument("--json", metavar="PATH",
                   help="write this rank's figures here; '{rank}' becomes the rank")
    return p.parse_args()


def main():
    args = parse()
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    # Single-rank defaults when not started by torchrun.
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    try:
        dist.init_process_group("nccl", device_id=device)
    except TypeError:  # a PyTorch without device_id
        dist.init_process_group("nccl")

    torch.manual_seed(0)  # the same initial weights on every rank
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers).to(device), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device)
    gen.manual_seed(1000 + rank)  # each rank its own data
    for _ in range(args.steps):
        x = torch.randn(args.batch, args.width, device=device, generator=gen)
        y = torch.randn(args.batch, args.width, device=device, generator=gen)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize(device)
    dist.barrier()
    dist.destroy_process_group()
    torch.cuda.synchronize(device)

    stats = torch.cuda.memory_stats(device)
    props = torch.cuda.get_device_properties(device)
    figures = {
        "rank": rank,
        "local_rank": local_rank,
        "world_size": int(os.environ["WORLD_SIZE"]),
        "pid": os.getpid(),
        "device": local_rank,
        "device_uuid": str(getattr(props, "uuid", "")),
        "torch_max_memory_allocated": torch.cuda.max_memory_allocated(device),
        "torch_requested_bytes_peak": stats.get("requested_bytes.all.peak", 0),
        "torch_max_memory_reserved": torch.cuda.max_memory_reserved(device),
        "steps": args.steps,
        "loss": float(loss.detach().cpu()),
        "torch_version": torch.__version__,
    }
    # One write per line: the ranks share torchrun's stdout.
    sys.stdout.write("ddp-figures " + json.dumps(figures) + "\n")
    sys.stdout.flush()
    if args.json:
        with open(args.json.replace("{rank}", str(rank)), "w") as f:
            json.dump(figures, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
