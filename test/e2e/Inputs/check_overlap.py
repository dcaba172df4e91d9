"""Overlapped collectives (loom-overlap-collectives) do what the IR says and
change no number.

    check_overlap.py MODEL.mlir WORK RANKS STRATEGY [LOOMC FLAGS...]

Compiles MODEL for RANKS ranks twice, with collectives started early and
waited for late (the default) and with every collective blocking
(--overlap=false); checks that the first program starts collectives
(`loom.async`, each with its `loom.wait`); trains both for 3 steps with
loom-run (the JIT) and the first also as the rank program loomc compiled
(--executable), and checks that all three print the same losses and write
bit-identical parameters. Then reads the first run's trace: on every rank and
step, each started collective ran on the lane and its wait came after it was
started, in order, and the first started collective had finished before the
program reached its last wait (communication during the backward pass).
"""
import filecmp
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import fail, losses, run  # noqa: E402

model, work, ranks, strategy, *flags = sys.argv[1:]
ranks = int(ranks)
bin_dir = os.environ.get("LOOM_BIN", "")
tool = lambda name: os.path.join(bin_dir, name) if bin_dir else name


def compile_(out, *extra):
    run([tool("loomc"), model, "--train", "--loss=none", "--optimizer=adamw",
         "--mesh", f"dp={ranks}", "--strategy", strategy, *flags, *extra, "-o", out])
    return open(os.path.join(out, "train.mlir")).read()


def train(art, *extra):
    out = run([tool("loom-run"), "-np", str(ranks), art, "--steps", "3", *extra])
    return losses(out)


over, block = os.path.join(work, "overlap"), os.path.join(work, "blocking")
text = compile_(over)
started = len(re.findall(r"\{loom\.async\}", text))
waits = len(re.findall(r"= loom\.wait ", text))
if not started or started != waits:
    fail(f"{started} started collectives and {waits} waits in {over}/train.mlir")
# Weights' gathers (ZeRO-3) are prefetched: started before the reader of
# the previous weights.
gathers = len(re.findall(r"= loom\.all_gather %arg[0-9]+ [^\n]*\{loom\.async\}", text))
if strategy == "zero3" and not gathers:
    fail(f"no weight's gather is started early in {over}/train.mlir")
if "loom.async" in compile_(block, "--overlap=false"):
    fail("--overlap=false still starts collectives")

trace = os.path.join(work, "trace.json")
got = train(over, "--trace", trace)
want = train(block)
exe = train(over, "--executable")
if got != want or exe != want:
    fail(f"losses differ: overlapped {got}, rank program {exe}, blocking {want}")
params = sorted(os.listdir(os.path.join(block, "params-final")))
for p in params:
    if not filecmp.cmp(os.path.join(over, "params-final", p),
                       os.path.join(block, "params-final", p), shallow=False):
        fail(f"parameter {p} differs between the overlapped and blocking runs")

events = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X"]
lead, early = [], 0
for r in range(ranks):
    for s in range(3):
        mine = sorted((e for e in events if e["pid"] == r and e["args"].get("step") == s),
                      key=lambda e: e["ts"])
        runs = [e for e in mine if e["cat"] == "collective" and e["args"].get("started")]
        wts = [e for e in mine if e["cat"] == "wait"]
        if len(runs) != started or len(wts) != started:
            fail(f"rank {r} step {s}: {len(runs)} started collectives and {len(wts)} "
                 f"waits traced, the program has {started}")
        for k, (c, w) in enumerate(zip(runs, wts)):
            if w["ts"] + w["dur"] < c["ts"] + c["dur"] - 1:
                fail(f"rank {r} step {s}: wait {k} returned before its collective ended")
            early += c["name"].startswith("all_gather") and c["ts"] < w["ts"]
        first, last = runs[0], wts[-1]
        if not first["ts"] + first["dur"] < last["ts"]:
            fail(f"rank {r} step {s}: the first started collective ended at "
                 f"{first['ts'] + first['dur']} us, not before the last wait at {last['ts']} us")
        lead.append(last["ts"] - (first["ts"] + first["dur"]))
print(f"OK: {strategy} on {ranks} ranks: {started} started collectives, each waited for; "
      f"losses and {len(params)} parameters bit-identical to the blocking program "
      f"(JIT and rank program); the first finished {min(lead) / 1e3:.2f}-{max(lead) / 1e3:.2f} ms "
      f"before the last wait")
if strategy == "zero3":
    if not early:
        fail("no started gather ran before the program reached its wait")
    print(f"prefetched: {gathers} weights' gathers started early; {early} of "
          f"{gathers * ranks * 3} ran while the program computed")
