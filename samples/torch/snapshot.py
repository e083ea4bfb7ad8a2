"""Records a PyTorch memory snapshot (torch.cuda.memory._record_memory_history
and _dump_snapshot) of one real model, for memtrace import, with a JSON sidecar
of PyTorch's own figures from the same run:

  torch_requested_bytes_peak   memory_stats()['requested_bytes.all.peak']
  torch_max_memory_reserved    torch.cuda.max_memory_reserved()
  torch_max_memory_allocated   torch.cuda.max_memory_allocated()
  model, mode, steps, batch, max_entries, protocol, entries (trace entries
  of device 0), oom, alloc_conf, gpu, torch_version

Models are built from transformers configs and torchvision (no downloads,
HF_HUB_OFFLINE=1): gpt2, bert (bf16 autocast), resnet50, t5 (t5-small's
shape); oom is a loop of 256 MiB tensors under a per-process memory fraction.

Modes:
  complete  history from before the model exists: every allocation is in
            the trace, and the peak figures cover exactly what it holds
  midrun    --steps steps without history, then the peak figures are reset
            and history is switched on for --steps more: the trace starts
            with tensors already live
  wrap      history from the start with --max-entries small enough that the
            ring buffer wraps (the peak figures cover the whole run)
Protocol 4 is what _dump_snapshot writes; --protocol 5 pickles the same
structure with protocol 5.
"""
import argparse
import json
import os
import pickle
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def model_step(name, batch):
    """A training step of the named model (forward, backward, optimizer)."""
    import torch

    import common

    if name == "gpt2":
        import gpt2_train
        return gpt2_train.setup(argparse.Namespace(batch=batch, seq=256))
    if name == "bert":
        import bert_train
        return bert_train.setup(argparse.Namespace(batch=batch, seq=128))
    if name == "resnet50":
        import resnet50_train
        return resnet50_train.setup(argparse.Namespace(batch=batch))
    if name == "t5":
        from transformers import T5Config, T5ForConditionalGeneration
        cfg = T5Config(d_model=512, d_ff=2048, num_layers=6, num_heads=8, pad_token_id=0,
                       decoder_start_token_id=0)
        model = T5ForConditionalGeneration(cfg).cuda().train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(0, cfg.vocab_size, (batch, 128), device="cuda")
        return common.train_step(lambda: model(input_ids=ids, labels=ids).loss, opt)
    raise SystemExit(f"snapshot.py: unknown model {name}")


def run_oom():
    """256 MiB tensors until the allocator refuses: the trace ends with an oom."""
    import torch

    torch.cuda.set_per_process_memory_fraction(0.05)
    held = []
    try:
        while True:
            held.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    except torch.cuda.OutOfMemoryError:
        return True
    return False


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=["gpt2", "bert", "resnet50", "t5", "oom"])
    p.add_argument("--mode", default="complete", choices=["complete", "midrun", "wrap"])
    p.add_argument("--steps", type=int, default=2, help="training steps (default %(default)s)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--max-entries", type=int, default=10_000_000,
                   help="history ring size (default %(default)s)")
    p.add_argument("--protocol", type=int, default=4, choices=[4, 5])
    p.add_argument("-o", "--output", required=True, help="the snapshot (.pickle)")
    p.add_argument("--json", required=True, help="the sidecar")
    args = p.parse_args()

    import torch

    torch.manual_seed(0)
    record = lambda: torch.cuda.memory._record_memory_history(  # noqa: E731
        enabled="all", context="all", stacks="python", max_entries=args.max_entries)
    torch.cuda.init()
    oom = False
    if args.mode != "midrun":
        torch.cuda.reset_peak_memory_stats()
        record()
    if args.model == "oom":
        oom = run_oom()
    else:
        step = model_step(args.model, args.batch)
        for _ in range(args.steps):
            step()
        if args.mode == "midrun":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            record()
            for _ in range(args.steps):
                step()
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    figures = {
        "torch_requested_bytes_peak": stats.get("requested_bytes.all.peak", 0),
        "torch_max_memory_reserved": torch.cuda.max_memory_reserved(),
        "torch_max_memory_allocated": torch.cuda.max_memory_allocated(),
    }
    if args.protocol == 4:
        torch.cuda.memory._dump_snapshot(args.output)
    else:
        with open(args.output, "wb") as f:
            pickle.dump(torch.cuda.memory._snapshot(), f, protocol=args.protocol)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(args.output, "rb") as f:
        traces = pickle.load(f)["device_traces"]
    figures.update({
        "model": args.model,
        "mode": args.mode,
        "steps": args.steps,
        "batch": args.batch,
        "max_entries": args.max_entries,
        "protocol": args.protocol,
        "entries": len(traces[0]) if traces else 0,
        "oom": oom,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "gpu": torch.cuda.get_device_name(),
        "torch_version": torch.__version__,
    })
    with open(args.json, "w") as f:
        json.dump(figures, f, indent=1)
        f.write("\n")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
