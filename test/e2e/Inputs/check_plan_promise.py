#!/usr/bin/env python3
"""A pipelined plan is a promise: what the planner priced is what loomc emits.

Usage: check_plan_promise.py PLAN.json TRAIN.mlir

PLAN.json is the planner's report (loomc --plan-report=json) of the step
compiled into TRAIN.mlir. From the emitted per-stage programs (local
shapes, loom.pipe tags, the loom.pipeline schedule) it recomputes, per
stage, the bytes each device holds and sends, and compares them with the
plan's prices:

  schedule, stages, micro-batches      equal
  bubble with unit durations           equal (the emitted schedule's)
  micro-batches in flight per stage    equal (counted on the action lists)
  parameters, gradients, optimizer     equal bytes per device
  activations sent forward (and their  equal bytes per device per micro-batch,
  gradients back) at each boundary      and equal messages (one per value)
  activations held per micro-batch     the plan's price >= what the stage
                                       stashes for its backward (the plan
                                       counts every forward value)

Exits non-zero and names the first difference.
"""
import json
import re
import sys

DTYPE_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "bf16": 2, "f16": 2, "i8": 1, "i1": 1}


def tensor_bytes(t):
    m = re.fullmatch(r"tensor<((?:\d+x)*)(\w+)>", t)
    if not m:
        raise SystemExit(f"cannot read the type {t}")
    n = 1
    for d in m.group(1).split("x")[:-1]:
        n *= int(d)
    return n * DTYPE_BYTES[m.group(2)]


def split_top(s):
    """Splits `s` at commas outside <>, {}, [] and ()."""
    out, depth, cur, quote = [], 0, "", False
    for ch in s:
        if ch == '"':
            quote = not quote
        if not quote:
            depth += ch in "<{[("
            depth -= ch in ">}])"
            if ch == "," and depth == 0:
                out.append(cur)
                cur = ""
                continue
        cur += ch
    if cur.strip():
        out.append(cur)
    return out


def entries(sig):
    """(type, attributes) of each argument or result of a signature part."""
    res = []
    for part in split_top(sig):
        m = re.search(r"(tensor<[^>]*>)\s*(\{.*\})?", part)
        if m:
            res.append((m.group(1), m.group(2) or ""))
    return res


def functions(text):
    """name -> (arguments, results) of every func.func."""
    funcs = {}
    for m in re.finditer(r"func\.func @(\w+)\((.*?)\)\s*(?:->\s*\((.*?)\)|->\s*(tensor<[^>]*>))?\s*attributes", text):
        funcs[m.group(1)] = (entries(m.group(2)), entries(m.group(3) or m.group(4) or ""))
    return funcs


def pipe(attrs):
    m = re.search(r'loom\.pipe = "(\w+):(\d+)"', attrs)
    return (m.group(1), int(m.group(2))) if m else (None, None)


def param(attrs):
    m = re.search(r'loom\.param = @"?([^",}]+)"?', attrs)
    return m.group(1) if m else None


def in_flight(actions, zero_bubble):
    """Per rank: the most micro-batches whose forward ran and whose backward
    (weight half, for split backwards) did not yet."""
    out = []
    for rank in actions:
        held, most = 0, 0
        for a in rank:
            kind = a.split("(")[0]
            if kind == "F":
                held += 1
            elif kind == ("W" if zero_bubble else "B") or (kind == "B" and zero_bubble):
                held -= 1
            most = max(most, held)
        out.append(most)
    return out


