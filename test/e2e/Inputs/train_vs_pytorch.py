#!/usr/bin/env python3
"""Trains a model with Loom (loomc + loom-run) and with PyTorch 1.13 from the
same initial weights and data, and compares the loss of every step and the
final parameters.

    train_vs_pytorch.py WORK_DIR --model mlp|block|lm|lm-tied|encoder|resnet18|lstm
        --optimizer adamw|sgd [--steps 20] [--lr LR] [--grad-accumulation K] [--micro-batches M] [--grad-clip C]
        [--lr-schedule warmup-cosine --warmup-steps W]

Models: `mlp` (Linear-ReLU-Linear, cross-entropy), `block` (a pre-norm GPT
block: causal attention + GELU MLP + layer norms, MSE against a target) and
`lm` (token and position embeddings, that block, a final layer norm and a
vocabulary head, next-token cross-entropy), `lm-tied` (`lm` with the head's
weight tied to the token embedding, as nanoGPT does), `encoder`
(torch.nn.TransformerEncoderLayer and a linear head, MSE), `resnet18`
(torchvision's, 10 classes, 3x64x64 images, cross-entropy). The PyTorch
model is exported to ONNX (opset 14, no constant folding so that weights
keep their names) and Loom starts from its initializers. Prints one line per step and a verdict;
exits 1 if a loss differs by more than --loss-rtol (relative) or a final
parameter by more than --param-atol (absolute).
"""

import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Target", "ONNX", "Inputs"))
from export_torch_models import MLP, Block  # noqa: E402


class TrainBlock(Block):
    """The GPT block with a bias-free QKV projection (nanoGPT's bias=False).

    With a bias on the keys, the key bias adds the same q.b_k to every score
    of a query row, which softmax ignores: its gradient is exactly zero, and
    what any implementation computes for it is rounding noise that Adam
    normalises into +-lr steps. PyTorch disagrees with itself there across
    thread counts, so such a parameter cannot be compared to 1e-4.
    """

    def __init__(self, d=64, heads=4, seq=16):
        super().__init__(d, heads, seq)
        self.qkv = nn.Linear(d, 3 * d, bias=False)


class TinyLM(nn.Module):
    def __init__(self, vocab=50, d=64, seq=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.block = TrainBlock(d=d, heads=4, seq=seq)
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe[:T]
        return self.head(self.ln_f(self.block(x)))


class Encoder(nn.Module):
    """torch.nn.TransformerEncoderLayer (post-norm, ReLU, no dropout) and a
    linear head."""

    def __init__(self, d=32):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, 8)

    def forward(self, x):
        return self.head(self.enc(x))


class TiedLM(TinyLM):
    """nanoGPT's weight tying: the vocabulary head is the token embedding
    (one parameter used twice; its gradient is the sum of both uses)."""

    def __init__(self):
        super().__init__()
        self.head.weight = self.wte.weight


