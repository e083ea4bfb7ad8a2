"""GPT-2 large (774M: 36 layers, width 1280) greedy generation from
transformers' GPT2Config with 2048 positions and bf16 weights: a 1984-token
prompt, then 32 new tokens one at a time with the KV cache; the size N is
the batch size (sequences generated at once). One step = one whole
generation, in the NVTX phases prefill and decode. No downloads. See
sized.py for the options."""
import sized

PROMPT = 1984
TOKENS = 32


def preload():
    import torch  # noqa: F401
    from transformers import GPT2Config, GPT2LMHeadModel  # noqa: F401


def setup(n):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_embd=1280, n_layer=36, n_head=20, n_positions=2048)
    with torch.device("cuda"):
        model = GPT2LMHeadModel(config).eval()
    model.to(torch.bfloat16)
    prompt = torch.randint(0, config.vocab_size, (n, PROMPT), device="cuda")

    @torch.no_grad()
    def step():
        with torch.cuda.nvtx.range("prefill"):
            out = model(input_ids=prompt, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
        with torch.cuda.nvtx.range("decode"):
            for _ in range(TOKENS):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = out.logits[:, -1:].argmax(-1)
    return step


if __name__ == "__main__":
    sized.main(__doc__, preload, setup, steps=1, warmup=1)
