# The Python package finds the built tools and reports missing ones clearly.
# RUN: %python %s | FileCheck %s
# RUN: %python -m loom opt %loom_src_root/examples/mlp.mlir | FileCheck %s --check-prefix=CLI
# RUN: not %python -m loom nonexistent 2>&1 | FileCheck %s --check-prefix=MISSING
# Tools by their own names too (loomc has no "loom-" prefix); the quotes
# keep lit from replacing the names with paths.
# RUN: %python -m loom loom""c --help | FileCheck %s --check-prefix=LOOMC
# RUN: %python -m loom loom""-run --help | FileCheck %s --check-prefix=RUNNER
# RUN: %python -m loom run --help | FileCheck %s --check-prefix=RUNNER
# LOOMC: USAGE: loomc
# RUNNER: USAGE: loom-run

import subprocess

import loom

# CHECK: loom-opt found: True
print("loom-opt found:", loom.tool_path("loom-opt").endswith("/bin/loom-opt"))
# CHECK: loom.mesh @cluster ["dp"=2
print(loom.run_tool("loom-opt", "--mlir-print-op-on-diagnostic=false",
                    input='loom.mesh @cluster ["dp"=2]').stdout.strip().splitlines()[1].strip())
try:
    loom.run_tool("loom-opt", input="loom.mesh @m []")
except subprocess.CalledProcessError as e:
    # CHECK: error: 'loom.mesh' op needs at least one axis
    print(e.stderr.strip().splitlines()[0].split(" ", 1)[1])

# The ONNX importer from Python, on a model written with onnx.helper.
import os
import tempfile

from onnx import TensorProto, helper, save

g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])])
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "relu.onnx")
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    # CHECK: func.func @main(%arg0: tensor<2x4xf32> {loom.name = "x"})
    print([l for l in loom.import_onnx(path, {"x": (2, 4)}).splitlines() if "func.func" in l][0].strip())

# CLI: loom.parameter @fc1.weight : tensor<784x512xf32> trainable
# MISSING: loom: loom-nonexistent not found in {{.*}} or on PATH; build Loom with ./scripts/build.sh or set LOOM_BUILD_DIR
