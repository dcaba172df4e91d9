#!/usr/bin/env python3
"""Writes per-rank inputs for collectives.mlir, or checks the per-rank
outputs of `mpirun -np 4 loom-run collectives.mlir` against numpy.

    check_collectives.py write DIR     -> DIR/rank<R>/input_<i>.npy
    check_collectives.py check DIR OUT -> prints "ok: <n> outputs" or the first difference
"""
import os
import sys

import numpy as np

RANKS = 4  # mesh ["dp"=2, "tp"=2], rank = dp * 2 + tp


def inputs(r):
    rng = np.random.default_rng(100 + r)
    x = rng.integers(-8, 8, size=(4, 6)).astype(np.float32)
    h = rng.integers(-8, 8, size=(3, 4)).astype(np.float32)  # bf16 values, stored as f32
    i = rng.integers(-100, 100, size=5).astype(np.int64)
    return x, h, i


def coords(r):
    return r // 2, r % 2


def rank_of(dp, tp):
    return dp * 2 + tp


def expected(r):
    dp, tp = coords(r)
    x = {q: inputs(q)[0] for q in range(RANKS)}
    h = {q: inputs(q)[1] for q in range(RANKS)}
    i = {q: inputs(q)[2] for q in range(RANKS)}
    tp_group = [rank_of(dp, t) for t in range(2)]
    dp_group = [rank_of(d, tp) for d in range(2)]
    out = []
    out.append(sum(x[q] for q in tp_group))
    out.append(np.concatenate([x[q] for q in dp_group], axis=0))
    out.append(np.split(sum(x[q] for q in tp_group), 2, axis=1)[tp])
    out.append(np.concatenate([np.split(x[q], 2, axis=1)[tp] for q in tp_group], axis=0))
    out.append(np.split(x[r], 2, axis=1)[dp])
    # group ["tp", "dp"]: order tp major, dp minor
    group = [rank_of(d, t) for t in range(2) for d in range(2)]
    out.append(np.concatenate([x[q] for q in group], axis=1))
    out.append(np.maximum.reduce([h[q] for q in range(RANKS)]))
    out.append(np.minimum.reduce([i[q] for q in dp_group]))
    out.append(np.concatenate([np.split(x[q], 2, axis=0)[dp] for q in dp_group], axis=1))
    out.append(sum(x[q] for q in dp_group))
    out.append(sum(i[q] for q in dp_group))
    # send_recv over tp, offset 1: tp 1 receives from tp 0, tp 0 gets zeros.
    out.append(x[rank_of(dp, 0)] if tp == 1 else np.zeros_like(x[r]))
    # over [dp, tp] (group index = rank), offset -1, cyclic: from rank r + 1.
    out.append(i[(r + 1) % RANKS])
    # over [tp, dp] (group index = tp * 2 + dp), offset 2: from index - 2,
    # i.e. tp - 1 with the same dp; tp 0 gets zeros.
    out.append(x[rank_of(dp, tp - 1)] if tp == 1 else np.zeros_like(x[r]))
    return out


def main():
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "write":
        for r in range(RANKS):
            os.makedirs(os.path.join(d, f"rank{r}"), exist_ok=True)
            for k, a in enumerate(inputs(r)):
                np.save(os.path.join(d, f"rank{r}", f"input_{k}.npy"), a)
        return 0
    n = 0
    for r in range(RANKS):
        for k, want in enumerate(expected(r)):
            got = np.load(os.path.join(sys.argv[3], f"rank{r}", f"output_{k}.npy"))
            if got.shape != want.shape or not np.array_equal(got.astype(want.dtype), want):
                print(f"rank {r} output {k}: got {got.ravel()[:8]} want {want.ravel()[:8]}")
                return 1
            n += 1
    print(f"ok: {n} outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
