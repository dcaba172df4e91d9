#!/usr/bin/env python3
"""Runs `loom-run -np N ARTIFACT ...` with LOOM_FAULT=FAULT and reports how
the job ended.

    run_fault.py FAULT LIMIT_S -- loom-run ARGS...

Prints the job's output, then `exit status S after T s` and a verdict:
`FAILED FAST` when the job exited non-zero within LIMIT_S seconds, `HUNG`
when it had to be killed (at 3 x LIMIT_S), `SUCCEEDED` when it exited 0.
Exits 0 only for FAILED FAST.
"""

import os
import subprocess
import sys
import time


def main():
    fault, limit = sys.argv[1], float(sys.argv[2])
    assert sys.argv[3] == "--"
    cmd = sys.argv[4:]
    env = dict(os.environ, LOOM_FAULT=fault)
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=3 * limit)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, _ = p.communicate()
        hung = True
    elapsed = time.monotonic() - start
    print(out, end="")
    print(f"exit status {p.returncode} after {elapsed:.1f} s")
    if hung:
        verdict = "HUNG"
    elif p.returncode == 0:
        verdict = "SUCCEEDED"
    elif elapsed > limit:
        verdict = f"FAILED SLOWLY (limit {limit:.0f} s)"
    else:
        verdict = "FAILED FAST"
    print(verdict)
    return 0 if verdict == "FAILED FAST" else 1


if __name__ == "__main__":
    sys.exit(main())
