#!/usr/bin/env python3
"""Checkpoints: bit-exact resume, kill during save, resharding on load, bad
checkpoints.

    check_checkpoint.py WORK [--model mlp|block] [--optimizer adamw|sgd]
    check_checkpoint.py WORK --pipeline
    check_checkpoint.py WORK ... --executable

Exports the model from PyTorch (as spmd_vs_single.py), compiles it for one
device, for dp=4 ZeRO-3 and for dp=2,tp=2 (Megatron), and checks:

  resume     zero3 for 6 steps saving every 3, a rank SIGKILLed before
             step 4, resumed from the checkpoint to 6: every loss and final
             parameter bit-identical to the uninterrupted zero3 run;
  save-kill  a rank killed while saving step 6 (after its shard, before the
             manifest): step 3's checkpoint intact, step 6 incomplete, and
             --resume of the root picks step 3;
  reshard    zero3's step-3 checkpoint resumed under dp=2,tp=2 and on one
             device: equal to the uninterrupted run of that artifact (1e-6
             relative), and its manifest read with numpy alone equals what
             the single-device run saved at step 3;
  bad        a checkpoint of another model, a corrupt shard, a truncated
             shard, a missing manifest: loom-run exits with an error naming
             the fault and the checkpoint directory is unchanged.

With --pipeline the model is two GPT blocks in 4 micro-batches and the
artifacts are one device, dp=4 ZeRO-3 and pp=2 (1F1B): a pipeline stopped
after 3 steps and resumed to 6 is bit-identical to 6 uninterrupted steps;
zero3's checkpoint resumes on the pipeline and the pipeline's on one
device, equal to the uninterrupted runs (1e-6).

With --executable every run is the rank program loomc compiled (loom-run
--executable: mpirun -np N ARTIFACT/train with the same flags) instead of
loom-run's JIT: the same training loop, so the same checks hold, and
checkpoints move between the two (the references are the JIT's).

Prints one line per check and exits 1 on the first failure.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Target", "ONNX", "Inputs"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "python"))
from export_torch_models import MLP  # noqa: E402
from train_vs_pytorch import TrainBlock  # noqa: E402
from loom import checkpoint  # noqa: E402

STEPS, EVERY = 6, 3


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(cmd, env=None, expect_ok=True):
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    if expect_ok and r.returncode != 0:
        fail(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def losses(out):
    return {int(l.split()[1]): float(l.split()[3]) for l in out.splitlines()
            if l.startswith("step ")}


def params(d):
    return {f[:-4]: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))}


def tree_digest(d):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(d)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(os.path.relpath(p, d).encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def max_rel(got, want):
    worst, where = 0.0, "-"
    for k, v in want.items():
        e = float(np.max(np.abs(got[k] - v)) / max(np.max(np.abs(v)), 1e-30))
        if e > worst:
            worst, where = e, k
    return worst, where


def check_resharded(label, r, pout, ref):
    got, want = losses(r.stdout), ref[0]
    lerr = max(abs(got[s] - want[s]) / abs(want[s]) for s in got)
    perr, where = max_rel(params(pout), ref[1])
    if sorted(got) != list(range(EVERY, STEPS)) or lerr > 1e-6 or perr > 1e-6:
        fail(f"reshard {label}: losses {lerr:.1e}, parameters {perr:.1e} "
             f"({where}) from the uninterrupted run (limit 1e-6)")
    print(f"reshard: {label}: max loss rel error {lerr:.1e}, "
          f"max parameter rel error {perr:.1e} (limit 1e-6)")


def check_pipeline(a, train, ref):
    # Stop after 3 steps, resume to 6: bit-identical.
    ck = os.path.join(a.work, "ckpt-pipe-stop")
    train("pipe", "--checkpoint-dir", ck, steps=EVERY, tag="-first")
    r, pout = train("pipe", "--resume", ck, tag="-resumed")
    got, want = losses(r.stdout), ref["pipe"][0]
    if sorted(got) != list(range(EVERY, STEPS)) or any(got[s] != want[s] for s in got):
        fail(f"pipeline resumed losses {got} differ from uninterrupted {want}")
    for k, v in ref["pipe"][1].items():
        if not np.array_equal(params(pout)[k], v):
            fail(f"pipeline resume: {k} differs")
    print(f"resume: pp=2 stopped after {EVERY} steps and resumed: losses and all "
          f"{len(ref['pipe'][1])} parameters bit-identical")
    zero3 = os.path.join(ref["zero3"][2], f"step-{EVERY:08d}")
    r, pout = train("pipe", "--resume", zero3, tag="-from-zero3")
    check_resharded(f"zero3 dp=4 step {EVERY} -> pp=2", r, pout, ref["pipe"])
    pipe = os.path.join(ref["pipe"][2], f"step-{EVERY:08d}")
    r, pout = train("single", "--resume", pipe, tag="-from-pipe")
    check_resharded(f"pp=2 step {EVERY} -> single", r, pout, ref["single"])
    print("PASS")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("--model", default="mlp", choices=["mlp", "block"])
    p.add_argument("--optimizer", default="adamw")
    p.add_argument("--pipeline", action="store_true")
    p.add_argument("--executable", action="store_true")
    a = p.parse_args()
    micro = 4 if a.pipeline else 1
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if a.model == "mlp":
        model, loss = MLP(), "cross_entropy"
        xs = rng.standard_normal((STEPS, 8, 32)).astype(np.float32)
        ys = rng.integers(0, 10, size=(STEPS, 8)).astype(np.int64)
    else:
        model, loss = TrainBlock(), "mse"
        if a.pipeline:
            model = torch.nn.Sequential(TrainBlock(), TrainBlock())
        # --micro-batches splits the model's batch: micro-batches of 4.
        xs = rng.standard_normal((STEPS, 4 * micro, 16, 64)).astype(np.float32)
        ys = rng.standard_normal((STEPS, 4 * micro, 16, 64)).astype(np.float32)
    onnx_path = os.path.join(a.work, "model.onnx")
    torch.onnx.export(model, torch.from_numpy(xs[0]), onnx_path, opset_version=14,
                      input_names=["x"], output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    data = os.path.join(a.work, "data")
    os.makedirs(data)
    np.save(os.path.join(data, "x.npy"), xs)
    np.save(os.path.join(data, "labels.npy"), ys)

    common = [onnx_path, "--train", f"--loss={loss}", f"--optimizer={a.optimizer}", "--lr=1e-3"]
    if a.optimizer == "sgd":
        common.append("--momentum=0.9")
    if a.pipeline:
        common.append(f"--micro-batches={micro}")
    arts = {}
    third = (("pipe", ["--mesh", "pp=2", "--strategy", "replicated"], 2) if a.pipeline
             else ("dptp", ["--mesh", "dp=2,tp=2", "--strategy", "dp-tp"], 4))
    for name, extra, ranks in [("single", [], 1),
                               ("zero3", ["--mesh", "dp=4", "--strategy", "zero3"], 4),
                               third]:
        out = os.path.join(a.work, name)
        run(["loomc", *common, *extra, "-o", out])
        arts[name] = (out, ["-np", str(ranks)] if ranks > 1 else [])
    # The single-device step unrolls its micro-batches: -O0 keeps LLVM fast
    # (spmd_vs_single.py); every run uses the same level.
    opt = ["-O", "0"] if a.pipeline and not a.executable else []
    executable = False

    def train(name, *extra, env=None, expect_ok=True, steps=STEPS, tag=""):
        out, np_ = arts[name]
        pout = os.path.join(a.work, f"params-{name}{tag}")
        how = ["--executable"] if executable else opt
        return run(["loom-run", *how, *np_, out, "--steps", str(steps), "--data", data,
                    "--params-out", pout, *extra], env=env, expect_ok=expect_ok), pout

    # Uninterrupted runs (the references), saving every 3 steps.
    ref = {}
    for name in arts:
        ck = os.path.join(a.work, f"ckpt-{name}")
        r, pout = train(name, "--checkpoint-dir", ck, "--checkpoint-every", str(EVERY))
        ref[name] = (losses(r.stdout), params(pout), ck)
        for s in (EVERY, STEPS):
            if not os.path.exists(os.path.join(ck, f"step-{s:08d}", "manifest.json")):
                fail(f"{name}: no checkpoint of step {s} in {ck}")
    print(f"saved: steps {EVERY} and {STEPS} of {', '.join(arts)}")

    # The numpy reader agrees with what the run wrote at its end.
    for name in arts:
        ck = checkpoint.load(ref[name][2])  # the latest: step 6
        for k, v in ref[name][1].items():
            if k not in ck or not np.array_equal(ck[k], v):
                fail(f"{name}: the checkpoint's {k} (numpy reader) differs from params-final")
    print(f"numpy reader: step {STEPS} equals params-final for every artifact")

    if a.executable:
        # The rank programs, against the JIT's references: the same losses
        # and parameters, the same checkpoints (bit for bit: the same
        # machine code).
        executable = True
        for name in arts:
            ck = os.path.join(a.work, f"ckpt-{name}-exe")
            r, pout = train(name, "--checkpoint-dir", ck, "--checkpoint-every",
                            str(EVERY), tag="-exe")
            if losses(r.stdout) != ref[name][0]:
                fail(f"{name}: the rank program's losses {losses(r.stdout)} differ from "
                     f"loom-run's {ref[name][0]}")
            got = params(pout)
            for k, v in ref[name][1].items():
                if not np.array_equal(got[k], v):
                    fail(f"{name}: the rank program's {k} differs from loom-run's")
            mine, theirs = checkpoint.load(ck), checkpoint.load(ref[name][2])
            if sorted(mine) != sorted(theirs) or any(
                    not np.array_equal(mine[k], theirs[k]) for k in mine):
                fail(f"{name}: the rank program's checkpoint differs from loom-run's")
        print(f"rank programs: {', '.join(arts)} train, save and checkpoint bit-identically "
              f"to loom-run")

    if a.pipeline:
        return check_pipeline(a, train, ref)

    # resume: kill rank 1 before step 4, resume from the root.
    ck = os.path.join(a.work, "ckpt-kill")
    r, _ = train("zero3", "--checkpoint-dir", ck, "--checkpoint-every", str(EVERY),
                 env={"LOOM_FAULT": "1:4:kill"}, expect_ok=False, tag="-killed")
    if r.returncode == 0:
        fail("the killed run succeeded")
    r, pout = train("zero3", "--resume", ck, "--checkpoint-dir", ck, tag="-resumed")
    got, want = losses(r.stdout), ref["zero3"][0]
    if sorted(got) != list(range(EVERY, STEPS)) or any(got[s] != want[s] for s in got):
        fail(f"resumed losses {got} differ from uninterrupted {want}")
    resumed = params(pout)
    for k, v in ref["zero3"][1].items():
        if not np.array_equal(resumed[k], v):
            fail(f"resume: {k} differs by {np.max(np.abs(resumed[k] - v)):.3e}")
    print(f"resume: zero3 killed before step {EVERY + 1}, resumed: losses of steps "
          f"{EVERY}-{STEPS - 1} and all {len(resumed)} parameters bit-identical")

    # save-kill: rank 2 dies saving step 6.
    ck = os.path.join(a.work, "ckpt-savekill")
    r, _ = train("zero3", "--checkpoint-dir", ck, "--checkpoint-every", str(EVERY),
                 env={"LOOM_FAULT": f"2:{STEPS}:save"}, expect_ok=False, tag="-savekill")
    if r.returncode == 0:
        fail("the run killed during its save succeeded")
    last = os.path.join(ck, f"step-{STEPS:08d}")
    if os.path.exists(os.path.join(last, "manifest.json")):
        fail(f"{last} has a manifest although a rank died saving it")
    if checkpoint.open(ck).step != EVERY:
        fail(f"the latest complete checkpoint in {ck} is not step {EVERY}")
    # Resume into the same directory: step 6 is saved again over the
    # killed save's files.
    r, pout = train("zero3", "--resume", ck, "--checkpoint-dir", ck, tag="-after-savekill")
    if f"resuming from {os.path.join(ck, f'step-{EVERY:08d}')}" not in r.stdout:
        fail(f"--resume did not pick step {EVERY}:\n{r.stdout}")
    resaved = checkpoint.open(ck)
    for k, v in ref["zero3"][1].items():
        if not np.array_equal(params(pout)[k], v):
            fail(f"resume after a killed save: {k} differs")
        if resaved.step != STEPS or not np.array_equal(resaved.read(k), v):
            fail(f"the re-saved step {STEPS} checkpoint's {k} differs")
    print(f"save-kill: step {STEPS} left without a manifest, step {EVERY} intact; "
          f"resuming from it bit-identical, step {STEPS} saved again over the killed save")

    # reshard: zero3's step 3 under dp-tp and on one device.
    src = os.path.join(ref["zero3"][2], f"step-{EVERY:08d}")
    single3 = checkpoint.load(os.path.join(ref["single"][2], f"step-{EVERY:08d}"))
    zero3_3 = checkpoint.load(src)
    worst = max(float(np.max(np.abs(zero3_3[k] - v)) / max(np.max(np.abs(v)), 1e-30))
                for k, v in single3.items())
    print(f"zero3 vs single at step {EVERY} (numpy reader): max rel difference {worst:.1e}")
    for name in ("dptp", "single"):
        r, pout = train(name, "--resume", src, tag="-resharded")
        check_resharded(f"zero3 dp=4 step {EVERY} -> {name}", r, pout, ref[name])

    # bad checkpoints: each a copy of zero3's step 3 with one fault.
    def bad(label, mutate, expect, name="zero3"):
        # Kept under its step-NNNNNNNN name (the loader checks it against
        # the manifest's step).
        d = os.path.join(a.work, f"bad-{label}", os.path.basename(src))
        shutil.copytree(src, d)
        mutate(d)
        before = tree_digest(d)
        r, _ = train(name, "--resume", d, "--checkpoint-dir", d, "--checkpoint-every", "1",
                     expect_ok=False, tag=f"-bad-{label}")
        text = r.stdout + r.stderr
        expects = expect if isinstance(expect, tuple) else (expect,)
        if r.returncode == 0 or any(e not in text for e in expects):
            fail(f"{label}: expected an error with {expects}, got exit {r.returncode}:\n{text}")
        if tree_digest(d) != before:
            fail(f"{label}: the checkpoint directory changed")
        for e in expects:
            line = next(l for l in text.splitlines() if e in l)
            print(f"bad {label}: {line.strip()}")

    def flip(d):
        f = os.path.join(d, "rank-00001.bin")
        b = bytearray(open(f, "rb").read())
        b[len(b) // 2] ^= 0x40
        open(f, "wb").write(bytes(b))

    def truncate(d):
        f = os.path.join(d, "rank-00002.bin")
        os.truncate(f, os.path.getsize(f) // 2)

    other = os.path.join(a.work, "other")
    run(["loomc", os.path.join(HERE, "..", "..", "..", "..", "examples", "mlp.mlir"),
         "--train", "--loss=none", f"--optimizer={a.optimizer}", "--lr=1e-3",
         "--strategy", "none", "-o", other])
    arts["other"] = (other, [])
    bad("corrupt", flip, "is corrupt")
    bad("truncated", truncate, "is truncated")
    # Only rank 3 needs rank 3's shard (every rank reads just the pieces
    # that overlap its own blocks): rank 3 names the file, the others it.
    bad("missing-shard", lambda d: os.remove(os.path.join(d, "rank-00003.bin")),
        ("shard rank-00003.bin is missing", "rank 3 failed to load the checkpoint"))
    bad("no-manifest", lambda d: os.remove(os.path.join(d, "manifest.json")),
        "no complete checkpoint")
    bad("other-model", lambda d: None, "a checkpoint of another model", name="other")

    # The manifest's step (issue 45 item 7): it decides where training
    # resumes and which folder the next save replaces.
    def manifest_step(value):
        def mutate(d):
            path = os.path.join(d, "manifest.json")
            m = json.load(open(path))
            m["step"] = value
            open(path, "w").write(json.dumps(m))
        return mutate
    bad("other-step", manifest_step(EVERY - 1),
        f"'step' is {EVERY - 1} but the folder is step-{EVERY:08d}")
    bad("negative-step", manifest_step(-5), "'step' is negative (-5)")
    bad("fractional-step", manifest_step(2.5), "'step' is not an integer")

    # Pieces checked for coverage, checksums over their place (issue 45
    # item 6): a piece shifted by a row (on one device the count of
    # elements still matched: a row of zeros), and the pieces of two
    # tensors of one shape swapped (their CRCs covered the bytes alone).
    def edit_manifest(change):
        def mutate(d):
            path = os.path.join(d, "manifest.json")
            m = json.load(open(path))
            change(m["tensors"])
            open(path, "w").write(json.dumps(m))
        return mutate

    def shift(tensors):
        pieces = tensors["fc1.weight"]["pieces"]
        if len(pieces) < 2:
            fail("shifted-piece: fc1.weight has one piece")
        pieces[1]["offset"][0] += 1

    def swap(tensors):
        by_type = {}
        for name in sorted(tensors):
            t = tensors[name]
            key = (t["dtype"], tuple(t["shape"]), json.dumps(t["sharding"]))
            if key in by_type:
                other = by_type[key]
                tensors[name]["pieces"], tensors[other]["pieces"] = \
                    tensors[other]["pieces"], tensors[name]["pieces"]
                return
            by_type[key] = name
        fail("swapped-pieces: no two tensors of one type")

    for target in ("zero3", "single"):
        bad(f"shifted-piece-{target}", edit_manifest(shift),
            "the pieces of tensor 'fc1.weight' overlap", name=target)
    bad("swapped-pieces", edit_manifest(swap), "fails its CRC-32 check")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
