"""BERT-base masked-LM training from transformers' BertConfig() with random
tokens, bf16 autocast, AdamW, gradient checkpointing and eager attention (the
scores, batch x heads x seq x seq, are materialised: memory grows with the
square of the sequence); batch 8, and the size N is the sequence length in
blocks of 32 tokens (seq = 32 N; position embeddings for up to 16384 tokens).
NVTX phases forward, backward, optimizer. No downloads. See sized.py for the
options."""
import common
import sized

BATCH = 8
BLOCK = 32


def preload():
    import torch  # noqa: F401
    from transformers import BertConfig, BertForMaskedLM  # noqa: F401


def setup(n):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(max_position_embeddings=16384, attn_implementation="eager")
    with torch.device("cuda"):
        model = BertForMaskedLM(config).train()
    if model.config._attn_implementation != "eager":
        raise RuntimeError("attention is %s, not eager" % model.config._attn_implementation)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, config.vocab_size, (BATCH, BLOCK * n), device="cuda")

    def forward():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(input_ids=ids, labels=ids).loss
    return common.train_step(forward, opt)


if __name__ == "__main__":
    sized.main(__doc__, preload, setup, steps=2, warmup=1)
