import os
import sys

import numpy as np

d = sys.argv[1]
a, am = np.load(f"{d}/a/output_0.npy"), np.load(f"{d}/a/output_1.npy")
b = np.load(f"{d}/b/output_0.npy")
c = np.load(f"{d}/c/output_0.npy")
assert np.array_equal(a, b)
print("same seed: identical")
assert not np.array_equal(a, c)
print("other seed: different")
kept = am.mean()
assert abs(kept - 0.7) < 0.01, kept
print("kept fraction within 0.01 of 0.7")
assert np.allclose(a[am], 1 / 0.7) and np.all(a[~am] == 0)
print("kept values are 1/(1-0.3), dropped are 0, mask agrees")
