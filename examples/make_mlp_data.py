#!/usr/bin/env python3
"""A learnable toy dataset for examples/mlp.mlir: 10 classes of 784-d points
around random class centres (as MNIST-sized inputs), one batch of 32 per step.

    make_mlp_data.py OUT_DIR STEPS   ->  OUT_DIR/x.npy [STEPS, 32, 784],
                                         OUT_DIR/labels.npy [STEPS, 32]
"""
import os
import sys

import numpy as np

out, steps = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
centres = rng.standard_normal((10, 784)).astype(np.float32)
labels = rng.integers(0, 10, size=(steps, 32))
x = 0.3 * centres[labels] + rng.standard_normal((steps, 32, 784)).astype(np.float32)
os.makedirs(out, exist_ok=True)
np.save(os.path.join(out, "x.npy"), x.astype(np.float32))
np.save(os.path.join(out, "labels.npy"), labels.astype(np.int64))
