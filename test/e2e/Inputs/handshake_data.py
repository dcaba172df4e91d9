"""Two data directories for the MLP (x [16, 32] per step, labels in
[0, 16)) that differ in one label."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.standard_normal((32, 16, 32)).astype(np.float32)
labels = rng.integers(0, 16, (32, 16))
for name in ("d1", "d2"):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    np.save(os.path.join(out, name, "x.npy"), x)
    np.save(os.path.join(out, name, "labels.npy"), labels)
    labels = labels.copy()
    labels[5, 3] = (labels[5, 3] + 1) % 16
