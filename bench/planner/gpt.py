#!/usr/bin/env python3
"""Writes a GPT-style model (forward pass with its loss) in the loom dialect.

  gpt.py --layers 96 --hidden 12288 --heads 96 --seq 2048 --batch 1024 > gpt.mlir

Pre-norm decoder blocks (layer norm, causal attention, layer norm, GELU MLP of
4x the hidden size), token embedding, final layer norm and LM head, mean
cross-entropy. Parameters carry no values (the planner needs shapes only; a
training run would draw them with the seeded initialiser).
"""
import argparse


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=51200)
    p.add_argument("--dtype", default="bf16")
    a = p.parse_args()
    B, S, H, A, V, L, t = a.batch, a.seq, a.hidden, a.heads, a.vocab, a.layers, a.dtype
    D = H // A
    F = 4 * H
    act = f"tensor<{B}x{S}x{H}x{t}>"
    out = []
    w = out.append
    params = [("wte", f"{V}x{H}")]
    for l in range(L):
        params += [(f"h{l}.ln1.g", f"{H}"), (f"h{l}.ln1.b", f"{H}"),
                   (f"h{l}.wq", f"{H}x{H}"), (f"h{l}.wk", f"{H}x{H}"),
                   (f"h{l}.wv", f"{H}x{H}"), (f"h{l}.wo", f"{H}x{H}"),
                   (f"h{l}.ln2.g", f"{H}"), (f"h{l}.ln2.b", f"{H}"),
                   (f"h{l}.fc1", f"{H}x{F}"), (f"h{l}.fc2", f"{F}x{H}")]
    params += [("lnf.g", f"{H}"), ("lnf.b", f"{H}"), ("lm_head", f"{H}x{V}")]
    w(f"// GPT: {L} layers, hidden {H}, {A} heads, sequence {S}, batch {B}, vocab {V}, {t}")
    for name, shape in params:
        w(f'loom.parameter @"{name}" : tensor<{shape}x{t}> trainable')
    args = [f"%tokens: tensor<{B}x{S}xi64> {{loom.name = \"tokens\", loom.index_bound = {V}}}",
            f"%labels: tensor<{B * S}xi64> {{loom.name = \"labels\", loom.index_bound = {V}}}",
            f"%mask: tensor<{S}x{S}x{t}> {{loom.name = \"mask\"}}"]
    for i, (name, shape) in enumerate(params):
        args.append(f'%p{i}: tensor<{shape}x{t}> {{loom.param = @"{name}"}}')
    w("func.func @forward(" + ",\n    ".join(args) + ") -> tensor<f32> {")
    w(f"  %scale = loom.constant dense<{1.0 / D ** 0.5}> : tensor<{t}>")
    w(f"  %x = loom.gather %p0[%tokens] axis = 0 : (tensor<{V}x{H}x{t}>, tensor<{B}x{S}xi64>) -> {act}")
    x = "%x"
    hd = f"tensor<{B}x{S}x{A}x{D}x{t}>"
    bh = f"tensor<{B}x{A}x{S}x{D}x{t}>"
    bhT = f"tensor<{B}x{A}x{D}x{S}x{t}>"
    sc = f"tensor<{B}x{A}x{S}x{S}x{t}>"
    for l in range(L):
        base = 1 + 10 * l
        g1, b1, wq, wk, wv, wo, g2, b2, f1, f2 = (f"%p{base + j}" for j in range(10))
        n = f"l{l}"
        w(f"  %{n}_ln1 = loom.layer_norm {x}, {g1}, {b1} axis = 2 epsilon = 1.0e-5 "
          f": ({act}, tensor<{H}x{t}>, tensor<{H}x{t}>) -> {act}")
        for q, wt in (("q", wq), ("k", wk), ("v", wv)):
            w(f"  %{n}_{q}0 = loom.dot_general %{n}_ln1, {wt} contracting_dims = [2] x [0] "
              f": ({act}, tensor<{H}x{H}x{t}>) -> {act}")
            w(f"  %{n}_{q}1 = loom.reshape %{n}_{q}0 : ({act}) -> {hd}")
        w(f"  %{n}_q = loom.transpose %{n}_q1 permutation = [0, 2, 1, 3] : ({hd}) -> {bh}")
        w(f"  %{n}_kt = loom.transpose %{n}_k1 permutation = [0, 2, 3, 1] : ({hd}) -> {bhT}")
        w(f"  %{n}_v = loom.transpose %{n}_v1 permutation = [0, 2, 1, 3] : ({hd}) -> {bh}")
        w(f"  %{n}_s0 = loom.dot_general %{n}_q, %{n}_kt batching_dims = [0, 1] x [0, 1] "
          f"contracting_dims = [3] x [2] : ({bh}, {bhT}) -> {sc}")
        w(f"  %{n}_s1 = loom.mul %{n}_s0, %scale : ({sc}, tensor<{t}>) -> {sc}")
        w(f"  %{n}_s2 = loom.add %{n}_s1, %mask : ({sc}, tensor<{S}x{S}x{t}>) -> {sc}")
        w(f"  %{n}_p = loom.softmax %{n}_s2 axis = 3 : {sc}")
        w(f"  %{n}_o0 = loom.dot_general %{n}_p, %{n}_v batching_dims = [0, 1] x [0, 1] "
          f"contracting_dims = [3] x [2] : ({sc}, {bh}) -> {bh}")
        w(f"  %{n}_o1 = loom.transpose %{n}_o0 permutation = [0, 2, 1, 3] : ({bh}) -> {hd}")
        w(f"  %{n}_o2 = loom.reshape %{n}_o1 : ({hd}) -> {act}")
        w(f"  %{n}_a = loom.dot_general %{n}_o2, {wo} contracting_dims = [2] x [0] "
          f": ({act}, tensor<{H}x{H}x{t}>) -> {act}")
        w(f"  %{n}_h = loom.add {x}, %{n}_a : {act}")
        w(f"  %{n}_ln2 = loom.layer_norm %{n}_h, {g2}, {b2} axis = 2 epsilon = 1.0e-5 "
          f": ({act}, tensor<{H}x{t}>, tensor<{H}x{t}>) -> {act}")
        w(f"  %{n}_f0 = loom.dot_general %{n}_ln2, {f1} contracting_dims = [2] x [0] "
          f": ({act}, tensor<{H}x{F}x{t}>) -> tensor<{B}x{S}x{F}x{t}>")
        w(f"  %{n}_f1 = loom.gelu %{n}_f0 : tensor<{B}x{S}x{F}x{t}>")
        w(f"  %{n}_f2 = loom.dot_general %{n}_f1, {f2} contracting_dims = [2] x [0] "
          f": (tensor<{B}x{S}x{F}x{t}>, tensor<{F}x{H}x{t}>) -> {act}")
        w(f"  %{n}_out = loom.add %{n}_h, %{n}_f2 : {act}")
        x = f"%{n}_out"
    last = 1 + 10 * L
    w(f"  %lnf = loom.layer_norm {x}, %p{last}, %p{last + 1} axis = 2 epsilon = 1.0e-5 "
      f": ({act}, tensor<{H}x{t}>, tensor<{H}x{t}>) -> {act}")
    w(f"  %logits = loom.dot_general %lnf, %p{last + 2} contracting_dims = [2] x [0] "
      f": ({act}, tensor<{H}x{V}x{t}>) -> tensor<{B}x{S}x{V}x{t}>")
    w(f"  %flat = loom.reshape %logits : (tensor<{B}x{S}x{V}x{t}>) -> tensor<{B * S}x{V}x{t}>")
    w(f"  %loss = loom.cross_entropy %flat, %labels reduction = mean "
      f": (tensor<{B * S}x{V}x{t}>, tensor<{B * S}xi64>) -> tensor<{t}>")
    w(f"  %lossf = loom.cast %loss : tensor<{t}> to tensor<f32>")
    w("  return %lossf : tensor<f32>")
    w("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
