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
import re
import sys

trace, program, ranks, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
text = open(program).read()
mesh = dict((k, int(v)) for k, v in
            re.findall(r'"(\w+)"=(\d+)', re.search(r"loom.mesh @\w+ \[(.*?)\]", text).group(1)))
want = collections.Counter()
for kind, axes in re.findall(r"loom\.(all_reduce|all_gather|reduce_scatter|all_to_all) %\S+ over @\w+ \[([^\]]*)\]", text):
    names = re.findall(r'"(\w+)"', axes)
    n = 1
    for a in names:
        n *= mesh[a]
    if n > 1:
        want[f"{kind} [{', '.join(names)}]"] += 1

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
