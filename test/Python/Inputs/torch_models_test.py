#!/usr/bin/env python3
"""Three models written by others, traced by loom.compile and trained by
loom-run, against PyTorch eager from the same weights and data.

    torch_models_test.py WORK_DIR --model gpt|encoder|resnet18
        [--mesh dp=2,tp=2] [--strategy S] [--steps N] [--optimizer adamw|sgd]
        [--dtype float64]

gpt: a nanoGPT-style model (examples/nanogpt.py: token + position embedding,
causal self-attention, GELU MLP, weight-tied lm_head); encoder:
torch.nn.TransformerEncoderLayer with a linear head; resnet18: torchvision's,
BatchNorm in training mode (running statistics compared too). Prints the
losses of both and a verdict; exits 1 when a loss differs by more than
--loss-rtol (relative) or a final parameter or buffer by more than
--param-atol.
"""

import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "e2e", "Inputs"))
import loom  # noqa: E402
from train_vs_pytorch import Encoder  # noqa: E402  (the ONNX path's model)


def lm_loss(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def make(name, steps, rng):
    torch.manual_seed(0)
    if name == "gpt":
        from nanogpt import GPT, GPTConfig
        model = GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=4, n_embd=32))
        x = torch.from_numpy(rng.integers(0, 64, (steps, 4, 16)))
        y = torch.from_numpy(rng.integers(0, 64, (steps, 4, 16)))
        return model, lm_loss, (x, y)
    if name == "encoder":
        model = Encoder()
        x = torch.from_numpy(rng.standard_normal((steps, 4, 5, 32)).astype(np.float32))
        y = torch.from_numpy(rng.standard_normal((steps, 4, 5, 8)).astype(np.float32))
        return model, F.mse_loss, (x, y)
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    x = torch.from_numpy(rng.standard_normal((steps, 4, 3, 64, 64)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 10, (steps, 4)))
    return model, F.cross_entropy, (x, y)


def make_optimizer(kind, params, lr):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    return torch.optim.AdamW(params, lr=lr)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("--model", required=True, choices=["gpt", "encoder", "resnet18"])
    p.add_argument("--mesh", default="")
    p.add_argument("--strategy", default=None)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd"])
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--autodiff", default="loom", choices=["loom", "pytorch", "both"],
                   help="pytorch: run PyTorch's own traced backward and SGD step; "
                        "both: that and Loom's, each against PyTorch eager and "
                        "against each other")
    p.add_argument("--reference-dtype", default="float32", choices=["float32", "float64"],
                   help="float64: PyTorch runs the reference in double precision")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"],
                   help="float64: the model and its data in double precision, "
                        "traced and trained by Loom so (and the reference too)")
    p.add_argument("--loss-rtol", type=float, default=1e-5)
    p.add_argument("--param-atol", type=float, default=1e-4)
    a = p.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    model, loss_fn, data = make(a.model, a.steps, rng)
    if a.dtype == "float64":
        model.double()
        data = tuple(t.double() if t.is_floating_point() else t for t in data)
        a.reference_dtype = "float64"
    ref = copy.deepcopy(model)
    ref.train()
    wide = a.reference_dtype == "float64"
    if wide:
        ref.double()

    def batch(t):
        return t.double() if wide and t.is_floating_point() else t
    opt = make_optimizer(a.optimizer, ref.parameters(), a.lr)
    ref_losses = []
    for k in range(a.steps):
        opt.zero_grad()
        loss = loss_fn(ref(batch(data[0][k])), batch(data[1][k]))
        loss.backward()
        opt.step()
        ref_losses.append(loss.item())

    modes = ["pytorch", "loom"] if a.autodiff == "both" else [a.autodiff]
    arts, runs = [], []
    for mode in modes:
        arts.append(loom.compile(model, loss_fn,
                                 make_optimizer(a.optimizer, model.parameters(), a.lr),
                                 (data[0][0], data[1][0]), mesh=a.mesh,
                                 strategy=a.strategy, autodiff=mode,
                                 out=os.path.join(a.work, mode) if len(modes) > 1 else a.work))
        runs.append(arts[-1].train(data, steps=a.steps))
    failed = False
    if len(modes) > 1:
        s0, s1 = arts[0].load_state_dict(), arts[1].load_state_dict()
        loss_diff = max(abs(x - y) / abs(y) for x, y in zip(runs[0], runs[1]))
        param_diff = max((s0[k].double() - s1[k].double()).abs().max().item() for k in s0)
        print(f"PyTorch's traced step vs Loom's autodiff: max loss rel diff {loss_diff:.1e}, "
              f"max parameter diff {param_diff:.1e}")
        failed |= loss_diff > a.loss_rtol or param_diff > a.param_atol
    art, losses = arts[0], runs[0]
    for k, (l, r) in enumerate(zip(losses, ref_losses)):
        bad = abs(l - r) > a.loss_rtol * abs(r)
        failed |= bad
        print(f"step {k} loom {l:.8e} pytorch {r:.8e}{'  MISMATCH' if bad else ''}")
    state = art.load_state_dict()
    worst, worst_name = 0.0, ""
    for name, value in ref.state_dict().items():
        if name not in state:
            print(f"missing: {name}")
            failed = True
            continue
        mine = state[name].double()
        theirs = value.double()
        if name.endswith(("c_attn.bias", "in_proj_bias")):
            # The key bias adds q.b_k to every score of a query row, which
            # softmax ignores: its true gradient is exactly 0, and what any
            # implementation computes is rounding noise that Adam
            # normalizes into +-lr steps (PyTorch disagrees with itself
            # across thread counts). Compared: the query and value biases.
            d = theirs.numel() // 3
            key = (mine[d:2 * d] - theirs[d:2 * d]).abs().max().item()
            print(f"{name}: key part (exactly zero gradient) differs by {key:.3e}, not compared")
            mine = torch.cat([mine[:d], mine[2 * d:]])
            theirs = torch.cat([theirs[:d], theirs[2 * d:]])
        diff = (mine - theirs).abs().max().item() if theirs.numel() else 0.0
        if diff > worst:
            worst, worst_name = diff, name
    print(f"max parameter/buffer difference {worst:.3e} ({worst_name}) over "
          f"{len(ref.state_dict())} tensors")
    if worst > a.param_atol:
        failed = True
    if art.plan:
        print(art.plan.splitlines()[0])
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
