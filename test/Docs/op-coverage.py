# Every op in the generated dialect reference has a round-trip test in
# ops.mlir and a verifier negative test in invalid*.mlir, and every op with a
# gradient rule (DifferentiableOpInterface) a finite-difference case in
# test/unit/GradientCheckTest.cpp, so an op added without tests fails here.
# RUN: %python %s %loom_src_root

import re
import sys
from pathlib import Path

root = Path(sys.argv[1])
ops = re.findall(r"^### `(loom\.[a-z0-9_]+)`", (root / "docs/dialect/Loom.md").read_text(), re.M)
roundtrip = (root / "test/Dialect/Loom/ops.mlir").read_text()
negative = "".join(p.read_text() for p in (root / "test/Dialect/Loom").glob("invalid*.mlir"))

def used(op, text):
    # custom form `loom.x %a` / `loom.x @sym`, or generic form `"loom.x"(`
    return re.search(r"(^|[\s=])" + re.escape(op) + r"[\s(]", text, re.M) or f'"{op}"' in text

doc = (root / "docs/dialect/Loom.md").read_text()
sections = re.split(r"^### `", doc, flags=re.M)[1:]
differentiable = [s.split("`", 1)[0] for s in sections if "`DifferentiableOpInterface`" in s]
gradcheck = (root / "test/unit/GradientCheckTest.cpp").read_text()

missing = [f"{op}: no round-trip test in ops.mlir" for op in ops if not used(op, roundtrip)]
missing += [f"{op}: no finite-difference case in GradientCheckTest.cpp"
            for op in differentiable if not used(op, gradcheck)]
missing += [f"{op}: no negative test in invalid*.mlir" for op in ops if not used(op, negative)]
print(f"{len(ops)} ops, {len(differentiable)} with gradient rules")
if len(differentiable) < 40:
    missing.append(f"only {len(differentiable)} differentiable ops found; is the pattern stale?")
if len(ops) < 40:
    missing.append(f"only {len(ops)} ops found in docs/dialect/Loom.md; is the pattern stale?")
for m in missing:
    print("MISSING", m)
sys.exit(1 if missing else 0)
