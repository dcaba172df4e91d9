#!/usr/bin/env python3
"""Recurrent layers as PyTorch users write them, through loom.compile,
against PyTorch eager: three SGD steps from the same weights and data, each
step's loss and every parameter after the last compared (1e-5 relative
loss, 1e-5 parameters).

    torch_recurrent_test.py WORK_DIR

nn.LSTM/GRU/RNN used to stop PyTorch's own tracer (their fused kernel reads
cached weights that functional_call does not rebind: "Invoking operators
with non-Fake Tensor inputs in FakeTensorMode", with a weight printed);
loom.torch traces them as their cell equations (python/loom/torch_recurrent.py).
Cases:

* lstm-2-layers-bidirectional: nn.LSTM(num_layers=2, bidirectional=True,
  batch_first=True); the head reads the output sequence and the last
  layer's final hidden and cell states;
* gru-initial-state: nn.GRU, sequence first, h0 given as data;
* rnn-relu-no-bias-unbatched: nn.RNN(nonlinearity="relu", bias=False) on one
  unbatched sequence;
* cells: nn.LSTMCell and nn.GRUCell in a hand-written loop (LSTMCell traces
  to aten.unsafe_split);
* lstm-dp2: the first case data parallel on 2 ranks (batch 4);
* proj-size: nn.LSTM(proj_size=...) is an error naming proj_size.

Prints PASS/FAIL lines; exits 1 on a failure.
"""

import copy
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import loom  # noqa: E402

T, B, E, H = 5, 3, 6, 8


class Lstm(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.rnn = nn.LSTM(E, H, num_layers=2, bidirectional=True, batch_first=True, **kw)
        self.fc = nn.Linear(2 * H, 2)
        self.fs = nn.Linear(2 * H, 2)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return self.fc(y) + self.fs(torch.cat([h[-1], c[-2]], -1))[:, None, :]


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(E, H, num_layers=2)
        self.fc = nn.Linear(H, 2)

    def forward(self, x, h0):
        y, h = self.rnn(x.transpose(0, 1), h0)
        return self.fc(y.transpose(0, 1)) * h.sum()


class Rnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(E, H, nonlinearity="relu", bias=False)
        self.fc = nn.Linear(H, 2)

    def forward(self, x):
        return torch.stack([self.fc(self.rnn(x[b])[0]) for b in range(x.shape[0])])


class Cells(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTMCell(E, H)
        self.gru = nn.GRUCell(H, H)
        self.fc = nn.Linear(H, 2)

    def forward(self, x):
        h = c = g = x.new_zeros(x.shape[0], H)
        ys = []
        for t in range(x.shape[1]):
            h, c = self.lstm(x[:, t], (h, c))
            g = self.gru(h, g)
            ys.append(self.fc(g))
        return torch.stack(ys, 1)


def run(work, name, model, with_h0=False, steps=3, mesh=None, batch_size=B):
    torch.manual_seed(0)
    x = torch.randn(batch_size, T, E)
    h0 = torch.randn(2, batch_size, H) * 0.5
    y = torch.randn(batch_size, T, 2)
    batch = (x, h0, y) if with_h0 else (x, y)
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(ref(*batch[:-1]), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    art = loom.compile(model, nn.functional.mse_loss, torch.optim.SGD(model.parameters(), lr=0.1),
                       batch, model_inputs=len(batch) - 1, out=os.path.join(work, name),
                       mesh=mesh, strategy="dp" if mesh else None)
    got = art.train(tuple(t[None].expand(steps, *t.shape).contiguous() for t in batch),
                    steps=steps)
    state = art.load_state_dict()
    diff = max(float((state[k].double() - v.double()).abs().max())
               for k, v in ref.named_parameters())
    rel = max(abs(g - r) / abs(r) for g, r in zip(got, losses))
    ok = len(got) == steps and rel < 1e-5 and diff < 1e-5 and losses[-1] < losses[0]
    print(f"{'PASS' if ok else 'FAIL'} {name}: losses {', '.join(f'{g:.6f}' for g in got)} "
          f"vs PyTorch {', '.join(f'{r:.6f}' for r in losses)} ({rel:.1e}), parameters "
          f"within {diff:.1e} after {steps} SGD steps", flush=True)
    return ok


def refused(work):
    model = nn.LSTM(E, H, proj_size=4, batch_first=True)
    x = torch.randn(B, T, E)
    try:
        loom.compile(model, lambda out, y: nn.functional.mse_loss(out[0], y),
                     torch.optim.SGD(model.parameters(), lr=0.1), (x, torch.randn(B, T, 4)),
                     out=os.path.join(work, "proj"))
    except loom.LoomError as e:
        ok = "nn.LSTM with proj_size=4 is not supported" in str(e)
        print(f"{'PASS' if ok else 'FAIL'} proj-size: {str(e).splitlines()[0][:200]}")
        return ok
    print("FAIL proj-size: compiled")
    return False


def main():
    work = sys.argv[1]
    torch.manual_seed(0)
    ok = True
    for name, model, h0 in [("lstm-2-layers-bidirectional", Lstm(), False),
                            ("gru-initial-state", Gru(), True),
                            ("rnn-relu-no-bias-unbatched", Rnn(), False),
                            ("cells", Cells(), False)]:
        try:
            ok &= run(work, name, model.train(), h0)
        except loom.LoomError as e:
            print(f"FAIL {name}: {str(e).splitlines()[0][:300]}", flush=True)
            ok = False
    # Data parallel: each of 2 ranks runs the cells on its half of the
    # batch; the step equals PyTorch's on the whole batch.
    try:
        ok &= run(work, "lstm-dp2", Lstm().train(), mesh="dp=2", batch_size=4)
    except loom.LoomError as e:
        print(f"FAIL lstm-dp2: {str(e).splitlines()[0][:300]}", flush=True)
        ok = False
    ok &= refused(work)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
