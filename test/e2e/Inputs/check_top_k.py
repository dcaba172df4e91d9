#!/usr/bin/env python3
"""loom.top_k_indices against numpy.

    check_top_k.py write DIR   inputs (input_<i>.npy) and expected outputs
    check_top_k.py check DIR   compares DIR/output_<i>.npy with them

Inputs have ties (repeated magnitudes of both signs), zeros, an infinity and
a NaN; the expected positions are numpy's stable sort by descending
magnitude (NaN first, ties to the lower position), the first k, ascending.
bf16 is compared on the bf16-rounded values."""
import os
import sys

import numpy as np


def inputs():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(1000).astype(np.float32)
    a[10:20] = 0.5          # ties
    a[20:30] = -0.5
    a[40] = np.inf
    a[41] = np.nan
    a[100:200] = 0.0
    b = rng.standard_normal(64)
    b[5], b[6], b[7] = 3.0, -3.0, 3.0
    c = rng.standard_normal(300).astype(np.float32)
    return [a, b, c]


def bf16(x):
    """Round f32 to bf16 (nearest even) and back."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def top_k(x, k):
    """NaN first, then descending magnitude, ties to the lower position."""
    def key(i):
        v = float(x[i])
        return (0, 0.0, i) if np.isnan(v) else (1, -abs(v), i)
    order = sorted(range(len(x)), key=key)
    return np.sort(np.array(order[:k], dtype=np.int64))


def main():
    mode, d = sys.argv[1], sys.argv[2]
    a, b, c = inputs()
    want = [top_k(a, 37).astype(np.int32), top_k(a, 1000), top_k(b, 5),
            top_k(bf16(c), 20).astype(np.int32)]
    if mode == "write":
        os.makedirs(d, exist_ok=True)
        for i, x in enumerate((a, b, c)):
            np.save(os.path.join(d, f"input_{i}.npy"), x)
        return 0
    for i, w in enumerate(want):
        got = np.load(os.path.join(d, f"output_{i}.npy"))
        if got.dtype != w.dtype or not np.array_equal(got, w):
            print(f"FAIL: output {i}: {got.dtype} {got[:12]} ... expected {w.dtype} {w[:12]} ...")
            return 1
        print(f"output {i}: {len(w)} positions ({w.dtype}) equal numpy's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
