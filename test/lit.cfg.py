# -*- Python -*-
# Lit configuration for Loom's FileCheck tests (see mlir/examples/standalone).

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "LOOM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".py", ".test", ".sh"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs", "unit", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loom_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%loom_src_root", config.loom_src_root))
config.substitutions.append(("%loom_obj_root", config.loom_obj_root))
# Debian's python3 has torch and onnx; a python3 earlier on PATH may not.
config.substitutions.append(("%python", config.python_executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.loom_tools_dir, append_path=True)
llvm_config.with_environment("PYTHONPATH", os.path.join(config.loom_src_root, "python"), append_path=True)
llvm_config.with_environment("LOOM_BUILD_DIR", config.loom_obj_root)

tool_dirs = [config.loom_tools_dir, config.llvm_tools_dir]
tools = ["loom-opt", "loom-translate", "loom-run", "loomc", "loom-collectives-test",
         "loom-fuzz-onnx", "loom-fuzz-ir", "loom-fuzz-cluster", "loom-fuzz-tensor",
         "loom-fuzz-manifest"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.add_tool_substitutions(["mlir-translate"], [config.llvm_tools_dir])

# OpenMPI: tests may run as root (CI containers) and with more ranks than cores.
config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp"))
llvm_config.with_environment("OMPI_MCA_rmaps_base_oversubscribe", "1")

if os.path.isdir("/usr/share/libonnx-testdata/data/node"):
    config.available_features.add("onnx-testdata")