class LstmLM(nn.Module):
    """An LSTM language model: PyTorch exports nn.LSTM as ONNX LSTM nodes
    (one per layer) whose W, R and B are its parameters reordered by Slice
    and Concat in the graph."""

    def __init__(self, vocab=50, d=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.rnn = nn.LSTM(d, d, num_layers=2, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        return self.head(self.rnn(self.wte(tokens))[0])


def make(model, rng, n):
    """Model, example input, inputs [n, ...], labels [n, ...], loss name."""
    if model == "mlp":
        m = MLP()
        x = rng.standard_normal((n, 8, 32)).astype(np.float32)
        y = rng.integers(0, 10, size=(n, 8)).astype(np.int64)
        return m, x, y, "cross_entropy"
    if model == "block":
        m = TrainBlock()
        x = rng.standard_normal((n, 2, 16, 64)).astype(np.float32)
        y = rng.standard_normal((n, 2, 16, 64)).astype(np.float32)
        return m, x, y, "mse"
    if model == "resnet18":
        import torchvision
        m = torchvision.models.resnet18(num_classes=10)
        # 4 x 64 x 64: layer4's batch norms see 16 values per channel (at
        # 2 x 32 x 32, 2 values: the normalization amplifies rounding
        # differences 300-fold and no two implementations agree).
        x = rng.standard_normal((n, 4, 3, 64, 64)).astype(np.float32)
        y = rng.integers(0, 10, size=(n, 4)).astype(np.int64)
        return m, x, y, "cross_entropy"
    if model == "encoder":
        m = Encoder()
        x = rng.standard_normal((n, 2, 5, 32)).astype(np.float32)
        y = rng.standard_normal((n, 2, 5, 8)).astype(np.float32)
        return m, x, y, "mse"
    m = {"lm": TinyLM, "lm-tied": TiedLM, "lstm": LstmLM}[model]()
    x = rng.integers(0, 50, size=(n, 2, 16)).astype(np.int64)
    y = rng.integers(0, 50, size=(n, 2, 16)).astype(np.int64)
    return m, x, y, "cross_entropy"


def torch_loss(name, out, y):
    if name == "mse":
        return F.mse_loss(out, y)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def hf_cosine(warmup, total):
    def f(step):
        if step < warmup:
            return step / max(1, warmup)
        progress = (step - warmup) / max(1, total - warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
    return f


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("--model", default="mlp", choices=["mlp", "block", "lm", "lm-tied", "encoder", "resnet18", "lstm"])
    p.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd", "adam"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--lr", type=float, default=0.0,
                   help="learning rate (default: 0.05 for SGD, 3e-3 for Adam(W))")
    p.add_argument("--grad-accumulation", type=int, default=1,
                   help="K data entries per step (PyTorch's gradient accumulation)")
    p.add_argument("--micro-batches", type=int, default=1,
                   help="loomc splits the batch into M micro-batches; PyTorch "
                        "steps on the whole batch")
    p.add_argument("--grad-clip", type=float, default=0.0)
    p.add_argument("--lr-schedule", default="constant")
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: Loom --precision=bf16 against torch.autocast('cpu', bfloat16)")
    p.add_argument("--reference-dtype", default="float32", choices=["float32", "float64"],
                   help="float64: PyTorch runs the reference in double precision "
                        "(for models where PyTorch's own float32 kernels are the "
                        "less accurate side on some CPUs)")
    p.add_argument("--loss-rtol", type=float, default=1e-5)
    p.add_argument("--param-atol", type=float, default=1e-4)
    p.add_argument("--loomc", default="loomc")
    p.add_argument("--loom-run", default="loom-run")
    a = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    k = a.grad_accumulation
    n = a.steps * k
    model, xs, ys, loss_name = make(a.model, rng, n)
    os.makedirs(a.work, exist_ok=True)
    onnx_path = os.path.join(a.work, "model.onnx")
    torch.onnx.export(model, torch.from_numpy(xs[0]), onnx_path, opset_version=14,
                      input_names=["x"], output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    data = os.path.join(a.work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), xs)
    np.save(os.path.join(data, "labels.npy"), ys)

    if a.optimizer == "sgd":
        hyper = dict(lr=a.lr or 0.05, momentum=0.9, weight_decay=1e-4)
        opt = torch.optim.SGD(model.parameters(), **hyper)
        flags = ["--optimizer=sgd", f"--lr={hyper['lr']}", "--momentum=0.9",
                 "--weight-decay=1e-4"]
    else:
        cls = torch.optim.AdamW if a.optimizer == "adamw" else torch.optim.Adam
        lr = a.lr or 3e-3
        opt = cls(model.parameters(), lr=lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.05)
        flags = ["--optimizer=" + a.optimizer, f"--lr={lr}", "--betas=0.9,0.95",
                 "--eps=1e-8", "--weight-decay=0.05"]
    sched = None
    if a.lr_schedule == "warmup-cosine":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, hf_cosine(a.warmup_steps, a.steps))
        flags += ["--lr-schedule=warmup-cosine", f"--warmup-steps={a.warmup_steps}",
                  f"--total-steps={a.steps}"]
    if a.grad_clip:
        flags.append(f"--grad-clip={a.grad_clip}")
    if k > 1:
        flags.append(f"--grad-accumulation={k}")
    if a.micro_batches > 1:
        flags.append(f"--micro-batches={a.micro_batches}")
    if a.precision != "fp32":
        flags.append("--precision=" + a.precision)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16")

    out = os.path.join(a.work, "out")
    subprocess.run([a.loomc, onnx_path, "--train", "--loss=" + loss_name, *flags, "-o", out],
                   check=True)
    run = subprocess.run([a.loom_run, out, "--steps", str(a.steps), "--data", data],
                         check=True, capture_output=True, text=True)
    loom_losses = [float(line.split()[3]) for line in run.stdout.splitlines()
                   if line.startswith("step ")]

    # PyTorch, the same steps.
    model.train()
    wide = a.reference_dtype == "float64"
    if wide:
        model.double()  # in place: the optimizer keeps the same parameters

    def batch(arr):
        t = torch.from_numpy(arr)
        return t.double() if wide and t.is_floating_point() else t
    torch_losses = []
    for s in range(a.steps):
        opt.zero_grad()
        total = 0.0
        for m in range(k):
            i = s * k + m
            with autocast:
                loss = torch_loss(loss_name, model(batch(xs[i])), batch(ys[i]))
            (loss / k).backward()
            total += loss.item()
        if a.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        if sched:
            sched.step()
        torch_losses.append(total / k)

    ok = len(loom_losses) == a.steps
    worst_loss = 0.0
    for s, (l, t) in enumerate(zip(loom_losses, torch_losses)):
        rel = abs(l - t) / max(abs(t), 1e-30)
        worst_loss = max(worst_loss, rel)
        print(f"step {s:2d}  loom {l:.8e}  torch {t:.8e}  rel {rel:.1e}")
    ok &= worst_loss <= a.loss_rtol
    worst_param, worst_name = 0.0, ""
    for name, param in model.named_parameters():
        path = os.path.join(out, "params-final", name + ".npy")
        if not os.path.exists(path):
            print(f"missing final parameter {path}")
            ok = False
            continue
        got = np.load(path)
        err = float(np.max(np.abs(got - param.detach().numpy())))
        if err > worst_param:
            worst_param, worst_name = err, name
    ok &= worst_param <= a.param_atol
    # The same trend: both runs' losses fall (or rise) by the same amount
    # over the run, to 10%.
    if a.precision != "fp32" and len(loom_losses) == a.steps:
        n = max(1, a.steps // 5)
        drop_l = np.mean(loom_losses[:n]) - np.mean(loom_losses[-n:])
        drop_t = np.mean(torch_losses[:n]) - np.mean(torch_losses[-n:])
        trend = abs(drop_l - drop_t) / max(abs(drop_t), 1e-30)
        print(f"trend: first/last {n} steps' mean loss falls by {drop_l:.4e} (loom), "
              f"{drop_t:.4e} (torch); rel difference {trend:.1e} (limit 1e-1)")
        ok &= np.sign(drop_l) == np.sign(drop_t) and trend <= 0.1
    print(f"{'PASS' if ok else 'FAIL'}: {a.model} {a.optimizer} {a.precision} {a.steps} steps: "
          f"max loss rel error {worst_loss:.1e} (limit {a.loss_rtol:.0e}), max parameter "
          f"abs error {worst_param:.1e} in {worst_name or '-'} (limit {a.param_atol:.0e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
