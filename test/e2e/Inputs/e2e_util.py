"""Helpers shared by the end-to-end check scripts (and bench/compression.py):
failing with a message, running a tool, reading loom-run's losses, and
exporting a PyTorch model with its data as loomc and loom-run read them."""

import os
import subprocess
import sys

import numpy as np
import torch


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(cmd):
    """Runs `cmd`; its stdout, or FAIL with its output when it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def losses(out):
    """The loss of every `step N loss X` line of loom-run's output."""
    return [float(l.split()[3]) for l in out.splitlines() if l.startswith("step ")]


def export_onnx(model, example, path):
    """`model` as ONNX opset 14 with input `x` and output `y`, weights kept
    under their names (no constant folding), in training mode."""
    torch.onnx.export(model, torch.from_numpy(example), path, opset_version=14,
                      input_names=["x"], output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)


def export_with_data(model, xs, ys, work):
    """WORK/model.onnx and WORK/data/{x,labels}.npy (one entry per step);
    returns both paths."""
    onnx_path = os.path.join(work, "model.onnx")
    export_onnx(model, xs[0], onnx_path)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), xs)
    np.save(os.path.join(data, "labels.npy"), ys)
    return onnx_path, data


def mlp_with_data(work, entries, edit_inputs=None):
    """A fresh WORK with Loom's test MLP (Linear 32->64, ReLU, Linear
    64->10; torch seed 0) exported, and `entries` batches of 8 samples
    (numpy seed 0) as its data, after `edit_inputs(xs)` when given; returns
    (model, onnx_path, data, xs, ys)."""
    import shutil
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "Target", "ONNX", "Inputs"))
    from export_torch_models import MLP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((entries, 8, 32)).astype(np.float32)
    ys = rng.integers(0, 10, size=(entries, 8)).astype(np.int64)
    if edit_inputs:
        edit_inputs(xs)
    model = MLP()
    onnx_path, data = export_with_data(model, xs, ys, work)
    return model, onnx_path, data, xs, ys


def compiler(onnx_path, work, loss="cross_entropy"):
    """compile_(name, *flags, report=False): loomc --train into WORK/NAME;
    returns (out, the --plan-report=json plan or None)."""
    import json

    def compile_(name, *flags, report=False):
        out = os.path.join(work, name)
        cmd = ["loomc", onnx_path, "--train", f"--loss={loss}", *flags, "-o", out]
        if report:
            cmd.insert(-2, "--plan-report=json")
        text = run(cmd)
        return out, (json.loads(text[text.index("{"):text.rindex("}") + 1]) if report else None)
    return compile_
