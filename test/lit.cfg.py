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
# `--param sanitized_tools=DIR`: tools built with ASan and UBSan replace
# the release ones, each that DIR has (scripts/fuzz.sh builds
# loom-translate and loom-onnx-infer in build-fuzz/bin; the importer finds
# the latter beside the former): by substitution, and first on PATH for the
# scripts that run them. Any sanitizer report fails the test.
sanitized = lit_config.params.get("sanitized_tools")
if sanitized:
    sanitized = os.path.abspath(sanitized)
    if not os.path.isfile(os.path.join(sanitized, "loom-translate")):
        lit_config.fatal("sanitized_tools=%s has no loom-translate" % sanitized)
    swapped = [t for t in ["loom-opt", "loom-translate", "loom-run", "loomc"]
               if os.path.isfile(os.path.join(sanitized, t))]
    for t in swapped:
        tools.remove(t)
    llvm_config.add_tool_substitutions(swapped, [sanitized])
    llvm_config.with_environment("PATH", sanitized, append_path=True)
    # Reports abort (a signal), so that `not loom-translate` fails on them.
    # `--param sanitizer_leaks=0` for runs under mpirun: OpenMPI's own
    # allocations at exit are reported as leaks.
    config.environment["ASAN_OPTIONS"] = "abort_on_error=1:detect_leaks=%s" % (
        lit_config.params.get("sanitizer_leaks", "1"))
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"
    config.available_features.add("sanitized")
# For scripts that take the tool's path (the import sweep).
config.substitutions.append(("%loom_translate_path", os.path.join(
    sanitized or config.loom_tools_dir, "loom-translate")))
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.add_tool_substitutions(["mlir-translate"], [config.llvm_tools_dir])

# OpenMPI: tests may run as root (CI containers) and with more ranks than cores.
config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp"))
llvm_config.with_environment("OMPI_MCA_rmaps_base_oversubscribe", "1")

if os.path.isdir("/usr/share/libonnx-testdata/data/node"):
    config.available_features.add("onnx-testdata")

# GPUs this machine has (nvidia-smi -L): `gpu` with one or more, `gpus-2`
# with two or more. Tests that need them say REQUIRES; their no-GPU twins
# say UNSUPPORTED and check the exact message a user gets instead.
import shutil
import subprocess
_gpus = 0
if shutil.which("nvidia-smi"):
    try:
        _out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                              timeout=20).stdout
        _gpus = sum(1 for line in _out.splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.SubprocessError):
        _gpus = 0
if _gpus >= 1:
    config.available_features.add("gpu")
if _gpus >= 2:
    config.available_features.add("gpus-2")
lit_config.note("GPUs: %d (GPU tests %s)" % (_gpus, "run" if _gpus else
                "are unsupported here: no nvidia-smi or no GPU"))
