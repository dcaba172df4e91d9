#!/usr/bin/env python3
"""loom-run --gpu-loops-on-cpu against the CPU pipeline.

    check_gpu_loops.py NAME ARTIFACT [--limits REL ABS] [-np N]

Trains ARTIFACT 3 steps (synthetic data) with the CPU pipeline and twice with
the CUDA pipeline's loop structure run on the CPU. The latter sums every
reduction in order (as a GPU thread does) where the CPU pipeline lets the
vectorizer reassociate, so the two agree to rounding: losses within 1e-5
relative, parameters within 1e-6 absolute. The two loop-structure runs are
identical (no dependence on buffer addresses or timing). A bf16 step rounds
each of those differently summed values to 8 bits, so it gets wider limits
(--limits: 1e-3 relative, 1e-4 absolute for the bf16 tests, still 30x
below one bf16 rounding of the loss). Prints one line; exits 1 on a
difference."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_util import fail, losses, run  # noqa: E402


def main():
    name, artifact = sys.argv[1], sys.argv[2]
    launch = sys.argv[3:]
    rel_limit, abs_limit = 1e-5, 1e-6
    if launch[:1] == ["--limits"]:
        rel_limit, abs_limit = float(launch[1]), float(launch[2])
        launch = launch[3:]
    outs = {}
    for tag, flags in (("cpu", []), ("gpu1", ["--gpu-loops-on-cpu"]),
                       ("gpu2", ["--gpu-loops-on-cpu"])):
        params = os.path.join(artifact, "params-" + tag)
        text = run(["loom-run", *launch, artifact, "--steps", "3", "--data", "synthetic",
                    "--no-cache", "--params-out", params, *flags])
        outs[tag] = (losses(text), {f: np.load(os.path.join(params, f))
                                    for f in sorted(os.listdir(params))})
    (l_cpu, p_cpu), (l_g1, p_g1), (l_g2, p_g2) = outs["cpu"], outs["gpu1"], outs["gpu2"]
    if l_g1 != l_g2 or any(not np.array_equal(p_g1[f], p_g2[f]) for f in p_g1):
        fail(f"{name}: two --gpu-loops-on-cpu runs differ: {l_g1} vs {l_g2}")
    if len(l_cpu) != 3 or len(l_g1) != 3:
        fail(f"{name}: expected 3 losses, got {l_cpu} and {l_g1}")
    rel = max(abs(a - b) / abs(a) for a, b in zip(l_cpu, l_g1))
    diff = max(float(np.max(np.abs(p_cpu[f] - p_g1[f]))) for f in p_cpu)
    if rel > rel_limit or diff > abs_limit:
        fail(f"{name}: losses {l_g1} vs {l_cpu} ({rel:.1e}), parameters {diff:.1e}")
    print(f"{name}: --gpu-loops-on-cpu deterministic; losses within {rel:.1e} relative and "
          f"parameters within {diff:.1e} of the CPU pipeline (limits {rel_limit:.0e}, {abs_limit:.0e})")


if __name__ == "__main__":
    main()
