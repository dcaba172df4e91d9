"""A pipelined run's loom-run --trace holds the schedule it ran.

    check_pipeline_trace.py TRACE.json TRAIN.mlir STEPS PROFILE.txt

TRAIN.mlir's loom.pipeline attribute holds each pipeline rank's action
list. Checks, for every rank (one per pipeline rank: a pp-only mesh) and
step, that the trace's compute actions (F, B, I, W, U) are exactly the
list's, in its order and inside the step's span; that data dependencies
hold in time (a stage's F of a micro-batch starts after the previous
stage's F of it ends, its I or B after the next stage's I or B ends); and
that the measured bubble fraction loom-run --profile printed is the one
these spans give (1 - busy / span per rank and step, steps after the
first). Prints a summary; exits 1 on the first difference.
"""
import json
import re
import sys

trace, program, steps, profile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = open(program).read()
m = re.search(r"loom\.pipeline = \{actions = \[(.*?)\]\]", text, re.S)
if not m:
    sys.exit(f"{program}: no loom.pipeline actions")
lists = [re.findall(r'"([A-Z_]+)\((\d+)(?:,(\d+))?\)"', row)
         for row in m.group(1).split("], [")]
compute = {"F", "B", "I", "W", "U"}
want = [[(k, int(s), int(mb) if mb else 0) for k, s, mb in row if k in compute]
        for row in lists]

events = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X"]
end = {}
busy_total, n = 0.0, 0
for step in range(steps):
    span = {}
    for r, row in enumerate(want):
        mine = [e for e in events if e["pid"] == r and e["args"].get("step") == step]
        steps_ = [e for e in mine if e["cat"] == "step"]
        acts = sorted((e for e in mine if e["cat"] == "pipeline"
                       and e["name"].split()[0] in compute), key=lambda e: e["ts"])
        got = [(e["name"].split()[0], e["args"]["stage"],
                e["args"]["micro_batch"] if e["name"][0] != "U" else 0) for e in acts]
        if got != row:
            sys.exit(f"rank {r} step {step}: actions {got[:6]}..., want {row[:6]}...")
        if len(steps_) != 1:
            sys.exit(f"rank {r} step {step}: {len(steps_)} step spans")
        s = steps_[0]
        for e in acts:
            if e["ts"] < s["ts"] - 1 or e["ts"] + e["dur"] > s["ts"] + s["dur"] + 1:
                sys.exit(f"rank {r} step {step}: {e['name']} outside the step")
            end[(step, e["name"].split()[0], e["args"]["stage"],
                 e["args"]["micro_batch"])] = (e["ts"], e["ts"] + e["dur"])
        span[r] = [e for e in acts if e["name"][0] != "U"]
    stages = len(want)
    for (st, kind, stage, mb), (start, _) in end.items():
        if st != step:
            continue
        before = None
        if kind == "F" and stage > 0:
            before = end.get((step, "F", stage - 1, mb))
        if kind in "IB" and stage < stages - 1:
            before = end.get((step, "I", stage + 1, mb)) or end.get((step, "B", stage + 1, mb))
        if before and start < before[1] - 1:
            sys.exit(f"step {step}: {kind} of stage {stage}, micro-batch {mb} starts at "
                     f"{start:.0f} us, before what it needs ends at {before[1]:.0f} us")
    if step == 0 and steps > 1:
        continue
    lo = min(e["ts"] for acts in span.values() for e in acts)
    hi = max(e["ts"] + e["dur"] for acts in span.values() for e in acts)
    for acts in span.values():
        busy_total += 1 - sum(e["dur"] for e in acts) / (hi - lo)
        n += 1
bubble = busy_total / n
printed = re.search(r"measured bubble fraction ([0-9.]+)", open(profile).read())
if not printed:
    sys.exit(f"{profile}: no measured bubble fraction")
if abs(float(printed.group(1)) - bubble) > 2e-3:
    sys.exit(f"the profile's bubble {printed.group(1)} is not the trace's {bubble:.3f}")
print(f"OK: {len(want)} ranks x {steps} steps ran their action lists in order, "
      f"dependencies in time, bubble {bubble:.3f} as printed")
