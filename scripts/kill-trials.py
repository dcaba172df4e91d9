#!/usr/bin/env python3
"""Kills training jobs at random moments and checks that they resume
byte-identically (issue 45's acceptance; results in docs/reliability.md).

    scripts/kill-trials.py WORK [--trials N] [--seed S]
                           [--program jit|exe] [--launcher mpirun|gloo]
                           [--kill rank|job] [--steps K]

Compiles the bundled MLP (test/Planner/Inputs/mlp.mlir) for dp=2 with
ZeRO-3 (loomc --emit=executable), trains it K steps uninterrupted as the
reference, then N times: starts the same job with a checkpoint every step,
SIGKILLs one rank (`--kill rank`) or every process of the job (`--kill job`)
after a random delay within the reference's run time (often while a
checkpoint is being saved), waits for the job to end, resumes it from the
checkpoint directory (`--resume`: the newest complete checkpoint; from the
start when none completed) to K steps, and compares the final parameters
and optimizer state with the reference byte for byte. `--program jit` runs
loom-run, `exe` the rank program; `--launcher gloo` starts the ranks
torchrun-style (Gloo backend) instead of under mpirun, and then also
requires every survivor of a rank kill to name the killed rank.

Prints one line per trial and a summary; exits 1 if any trial differs,
hangs, or (Gloo) a survivor does not name the dead rank.
"""

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp"]
RANKS = 2


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def free_port():
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def descendants(pid):
    """Every process below `pid` (children first)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


def rank_of(pid):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        return None
    for e in env:
        for key in (b"OMPI_COMM_WORLD_RANK=", b"RANK="):
            if e.startswith(key):
                return int(e[len(key):])
    return None


class Job:
    """One training job: RANKS processes under mpirun, or torchrun-style."""

    def __init__(self, a, art, extra):
        self.a = a
        prog = (["loom-run", art] if a.program == "jit"
                else [os.path.join(art, "train")])
        flags = ["--steps", str(a.steps), "--timeout", "10"] + extra
        self.procs = []
        if a.launcher == "mpirun":
            cmd = MPIRUN + ["-np", str(RANKS)] + prog + flags
            self.procs.append(subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True))
        else:
            port = free_port()
            for r in range(RANKS):
                env = {k: v for k, v in os.environ.items()
                       if not k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_"))}
                env.update(RANK=str(r), WORLD_SIZE=str(RANKS), LOCAL_RANK=str(r),
                           LOCAL_WORLD_SIZE=str(RANKS), MASTER_ADDR="127.0.0.1",
                           MASTER_PORT=str(port))
                self.procs.append(subprocess.Popen(
                    prog + flags, env=env, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True, start_new_session=True))

    def rank_pids(self):
        """World rank -> pid of the process that trains it."""
        if self.a.launcher == "gloo":
            return dict(enumerate(p.pid for p in self.procs))
        pids = {}
        for pid in descendants(self.procs[0].pid):
            r = rank_of(pid)
            # loom-run -np re-runs itself under mpirun: the deepest process
            # with the rank is the one that trains.
            if r is not None:
                pids[r] = pid
        return pids

    def kill(self, how, rng):
        if how == "job":
            for p in self.procs:
                for pid in [p.pid] + descendants(p.pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            return None
        # mpirun may not have started the ranks yet.
        pids, waited = self.rank_pids(), 0
        while len(pids) < RANKS and waited < 100:
            time.sleep(0.02)
            pids, waited = self.rank_pids(), waited + 1
        if not pids:
            return None
        r = rng.choice(sorted(pids))
        try:
            os.kill(pids[r], signal.SIGKILL)
        except OSError:
            return None
        return r

    def wait(self, limit):
        outs, hung = [], False
        for p in self.procs:
            try:
                outs.append(p.communicate(timeout=limit)[0])
            except subprocess.TimeoutExpired:
                hung = True
                os.killpg(p.pid, signal.SIGKILL)
                outs.append(p.communicate()[0])
        return outs, hung, [p.returncode for p in self.procs]


def same_tree(a, b):
    fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
    if fa != fb:
        return False
    return all(open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read()
               for f in fa)


def same_as_checkpoint(step_dir, dirs):
    """Every tensor of `dirs` (<name>.npy) equal, bits and dtype, to the
    checkpoint's."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from loom import checkpoint
    saved = checkpoint.load(step_dir)
    for d in dirs:
        for f in os.listdir(d):
            want = np.load(os.path.join(d, f))
            got = saved.get(f[:-4])
            if got is None or got.dtype != want.dtype or got.tobytes() != want.tobytes():
                return False
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--program", choices=("jit", "exe"), default="jit")
    p.add_argument("--launcher", choices=("mpirun", "gloo"), default="mpirun")
    p.add_argument("--kill", choices=("rank", "job"), default="rank")
    p.add_argument("--steps", type=int, default=40)
    a = p.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.work, exist_ok=True)
    art = os.path.join(a.work, "art")
    r = sh(["loomc", os.path.join(ROOT, "test", "Planner", "Inputs", "mlp.mlir"),
            "--train", "--loss=none", "--optimizer=adamw", "--mesh", f"dp={RANKS}",
            "--strategy", "zero3", "--emit=executable", "-o", art])
    if r.returncode:
        sys.exit(f"loomc failed:\n{r.stdout}{r.stderr}")
    ref_p, ref_s = os.path.join(a.work, "ref-p"), os.path.join(a.work, "ref-s")
    t0 = time.monotonic()
    outs, hung, codes = Job(a, art, ["--params-out", ref_p, "--state-out", ref_s]).wait(300)
    span = time.monotonic() - t0
    if hung or any(codes):
        sys.exit("the reference run failed:\n" + "".join(outs))
    # The kills land within a checkpointing run's span.
    ck = os.path.join(a.work, "ck-span")
    shutil.rmtree(ck, ignore_errors=True)
    t0 = time.monotonic()
    Job(a, art, ["--checkpoint-dir", ck, "--checkpoint-every", "1",
                 "--params-out", "none"]).wait(300)
    span = time.monotonic() - t0
    shutil.rmtree(ck, ignore_errors=True)
    print(f"reference: {a.steps} steps, {span:.1f} s with a checkpoint every step "
          f"({a.program}, {a.launcher}, kill {a.kill})")
    bad = skipped = 0
    named = killed_mid_run = 0
    for t in range(a.trials):
        ck = os.path.join(a.work, f"ck-{t}")
        pout, sout = os.path.join(a.work, f"p-{t}"), os.path.join(a.work, f"s-{t}")
        shutil.rmtree(ck, ignore_errors=True)
        job = Job(a, art, ["--checkpoint-dir", ck, "--checkpoint-every", "1",
                           "--params-out", "none"])
        delay = rng.uniform(0.1, span)
        time.sleep(delay)
        victim = job.kill(a.kill, rng)
        outs, hung, codes = job.wait(60)
        finished = not hung and not any(codes)
        note = ""
        if a.launcher == "gloo" and victim is not None and not finished:
            killed_mid_run += 1
            survivors = [o for r_, o in enumerate(outs) if r_ != victim]
            # Killed in training (its heartbeat stopped), before the
            # rendezvous completed (it never joined), or rank 0 before it
            # served the rendezvous.
            ok = all(f"rank(s) {victim} dead" in o or
                     f"rank {victim} is dead" in o or
                     f"rank {victim} never joined" in o or
                     f"cannot reach rank {victim}'s rendezvous" in o
                     for o in survivors)
            # A survivor ends with an error of its own, not a signal
            # (SIGPIPE writing to the dead peer).
            signalled = [r_ for r_, c in enumerate(codes) if r_ != victim and c < 0]
            named += ok
            note = f"; survivors name rank {victim}: {'yes' if ok else 'NO'}"
            if signalled:
                ok = False
                note += f"; rank(s) {signalled} ended by a signal"
            if not ok:
                bad += 1
                print("".join(outs))
        if hung:
            bad += 1
            note += "; the killed job HUNG"
        steps = sorted(d for d in os.listdir(ck) if d.startswith("step-")) if os.path.isdir(ck) else []
        complete = [d for d in steps if os.path.exists(os.path.join(ck, d, "manifest.json"))]
        resume = ["--resume", ck] if complete else []
        if complete and complete[-1] == f"step-{a.steps:08d}":
            # Killed after the last save (or not at all: the job had
            # finished): nothing to resume; the last checkpoint must hold
            # the reference's values.
            outs2, same = [], same_as_checkpoint(os.path.join(ck, complete[-1]),
                                                 [ref_p, ref_s])
            skipped += finished
        else:
            outs2, hung2, codes2 = Job(a, art, resume + ["--params-out", pout,
                                                         "--state-out", sout]).wait(300)
            same = not hung2 and not any(codes2) and same_tree(pout, ref_p) and \
                same_tree(sout, ref_s)
        bad += not same
        what = "the job had finished" if finished else (
            f"rank {victim} killed" if victim is not None else "job killed")
        print(f"trial {t}: after {delay:.2f} s, {what}; {len(complete)} complete / "
              f"{len(steps)} started checkpoints; resumed from "
              f"{complete[-1] if complete else 'the start'}: "
              f"{'byte-identical' if same else 'DIFFERENT'}{note}")
        if not same:
            print("".join(outs2))
        shutil.rmtree(ck, ignore_errors=True)
    print(f"summary: {a.trials - bad} of {a.trials} trials good"
          + (f" ({skipped} had finished before the kill: their last checkpoint "
             "checked)" if skipped else "")
          + (f"; survivors named the dead rank in {named} of {killed_mid_run} rank kills"
             if a.launcher == "gloo" else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
