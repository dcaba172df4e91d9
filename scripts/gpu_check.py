#!/usr/bin/env python3
"""The prepared GPU check (scripts/gpu-check.sh calls this).

GPU machines are lent by chance, for minutes, bare (no LLVM/MLIR, ONNX or
CBC, no network) but with the NVIDIA driver, PyTorch with CUDA and the
nvidia-* Python packages. So everything is built here and checked there:

  gpu_check.py prepare DIR   (this machine, no GPU) builds into DIR the GPU
      programs of the MLP, the CNN, the transformer block (one GPU, and
      dp=2,tp=2 on 4 processes) and a GPT benchmark step (f32, bf16), the
      CPU's losses and parameters after 4 steps of the first four, the
      gpu-selftest binary, Loom's libraries and the system libraries they
      need. Weights of the GPT steps are drawn on the device
      (--init-random), not carried. DIR must stay under 40 MiB.

  gpu_check.py prepare --bench DIR   also bench/h100's GPT configurations
      (f32 2x2048x16x1024x4; bf16 4x2048x16x2048x4, 2x4096x32x2048x2,
      1x8192x64x2048x1) and bench/gpu/models.py's MLP and ResNet-18 (f32,
      bf16), each measured against PyTorch eager by `run` (DIR under 60
      MiB: the lent machines carry 64).

  gpu_check.py run DIR       (the GPU machine) checks: nvidia-smi; ldd of
      every binary (nothing "not found"); gpu-selftest; each model 4 steps
      on the GPU against the CPU (losses 1e-5 relative, parameters 1e-6 of
      each tensor's largest magnitude) and two GPU runs bitwise equal; the
      block on 4 processes on one GPU (torchrun-style environment, TCP
      store, Gloo, collectives staged through host memory); the GPT step's
      median time, MFU and device-memory peak against PyTorch eager on the
      same GPU (and torch.compile with LOOM_GPU_CHECK_COMPILE=1), steps
      replayed from CUDA graphs bitwise equal to steps launched kernel by
      kernel (LOOM_CUDA_GRAPHS=0), kept as
      measured-<device>-<date>.json beside the logs (LOOM_GPU_CHECK_ONLY=gpt
      runs only the rows whose names start so). Prints one table
      and "N passed, M failed"; with $OUT set (a lent machine) the JSON and
      table.md go to $OUT and the logs to $OUT/gpu-check-logs.tar.gz (few
      files come back from a call), else everything to DIR/logs.
      Without a GPU it says so and exits 2 before running anything.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT_MIB = 40
SGD = ["--optimizer=sgd", "--lr=0.1", "--momentum=0.9"]
# name, ONNX model, loss, extra loomc flags, processes
MODELS = [
    ("mlp", "mlp.onnx", "cross_entropy", [], 1),
    ("cnn", "cnn.onnx", "cross_entropy", [], 1),
    ("block", "transformer_block.onnx", "mse", [], 1),
    ("block-dp2-tp2", "transformer_block.onnx", "mse",
     ["--mesh", "dp=2,tp=2", "--strategy", "dp-tp"], 4),
]
# The benchmark step: bench/planner/gpt.py's model, bench/h100/gpt_step.py's
# PyTorch twin (layers x hidden x heads x seq x batch, vocabulary 51200).
GPT = (2, 1024, 16, 1024, 8)
# --bench adds bench/h100's configurations (bench/h100/measured-h100-*.json),
# each against PyTorch eager on the same GPU.
BENCH_GPTS = [("2x2048x16x1024x4", "f32"), ("4x2048x16x2048x4", "bf16"),
              ("2x4096x32x2048x2", "bf16"), ("1x8192x64x2048x1", "bf16")]
# --bench also measures these (bench/gpu/models.py) in f32 and bf16.
BENCH_MODELS = ["mlp", "resnet18"]
# The carry limit of the lent machines is 64 MiB.
BENCH_LIMIT_MIB = 60
STEPS = 4
# Libraries every Linux has (glibc's); everything else a binary loads that
# is not Loom's own is carried.
SYSTEM = re.compile(r"^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|"
                    r"libpthread\.so|librt\.so|libresolv\.so|libutil\.so)")


def sh(cmd, log=None, env=None, timeout=600, cwd=None):
    """Runs cmd; returns (status, output). The output also goes to `log`."""
    start = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=env, timeout=timeout, cwd=cwd)
        status, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        status = 124
        out = (e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")) + \
            f"\n[timed out after {timeout} s]"
    except OSError as e:
        status, out = 127, str(e)
    if log:
        with open(log, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{out}\n[status {status}, "
                    f"{time.time() - start:.1f} s]\n\n")
    return status, out


def losses(text):
    return [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)", text, re.M)]


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def elf_files(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    out.append(p)
    return sorted(out)


#===------------------------------------------------------------------------===#
# prepare
#===------------------------------------------------------------------------===#

def gpt_rows(bench):
    """(config, dtype, program name) of every GPT step the check measures."""
    default = "x".join(map(str, GPT))
    rows = [(default, "f32", "gpt-f32"), (default, "bf16", "gpt-bf16")]
    if bench:
        rows += [(c, d, f"gpt-{c}-{d}") for c, d in BENCH_GPTS]
    return rows


def model_rows(bench):
    """(model, dtype, program name) of bench/gpu/models.py's rows."""
    return [(m, d, f"{m}-bench-{d}") for m in BENCH_MODELS for d in ("f32", "bf16")] \
        if bench else []


