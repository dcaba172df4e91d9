"""Data directories for the MLP (x [16, 32] per step, labels in [0, 16))
with one bad value each: a label of 16 in entry 3, a NaN in x in entry 2,
an infinity in entry 1 (issue 17: labels outside [0, classes) silently
changed the loss, NaN inputs trained to NaN parameters)."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 16, 32)).astype(np.float32)
labels = rng.integers(0, 16, (8, 16))


def write(name, x, labels):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    np.save(os.path.join(out, name, "x.npy"), x)
    np.save(os.path.join(out, name, "labels.npy"), labels)


write("good", x, labels)
bad = labels.copy()
bad[3, 5] = 16
write("label", x, bad)
nan = x.copy()
nan[2, 1, 7] = np.nan
write("nan", nan, labels)
inf = x.copy()
inf[1, 0, 0] = -np.inf
write("inf", inf, labels)
neg = labels.astype(np.int32).copy()
neg[0, 0] = -1
write("negative", x, neg)
