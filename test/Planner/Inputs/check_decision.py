"""Checks loom-plan-pipeline's decision against the plan loomc reports.

  check_decision.py plan.json planned.mlir

planned.mlir's loom.pipeline_plan holds the decision (step_s, and the
other side's: without_pipeline or pipelined); plan.json is the planner's
report of the program compiled from it. Prints what it checked; exits 1 on
the first failure:
  * the report prices the compiled program at the decision's step time
    (the plan is what was compared);
  * the side chosen is the faster one;
  * with a micro-batch search (tried), the count chosen is the fastest
    tried, and its neighbours on the ladder 1, 2, 4, ... 64 were tried
    (a local search stops at a local minimum).
"""
import json
import re
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


report = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
m = re.search(r"loom\.pipeline_plan = \{(.*)\}\}?", text)
if not m:
    fail("planned.mlir has no loom.pipeline_plan")
attrs = m.group(1)
number = r"(-?[0-9.]+(?:[eE][+-]?[0-9]+)?)"


def top_level(text):
    """The text outside nested braces and brackets."""
    out, depth = [], 0
    for c in text:
        depth += c in "{["
        out.append(c if depth == 0 else " ")
        depth -= c in "}]"
    return "".join(out)


outer = top_level(attrs)
at = re.search(r"\bstep_s = ", outer).end()
chosen = float(re.match(number, attrs[at:]).group(1))
if abs(report["step_s"] - chosen) > 1e-9 * chosen:
    fail(f"the report prices {report['step_s']} s, the decision {chosen} s")
if report.get("pipeline_decision", "") == "":
    fail("the report has no pipeline_decision")
stages = int(re.search(r"\bstages = ([0-9]+)", outer).group(1))
without = re.search(r"without_pipeline = \{mesh = \"([^\"]*)\", step_s = " + number, attrs)
piped = re.search(r"pipelined = \{.*?step_s = " + number, attrs)
if stages > 1:
    if not without:
        fail("a pipeline was chosen, and without_pipeline has no time")
    other = float(without.group(2))
    if not chosen < other:
        fail(f"the pipeline ({chosen} s) is not faster than {other} s")
    print(f"pipeline of {stages} stages, {other / chosen:.2f}x faster than "
          f"mesh {without.group(1)}; the report prices the decision")
else:
    if piped:
        other = float(piped.group(1))
        if not chosen <= other:
            fail(f"no pipeline ({chosen} s), though one is priced at {other} s")
        print(f"no pipeline, {other / chosen:.2f}x faster than the best "
              f"pipelined plan; the report prices the decision")
    else:
        print("no pipeline, none priced; the report prices the decision")

tried = re.search(r"tried = \[(.*?)\]\]", attrs)
if tried:
    counts = {}
    for m, t in re.findall(r"\[([0-9]+), " + number, tried.group(1) + "]"):
        counts[int(m)] = float(t)
    chosen_m = int(re.search(r"\bmicro_batches = ([0-9]+)", outer).group(1))
    planned = {m: t for m, t in counts.items() if t >= 0}
    if chosen_m not in planned or planned[chosen_m] != min(planned.values()):
        fail(f"{chosen_m} micro-batches is not the fastest of {counts}")
    ladder = [1, 2, 4, 8, 16, 32, 64]
    i = ladder.index(chosen_m)
    for j in (i - 1, i + 1):
        if 0 <= j < len(ladder) and ladder[j] not in counts:
            fail(f"{ladder[j]} micro-batches, next to the {chosen_m} chosen, was not tried")
    print(f"{len(counts)} micro-batch counts tried, {chosen_m} the fastest, its neighbours tried")
