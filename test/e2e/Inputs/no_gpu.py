#!/usr/bin/env python3
"""Runs a GPU program where there may be a GPU driver but should be no GPU
use: prints "exit STATUS: <first line of stderr>" (the program must fail
with one clear line, not a crash or a hang).

    no_gpu.py PROGRAM ARGS..."""
import subprocess
import sys

p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=60)
lines = [l for l in p.stderr.splitlines() if l.strip()]
print(f"exit {p.returncode}: {lines[0] if lines else '(no message)'}")
if len(lines) > 1:
    print("further lines:", *lines[1:], sep="\n")
