"""Checks a pipeline search's JSON report (loomc --plan-stages).

  check_pipeline.py plan.json

Prints what it checked; exits 1 on the first failure:
  * the stages cover the layers in order, as many as the mesh's pp axis;
  * every stage fits the memory limit, and the plan's memory is the most a
    stage holds;
  * 1F1B holds at most p - i micro-batches on stage i (the planner prices
    whatever in-flight counts the simulated schedule has);
  * Loom's step is no slower than any Megatron-style 3-D plan that fits
    (they are in the search: same cost model).
"""
import json
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


p = json.load(open(sys.argv[1]))
pipe = p["pipeline"]
stages = pipe["stages"]
axes = {a["name"]: a["size"] for a in p["axes"]}
if axes.get("pp") != stages:
    fail(f"mesh {p['mesh']} against {stages} stages")
first = pipe["first_layer"]
layers = p["graph"]["layers"]
if first[0] != 0 or any(b <= a for a, b in zip(first, first[1:])) or first[-1] >= layers:
    fail(f"stages start at {first} for {layers} layers")
limit = p["memory"]["limit"]
mem = pipe["stage_memory_bytes"]
if max(mem) > limit * (1 + 1e-9):
    fail(f"a stage holds {max(mem)} > {limit}")
if abs(max(mem) - p["memory"]["total"]) > 1e-6 * max(mem):
    fail(f"plan memory {p['memory']['total']} is not the largest stage's {max(mem)}")
if pipe["schedule"] == "1f1b":
    for i, f in enumerate(pipe["in_flight"]):
        if f > stages - i:
            fail(f"stage {i} holds {f} micro-batches under {pipe['schedule']}")
fits = [m for m in p["megatron"] if m["feasible"]]
for m in fits:
    if p["step_s"] > m["step_s"] * (1 + 1e-9):
        fail(f"Megatron {m['mesh']} {m['step_s']} beats Loom {p['step_s']}")
best = min(fits, key=lambda m: m["step_s"]) if fits else None
print(f"mesh {p['mesh']}, {stages} stages from layers {first}, "
      f"{pipe['micro_batches']} micro-batches, {pipe['schedule']}: fits, "
      f"no slower than {len(fits)} Megatron 3-D plans"
      + (f" (best {best['mesh']}, {best['step_s'] / p['step_s']:.3f}x)" if best else ""))