def prepare(dest, bench=False):
    build = os.environ.get("LOOM_BUILD_DIR", os.path.join(ROOT, "build"))
    loomc = os.path.join(build, "bin", "loomc")
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp"]
    if os.path.exists(dest):
        shutil.rmtree(dest)
    tmp = os.path.join(dest + ".work")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    os.makedirs(dest)
    log = os.path.join(tmp, "prepare.log")

    def must(cmd, **kw):
        status, out = sh(cmd, log=log, **kw)
        if status:
            sys.exit(f"gpu-check --prepare: failed ({status}): {' '.join(cmd)}\n{out[-3000:]}")
        return out

    models = os.path.join(tmp, "models")
    must([py, os.path.join(ROOT, "test/Target/ONNX/Inputs/export_torch_models.py"), models])
    for name, onnx, loss, flags, np_ in MODELS:
        compile_ = [loomc, os.path.join(models, onnx), "--train", f"--loss={loss}", *SGD, *flags]
        cpu = os.path.join(tmp, name + "-cpu")
        must(compile_ + ["--emit=executable", "-o", cpu])
        expected = os.path.join(dest, "expected", name)
        os.makedirs(expected)
        run = [os.path.join(cpu, "train"), "--steps", str(STEPS), "--data", "synthetic",
               "--params-out", os.path.join(expected, "params")]
        out = must((mpirun + ["-np", str(np_)] if np_ > 1 else []) + run)
        got = losses(out)
        if len(got) != STEPS:
            sys.exit(f"gpu-check --prepare: {name}: the CPU program printed {got}")
        with open(os.path.join(expected, "losses.json"), "w") as f:
            json.dump(got, f)
        gpu = os.path.join(dest, "programs", name)
        must(compile_ + ["--target=cuda:sm_90", "--emit=executable", "-o", gpu])
        for extra in ("train.mlir", "train.cuda.mlir", "cache", "optimizer-final"):
            p = os.path.join(gpu, extra)
            shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (
                os.path.exists(p) and os.remove(p))
    for config, dtype, name in gpt_rows(bench):
        L, H, A, S, B = (int(x) for x in config.split("x"))
        mlir = os.path.join(tmp, f"{name}.mlir")
        with open(mlir, "w") as f:
            f.write(must([py, os.path.join(ROOT, "bench/planner/gpt.py"), "--layers", str(L),
                          "--hidden", str(H), "--heads", str(A), "--seq", str(S),
                          "--batch", str(B), "--dtype", dtype]))
        gpu = os.path.join(dest, "programs", name)
        must([loomc, mlir, "--train", "--loss=none", "--optimizer=adamw", "--init", "seeded",
              "--target=cuda:sm_90", "--emit=executable", "-o", gpu])
        # The weights are drawn on the GPU machine (--init-random).
        for extra in ("params.bin", "train.mlir", "train.cuda.mlir"):
            if os.path.exists(os.path.join(gpu, extra)):
                os.remove(os.path.join(gpu, extra))
        shutil.rmtree(os.path.join(gpu, "cache"), ignore_errors=True)
    # --bench: the MLP and ResNet-18 (bench/gpu/models.py), f32 and bf16.
    for model, dtype, name in model_rows(bench):
        must([py, os.path.join(ROOT, "bench/gpu/models.py"), "export", model, models])
        spec = json.load(open(os.path.join(models, model + ".json")))
        gpu = os.path.join(dest, "programs", name)
        must([loomc, os.path.join(models, model + ".onnx"), "--train", "--loss=" + spec["loss"],
              *spec["flags"], *(["--precision=bf16"] if dtype == "bf16" else []),
              "--target=cuda:sm_90", "--emit=executable", "-o", gpu])
        for extra in ("params.bin", "train.mlir", "train.cuda.mlir"):
            if os.path.exists(os.path.join(gpu, extra)):
                os.remove(os.path.join(gpu, extra))
        shutil.rmtree(os.path.join(gpu, "cache"), ignore_errors=True)
        with open(os.path.join(gpu, "bench.json"), "w") as f:
            json.dump(spec, f)
    os.makedirs(os.path.join(dest, "bin"))
    os.makedirs(os.path.join(dest, "lib"))
    shutil.copy2(os.path.join(build, "bin", "gpu-selftest"), os.path.join(dest, "bin"))
    for lib in ("libloom_runtime.so", "libloom_cuda.so"):
        shutil.copy2(os.path.join(build, "lib", lib), os.path.join(dest, "lib"))
    # The system libraries Loom's libraries load, resolved here.
    syslib = os.path.join(dest, "syslib")
    os.makedirs(syslib)
    carried = set()
    for f in elf_files(dest):
        for line in must(["ldd", f]).splitlines():
            m = re.match(r"\s*(\S+) => (/\S+)", line)
            if not m or SYSTEM.match(m.group(1)) or m.group(1).startswith("libloom_"):
                continue
            if m.group(1) not in carried:
                carried.add(m.group(1))
                shutil.copy2(os.path.realpath(m.group(2)), os.path.join(syslib, m.group(1)))
    commit = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])[1].strip()
    # A folder prepared from uncommitted changes says so.
    if sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])[1].strip():
        commit += "+changes"
    size = du(dest)
    info = {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "models": [m[0] for m in MODELS], "gpt": "x".join(map(str, GPT)),
            "gpts": [list(r) for r in gpt_rows(bench)],
            "bench_models": [list(r) for r in model_rows(bench)],
            "steps": STEPS, "carried": sorted(carried), "bytes": size}
    with open(os.path.join(dest, "prepared.json"), "w") as f:
        json.dump(info, f, indent=1)
    shutil.rmtree(tmp)
    print(f"gpu-check --prepare: {dest}: {size / 2**20:.1f} MiB "
          f"(limit {BENCH_LIMIT_MIB if bench else LIMIT_MIB}), "
          f"{len(MODELS)} models with CPU references, GPT {info['gpt']} f32/bf16"
          + (f" (and {len(BENCH_GPTS)} bench/h100 configurations)" if bench else "") + ", "
          f"gpu-selftest, {len(carried)} system libraries ({', '.join(sorted(carried))})")
    limit = BENCH_LIMIT_MIB if bench else LIMIT_MIB
    if size > limit * 2**20:
        sys.exit(f"gpu-check --prepare: {dest} is {size / 2**20:.1f} MiB, over {limit} MiB")


