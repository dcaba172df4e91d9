#!/usr/bin/env python3
"""OUT/<name>/model.onnx: recurrent layers as PyTorch 1.13 exports them
(ONNX LSTM, GRU and RNN nodes, opset 14), with inputs and PyTorch's own
outputs in OUT/<name>/data:

  lstm:      nn.LSTM(num_layers=2, bidirectional=True, batch_first=True),
             h0 and c0 given; outputs y, h_n, c_n
  gru:       nn.GRU(num_layers=2), sequence first, h0 given (PyTorch's GRU
             is ONNX's linear_before_reset=1); outputs y, h_n
  rnn:       nn.RNN(nonlinearity="relu", bidirectional=True); outputs y, h_n
  lstm_lens: a bidirectional nn.LSTM whose exported LSTM node is given
             sequence_lens [7, 3, 5] as a graph input; PyTorch's reference
             runs each sequence alone, cut to its length (outputs past it
             are 0; the reverse direction starts at each sequence's end)
  elu:       an LSTM node with activations [Sigmoid, Elu, Tanh]: refused
             by name
"""
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

T, B, I, H = 7, 3, 5, 6


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        return y, h, c


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(I, H, num_layers=2)

    def forward(self, x, h0):
        return self.rnn(x, h0)


class Rnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(I, H, nonlinearity="relu", bidirectional=True)

    def forward(self, x):
        return self.rnn(x)


class OneLstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(I, H, bidirectional=True)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


def save(out, name, model, inputs, names, outputs, expected=None):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    torch.onnx.export(model, inputs, os.path.join(d, "model.onnx"), input_names=names,
                      output_names=outputs, opset_version=14)
    with torch.no_grad():
        got = expected if expected is not None else model(*inputs)
    for i, t in enumerate(inputs):
        np.save(os.path.join(d, "data", f"input_{i}.npy"), t.numpy())
    for i, t in enumerate(got):
        np.save(os.path.join(d, "data", f"output_{i}.npy"), np.asarray(t, np.float32))


def lstm_lens(out):
    model = OneLstm().eval()
    x = torch.randn(T, B, I)
    lens = [7, 3, 5]
    save(out, "lstm_lens", model, (x,), ["x"], ["y", "h", "c"])
    # The reference: each sequence alone, cut to its length.
    y = np.zeros((T, 2, B, H), np.float32)
    h = np.zeros((2, B, H), np.float32)
    c = np.zeros((2, B, H), np.float32)
    with torch.no_grad():
        for b, n in enumerate(lens):
            yb, (hb, cb) = model.rnn(x[:n, b:b + 1])
            y[:n, :, b] = yb.reshape(n, 2, H).numpy()
            h[:, b] = hb[:, 0].numpy()
            c[:, b] = cb[:, 0].numpy()
    d = os.path.join(out, "lstm_lens")
    m = onnx.load(os.path.join(d, "model.onnx"))
    lstm = [n for n in m.graph.node if n.op_type == "LSTM"]
    assert len(lstm) == 1, [n.op_type for n in m.graph.node]
    node = lstm[0]
    while len(node.input) < 5:
        node.input.append("")
    node.input[4] = "lens"
    m.graph.input.append(onnx.helper.make_tensor_value_info("lens", onnx.TensorProto.INT32, [B]))
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "data", "input_1.npy"), np.array(lens, np.int32))
    # The exported graph reshapes Y [T, 2, B, H] to [T, B, 2H] for PyTorch's y.
    for i, t in enumerate([y.transpose(0, 2, 1, 3).reshape(T, B, 2 * H), h, c]):
        np.save(os.path.join(d, "data", f"output_{i}.npy"), t)


def elu(out):
    F = onnx.TensorProto.FLOAT
    rng = np.random.default_rng(0)
    w = onnx.numpy_helper.from_array(rng.standard_normal((1, 4 * H, I)).astype(np.float32), "W")
    r = onnx.numpy_helper.from_array(rng.standard_normal((1, 4 * H, H)).astype(np.float32), "R")
    node = onnx.helper.make_node("LSTM", ["x", "W", "R"], ["", "h"], hidden_size=H,
                                 activations=["Sigmoid", "Elu", "Tanh"])
    g = onnx.helper.make_graph([node], "elu", [onnx.helper.make_tensor_value_info("x", F, [T, B, I])],
                               [onnx.helper.make_tensor_value_info("h", F, [1, B, H])],
                               initializer=[w, r])
    m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    os.makedirs(os.path.join(out, "elu"), exist_ok=True)
    onnx.save(m, os.path.join(out, "elu", "model.onnx"))


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    save(out, "lstm", Lstm().eval(),
         (torch.randn(B, T, I), torch.randn(4, B, H) * 0.5, torch.randn(4, B, H) * 0.5),
         ["x", "h0", "c0"], ["y", "h", "c"])
    save(out, "gru", Gru().eval(), (torch.randn(T, B, I), torch.randn(2, B, H) * 0.5),
         ["x", "h0"], ["y", "h"])
    save(out, "rnn", Rnn().eval(), (torch.randn(T, B, I),), ["x"], ["y", "h"])
    lstm_lens(out)
    elu(out)


if __name__ == "__main__":
    main()
