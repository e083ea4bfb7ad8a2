"""GPT-2 small (124M) training from transformers' GPT2Config() with random
tokens: fp32 weights (TF32 matrix products), AdamW, sequence length 512;
the size N is the batch size. NVTX phases forward, backward, optimizer.
No downloads. See sized.py for the options."""
import common
import sized

SEQ = 512


def preload():
    import torch  # noqa: F401
    from transformers import GPT2Config, GPT2LMHeadModel  # noqa: F401


def setup(n):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.backends.cuda.matmul.allow_tf32 = True
    with torch.device("cuda"):
        model = GPT2LMHeadModel(GPT2Config()).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, model.config.vocab_size, (n, SEQ), device="cuda")
    return common.train_step(lambda: model(input_ids=ids, labels=ids).loss, opt)


if __name__ == "__main__":
    sized.main(__doc__, preload, setup, steps=2, warmup=1)
