"""The collectives a partitioned step performs equal those its plan priced.

    check_collectives.py PLAN.json TRAIN.mlir

PLAN.json is loomc's --plan-report=json (collectives merged by kind, axes
and bytes each device sends per call, with a count); TRAIN.mlir the
partitioned step loomc wrote. Every loom collective of the step is read with
its mesh axes and types, and its bytes sent per device computed as the
planner's ring model does (all_reduce 2(n-1)/n of the tensor, reduce_scatter
and all_to_all (n-1)/n of the operand, all_gather (n-1)/n of the result).
Prints both multisets and exits 1 when they differ.
"""
import collections
import json
import re
import sys

ELEMENT = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i1": 1, "i8": 1}


def tensor_bytes(t):
    m = re.fullmatch(r"tensor<((?:\d+x)*)(\w+)>", t)
    n = 1
    for d in m.group(1).split("x")[:-1]:
        n *= int(d)
    return n * ELEMENT[m.group(2)]


def program_collectives(text, groups_of_one=False):
    """The collectives of a partitioned program over groups of more than one
    device (or all of them), one per op: (kind, mesh axes, group size,
    operand types, result types). A bucket (loom-bucket-all-reduce: one
    all_reduce of several tensors) has several."""
    mesh = dict((k, int(v)) for k, v in
                re.findall(r'"(\w+)"=(\d+)', re.search(r"loom.mesh @\w+ \[(.*?)\]", text).group(1)))
    pat = re.compile(r"loom\.(all_reduce|all_gather|reduce_scatter|all_to_all) %[^ ,]+((?:, %[^ ,]+)*) "
                     r"over @\w+ \[([^\]]*)\][^:{]*(?:\{[^}]*\}\s*)?: "
                     r"(?:\((tensor<[^>]*>)\) -> (tensor<[^>]*>)|((?:tensor<[^>]*>(?:, )?)+))")
    for kind, more, axes, operand, result, same in pat.findall(text):
        names = re.findall(r'"(\w+)"', axes)
        n = 1
        for a in names:
            n *= mesh[a]
        if n > 1 or groups_of_one:
            if operand:
                yield kind, names, n, [operand], [result]
            else:
                types = re.findall(r"tensor<[^>]*>", same)
                assert len(types) == 1 + more.count(","), (more, same)
                yield kind, names, n, types, types


def group(kind, names):
    """An all-reduce's group is a set of axes (its result is the same
    whatever order they are listed in); a reduce-scatter's, gather's or
    all-to-all's order says which rank gets which block, and is kept."""
    if kind == "all_reduce":
        names = sorted(names)
    return "[" + ", ".join(names) + "]"


def emitted(path):
    text = open(path).read()
    # Every collective op of the program is read (none slips past the
    # pattern, e.g. one with an attribute dictionary).
    ops = len(re.findall(r"= loom\.(?:all_reduce|all_gather|reduce_scatter|all_to_all) ", text))
    parsed = len(list(program_collectives(text, groups_of_one=True)))
    if ops != parsed:
        sys.exit(f"check_collectives.py: read {parsed} of the {ops} collectives of {path}")
    out = collections.Counter()
    # A bucket counts as one all_reduce per tensor, as the planner prices
    # gradient reductions (bandwidth only: bucketing saves the latency).
    for kind, names, n, operands, results in program_collectives(text):
        for operand, result in zip(operands, results):
            if kind == "all_reduce":
                sent = 2 * (n - 1) / n * tensor_bytes(operand)
            elif kind == "all_gather":
                sent = (n - 1) / n * tensor_bytes(result)
            else:
                sent = (n - 1) / n * tensor_bytes(operand)
            out[(kind, group(kind, names), int(sent))] += 1
    return out


def priced(path):
    out = collections.Counter()
    for c in json.load(open(path))["collectives"]:
        names = c["axes"].strip("[]").split(", ") if c["axes"] != "[]" else []
        out[(c["kind"], group(c["kind"], names), int(c["bytes"]))] += int(round(c["count"]))
    return out


def main():
    plan, program = priced(sys.argv[1]), emitted(sys.argv[2])
    for key in sorted(set(plan) | set(program)):
        mark = "" if plan[key] == program[key] else "   <-- differs"
        print(f"{key[0]} over {key[1]}, {key[2]} B: priced {plan[key]}, emitted {program[key]}{mark}")
    same = plan == program
    print(f"{'MATCH' if same else 'MISMATCH'}: {sum(program.values())} collectives emitted, "
          f"{sum(plan.values())} priced")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
