"""GPT-2 small (124M) training from transformers' GPT2Config() with random
tokens: AdamW, fp32 weights, sequence length --seq; NVTX phases forward,
backward, optimizer. No downloads."""
import common


def setup(args):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config()).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, model.config.vocab_size, (args.batch, args.seq), device="cuda")

    return common.train_step(lambda: model(input_ids=ids, labels=ids).loss, opt)


if __name__ == "__main__":
    args = common.parse(__doc__, steps=10, batch=8,
                        extra=lambda p: p.add_argument("--seq", type=int, default=512))
    common.run(args, setup)