#===------------------------------------------------------------------------===#
# run
#===------------------------------------------------------------------------===#

class Table:
    def __init__(self):
        self.rows = []

    def add(self, name, ok, detail):
        self.rows.append((name, ok, detail))
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)

    def print(self):
        print("\n| check | result | detail |\n|---|---|---|")
        for name, ok, detail in self.rows:
            print(f"| {name} | {'pass' if ok else 'FAIL'} | {detail} |")
        passed = sum(ok for _, ok, _ in self.rows)
        print(f"\n{passed} passed, {len(self.rows) - passed} failed")
        return passed == len(self.rows)


def read_npy(path):
    """(raw bytes, values as floats) of a version-1 .npy file of <f4/<f8/
    integers; no numpy needed (the GPU machine's Python may lack it)."""
    import array
    import ast
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not an .npy file")
    n = int.from_bytes(data[8:10], "little")
    header = ast.literal_eval(data[10:10 + n].decode())
    body = data[10 + n:]
    code = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q", "|u1": "B", "|i1": "b"}[header["descr"]]
    values = array.array(code)
    values.frombytes(body)
    return body, values


def read_npy_dir(path):
    if not os.path.isdir(path):
        return {}
    return {f: read_npy(os.path.join(path, f)) for f in sorted(os.listdir(path))
            if f.endswith(".npy")}


