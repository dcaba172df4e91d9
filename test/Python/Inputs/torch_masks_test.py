#!/usr/bin/env python3
"""Attention masks as PyTorch users pass them, through loom.compile, against
PyTorch eager: one SGD step from the same weights and data, the loss and
every parameter after the step compared (1e-5).

    torch_masks_test.py WORK_DIR

Any attn_mask or key_padding_mask makes nn.MultiheadAttention trace to
aten.baddbmm (the mask as the scores' bias), which loom.torch imports as a
batched dot_general plus the scaled bias. Cases:

* mha-causal-padding: nn.MultiheadAttention with a causal float mask (-inf
  above the diagonal, a registered buffer) and a boolean key_padding_mask
  given as data (one sequence padded);
* mha-bool-mask: a boolean attn_mask (True = not allowed);
* encoder-masks: nn.TransformerEncoderLayer (dropout 0) with src_mask and
  src_key_padding_mask, batch first;
* baddbmm / addbmm called directly with beta and alpha.

Prints PASS/FAIL lines; exits 1 on a failure.
"""

import copy
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import loom  # noqa: E402

L, B, E = 6, 3, 8


def causal():
    return torch.triu(torch.full((L, L), float("-inf")), 1)


def padding():
    pad = torch.zeros(B, L, dtype=torch.bool)
    pad[1, 4:] = True
    return pad


class MHA(nn.Module):
    def __init__(self, bool_mask=False):
        super().__init__()
        self.mha = nn.MultiheadAttention(E, 2, batch_first=True)
        self.fc = nn.Linear(E, 2)
        mask = torch.triu(torch.ones(L, L, dtype=torch.bool), 1) if bool_mask else causal()
        self.register_buffer("mask", mask)

    def forward(self, x, pad):
        y = self.mha(x, x, x, attn_mask=self.mask, key_padding_mask=pad, need_weights=False)[0]
        return self.fc(y)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(E, 2, 16, dropout=0.0, batch_first=True)
        self.fc = nn.Linear(E, 2)
        self.register_buffer("mask", causal())

    def forward(self, x, pad):
        return self.fc(self.layer(x, src_mask=self.mask, src_key_padding_mask=pad))


class Bmm(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w = nn.Parameter(torch.randn(B, E, 4, generator=g))
        self.bias = nn.Parameter(torch.randn(L, 4, generator=g))

    def forward(self, x, pad):
        y = torch.baddbmm(self.bias, x, self.w, beta=0.5, alpha=2.0)
        z = torch.addbmm(self.bias, x, self.w, beta=1.5, alpha=0.25)
        return (y + z).masked_fill(pad[:, :, None], 0.0)[..., :2]


def run(work, name, model):
    torch.manual_seed(0)
    x = torch.randn(B, L, E)
    pad = padding()
    y = torch.randn(B, L, 2)
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    loss = nn.functional.mse_loss(ref(x, pad), y)
    loss.backward()
    opt.step()
    art = loom.compile(model, nn.functional.mse_loss, torch.optim.SGD(model.parameters(), lr=0.1),
                       (x, pad, y), model_inputs=2, out=os.path.join(work, name))
    got = art.train(tuple(t[None] for t in (x, pad, y)), steps=1)[0]
    state = art.load_state_dict()
    diff = max(float((state[k].double() - v.double()).abs().max())
               for k, v in ref.named_parameters())
    rel = abs(got - loss.item()) / abs(loss.item())
    ok = rel < 1e-5 and diff < 1e-5
    print(f"{'PASS' if ok else 'FAIL'} {name}: loss {got:.7f} vs PyTorch {loss.item():.7f} "
          f"({rel:.1e}), parameters within {diff:.1e} after one SGD step", flush=True)
    return ok


def main():
    work = sys.argv[1]
    torch.manual_seed(0)
    cases = [("mha-causal-padding", MHA()), ("mha-bool-mask", MHA(bool_mask=True)),
             ("encoder-masks", Encoder()), ("baddbmm-addbmm", Bmm())]
    ok = True
    for name, model in cases:
        try:
            ok &= run(work, name, model.train())
        except loom.LoomError as e:
            print(f"FAIL {name}: {str(e).splitlines()[0][:300]}", flush=True)
            ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
