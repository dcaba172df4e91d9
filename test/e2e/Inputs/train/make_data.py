#!/usr/bin/env python3
"""Writes a data directory for mlp.mlir: x.npy [steps, 4, 6] and labels.npy
[steps, 4], plus deliberately wrong variants for the error tests.

    make_data.py OUT_DIR STEPS
"""
import os
import sys

import numpy as np

out, steps = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
for name, x, y in [
        ("good", rng.standard_normal((steps, 4, 6)), rng.integers(0, 3, (steps, 4))),
        ("bad_labels", rng.standard_normal((steps, 4, 6)), rng.integers(0, 3, (steps, 5))),
        ("short", rng.standard_normal((1, 4, 6)), rng.integers(0, 3, (1, 4))),
        ("float_labels", rng.standard_normal((steps, 4, 6)), rng.standard_normal((steps, 4)))]:
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), x.astype(np.float64))
    np.save(os.path.join(d, "labels.npy"), y)
os.makedirs(os.path.join(out, "no_labels"), exist_ok=True)
np.save(os.path.join(out, "no_labels", "x.npy"), rng.standard_normal((steps, 4, 6)))
