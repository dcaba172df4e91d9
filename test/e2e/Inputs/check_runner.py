#!/usr/bin/env python3
"""Writes inputs for runner.mlir, or checks loom-run's outputs with numpy.

    check_runner.py write DIR     input_0.npy and the expected outputs
    check_runner.py check DIR     compares DIR/output_*.npy with numpy
"""

import os
import sys

import numpy as np

W = np.array([[-1.0, 2.0], [2.0, 0.0], [1.0, 1.5]], np.float32)
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]], np.float32)

mode, d = sys.argv[1], sys.argv[2]
if mode == "write":
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "input_0.npy"), X)
    np.save(os.path.join(d, "output_0.npy"), X @ W)
    np.save(os.path.join(d, "output_1.npy"), (X @ W).sum(1))
    np.save(os.path.join(d, "output_1_wrong.npy"), (X @ W).sum(1) + 1)
else:
    y, s = np.load(os.path.join(d, "output_0.npy")), np.load(os.path.join(d, "output_1.npy"))
    assert y.dtype == np.float32 and y.shape == (2, 2), (y.dtype, y.shape)
    np.testing.assert_allclose(y, X @ W, rtol=1e-6)
    np.testing.assert_allclose(s, (X @ W).sum(1), rtol=1e-6)
    print("numpy agrees")
