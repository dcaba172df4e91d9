"""nn.LSTM, nn.GRU and nn.RNN traced as their cell equations.

PyTorch's recurrent modules run one fused kernel (`_VF.lstm`, ...) over
weights they cache in `_flat_weights`, a list that `functional_call` does
not rebind: under make_fx's fake tensors the kernel meets the real
parameters and PyTorch stops with "Invoking operators with non-Fake Tensor
inputs in FakeTensorMode", printing a weight. While the training step is
traced, `recurrent_as_cells(model)` gives each such module a forward that
computes the same thing from its parameters read by name (so bound ones are
used): the input projection of every time step as one matmul, then per step
the hidden projection and the cell's gate equations, as PyTorch documents
them (torch.nn.LSTM, GRU, RNN), for any number of layers, both directions,
batch_first, biases or none, dropout between layers, initial states given or
zeros, unbatched inputs. The time loop is unrolled: one copy of the cell per
step (compile time grows with the sequence length). `proj_size` and packed
sequences are refused by name.
"""

import contextlib
import types

import torch
import torch.nn.functional as F


class RecurrentError(Exception):
    pass


def _cell(mode, x_proj, h, c, w_hh, b_hh, nonlinearity):
    """One step: returns (h, c) (c None but for LSTM)."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (x_proj + gh).chunk(4, -1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        return o * torch.tanh(c), c
    if mode == "GRU":
        xr, xz, xn = x_proj.chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    pre = x_proj + gh
    return (torch.tanh(pre) if nonlinearity == "tanh" else torch.relu(pre)), None


def _forward(self, input, hx=None):
    mode = "LSTM" if isinstance(self, torch.nn.LSTM) else \
        "GRU" if isinstance(self, torch.nn.GRU) else "RNN"
    name = f"nn.{mode}"
    if not isinstance(input, torch.Tensor):
        raise RecurrentError(f"loom.torch: {name} with a {type(input).__name__} "
                             "input (packed sequences) is not supported; pass "
                             "a padded tensor")
    if getattr(self, "proj_size", 0):
        raise RecurrentError(f"loom.torch: {name} with proj_size="
                             f"{self.proj_size} is not supported")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(1 if not self.batch_first else 0)
    if self.batch_first:
        x = x.transpose(0, 1)  # [time, batch, features]
    steps, batch = x.shape[0], x.shape[1]
    dirs = 2 if self.bidirectional else 1
    hidden = self.hidden_size
    nonlinearity = getattr(self, "nonlinearity", "tanh")
    if mode == "LSTM":
        h0, c0 = hx if hx is not None else (None, None)
    else:
        h0, c0 = hx, None
    if h0 is not None and not batched:
        h0 = h0.unsqueeze(1)
        c0 = c0.unsqueeze(1) if c0 is not None else None
    zeros = x.new_zeros(batch, hidden)
    h_n, c_n = [], []
    for layer in range(self.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"l{layer}" + ("_reverse" if d else "")
            w_ih = getattr(self, f"weight_ih_{sfx}")
            w_hh = getattr(self, f"weight_hh_{sfx}")
            b_ih = getattr(self, f"bias_ih_{sfx}") if self.bias else None
            b_hh = getattr(self, f"bias_hh_{sfx}") if self.bias else None
            k = layer * dirs + d
            h = h0[k] if h0 is not None else zeros
            c = (c0[k] if c0 is not None else zeros) if mode == "LSTM" else None
            # Every step's input projection at once.
            proj = F.linear(x, w_ih, b_ih)
            order = range(steps - 1, -1, -1) if d else range(steps)
            ys = [None] * steps
            for t in order:
                h, c = _cell(mode, proj[t], h, c, w_hh, b_hh, nonlinearity)
                ys[t] = h
            outs.append(torch.stack(ys, 0))
            h_n.append(h)
            if mode == "LSTM":
                c_n.append(c)
        x = outs[0] if dirs == 1 else torch.cat(outs, -1)
        if self.dropout and layer + 1 < self.num_layers:
            x = F.dropout(x, self.dropout, self.training)
    out = x.transpose(0, 1) if self.batch_first else x
    h_n = torch.stack(h_n, 0)
    if not batched:
        out = out.squeeze(1 if not self.batch_first else 0)
        h_n = h_n.squeeze(1)
    if mode == "LSTM":
        c_n = torch.stack(c_n, 0)
        if not batched:
            c_n = c_n.squeeze(1)
        return out, (h_n, c_n)
    return out, h_n


_KINDS = (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)


@contextlib.contextmanager
def recurrent_as_cells(model):
    """Within the block, every nn.LSTM/GRU/RNN of `model` (whose forward is
    PyTorch's) computes its cells from its parameters by name."""
    patched = []
    for m in model.modules():
        if isinstance(m, _KINDS) and type(m).forward in \
                (torch.nn.LSTM.forward, torch.nn.GRU.forward, torch.nn.RNN.forward) \
                and "forward" not in vars(m):
            m.forward = types.MethodType(_forward, m)
            patched.append(m)
    try:
        yield
    finally:
        for m in patched:
            del m.forward
