#!/usr/bin/env python3
"""Imports every model of Debian's libonnx-testdata with loom-translate.

For each model: imported (and re-verified by loom-opt), unsupported (with
the importer's one-line reason), or a defect: a crash, a hang, or output that
does not verify. Prints counts per category and per op type, optionally
writes a Markdown report, and compares with an expectation file:

  onnx-import-sweep.py --build build [--markdown docs/onnx-import.md]
                       [--expected test/ONNX/import-expected.txt] [--update]

Exit status: 1 on any defect, on a model in the expectation file that no
longer imports, or (without --update) on a newly importing model missing
from it; 0 otherwise.
"""

import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import time
from pathlib import Path

DATA = Path("/usr/share/libonnx-testdata/data")
CATEGORIES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
TIMEOUT_S = 60


def op_types(model_path):
    """Op types of a model, read with the onnx Python package."""
    import onnx  # Debian's python3-onnx
    model = onnx.load(str(model_path), load_external_data=False)
    return sorted({n.op_type for n in model.graph.node})


SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "runtime error:")


def import_one(tools, translate, model_path):
    start = time.time()
    try:
        proc = subprocess.run(
            [translate, "--import-onnx", str(model_path),
             "--mlir-print-op-on-diagnostic=false"],
            capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return ("hang", f"no result after {TIMEOUT_S} s", time.time() - start)
    if proc.returncode < 0 or proc.returncode >= 128 or "Stack dump" in proc.stderr \
            or "PLEASE submit a bug report" in proc.stderr \
            or any(r in proc.stderr for r in SANITIZER_REPORTS):
        return ("crash", f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}",
                time.time() - start)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if "error:" in l]
        reason = lines[0].split("error:", 1)[1].strip() if lines else proc.stderr.strip()[:200]
        if "importer bug" in reason:
            return ("bug", reason, time.time() - start)
        return ("unsupported", reason, time.time() - start)
    check = subprocess.run([tools / "loom-opt", "-", "-o", "/dev/null"],
                           input=proc.stdout, capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    if check.returncode != 0:
        return ("invalid", check.stderr.strip()[:300], time.time() - start)
    return ("imported", "", time.time() - start)


def failing_op(reason):
    m = re.search(r"ONNX node '[^']*' \(([A-Za-z0-9_]+)", reason)
    return m.group(1) if m else None


def short_reason(reason):
    """The reason without the node name, so equal causes group together."""
    return re.sub(r"ONNX node '[^']*' ", "", reason)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR", "build"))
    parser.add_argument("--markdown")
    parser.add_argument("--expected")
    parser.add_argument("--update", action="store_true",
                        help="rewrite --expected with the models that import now")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--translate",
                        help="the loom-translate to run (default: the build's; "
                        "test.sh passes an ASan + UBSan one)")
    args = parser.parse_args()
    tools = Path(args.build).resolve() / "bin"
    translate = Path(args.translate or tools / "loom-translate").resolve()

    models = []
    for cat in CATEGORIES:
        for test in sorted((DATA / cat).iterdir()):
            if (test / "model.onnx").exists():
                models.append((cat, test.name, test / "model.onnx"))

    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(import_one, tools, translate, path): (cat, name)
                   for cat, name, path in models}
        for fut in concurrent.futures.as_completed(futures):
            results[futures[fut]] = fut.result()

    per_cat = collections.defaultdict(collections.Counter)
    per_op = collections.defaultdict(collections.Counter)
    reasons = collections.Counter()
    defects = []
    for cat, name, path in models:
        status, reason, _ = results[(cat, name)]
        per_cat[cat][status] += 1
        ops = op_types(path)
        culprit = failing_op(reason) if status != "imported" else None
        for op in ops:
            if status == "imported":
                per_op[op]["imported"] += 1
            elif culprit == op or (culprit is None and len(ops) == 1):
                per_op[op]["unsupported"] += 1
        if status == "unsupported":
            reasons[short_reason(reason)] += 1
        elif status != "imported":
            defects.append(f"{status.upper()}: {cat}/{name}: {reason}")

    total = collections.Counter()
    print(f"{'category':<20}{'models':>8}{'imported':>10}{'unsupported':>13}{'defects':>9}")
    for cat in CATEGORIES:
        c = per_cat[cat]
        n = sum(c.values())
        bad = n - c["imported"] - c["unsupported"]
        total.update(c)
        print(f"{cat:<20}{n:>8}{c['imported']:>10}{c['unsupported']:>13}{bad:>9}")
    n = sum(total.values())
    bad = n - total["imported"] - total["unsupported"]
    print(f"{'total':<20}{n:>8}{total['imported']:>10}{total['unsupported']:>13}{bad:>9}")
    print(f"\n{'op type':<28}{'imported':>10}{'unsupported':>13}")
    for op in sorted(per_op):
        print(f"{op:<28}{per_op[op]['imported']:>10}{per_op[op]['unsupported']:>13}")
    print("\nmost common reasons for unsupported models:")
    for reason, count in reasons.most_common(15):
        print(f"  {count:4}  {reason[:150]}")

    if args.markdown:
        write_markdown(Path(args.markdown), per_cat, per_op, reasons, total)

    status = 0
    for d in defects:
        print(d)
    if defects:
        status = 1
    if args.expected:
        now = sorted(f"{cat}/{name}" for (cat, name), r in results.items()
                     if r[0] == "imported")
        path = Path(args.expected)
        if args.update:
            path.write_text("# Models loom-translate imports (scripts/onnx-import-sweep.py --update)\n"
                            + "\n".join(now) + "\n")
            print(f"wrote {len(now)} models to {path}")
        else:
            expected = {l.strip() for l in path.read_text().splitlines()
                        if l.strip() and not l.startswith("#")}
            lost = sorted(expected - set(now))
            gained = sorted(set(now) - expected)
            for m in lost:
                print(f"REGRESSION: {m} no longer imports: {results[tuple(m.split('/', 1))][1]}")
            for m in gained:
                print(f"NEW: {m} imports now; add it with --update")
            if lost or gained:
                status = 1
    print(f"\n{total['imported']} of {n} models imported, {total['unsupported']} "
          f"unsupported with a reason, {bad} defects (crash, hang, invalid output)")
    return status