def main():
    plan_path, mlir_path = sys.argv[1:3]
    plan = json.load(open(plan_path))
    text = open(mlir_path).read()
    pj = plan["pipeline"]
    attr = re.search(r"loom\.pipeline = \{actions = (\[\[.*?\]\]), bubble = ([-\d.e+]+) : f64, "
                     r"micro_batches = (\d+) : i64, ranks = (\d+) : i64, schedule = \"([\w-]+)\", "
                     r"stages = (\d+) : i64", text)
    if not attr:
        raise SystemExit("FAIL: the program has no loom.pipeline schedule")
    actions = json.loads(attr.group(1))
    bubble, mb, ranks, schedule, stages = (float(attr.group(2)), int(attr.group(3)),
                                           int(attr.group(4)), attr.group(5), int(attr.group(6)))
    failures = []

    def same(what, planned, emitted, rel=1e-9):
        ok = abs(planned - emitted) <= rel * max(abs(planned), abs(emitted), 1.0)
        print(f"{'ok  ' if ok else 'FAIL'} {what}: planned {planned:g}, emitted {emitted:g}")
        if not ok:
            failures.append(what)

    print(f"{'ok  ' if schedule == pj['schedule'] else 'FAIL'} schedule: planned {pj['schedule']}, emitted {schedule}")
    if schedule != pj["schedule"]:
        failures.append("schedule")
    same("stages", pj["stages"], stages)
    same("micro-batches", pj["micro_batches"], mb)
    same("bubble with unit durations", pj["unit_bubble"], bubble, 1e-6)
    flight = in_flight(actions, schedule == "zb-h1")
    for s in range(stages):
        same(f"stage {s} micro-batches in flight", pj["in_flight"][s], flight[s])

    funcs = functions(text)
    state_suffix = (".exp_avg", ".exp_avg_sq", ".momentum_buffer")
    for s in range(stages):
        mine = {n: f for n, f in funcs.items() if n.startswith(f"stage{s}_")}
        if f"stage{s}_update" not in mine:
            raise SystemExit(f"FAIL: no @stage{s}_update in {mlir_path}")
        params, state, grads, stash, sends = {}, {}, {}, {}, {}
        for name, (args, results) in mine.items():
            for t, a in args + results:
                p = param(a)
                kind, k = pipe(a)
                if p and p != "optimizer.step":
                    (state if p.endswith(state_suffix) else params)[p] = tensor_bytes(t)
                elif kind == "grad":
                    grads[k] = tensor_bytes(t)
                elif kind == "stash" and name.endswith("_forward"):
                    # What the forward keeps for the backward of its
                    # micro-batch (the input-gradient half's stash for the
                    # weight half lives from I to W only).
                    stash[k] = tensor_bytes(t)
                elif kind == "send" and name.endswith("_forward"):
                    sends[k] = tensor_bytes(t)
        # Data the stage reads per micro-batch (the model's inputs, labels).
        data = sum(tensor_bytes(t) for t, a in mine[f"stage{s}_forward"][0] if "loom.name" in a)
        held = pj["stage_held_bytes"][s]
        same(f"stage {s} parameter bytes per device", held["parameters"], sum(params.values()))
        same(f"stage {s} gradient bytes per device", held["gradients"], sum(grads.values()))
        same(f"stage {s} optimizer-state bytes per device", held["optimizer"], sum(state.values()))
        if s + 1 < stages:
            same(f"boundary {s}->{s + 1} bytes sent per device per micro-batch",
                 pj["transfer_bytes"][s], sum(sends.values()))
            same(f"boundary {s}->{s + 1} messages per micro-batch (one per value)",
                 pj["transfer_messages"][s], len(sends))
        saved = sum(stash.values()) + data
        priced = pj["stage_activation_bytes"][s]
        ok = priced >= saved
        print(f"{'ok  ' if ok else 'FAIL'} stage {s} activations per micro-batch: planned {priced:g} >= "
              f"stashed {saved:g} ({priced / max(saved, 1):.2f}x)")
        if not ok:
            failures.append(f"stage {s} activations")
    if failures:
        print("FAIL: the emitted program differs from the plan in " + ", ".join(failures))
        return 1
    print(f"PASS: the {stages}-stage {schedule} program is the plan")
    return 0


if __name__ == "__main__":
    sys.exit(main())
