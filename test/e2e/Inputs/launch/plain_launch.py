#!/usr/bin/env python3
"""Starts a command N times the way torchrun does, without an MPI launcher.

    plain_launch.py N [--timeout S] [--statuses] -- COMMAND ARGS...

Each process gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR=127.0.0.1 and a free MASTER_PORT (and no MPI or Slurm
variables). Prints every process's output in rank order and exits with the
largest exit status (124 when they had to be killed after S seconds).
--statuses: a last line `statuses: S0 S1 ...` (negative: killed by that
signal).
"""

import os
import socket
import subprocess
import sys


def main():
    args = sys.argv[1:]
    n = int(args.pop(0))
    timeout = 300.0
    if args[0] == "--timeout":
        timeout = float(args[1])
        args = args[2:]
    statuses = args[0] == "--statuses"
    if statuses:
        args = args[1:]
    assert args.pop(0) == "--"
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(n):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_"))}
        env.update(RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    status = 0
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            p.returncode = 124
        sys.stdout.write(out)
        status = max(status, p.returncode if p.returncode >= 0 else 128 - p.returncode)
    if statuses:
        print("statuses: " + " ".join(str(p.returncode) for p in procs))
    return status


if __name__ == "__main__":
    sys.exit(main())
