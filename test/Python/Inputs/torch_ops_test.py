#!/usr/bin/env python3
"""One test per op of loom.torch's aten table (docs/pytorch.md): a tiny
module whose forward uses the op, traced by loom.compile, trained one SGD
step by loom-run, against PyTorch eager: the step's loss (forward) and the
updated weight (Loom's gradient of the op) must agree.

    torch_ops_test.py WORK_DIR [CASE ...]
Prints `PASS name` / `FAIL name: why` per case; exits 1 on any failure.
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import loom  # noqa: E402

F32 = torch.float32


class Case(nn.Module):
    def __init__(self, fn, w_shape):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.w = nn.Parameter(torch.randn(w_shape, generator=g))
        self.fn = fn

    def forward(self, x):
        return self.fn(x, self.w)


def r(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(7))


def _view_writes(y):
    m = torch.zeros(y.shape[-2:])
    m[:, 1:3].fill_(2.0)
    m[0].zero_()
    z = (y * m + y).clone()
    z[:, 1] = y[:, 2] * 3
    z[..., 1:4].mul_(0.5)
    return z


# name: (aten ops covered, fn(x, w), x, w shape)
CASES = {
    "view": ("view _unsafe_view _reshape_alias reshape flatten unsqueeze squeeze",
             lambda x, w: (x * w).reshape(4, 6).unsqueeze(0).squeeze(0).flatten(), r(2, 3, 4), (3, 4)),
    "expand": ("expand", lambda x, w: x * w.expand(2, 3, 4), r(2, 3, 4), (1, 4)),
    "t": ("t", lambda x, w: x.t() * w, r(3, 4), (4, 3)),
    "transpose": ("transpose", lambda x, w: (x * w).transpose(0, 2), r(2, 3, 4), (3, 4)),
    "permute": ("permute", lambda x, w: (x * w).permute(2, 0, 1), r(2, 3, 4), (3, 4)),
    "slice": ("slice", lambda x, w: (x * w)[:, 1:3, ::2], r(2, 3, 4), (3, 4)),
    "select": ("select", lambda x, w: (x * w)[:, 1], r(2, 3, 4), (3, 4)),
    "split": ("split split_with_sizes", lambda x, w: torch.split(x * w, [1, 3], dim=2)[1] * 2, r(2, 3, 4), (3, 4)),
    "chunk": ("split (chunk)", lambda x, w: (x * w).chunk(2, dim=-1)[0], r(2, 3, 4), (3, 4)),
    "unbind": ("unbind", lambda x, w: (x * w).unbind(1)[2], r(2, 3, 4), (3, 4)),
    "cat": ("cat", lambda x, w: torch.cat([x, x * w], dim=1), r(2, 3, 4), (3, 4)),
    "to": ("_to_copy", lambda x, w: (x * w).to(torch.float64).sum(0).to(F32), r(2, 3, 4), (3, 4)),
    "clone": ("clone detach", lambda x, w: (x * w).clone() + x.detach(), r(2, 3, 4), (3, 4)),
    "arange": ("arange", lambda x, w: x * w + torch.arange(4), r(2, 3, 4), (3, 4)),
    "full": ("full zeros ones", lambda x, w: x * w + torch.full((4,), 0.5) + torch.ones(4) - torch.zeros(4), r(2, 3, 4), (3, 4)),
    "tril": ("tril ones", lambda x, w: x * torch.tril(torch.ones(4, 4)) * w, r(2, 4, 4), (4, 4)),
    "like": ("ones_like zeros_like full_like", lambda x, w: x * w + torch.ones_like(x) + torch.full_like(x, 2.0), r(2, 3, 4), (3, 4)),
    "add": ("add", lambda x, w: x + w + 1.5, r(2, 3, 4), (3, 4)),
    "sub": ("sub rsub", lambda x, w: (x - w) - (2.0 - w), r(2, 3, 4), (3, 4)),
    "mul": ("mul", lambda x, w: x * w * 3.0, r(2, 3, 4), (3, 4)),
    "div": ("div", lambda x, w: x / (w * w + 1.0) / 2.0, r(2, 3, 4), (3, 4)),
    "pow": ("pow", lambda x, w: (x * w) ** 2 + (w * w + 1.0) ** 1.5, r(2, 3, 4), (3, 4)),
    "maximum": ("maximum minimum", lambda x, w: torch.maximum(x, w) + torch.minimum(x, w * 2), r(2, 3, 4), (3, 4)),
    "compare": ("eq ne lt le gt ge where",
                lambda x, w: torch.where(x > w, x * w, w) + torch.where(x <= 0, w, x) + (x == x).float()
                + (x != w).float() + (x < w).float() + (x >= 0.5).float(), r(2, 3, 4), (3, 4)),
    "masked_fill": ("masked_fill", lambda x, w: (x * w).masked_fill(x < 0, -3.0), r(2, 3, 4), (3, 4)),
    "masked_fill_inf": ("masked_fill (-inf) _softmax",
                        lambda x, w: torch.softmax((x * w).masked_fill(torch.triu(torch.ones(4, 4), 1) > 0,
                                                                       float("-inf")), -1), r(2, 4, 4), (4, 4)),
    "neg": ("neg", lambda x, w: -(x * w), r(2, 3, 4), (3, 4)),
    "exp": ("exp", lambda x, w: torch.exp(x * w), r(2, 3, 4), (3, 4)),
    "log": ("log", lambda x, w: torch.log(x * x + w * w + 0.1), r(2, 3, 4), (3, 4)),
    "sqrt": ("sqrt rsqrt", lambda x, w: torch.sqrt(x * x + w * w + 0.1) + torch.rsqrt(w * w + 1.0), r(2, 3, 4), (3, 4)),
    "tanh": ("tanh", lambda x, w: torch.tanh(x * w), r(2, 3, 4), (3, 4)),
    "sigmoid": ("sigmoid", lambda x, w: torch.sigmoid(x * w), r(2, 3, 4), (3, 4)),
    "relu": ("relu", lambda x, w: F.relu(x * w), r(2, 3, 4), (3, 4)),
    "abs": ("abs", lambda x, w: torch.abs(x * w), r(2, 3, 4), (3, 4)),
    "erf": ("erf", lambda x, w: torch.erf(x * w), r(2, 3, 4), (3, 4)),
    "sin": ("sin cos", lambda x, w: torch.sin(x * w) + torch.cos(x + w), r(2, 3, 4), (3, 4)),
    "floor": ("floor ceil", lambda x, w: x * w + torch.floor(x * 3) + torch.ceil(x * 2), r(2, 3, 4), (3, 4)),
    "gelu": ("gelu", lambda x, w: F.gelu(x * w) + F.gelu(x + w, approximate="tanh"), r(2, 3, 4), (3, 4)),
    "silu": ("silu (sigmoid, mul)", lambda x, w: F.silu(x * w), r(2, 3, 4), (3, 4)),
    "mm": ("mm t", lambda x, w: x @ w, r(5, 3), (3, 4)),
    "addmm": ("addmm (nn.Linear)", lambda x, w: F.linear(x, w, w[:, 0]), r(5, 3), (4, 3)),
    "bmm": ("bmm expand", lambda x, w: torch.bmm(x, w.expand(2, 3, 4)), r(2, 5, 3), (3, 4)),
    "matmul": ("matmul (3-D x 2-D: view, mm)", lambda x, w: x @ w, r(2, 5, 3), (3, 4)),
    "embedding": ("embedding", lambda x, w: F.embedding(x, w), torch.tensor([[0, 2], [3, 2]]), (5, 3)),
    "index_select": ("index_select", lambda x, w: torch.index_select(w, 0, x), torch.tensor([4, 0, 2]), (5, 3)),
    "softmax": ("_softmax", lambda x, w: torch.softmax(x * w, dim=1), r(2, 3, 4), (3, 4)),
    "log_softmax": ("_log_softmax", lambda x, w: F.log_softmax(x * w, dim=-1), r(2, 3, 4), (3, 4)),
    "layer_norm": ("native_layer_norm", lambda x, w: F.layer_norm(x, (4,), w[0], w[1]), r(2, 3, 4), (2, 4)),
    "conv2d": ("convolution", lambda x, w: F.conv2d(x, w, w[:, 0, 0, 0], stride=2, padding=1), r(2, 3, 7, 7), (4, 3, 3, 3)),
    "conv1d": ("convolution (1-D, groups)", lambda x, w: F.conv1d(x, w, groups=2, dilation=2), r(2, 4, 9), (4, 2, 3)),
    "conv2d_depthwise": ("convolution (depthwise, stride, asymmetric output)",
                         lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=4),
                         r(2, 4, 8, 7), (4, 1, 3, 3)),
    "conv_transpose2d": ("convolution (transposed: stride, padding, output_padding, dilation)",
                         lambda x, w: F.conv_transpose2d(x, w, w[0, :, 0, 0], stride=2, padding=1,
                                                         output_padding=1, dilation=(1, 2)),
                         r(2, 3, 4, 5), (3, 4, 3, 3)),
    "conv_transpose1d": ("convolution (transposed, 1-D, kernel = stride)",
                         lambda x, w: F.conv_transpose1d(x, w, stride=2), r(2, 3, 5), (3, 2, 2)),
    "max_pool": ("max_pool2d_with_indices", lambda x, w: F.max_pool2d(x * w, 3, 2, 1), r(2, 3, 7, 7), (7, 7)),
    "max_pool_ceil": ("max_pool2d_with_indices (ceil_mode: a last window past the end)",
                      lambda x, w: F.max_pool2d(x * w, 3, 2, 0, ceil_mode=True) + F.max_pool2d(x * w, 3, 2, 1, ceil_mode=True).sum(),
                      r(2, 3, 8, 8), (8, 8)),
    "avg_pool": ("avg_pool2d", lambda x, w: F.avg_pool2d(x * w, 3, 1, 1) + F.avg_pool2d(x * w, 2, count_include_pad=False).sum(), r(2, 3, 6, 6), (6, 6)),
    "avg_pool_ceil": ("avg_pool2d (ceil_mode, count_include_pad both ways, divisor_override)",
                      lambda x, w: F.avg_pool2d(x * w, 3, 2, 1, ceil_mode=True)
                      + F.avg_pool2d(x * w, 3, 2, 1, ceil_mode=True, count_include_pad=False).sum()
                      + F.avg_pool2d(x * w, 2, 3, 0, ceil_mode=True).sum()
                      + F.avg_pool2d(x * w, 3, 2, 1, divisor_override=5).sum(),
                      r(2, 3, 8, 8), (8, 8)),
    "pad_circular": ("F.pad circular (new_empty, then copy_ into slices of it)",
                     lambda x, w: F.pad(x * w, (1, 2, 2, 1), mode="circular"), r(2, 3, 6, 6), (6, 6)),
    "view_writes": ("in-place writes into views (fill_/zero_ of a mask's slices, x[:, 1] = ...)",
                    lambda x, w: _view_writes(x * w), r(2, 4, 5), (4, 5)),
    "norm": ("norm (F.normalize's order 2, order 1)",
             lambda x, w: F.normalize(x * w, dim=-1) + torch.norm(x * w, p=1, dim=1, keepdim=True),
             r(2, 3, 4), (3, 4)),
    "channels_last_pool": ("as_strided_ (the pooled result of a channels-last tensor restrided)",
                           lambda x, w: F.adaptive_avg_pool2d((x * w).contiguous(memory_format=torch.channels_last), 1).flatten(1),
                           r(2, 3, 4, 4), (4, 4)),
    "index": ("index (one integer index tensor: x[idx], x[:, idx])",
              lambda x, w: (x * w)[torch.tensor([[2, 0], [1, 1]])].sum(0) + (x * w)[:, torch.tensor([3, 0, 3])].sum(-1).sum(0), r(3, 4), (3, 4)),
    "adaptive_avg_pool": ("mean (adaptive_avg_pool2d to 1x1)", lambda x, w: F.adaptive_avg_pool2d(x * w, 1), r(2, 3, 6, 6), (6, 6)),
    "adaptive_avg_pool_sizes": ("_adaptive_avg_pool2d (overlapping windows, upsampling, 1-D)",
                                lambda x, w: F.adaptive_avg_pool2d(x * w, (4, 2)).sum() + F.adaptive_avg_pool2d(x * w, (8, 7)).sum((2, 3))
                                + F.adaptive_avg_pool1d((x * w)[:, :, 0], 3).sum(-1), r(2, 3, 6, 5), (6, 5)),
    "sum": ("sum", lambda x, w: (x * w).sum(1) + (x * w).sum(), r(2, 3, 4), (3, 4)),
    "mean": ("mean", lambda x, w: (x * w).mean((0, 2), keepdim=True) + (x * w).mean(), r(2, 3, 4), (3, 4)),
    "amax": ("amax amin", lambda x, w: (x * w).amax(-1).sum(-1) + (x * w).amin(1, keepdim=True).sum((1, 2)), r(2, 3, 4), (3, 4)),
    "batch_norm": ("native_batch_norm (training, running statistics)",
                   lambda x, w: F.batch_norm(x, torch.zeros(3), torch.ones(3), w[0], w[1], True, 0.1, 1e-5),
                   r(4, 3, 5, 5), (2, 3)),
    "batch_norm_eval": ("native_batch_norm (eval)",
                        lambda x, w: F.batch_norm(x, torch.full((3,), 0.1), torch.full((3,), 2.0), w[0], w[1], False, 0.1, 1e-5),
                        r(4, 3, 5, 5), (2, 3)),
    "clamp": ("clamp clamp_min clamp_max hardtanh",
              lambda x, w: torch.clamp(x * w, -0.5, 0.7) + (x * w).clamp_min(0.1) + (x * w).clamp_max(0.2)
              + F.hardtanh(x + w), r(2, 3, 4), (3, 4)),
    "leaky_relu": ("leaky_relu", lambda x, w: F.leaky_relu(x * w, 0.2), r(2, 3, 4), (3, 4)),
    "elu": ("elu", lambda x, w: F.elu(x * w, 0.7), r(2, 3, 4), (3, 4)),
    "hardswish": ("hardsigmoid hardswish", lambda x, w: F.hardswish(x * w * 4) + F.hardsigmoid(x + w), r(2, 3, 4), (3, 4)),
    "reciprocal": ("reciprocal square", lambda x, w: torch.reciprocal(w * w + 1.0) * x + torch.square(x * w), r(2, 3, 4), (3, 4)),
    "log1p": ("log1p expm1", lambda x, w: torch.log1p(x * x * w * w) + torch.expm1(x * w), r(2, 3, 4), (3, 4)),
    "stack": ("stack", lambda x, w: torch.stack([x * w, x + w], dim=1), r(2, 3, 4), (3, 4)),
    "logsumexp": ("logsumexp", lambda x, w: torch.logsumexp(x * w * 5, dim=-1), r(2, 3, 4), (3, 4)),
    "var": ("var std", lambda x, w: (x * w).var(-1) + (x * w).std(-1, keepdim=True).squeeze(-1) + (x * w).std((0, 2)).sum()
            + (x * w).var(1, unbiased=False).sum(-1, keepdim=True), r(2, 3, 4), (3, 4)),
    "max_dim": ("max.dim min.dim max (all)", lambda x, w: (x * w).max(-1)[0] + (x * w).min(1, keepdim=True)[0].sum(-1)
                + (x * w).max(), r(2, 3, 4), (3, 4)),
    "logical_not": ("logical_not", lambda x, w: torch.where(torch.logical_not(x > 0), x * w, w), r(2, 3, 4), (3, 4)),
    "dropout_p0": ("native_dropout (p=0 in training: the identity)", lambda x, w: F.dropout(x * w, 0.0, True), r(2, 3, 4), (3, 4)),
    "roll": ("roll", lambda x, w: torch.roll(x * w, shifts=(-1, 2), dims=(1, 2)) + torch.roll(x * w, 5), r(2, 3, 4), (3, 4)),
    "constant_pad": ("constant_pad_nd (F.pad: value, negative amounts crop)",
                     lambda x, w: F.pad(x * w, (1, 2, 0, 1), value=0.5) + F.pad(x * w, (-1, 2, 1, -1)).sum(), r(2, 3, 4), (3, 4)),
    "reflection_pad1d": ("reflection_pad1d", lambda x, w: F.pad(x * w, (3, 2), mode="reflect"), r(2, 3, 4), (3, 4)),
    "reflection_pad2d": ("reflection_pad2d", lambda x, w: F.pad(x * w, (1, 2, 2, 1), mode="reflect"), r(2, 3, 4), (3, 4)),
    "replication_pad2d": ("replication_pad2d", lambda x, w: F.pad(x * w, (2, 3, 1, 0), mode="replicate"), r(2, 3, 4), (3, 4)),
}


# Losses (the whole loss function is the op under test).
LOSS_CASES = {
    "nll_loss": ("nll_loss_forward", lambda o, y: F.nll_loss(F.log_softmax(o, -1), y)),
    "cross_entropy": ("_log_softmax nll_loss_forward (F.cross_entropy, ignore_index)",
                      lambda o, y: F.cross_entropy(o, y, ignore_index=2)),
    "cross_entropy_sum": ("nll_loss_forward (reduction=sum)", lambda o, y: F.cross_entropy(o, y, reduction="sum")),
    "mse_loss": ("mse_loss", lambda o, y: F.mse_loss(o[:, 0], y.float())),
}


AUTODIFF = "loom"
# Cases whose PyTorch backward ops (convolution, pooling, batch norm, strided
# slices, index_add, max's indices, silu's empty_like, copy_ into views:
# as_strided) autodiff="pytorch"
# does not import yet: they must be refused with a message, not run wrong.
PYTORCH_BACKWARD_MISSING = {
    "slice", "silu", "index_select", "conv2d", "conv1d", "conv2d_depthwise", "conv_transpose2d",
    "conv_transpose1d", "max_pool", "max_pool_ceil", "avg_pool", "avg_pool_ceil", "pad_circular", "view_writes", "adaptive_avg_pool_sizes", "index", "batch_norm",
    "batch_norm_eval", "max_dim"}


def run_case(work, name, model, loss_fn, batch, lr=0.1):
    ref = __import__("copy").deepcopy(model)
    opt = torch.optim.SGD(ref.parameters(), lr=lr)
    loss = loss_fn(ref(batch[0]), *batch[1:])
    loss.backward()
    opt.step()
    art = loom.compile(model, loss_fn, torch.optim.SGD(model.parameters(), lr=lr),
                       batch, out=os.path.join(work, name), autodiff=AUTODIFF)
    losses = art.train(tuple(b[None] for b in batch), steps=1)
    state = art.load_state_dict()
    problems = []
    if not np.isclose(losses[0], loss.item(), rtol=1e-5, atol=1e-6):
        problems.append(f"loss {losses[0]!r} != PyTorch {loss.item()!r}")
    for key, value in ref.state_dict().items():
        if not torch.allclose(state[key].to(value.dtype), value, atol=1e-5, rtol=1e-5):
            diff = (state[key].double() - value.double()).abs().max().item()
            problems.append(f"{key} differs by {diff:.3g} after one step")
    return problems


def main():
    global AUTODIFF
    args = sys.argv[1:]
    if "--autodiff=pytorch" in args:  # PyTorch's own backward and SGD step
        AUTODIFF = "pytorch"
        args.remove("--autodiff=pytorch")
    work = args[0]
    wanted = set(args[1:])
    failures = 0
    cases = []
    for name, (_, fn, x, w_shape) in CASES.items():
        out_shape = fn(x, torch.zeros(w_shape)).shape
        target = r(*out_shape) if len(out_shape) else r(())
        cases.append((name, Case(fn, w_shape),
                      lambda o, t: (o * t).sum(), (x, target)))
    for name, (_, loss_fn) in LOSS_CASES.items():
        m = Case(lambda x, w: x @ w, (4, 5))
        y = torch.tensor([1, 0, 4, 2, 3, 2])
        cases.append((name, m, loss_fn, (r(6, 4), y)))
    for name, model, loss_fn, batch in cases:
        if wanted and name not in wanted:
            continue
        try:
            problems = run_case(work, name, model, loss_fn, batch)
        except loom.LoomError as e:
            if AUTODIFF == "pytorch" and name in PYTORCH_BACKWARD_MISSING and \
                    "not supported" in str(e):
                print(f"REFUSED {name}: {str(e).splitlines()[0][:160]}", flush=True)
                continue
            problems = [f"LoomError: {e}"]
        except Exception as e:  # a failed case reports and the rest run
            problems = [f"{type(e).__name__}: {e}"]
        if problems:
            failures += 1
            print(f"FAIL {name}: " + "; ".join(problems), flush=True)
        else:
            print(f"PASS {name}", flush=True)
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
