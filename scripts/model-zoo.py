#!/usr/bin/env python3
"""Which torchvision classification models Loom trains, and how exactly.

    scripts/model-zoo.py [--build build] [--models a,b,...] [--markdown docs/models.md]
                         [--timeout S] [--work DIR]

For each model (by default one of each torchvision family; --models all
takes every classification model torchvision lists): built with 10 classes
and random weights, in float64 (float32 is chaotic enough to hide a wrong
gradient in rounding), batch 2 at a small input (64x64; 75 for Inception,
224 for MaxViT), traced by loom.compile with SGD (lr 0.1), trained one
step by loom-run, against PyTorch eager's step from the same weights and
data: the loss and every parameter after the step. A model is "equal" when
the loss is within 1e-8 relative (loom-run prints 9 digits) and every
parameter within 1e-9 of its tensor's largest element or 1, or within ten
times PyTorch's own difference between the step in the default and the
channels_last memory format (float64's noise, for ill-conditioned models).
A model that does not compile names the op
and the user's line (the first line of Loom's message is kept). Prints one
line per model and a summary; --markdown writes the table.

Random ops draw Loom's masks, not PyTorch's, so dropout and stochastic depth
(EfficientNet, ConvNeXt, Swin, MaxViT) are set to p = 0 on both sides; every
BatchNorm stays in training mode.
"""

import argparse
import copy
import os
import sys
import time
import traceback
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torchvision  # noqa: E402

import loom  # noqa: E402

# One of each family; `all` is torchvision's whole classification list.
FAMILIES = ["alexnet", "convnext_tiny", "densenet121", "efficientnet_b0",
            "efficientnet_v2_s", "googlenet", "inception_v3", "maxvit_t",
            "mnasnet0_5", "mobilenet_v2", "mobilenet_v3_small", "regnet_x_400mf",
            "regnet_y_400mf", "resnet18", "resnext50_32x4d", "shufflenet_v2_x0_5",
            "squeezenet1_0", "swin_t", "swin_v2_t", "vgg11", "vgg11_bn", "vit_b_32",
            "wide_resnet50_2"]
SIZE = {"inception_v3": 75, "maxvit_t": 224}
KWARGS = {"googlenet": {"aux_logits": False, "init_weights": True},
          "inception_v3": {"aux_logits": False, "init_weights": True},
          "vit_b_32": {"image_size": 64}}


def build(name):
    kwargs = dict(KWARGS.get(name, {}))
    model = torchvision.models.get_model(name, weights=None, num_classes=10, **kwargs)
    for m in model.modules():
        if isinstance(m, (nn.Dropout, torchvision.ops.StochasticDepth)):
            m.p = 0.0
    return model.double().train()


def compare(work, name, timeout):
    torch.manual_seed(0)
    model = build(name)
    size = SIZE.get(name, 64)
    x = torch.randn(2, 3, size, size, dtype=torch.float64)
    y = torch.tensor([3, 7])
    params = sum(p.numel() for p in model.parameters())
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    start = time.time()
    loss = nn.functional.cross_entropy(ref(x), y)
    loss.backward()
    opt.step()
    eager = time.time() - start
    # PyTorch's own noise: the same step in channels_last (other summation
    # orders). An ill-conditioned model (a batch norm over two values at
    # 1 x 1) differs from itself by more than 1e-9.
    alt = copy.deepcopy(model).to(memory_format=torch.channels_last)
    opt_alt = torch.optim.SGD(alt.parameters(), lr=0.1)
    nn.functional.cross_entropy(alt(x.to(memory_format=torch.channels_last)), y).backward()
    opt_alt.step()
    alt_params = dict(alt.named_parameters())
    noise = max(float((alt_params[k] - v).abs().max()) / max(float(v.abs().max()), 1.0)
                for k, v in ref.named_parameters())
    row = {"model": name, "params": params, "eager_s": eager, "noise": noise}
    start = time.time()
    try:
        art = loom.compile(model, nn.functional.cross_entropy,
                           torch.optim.SGD(model.parameters(), lr=0.1), (x, y),
                           out=os.path.join(work, name))
    except loom.LoomError as e:
        row.update(status="does not compile", why=str(e).splitlines()[0][:300])
        return row
    row["compile_s"] = time.time() - start
    start = time.time()
    try:
        got = art.train((x[None], y[None]), steps=1)[0]
    except loom.LoomError as e:
        row.update(status="does not train", why=str(e).splitlines()[0][:300])
        return row
    row["train_s"] = time.time() - start
    state = art.load_state_dict()
    rel = abs(got - loss.item()) / abs(loss.item())
    worst, where = 0.0, ""
    for k, v in ref.named_parameters():
        if k not in state:
            row.update(status="wrong", why=f"no trained value for {k}")
            return row
        e = float((state[k].double() - v.double()).abs().max()) / max(float(v.abs().max()), 1.0)
        if e > worst:
            worst, where = e, k
    row.update(loss_rel=rel, param_err=worst, worst=where)
    # loom-run prints the loss with 9 digits.
    row["status"] = "equal" if rel < 1e-8 and worst < max(1e-9, 10 * noise) else "wrong"
    if row["status"] == "wrong":
        row["why"] = f"loss {got!r} vs {loss.item()!r}, {where} off by {worst:.1e}"
    return row


