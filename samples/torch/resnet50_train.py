"""ResNet-50 training (torchvision.models.resnet50(weights=None)) on random
224x224 images, SGD with momentum, fp32. No downloads."""
import common


def setup(args):
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights=None).cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (args.batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    return common.train_step(lambda: loss_fn(model(x), y), opt)


if __name__ == "__main__":
    args = common.parse(__doc__, steps=10, batch=64)
    common.run(args, setup)
