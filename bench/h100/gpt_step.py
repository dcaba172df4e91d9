#!/usr/bin/env python3
"""Measures, on one CUDA GPU with PyTorch, what bench/h100/run.py predicts.

The model is bench/planner/gpt.py's, op for op: pre-norm decoder blocks
(layer norm, Q/K/V/O projections without bias, scores = QK^T * scale + mask,
softmax, GELU MLP of 4x), token embedding, final layer norm, LM head, mean
cross-entropy; every parameter and activation in the given dtype, AdamW state
in the parameter's dtype (as Loom prices it). Attention is the plain
matmul-softmax-matmul that Loom's graph has (no fused/flash kernel), so that
both sides do the same work.

For each configuration: the median time of a whole training step (forward,
backward, AdamW) over --steps timed steps after --warmup, with CUDA events,
and the peak of memory allocated (torch.cuda.max_memory_allocated). Also the
throughput of the matrix products alone at the model's shapes (the
"efficiency" Loom's device model assumes) and the memory bandwidth of a
large elementwise op.

  gpt_step.py --configs 2x1024x16x1024x8,... [--dtype bf16] > measured.json

A configuration is LAYERSxHIDDENxHEADSxSEQxBATCH (vocabulary --vocab).
Needs a GPU: prints an error and exits 2 without one.
"""
import argparse
import json
import math
import sys
import time

import torch


class Block(torch.nn.Module):
    def __init__(s, H, A, dt):
        super().__init__()
        s.A = A
        s.ln1 = torch.nn.LayerNorm(H, eps=1e-5, dtype=dt)
        s.ln2 = torch.nn.LayerNorm(H, eps=1e-5, dtype=dt)
        mk = lambda a, b: torch.nn.Parameter(torch.randn(a, b, dtype=dt) * 0.02)
        s.wq, s.wk, s.wv, s.wo = (mk(H, H) for _ in range(4))
        s.fc1, s.fc2 = mk(H, 4 * H), mk(4 * H, H)

    def forward(s, x, mask):
        B, S, H = x.shape
        A, D = s.A, H // s.A
        h = s.ln1(x)
        q = (h @ s.wq).reshape(B, S, A, D).permute(0, 2, 1, 3)
        kt = (h @ s.wk).reshape(B, S, A, D).permute(0, 2, 3, 1)
        v = (h @ s.wv).reshape(B, S, A, D).permute(0, 2, 1, 3)
        p = torch.softmax(q @ kt * (1.0 / math.sqrt(D)) + mask, dim=3)
        o = (p @ v).permute(0, 2, 1, 3).reshape(B, S, H)
        x = x + o @ s.wo
        return x + torch.nn.functional.gelu(s.ln2(x) @ s.fc1) @ s.fc2


class GPT(torch.nn.Module):
    def __init__(s, L, H, A, V, dt):
        super().__init__()
        s.wte = torch.nn.Parameter(torch.randn(V, H, dtype=dt) * 0.02)
        s.blocks = torch.nn.ModuleList(Block(H, A, dt) for _ in range(L))
        s.lnf = torch.nn.LayerNorm(H, eps=1e-5, dtype=dt)
        s.head = torch.nn.Parameter(torch.randn(H, V, dtype=dt) * 0.02)

    def forward(s, tokens, labels, mask):
        x = s.wte[tokens]
        for b in s.blocks:
            x = b(x, mask)
        logits = (s.lnf(x) @ s.head).reshape(-1, s.head.shape[1])
        return torch.nn.functional.cross_entropy(logits, labels).float()


def timed(fn, warmup, steps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", required=True)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--vocab", type=int, default=51200)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--compile", action="store_true",
                    help="the model under torch.compile (compile_s: the first step's time)")
    ap.add_argument("--no-extras", action="store_true",
                    help="only the step (no matmul or bandwidth measurements)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpt_step.py: no CUDA device (torch.cuda.is_available() is false)",
              file=sys.stderr)
        sys.exit(2)
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 means f32, as priced
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "dtype": a.dtype, "vocab": a.vocab, "configs": [], "matmul": [],
           "bandwidth": None}
    for spec in a.configs.split(","):
        L, H, A, S, B = (int(x) for x in spec.split("x"))
        torch.manual_seed(0)
        model = GPT(L, H, A, a.vocab, dt).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        run = torch.compile(model) if a.compile else model
        tokens = torch.randint(0, a.vocab, (B, S), device=dev)
        labels = torch.randint(0, a.vocab, (B * S,), device=dev)
        mask = torch.triu(torch.full((S, S), -1e4, device=dev), 1).to(dt)

        def step():
            opt.zero_grad(set_to_none=True)
            run(tokens, labels, mask).backward()
            opt.step()

        t0 = time.time()
        step()  # optimizer state exists from here on (and the compiled graph)
        torch.cuda.synchronize()
        first = time.time() - t0
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        t = timed(step, a.warmup, a.steps)
        peak = torch.cuda.max_memory_allocated()
        out["configs"].append({"config": spec, "layers": L, "hidden": H, "heads": A,
                               "seq": S, "batch": B, "step_s": t,
                               "peak_bytes": peak, "resident_bytes": base,
                               "compiled": a.compile, "first_step_s": first})
        print(f"{spec}: {t * 1e3:.2f} ms, peak {peak / 2**30:.2f} GiB",
              file=sys.stderr)
        # The model's matrix products alone.
        for (m, k, n) in [] if a.no_extras else [(B * S, H, H), (B * S, H, 4 * H), (B * S, 4 * H, H),
                          (B * S, H, a.vocab)]:
            x = torch.randn(m, k, device=dev, dtype=dt)
            w = torch.randn(k, n, device=dev, dtype=dt)
            tm = timed(lambda: x @ w, 3, 10)
            out["matmul"].append({"m": m, "k": k, "n": n, "s": tm,
                                  "flops_per_s": 2 * m * k * n / tm})
        del model, opt, tokens, labels, mask
        torch.cuda.empty_cache()
    if not a.no_extras:
        x = torch.randn(1 << 28, device=dev, dtype=torch.float32)
        tm = timed(lambda: x.mul_(1.0000001), 3, 10)
        out["bandwidth"] = 2 * x.numel() * 4 / tm  # bytes read + written per second
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
