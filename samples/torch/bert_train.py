"""BERT-base training (masked-LM head) from transformers' BertConfig() with
random tokens, bf16 autocast, AdamW, sequence length --seq. No downloads."""
import common


def setup(args):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    model = BertForMaskedLM(BertConfig()).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, model.config.vocab_size, (args.batch, args.seq), device="cuda")

    def forward():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(input_ids=ids, labels=ids).loss
    return common.train_step(forward, opt)


if __name__ == "__main__":
    args = common.parse(__doc__, steps=10, batch=32,
                        extra=lambda p: p.add_argument("--seq", type=int, default=128))
    common.run(args, setup)
