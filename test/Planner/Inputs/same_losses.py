#!/usr/bin/env python3
"""same_losses.py A.txt B.txt [--rtol R]: the `step K loss L` lines of two
loom-run outputs agree to R (relative); prints each pair and a verdict."""
import re
import sys


def losses(path):
    return [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)", open(path).read(), re.M)]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
rtol = float(sys.argv[sys.argv.index("--rtol") + 1]) if "--rtol" in sys.argv else 1e-5
ok = len(a) == len(b) and len(a) > 0
for k, (x, y) in enumerate(zip(a, b)):
    bad = abs(x - y) > rtol * abs(x)
    ok &= not bad
    print(f"step {k}: {x:.8e} {y:.8e}{'  MISMATCH' if bad else ''}")
print("SAME" if ok else "DIFFERENT")
sys.exit(0 if ok else 1)
