#!/usr/bin/env python3
"""Hostile variants of ONNX's own node test models, imported one by one:
loom-translate --import-onnx must end every one with a message (exit 1), never
a signal, an uncaught exception or a hang.

    onnx-mutants.py [--per-model K] [--limit N] [--seed S] [--keep DIR]

Mutations (structure-aware, through the ONNX protobuf, and raw bytes): a
dimension negative, 0, 2^40 or symbolic; a rank dropped; an input dropped or
dangling; an attribute's integers negated, zeroed or made huge, its type
changed; the graph emptied; bytes flipped; the file truncated. Prints a
summary and every crash (signal), exception or timeout with the mutation;
--keep writes the failing inputs to DIR. Exits 1 if any.
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile

import onnx
from onnx import helper

DATA = "/usr/lib/python3/dist-packages/onnx/backend/test/data/node"


def mutate(model, rng):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    kind = rng.choice(["dim", "rank", "drop_input", "dangling", "attr_int",
                       "attr_type", "empty", "flip", "truncate", "init_dims"])
    if kind == "dim":
        vis = [v for v in list(g.input) + list(g.output) if v.type.tensor_type.shape.dim]
        if not vis:
            return None, kind
        v = rng.choice(vis)
        d = rng.choice(v.type.tensor_type.shape.dim)
        choice = rng.choice(["neg", "zero", "huge", "sym"])
        if choice == "sym":
            d.dim_param = "N"
        else:
            d.dim_value = {"neg": -3, "zero": 0, "huge": 1 << 40}[choice]
        kind += ":" + choice
    elif kind == "rank":
        vis = [v for v in g.input if v.type.tensor_type.shape.dim]
        if not vis:
            return None, kind
        v = rng.choice(vis)
        del v.type.tensor_type.shape.dim[-1]
    elif kind == "drop_input":
        nodes = [n for n in g.node if n.input]
        if not nodes:
            return None, kind
        n = rng.choice(nodes)
        del n.input[rng.randrange(len(n.input))]
    elif kind == "dangling":
        nodes = [n for n in g.node if n.input]
        if not nodes:
            return None, kind
        n = rng.choice(nodes)
        n.input[rng.randrange(len(n.input))] = "no_such_value"
    elif kind in ("attr_int", "attr_type"):
        attrs = [(n, a) for n in g.node for a in n.attribute]
        if not attrs:
            return None, kind
        n, a = rng.choice(attrs)
        if kind == "attr_int":
            f = rng.choice([lambda x: -x - 1, lambda x: 0, lambda x: 1 << 40,
                            lambda x: -(1 << 40)])
            if a.type == onnx.AttributeProto.INT:
                a.i = f(a.i)
            elif a.type == onnx.AttributeProto.INTS and a.ints:
                k = rng.randrange(len(a.ints))
                a.ints[k] = f(a.ints[k])
            elif a.type == onnx.AttributeProto.FLOAT:
                a.f = rng.choice([float("nan"), float("inf"), -1e30])
            else:
                return None, kind
        else:
            name = a.name
            n.attribute.remove(a)
            n.attribute.append(rng.choice([helper.make_attribute(name, "text"),
                                           helper.make_attribute(name, 2.5),
                                           helper.make_attribute(name, [1, 2, 3]),
                                           helper.make_attribute(name, 7)]))
    elif kind == "empty":
        del g.node[:]
    elif kind == "init_dims":
        if not g.initializer:
            return None, kind
        t = rng.choice(g.initializer)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice([-1, 0, 1 << 40])
        else:
            return None, kind
    data = m.SerializeToString()
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
    elif kind == "truncate":
        data = data[:rng.randrange(1, len(data))]
    return data, kind


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--per-model", type=int, default=3)
    p.add_argument("--limit", type=int, default=0, help="models (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", default="")
    p.add_argument("--tool", default="loom-translate")
    p.add_argument("--timeout", type=float, default=30)
    a = p.parse_args()
    rng = random.Random(a.seed)
    models = sorted(glob.glob(os.path.join(DATA, "*", "model.onnx")))
    if a.limit:
        models = models[:a.limit]
    counts = {"ok": 0, "error": 0}
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.onnx")
        for model_path in models:
            try:
                model = onnx.load(model_path)
            except Exception:
                continue
            for k in range(a.per_model):
                data, kind = mutate(model, rng)
                if data is None:
                    continue
                with open(path, "wb") as f:
                    f.write(data)
                try:
                    r = subprocess.run([a.tool, "--import-onnx", path, "-o", os.devnull],
                                       capture_output=True, text=True, errors="replace",
                                       timeout=a.timeout)
                    rc, err = r.returncode, r.stderr
                except subprocess.TimeoutExpired:
                    rc, err = "timeout", ""
                name = os.path.basename(os.path.dirname(model_path))
                if rc == 0:
                    counts["ok"] += 1
                elif rc == 1 and "terminate called" not in err and "Assertion" not in err:
                    counts["error"] += 1
                else:
                    last = [l for l in err.splitlines() if l.strip()][-3:]
                    bad.append((name, kind, rc, last))
                    if a.keep:
                        os.makedirs(a.keep, exist_ok=True)
                        with open(os.path.join(a.keep, f"{name}-{k}-{kind.replace(':', '_')}.onnx"), "wb") as f:
                            f.write(data)
    total = counts["ok"] + counts["error"] + len(bad)
    print(f"{total} mutants of {len(models)} models: {counts['ok']} imported, "
          f"{counts['error']} clean errors, {len(bad)} crashes/timeouts")
    for name, kind, rc, last in bad:
        print(f"CRASH {name} [{kind}] rc={rc}: {' | '.join(last)[:400]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
