#!/usr/bin/env python3
"""bench/gpu's non-GPT rows: the MLP and ResNet-18, for Loom and PyTorch.

    models.py export MODEL DIR          MODEL.onnx and MODEL.json (FLOPs,
                                        loss, loomc flags) for loomc
    models.py torch MODEL [--dtype bf16] [--compile]
                                        PyTorch's step on this machine's GPU:
                                        JSON with step_s, peak_bytes

MODEL is
  mlp       bench/forward.py's MLP (4 Linear layers of width 1024, ReLU),
            batch 256, MSE loss, AdamW (lr 1e-4): bench/train.py's CPU row
  resnet18  torchvision's resnet18 (1000 classes), batch 32 of 3x224x224,
            batch norm in training mode, cross-entropy, SGD with momentum
            0.9 and weight decay 1e-4 (lr 0.1): the usual ImageNet step

f32 is f32 on both sides (no TF32); bf16 is Loom's --precision=bf16 (f32
master weights, 16-bit activations and GEMMs) against torch.autocast(cuda,
bfloat16). FLOPs are the model's (2 x multiply-adds of its convolutions and
linear layers) x 3 for a training step, the usual MFU convention.
The export runs with Debian's PyTorch 1.13 (no GPU); `torch` on the GPU
machine's PyTorch.
"""
import argparse
import warnings
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


class BasicBlock(torch.nn.Module):
    """torchvision.models.resnet.BasicBlock, for machines without it."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.downsample(x) if self.downsample else x))


class ResNet18(torch.nn.Module):
    """torchvision.models.resnet18(num_classes=1000), layer for layer."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layers(x).mean((2, 3))
        return self.fc(x)


def make(name):
    if name == "mlp":
        from forward import MLP
        return MLP(), (256, 1024), "mse", [
            "--optimizer=adamw", "--lr=1e-4"]
    try:
        import torchvision
        model = torchvision.models.resnet18(num_classes=1000)
    except ImportError:  # the GPU machines' PyTorch may come without it
        model = ResNet18()
    return model, (32, 3, 224, 224), \
        "cross_entropy", ["--optimizer=sgd", "--lr=0.1", "--momentum=0.9",
                          "--weight-decay=1e-4"]


def target(name, model, x):
    if name == "mlp":
        return torch.randn(x.shape[0], 1024, device=x.device)
    return torch.randint(0, 1000, (x.shape[0],), device=x.device)


def forward_flops(model, shape):
    """2 x multiply-adds of convolutions and linear layers, one forward."""
    total = [0]

    def conv(m, inp, out):
        k = m.kernel_size[0] * m.kernel_size[1] * m.in_channels // m.groups
        total[0] += 2 * out.numel() * k

    def linear(m, inp, out):
        total[0] += 2 * out.numel() * m.in_features
    hooks = [m.register_forward_hook(conv if isinstance(m, torch.nn.Conv2d) else linear)
             for m in model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model(torch.zeros(shape))
    for h in hooks:
        h.remove()
    return total[0]


def export(name, out):
    torch.manual_seed(0)
    model, shape, loss, flags = make(name)
    os.makedirs(out, exist_ok=True)
    flops = 3 * forward_flops(model, shape)
    model.train()
    warnings.filterwarnings("ignore", message=".*num_batches_tracked.*")
    torch.onnx.export(model, torch.zeros(shape), os.path.join(out, name + ".onnx"),
                      opset_version=14, input_names=["x"], output_names=["y"],
                      do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"model": name, "shape": list(shape), "loss": loss, "flags": flags,
                   "flops": flops}, f, indent=1)


def run_torch(name, dtype, compile_, steps=20, warmup=3):
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    model, shape, loss, _ = make(name)
    model = model.to(dev).train()
    if name == "mlp":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    fwd = torch.compile(model) if compile_ else model
    x = torch.randn(shape, device=dev)
    y = target(name, model, x)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            out = fwd(x)
            l = F.mse_loss(out.float(), y) if loss == "mse" else F.cross_entropy(out.float(), y)
        l.backward()
        opt.step()
    from h100.gpt_step import timed  # the GPT rows' timer (CUDA events, median)
    t0 = time.time()
    step()
    torch.cuda.synchronize()
    first = time.time() - t0
    torch.cuda.reset_peak_memory_stats()
    median = timed(step, warmup, steps)
    json.dump({"model": name, "dtype": dtype, "compile": compile_,
               "step_s": median, "first_step_s": first,
               "peak_bytes": torch.cuda.max_memory_allocated(),
               "device": torch.cuda.get_device_name(), "torch": torch.__version__},
              sys.stdout, indent=1)
    print()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["export", "torch"])
    p.add_argument("model", choices=["mlp", "resnet18"])
    p.add_argument("dir", nargs="?")
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    if a.what == "export":
        export(a.model, a.dir)
    elif not torch.cuda.is_available():
        sys.exit("models.py torch: no CUDA GPU")
    else:
        run_torch(a.model, a.dtype, a.compile)


if __name__ == "__main__":
    main()
