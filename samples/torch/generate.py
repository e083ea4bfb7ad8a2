"""GPT-2 small greedy generation whose KV cache grows: a --prompt token
prompt, then --tokens new tokens one at a time with the cache, bf16
weights. One step = one whole generation. No downloads."""
import common


def setup(args):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config()).cuda().eval().to(torch.bfloat16)
    prompt = torch.randint(0, model.config.vocab_size, (args.batch, args.prompt), device="cuda")

    @torch.no_grad()
    def step():
        with torch.cuda.nvtx.range("prefill"):
            out = model(input_ids=prompt, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
        with torch.cuda.nvtx.range("decode"):
            for _ in range(args.tokens):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = out.logits[:, -1:].argmax(-1)
    return step


def extra(p):
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--tokens", type=int, default=256)


if __name__ == "__main__":
    args = common.parse(__doc__, steps=3, batch=4, extra=extra)
    common.run(args, setup)
