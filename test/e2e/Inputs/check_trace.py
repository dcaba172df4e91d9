"""A loom-run --trace file holds what the program did.

    check_trace.py TRACE.json TRAIN.mlir RANKS STEPS

Checks that the Chrome trace has a process per rank, STEPS step spans on
each, and on each rank and step exactly the collectives the partitioned
program TRAIN.mlir performs (those over groups of more than one device),
by kind and mesh axes, each inside its step's span. Prints a summary;
exits 1 on the first difference.
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Planner", "Inputs"))
from check_collectives import program_collectives  # noqa: E402

trace, program, ranks, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
want = collections.Counter(f"{kind} [{', '.join(names)}]"
                           for kind, names, _, _, _ in program_collectives(open(program).read()))

events = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X"]
for r in range(ranks):
    mine = [e for e in events if e["pid"] == r]
    spans = {e["args"]["step"]: e for e in mine if e["cat"] == "step"}
    if sorted(spans) != list(range(steps)):
        sys.exit(f"rank {r}: step spans {sorted(spans)}, want 0..{steps - 1}")
    for s in range(steps):
        got = collections.Counter(e["name"] for e in mine
                                  if e["cat"] == "collective" and e["args"]["step"] == s)
        if got != want:
            sys.exit(f"rank {r} step {s}: traced {dict(got)}, program has {dict(want)}")
        span = spans[s]
        for e in mine:
            if e["cat"] == "collective" and e["args"]["step"] == s:
                if not (span["ts"] <= e["ts"] and e["ts"] + e["dur"] <= span["ts"] + span["dur"] + 1):
                    sys.exit(f"rank {r}: {e['name']} lies outside step {s}")
print(f"OK: {ranks} ranks x {steps} steps, {sum(want.values())} collectives per step "
      f"as in the program: {', '.join(f'{k} x{v}' for k, v in sorted(want.items()))}")