def markdown(rows, path, machine):
    equal = sum(r["status"] == "equal" for r in rows)
    lines = ["# torchvision classification models through loom.compile", "",
             f"Generated by `scripts/model-zoo.py --markdown {os.path.relpath(path, ROOT)}` "
             f"({machine}): one of each torchvision family, 10 classes, random "
             "weights, float64, batch 2 at 64x64 (Inception 75, MaxViT 224), one "
             "SGD step (lr 0.1) by Loom against PyTorch eager from the same "
             "weights and data; dropout and stochastic depth set to p = 0 on both "
             "sides (random masks), batch norm in training mode. *Equal*: the "
             "loss within 1e-8 relative (loom-run prints 9 digits) and every "
             "parameter within 1e-9 of its tensor's largest element or 1, or "
             "within ten times PyTorch's own difference between its default and "
             "channels_last steps (*PyTorch noise*: an ill-conditioned model, e.g. "
             "a batch norm over two values, differs from itself by more).", "",
             f"**{equal} of {len(rows)} equal.**", "",
             "| model | parameters | result | worst parameter error | PyTorch noise | "
             "Loom compile s | Loom step s (incl. JIT) | eager step s | why |",
             "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        err = f"{r['param_err']:.1e}" if "param_err" in r else ""
        noise = f"{r['noise']:.1e}" if "noise" in r else ""
        lines.append(f"| {r['model']} | {r['params'] / 1e6:.1f} M | {r['status']} | {err} | {noise} | "
                     f"{r.get('compile_s', 0):.1f} | {r.get('train_s', 0):.1f} | "
                     f"{r['eager_s']:.2f} | {r.get('why', '').replace('|', '/')} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR", os.path.join(ROOT, "build")))
    p.add_argument("--models", default="")
    p.add_argument("--markdown")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--work", default="/tmp/loom-model-zoo")
    a = p.parse_args()
    os.environ["PATH"] = os.path.join(os.path.abspath(a.build), "bin") + os.pathsep + \
        os.environ["PATH"]
    torch.set_num_threads(2)
    names = FAMILIES if not a.models else (
        torchvision.models.list_models(module=torchvision.models) if a.models == "all"
        else a.models.split(","))
    rows = []
    for name in names:
        try:
            row = compare(a.work, name, a.timeout)
        except Exception as e:  # a crash of the script's own side is reported too
            row = {"model": name, "params": 0, "eager_s": 0, "status": "error",
                   "why": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
            traceback.print_exc()
        rows.append(row)
        print(f"{name:22} {row['status']:18} "
              + (f"loss {row['loss_rel']:.1e} params {row['param_err']:.1e} "
                 f"(PyTorch noise {row['noise']:.1e}) "
                 f"compile {row['compile_s']:.1f} s train {row['train_s']:.1f} s"
                 if "param_err" in row else row.get("why", "")), flush=True)
    equal = sum(r["status"] == "equal" for r in rows)
    print(f"{equal} of {len(rows)} equal")
    if a.markdown:
        cpu = "unknown CPU"
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        markdown(rows, a.markdown, f"{time.strftime('%Y-%m-%d')}, {cpu}, "
                 f"{os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