def compare(name, table, expected, runs):
    """runs: [(losses, params), (losses, params)] of two GPU runs."""
    want = json.load(open(os.path.join(expected, "losses.json")))
    want_p = read_npy_dir(os.path.join(expected, "params"))
    (l1, p1), (l2, p2) = runs
    if len(l1) != STEPS or not p1:
        table.add(name, False, f"the GPU run printed losses {l1} and wrote {len(p1)} tensors")
        return
    same = l1 == l2 and sorted(p1) == sorted(p2) and all(
        p1[f][0] == p2[f][0] for f in p1)
    rel = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(l1, want))
    worst, where = 0.0, ""
    missing = sorted(set(want_p) - set(p1))
    for f, (_, ref) in want_p.items():
        if f not in p1:
            continue
        got = p1[f][1]
        if len(got) != len(ref):
            missing.append(f + " (size)")
            continue
        scale = max(max((abs(x) for x in ref), default=0.0), 1e-30)
        d = max((abs(a - b) for a, b in zip(got, ref)), default=0.0) / scale
        if d > worst:
            worst, where = d, f
    ok = same and rel <= 1e-5 and worst <= 1e-6 and not missing
    table.add(name, ok,
              f"losses {', '.join(f'{x:.6g}' for x in l1)}; within {rel:.1e} relative of the CPU "
              f"(limit 1e-5); parameters within {worst:.1e} of each tensor's max (limit 1e-6"
              f"{', worst ' + where if where else ''}); two GPU runs "
              f"{'bitwise equal' if same else 'DIFFER'}"
              + (f"; missing {missing}" if missing else ""))


def run_program(prog, logs, tag, env, extra=(), procs=1, timeout=180, steps=STEPS):
    """Runs a GPU program (procs processes: torchrun-style environment);
    returns (status, rank 0's output, params dir)."""
    params = os.path.join(logs, f"{tag}-params")
    shutil.rmtree(params, ignore_errors=True)
    cmd = [os.path.join(prog, "train"), "--steps", str(steps), "--data", "synthetic",
           "--params-out", params, *extra]
    log = os.path.join(logs, tag + ".log")
    if procs == 1:
        status, out = sh(cmd, log=log, env=env, timeout=timeout)
        return status, out, params
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ps = []
    for r in range(procs):
        e = dict(env, RANK=str(r), WORLD_SIZE=str(procs), LOCAL_RANK=str(r),
                 LOCAL_WORLD_SIZE=str(procs), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        f = open(os.path.join(logs, f"{tag}.rank{r}.log"), "w")
        ps.append((subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=e), f))
    status = 0
    deadline = time.time() + timeout
    for p, f in ps:
        try:
            p.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            status = 124
        status = status or p.returncode
        f.close()
    with open(os.path.join(logs, f"{tag}.rank0.log")) as f:
        out = f.read()
    if status:
        for r in range(1, procs):
            with open(os.path.join(logs, f"{tag}.rank{r}.log")) as f:
                out += f"\n[rank {r}]\n" + f.read()
    with open(log, "w") as f:
        f.write(out)
    return status, out, params