def write_markdown(path, per_cat, per_op, reasons, total):
    lines = ["# ONNX import coverage", "",
             "Generated by `scripts/onnx-import-sweep.py --markdown docs/onnx-import.md` "
             "over Debian's libonnx-testdata (ONNX 1.12). *Imported* means "
             "`loom-translate --import-onnx` produced a module that verifies; "
             "numerical checks are the CPU conformance suite's job. Every other "
             "model fails with an error that names the node, op type and opset.", "",
             "| category | models | imported | unsupported | crashes/hangs/invalid |",
             "|---|---:|---:|---:|---:|"]
    for cat in CATEGORIES:
        c = per_cat[cat]
        n = sum(c.values())
        lines.append(f"| {cat} | {n} | {c['imported']} | {c['unsupported']} | "
                     f"{n - c['imported'] - c['unsupported']} |")
    n = sum(total.values())
    lines.append(f"| **total** | {n} | {total['imported']} | {total['unsupported']} | "
                 f"{n - total['imported'] - total['unsupported']} |")
    lines += ["", "## Per op type", "",
              "Models containing the op that imported, and models that failed on "
              "that op.", "", "| op | imported | unsupported |", "|---|---:|---:|"]
    for op in sorted(per_op):
        c = per_op[op]
        lines.append(f"| {op} | {c['imported']} | {c['unsupported']} |")
    lines += ["", "## Reasons", "", "| models | reason |", "|---:|---|"]
    for reason, count in reasons.most_common():
        lines.append(f"| {count} | {reason.replace('|', '/')[:200]} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
