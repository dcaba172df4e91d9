"""Loom from Python: locate and run Loom's tools.

    import loom
    print(loom.run_tool("loom-opt", "examples/mlp.mlir").stdout)

or from a shell:

    PYTHONPATH=python python3 -m loom opt examples/mlp.mlir

Tools are looked up in $LOOM_BUILD_DIR/bin, then in the repository's
build/bin, then on PATH.

PyTorch users compile and train from Python (docs/pytorch.md):

    art = loom.compile(model, loss_fn, optimizer, (x, y), mesh="dp=2,tp=2")
    losses = art.train((xs, ys), steps=10)
    model.load_state_dict(art.load_state_dict())
"""

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["LoomToolNotFound", "tool_path", "run_tool", "import_onnx",
           "compile", "Artifact", "LoomError"]

_REPO_ROOT = Path(__file__).resolve().parents[2]


class LoomToolNotFound(FileNotFoundError):
    """A Loom tool is neither built nor on PATH."""


def _search_dirs():
    build = os.environ.get("LOOM_BUILD_DIR")
    if build:
        yield Path(build) / "bin"
    yield _REPO_ROOT / "build" / "bin"


def tool_path(name):
    """Absolute path of the Loom tool `name`: its own name ("loomc",
    "loom-run") or without the "loom-" prefix ("opt", "run")."""
    names = [name] if name.startswith("loom") else []
    if not name.startswith("loom-"):
        names.append("loom-" + name)
    for directory in _search_dirs():
        for n in names:
            candidate = directory / n
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    for n in names:
        found = shutil.which(n)
        if found:
            return found
    searched = ", ".join(str(d) for d in _search_dirs())
    raise LoomToolNotFound(
        f"{' or '.join(names)} not found in {searched} or on PATH; build Loom "
        f"with ./scripts/build.sh or set LOOM_BUILD_DIR")


def run_tool(name, *args, check=True, capture=True, **kwargs):
    """Runs a Loom tool; returns the CompletedProcess.

    With check=True a non-zero exit raises subprocess.CalledProcessError
    whose stderr holds the tool's diagnostics.
    """
    cmd = [tool_path(name), *map(str, args)]
    return subprocess.run(cmd, check=check, text=True,
                          capture_output=capture, **kwargs)


def import_onnx(path, input_shapes=None, allow_unsupported=False):
    """Imports an ONNX file; returns the loom IR text.

    input_shapes binds graph inputs, e.g. {"x": (1, 3, 224, 224)}. Raises
    subprocess.CalledProcessError with the importer's message on failure.
    """
    args = ["--import-onnx", str(path)]
    for name, shape in (input_shapes or {}).items():
        args.append(f"--input-shape={name}=" + "x".join(str(d) for d in shape))
    if allow_unsupported:
        args.append("--allow-unsupported")
    return run_tool("loom-translate", *args).stdout


from loom.api import Artifact, LoomError, compile  # noqa: E402