def gpt_flops(L, H, S, B, V=51200):
    """Model FLOPs of one GPT training step: 3x the forward's matrix
    products (projections, MLP, attention's two batched products, LM head)."""
    T = B * S
    forward = L * (24 * T * H * H + 4 * B * S * S * H) + 2 * T * H * V
    return 3 * forward


def peak_flops(name, dtype):
    """Dense peak FLOP/s of the device (NVIDIA's data sheets): tensor-core
    bf16 for 16-bit steps, the FP32 pipes for f32 (no TF32)."""
    table = {"H100 PCIe": (756e12, 51.2e12), "H100": (989.4e12, 66.9e12),
             "H200": (989.4e12, 66.9e12), "A100": (312e12, 19.5e12)}
    for key, (bf16, f32) in table.items():
        if key in name:
            return bf16 if dtype in ("bf16", "f16") else f32
    return None


def run(dest):
    table = Table()
    # The lent machine's time is short: what cannot finish by the deadline
    # is reported as not run instead of being started.
    deadline = time.time() + float(os.environ.get("LOOM_GPU_CHECK_SECONDS", "390"))

    # Nothing starts after the deadline, and what runs is cut at the deadline
    # plus LOOM_GPU_CHECK_GRACE seconds (a lent machine's call ends hard).
    hard = deadline + float(os.environ.get("LOOM_GPU_CHECK_GRACE", "45"))

    def limit(seconds):
        return max(1, min(seconds, hard - time.time()))

    # LOOM_GPU_CHECK_ONLY=gpt,...: only the rows whose names start so (a
    # short lease spent on the benchmark alone); the others are listed once.
    only = [x for x in os.environ.get("LOOM_GPU_CHECK_ONLY", "").split(",") if x]
    skipped = []

    def wanted(name):
        if not only or any(name.startswith(x) for x in only):
            return True
        skipped.append(name)
        return False

    def late(name):
        if not wanted(name):
            return True
        if time.time() < deadline:
            return False
        table.add(name, False, "not run: the check's time (LOOM_GPU_CHECK_SECONDS) ran out")
        return True
    # On a lent machine ($OUT set) only a few files come back from a call:
    # the measurement (JSON) and the table go to $OUT itself, after every
    # row, and the logs (kernel profiles included) into one archive there
    # at the end.
    out_dir = os.environ.get("OUT")
    logs = os.path.join(out_dir or dest, "gpu-check" if out_dir else "logs")
    results = out_dir or logs
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    status, out = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                      "--format=csv,noheader"], log=os.path.join(logs, "nvidia-smi.log"))
    if status or not out.strip():
        print(f"gpu-check: no GPU here (nvidia-smi: {out.strip() or 'status ' + str(status)}); "
              "nothing was run")
        return 2
    if not os.path.exists(os.path.join(dest, "prepared.json")):
        print(f"gpu-check: {dest} is not a prepared folder (run --prepare first)")
        return 2
    info = json.load(open(os.path.join(dest, "prepared.json")))
    gpu_name, driver = (out.strip().splitlines()[0].split(", ") + ["", ""])[:2]
    measured = {"device": gpu_name, "driver": driver, "commit": info["commit"],
                "date": time.strftime("%Y-%m-%d"), "rows": []}
    measured_path = os.path.join(
        results, f"measured-{gpu_name.split()[1].lower() if ' ' in gpu_name else 'gpu'}-"
        f"{time.strftime('%Y-%m-%d')}.json")
    table.add("nvidia-smi", True, out.strip().splitlines()[0] +
              f" (prepared at {info['commit']}, {info['bytes'] / 2**20:.1f} MiB)")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(dest, "syslib") + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    # ldd: every library found.
    missing = []
    elves = elf_files(os.path.join(dest, "bin")) + elf_files(os.path.join(dest, "lib")) + \
        [os.path.join(dest, "programs", p, "train") for p in sorted(os.listdir(
            os.path.join(dest, "programs")))]
    for f in elves:
        _, text = sh(["ldd", f], log=os.path.join(logs, "ldd.log"), env=env)
        missing += [f"{os.path.relpath(f, dest)}: {l.strip()}" for l in text.splitlines()
                    if "not found" in l]
    table.add("ldd", not missing, f"{len(elves)} binaries, every library found"
              if not missing else "; ".join(missing[:6]))
    # The self-test.
    if wanted("selftest"):
        status, out = sh([os.path.join(dest, "bin", "gpu-selftest")],
                         log=os.path.join(logs, "selftest.log"), env=env, timeout=120)
        rows = re.findall(r"^(PASS|FAIL|SKIP) (\S+(?: \S+)?): (.*)$", out, re.M)
        for verdict, name, detail in rows:
            table.add("selftest " + name, verdict == "PASS", detail)
        if not rows or status not in (0, 1):
            table.add("selftest", False, f"status {status}: {out.strip()[-400:]}")
    # The models against the CPU.
    for name, _, _, _, procs in MODELS:
        if late(name):
            continue
        prog = os.path.join(dest, "programs", name)
        results, failure = [], None
        for attempt in (1, 2):
            status, out, params = run_program(prog, logs, f"{name}-{attempt}", env, procs=procs,
                                              timeout=90)
            if status:
                failure = f"run {attempt} failed (status {status}): {out.strip()[-600:]}"
                break
            results.append((losses(out), read_npy_dir(params)))
        if failure:
            table.add(name + (f" ({procs} processes, one GPU, staged)" if procs > 1 else ""),
                      False, failure)
            continue
        compare(name + (f" ({procs} processes on one GPU, staged Gloo)" if procs > 1 else ""),
                table, os.path.join(dest, "expected", name), results)
    # CUDA graphs: steps replayed from a graph (the default) bitwise equal
    # to steps launched kernel by kernel (LOOM_CUDA_GRAPHS=0), and the
    # replay really happened (the profile says how the steps ran).
    for name in ("mlp", "block"):
        if late(name + " graphs"):
            continue
        prog = os.path.join(dest, "programs", name)
        runs = []
        for tag, extra_env in (("graphs", {}), ("direct", {"LOOM_CUDA_GRAPHS": "0"})):
            status, out, params = run_program(prog, logs, f"{name}-{tag}", dict(env, **extra_env),
                                              extra=("--profile",), steps=8, timeout=90)
            note = re.search(r"^profile: ((?:steps replayed|no CUDA graph).*)$", out, re.M)
            runs.append((status, out, losses(out), read_npy_dir(params),
                         note.group(1) if note else "no note on how the steps ran"))
        (s1, o1, l1, p1, n1), (s2, o2, l2, p2, n2) = runs
        replayed = n1.startswith("steps replayed") and "6 replays" in n1
        direct = n2.startswith("no CUDA graph (LOOM_CUDA_GRAPHS=0)")
        same = bool(p1) and sorted(p1) == sorted(p2) and all(p1[f][0] == p2[f][0] for f in p1)
        ok = s1 == 0 and s2 == 0 and replayed and direct and same and l1 == l2 and len(l1) == 8
        table.add(name + " graphs", ok,
                  f"8 steps: '{n1}' vs '{n2}'; losses {'==' if l1 == l2 else '!='} "
                  f"({', '.join(f'{x:.6g}' for x in l1)}), parameters "
                  f"{'bitwise equal' if same else 'DIFFER'}"
                  + ("" if s1 == 0 and s2 == 0 else f"; status {s1}, {s2}: {(o1 + o2)[-400:]}"))
    # Checkpoints on the GPU: saved every step, resumed from step 1 to 3,
    # bitwise the uninterrupted run (parameters come back from the device).
    if not late("mlp checkpoint"):
        prog = os.path.join(dest, "programs", "mlp")
        ck = os.path.join(logs, "mlp-ck")
        shutil.rmtree(ck, ignore_errors=True)
        s1, out1, p1 = run_program(prog, logs, "mlp-ck-full", env,
                                   extra=("--checkpoint-dir", ck, "--checkpoint-every", "1"),
                                   timeout=90)
        s2, out2, p2 = run_program(prog, logs, "mlp-ck-resumed", env,
                                   extra=("--resume", os.path.join(ck, "step-00000001")),
                                   timeout=90)
        a, b = read_npy_dir(p1), read_npy_dir(p2)
        same = bool(a) and sorted(a) == sorted(b) and all(a[f][0] == b[f][0] for f in a)
        l1, l2 = losses(out1), losses(out2)
        ok = s1 == 0 and s2 == 0 and same and l1[1:] == l2
        table.add("mlp checkpoint", ok,
                  f"saved every step on the GPU, resumed from step 1: losses {l2} "
                  f"{'==' if l1[1:] == l2 else '!='} {l1[1:]}, parameters "
                  f"{'bitwise equal' if same else 'DIFFER'}"
                  + ("" if s1 == 0 and s2 == 0 else f"; status {s1}, {s2}: {(out1 + out2)[-400:]}"))

    def measure(row, config, dtype, prog, flops, torch_cmd, sane, steps=12):
        """One bench row: Loom's program (`steps` steps, --init-random) against
        torch_cmd's JSON (step_s, peak_bytes) on the same GPU; `sane(losses)`
        says whether Loom's losses look like training."""
        # With --profile the first two steps run directly (loading, then
        # the kernel profile), the next two capture the two graphs (the
        # trainer swaps parameters and results), the rest replay them:
        # more than half, so that the median is a replay's.
        name = os.path.basename(prog)
        status, out = sh([os.path.join(prog, "train"), "--steps", str(steps), "--data", "synthetic",
                          "--init-random", "1", "--profile", "--params-out", "none"],
                         log=os.path.join(logs, f"{name}.log"), env=env, timeout=limit(150))
        m = re.search(r"profile: \d+ steps, median ([\d.]+) ms", out)
        got = losses(out)
        if status or not m:
            table.add(row, False, f"status {status}: {out.strip()[-600:]}")
            return
        loom_ms = float(m.group(1))
        pm = re.search(r"device memory peak (\d+) bytes", out)
        loom_peak = int(pm.group(1)) if pm else None
        graphs = re.search(r"^profile: ((?:steps replayed|no CUDA graph)[^\n]*)", out, re.M)

        def run_torch(extra, tag, seconds):
            status, tout = sh(torch_cmd + extra, log=os.path.join(logs, f"torch-{tag}{name}.log"),
                              timeout=limit(seconds))
            try:
                j = json.loads(tout[tout.index("{"):])
                j = j["configs"][0] if "configs" in j else j
                return j, status
            except (ValueError, KeyError, IndexError):
                return None, status
        j, status = run_torch([], "", 150)
        torch_ms = j["step_s"] * 1e3 if j else None
        torch_peak = j["peak_bytes"] if j else None
        compile_ms = compile_first = None
        if os.environ.get("LOOM_GPU_CHECK_COMPILE") == "1" and not late(f"{row} compile"):
            c, _ = run_torch(["--compile"], "compile-", 300)
            if c:
                compile_ms, compile_first = c["step_s"] * 1e3, c["first_step_s"]
        peak = peak_flops(gpu_name, dtype)
        mfu = flops / (loom_ms / 1e3) / peak if peak else None
        detail = (f"{config}: Loom {loom_ms:.2f} ms/step (median of {steps}"
                  + (f", MFU {100 * mfu:.1f} %" if mfu else "") + "), PyTorch eager "
                  + (f"{torch_ms:.2f} ms" + (f" (MFU {100 * flops / (torch_ms / 1e3) / peak:.1f} %)"
                                              if peak else "")
                     + f": Loom/PyTorch {loom_ms / torch_ms:.2f}x" if torch_ms
                     else f"failed ({status})")
                  + (f"; torch.compile {compile_ms:.2f} ms (first step {compile_first:.0f} s)"
                     if compile_ms else "")
                  + (f"; peak {loom_peak / 2**30:.2f} GiB" if loom_peak else "")
                  + (f" vs {torch_peak / 2**30:.2f} GiB" if torch_peak else "")
                  + f"; losses {', '.join(f'{x:.4f}' for x in got[:3])}"
                  + (f"; {graphs.group(1)}" if graphs else ""))
        measured["rows"].append({"config": config, "dtype": dtype,
                                 "loom_s": loom_ms / 1e3,
                                 "torch_s": torch_ms / 1e3 if torch_ms else None,
                                 "compile_s": compile_ms / 1e3 if compile_ms else None,
                                 "mfu": mfu, "flops": flops, "peak_bytes": loom_peak,
                                 "torch_peak_bytes": torch_peak,
                                 "graphs": graphs.group(1) if graphs else None})
        table.add(row, bool(sane(got) and torch_ms), detail)
        # Kept after every row: a call cut short keeps what it measured.
        with open(measured_path, "w") as f:
            json.dump(measured, f, indent=1)

    # The GPT steps against PyTorch eager, same GPU, same call: the default
    # configuration, then the MLP and ResNet-18 (bench/gpu/models.py), then
    # bench/h100's larger configurations (what the deadline cuts first).
    def gpt_row(config, dtype, name):
        L, H, A, S, B = (int(x) for x in config.split("x"))
        row = f"gpt {dtype}" if config == info["gpt"] else f"gpt {config} {dtype}"
        if late(row):
            return
        # Random weights of 0.02: the first loss is about ln(vocabulary).
        measure(row, "gpt-" + config, dtype, os.path.join(dest, "programs", name),
                gpt_flops(L, H, S, B),
                [sys.executable, os.path.join(ROOT, "bench/h100/gpt_step.py"),
                 "--configs", config, "--dtype", dtype, "--no-extras"],
                lambda got: got and abs(got[0] - 10.843) < 0.5 and all(x == x for x in got))
    rows = info.get("gpts") or [[info["gpt"], d, "gpt-" + d] for d in ("f32", "bf16")]
    for config, dtype, name in rows:
        if config == info["gpt"]:
            gpt_row(config, dtype, name)
    for model, dtype, name in info.get("bench_models", []):
        row = f"{model} {dtype}"
        if late(row):
            continue
        prog = os.path.join(dest, "programs", name)
        spec = json.load(open(os.path.join(prog, "bench.json")))
        # 9 steps (2 direct, 2 captures, 5 replays: the median is a replay).
        measure(row, model + "-" + "x".join(map(str, spec["shape"])), dtype, prog,
                spec["flops"],
                [sys.executable, os.path.join(ROOT, "bench/gpu/models.py"), "torch", model,
                 "--dtype", dtype],
                lambda got: len(got) == 9 and all(x == x and abs(x) < 1e30 for x in got),
                steps=9)
    for config, dtype, name in rows:
        if config != info["gpt"]:
            gpt_row(config, dtype, name)
    if skipped:
        print(f"not run (LOOM_GPU_CHECK_ONLY={','.join(only)}): {', '.join(skipped)}")
    ok = table.print()
    with open(os.path.join(results, "table.md"), "w") as f:
        for name, good, detail in table.rows:
            f.write(f"| {name} | {'pass' if good else 'FAIL'} | {detail} |\n")
    if out_dir:
        shutil.make_archive(os.path.join(out_dir, "gpu-check-logs"), "gztar", out_dir,
                            "gpu-check")
        shutil.rmtree(logs, ignore_errors=True)
    return 0 if ok else 1


def main():
    args = sys.argv[1:]
    bench = "--bench" in args
    args = [a for a in args if a != "--bench"]
    if len(args) != 2 or args[0] not in ("prepare", "run") or (bench and args[0] != "prepare"):
        sys.exit(__doc__)
    dest = os.path.abspath(args[1])
    if args[0] == "prepare":
        prepare(dest, bench)
        return 0
    return run(dest)


if __name__ == "__main__":
    sys.exit(main())
