"""A program whose memory does not follow its size parameter: an MLP
(embedding, four Linear(4096, 4096) + ReLU) trained with AdamW on a batch of
N token ids 0..N-1, whose step runs an extra block of four more layers when
the sum of the batch's token ids, read back from the GPU, is odd -- a
data-dependent branch, taken here at N = 2 (sum 1) and not at N = 1 or 4
(sums 0 and 6). memtrace predict must refuse traces at N = 1, 2, 4 rather
than extrapolate them. No downloads. See sized.py for the options."""
import common
import sized

WIDTH = 4096


def preload():
    import torch  # noqa: F401


def setup(n):
    import torch
    from torch import nn

    def mlp():
        return nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(WIDTH, WIDTH), nn.ReLU())])

    with torch.device("cuda"):
        emb, body, extra = nn.Embedding(1024, WIDTH), mlp(), mlp()
    params = list(emb.parameters()) + list(body.parameters()) + list(extra.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    ids = torch.arange(n, device="cuda")

    def forward():
        h = body(emb(ids))
        if int(ids.sum().item()) % 2:
            h = extra(h)
        return h.square().mean()
    return common.train_step(forward, opt)


if __name__ == "__main__":
    sized.main(__doc__, preload, setup, steps=2, warmup=1)
