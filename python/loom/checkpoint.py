"""Reads Loom training checkpoints with numpy alone (docs/checkpoints.md).

    from loom import checkpoint
    ckpt = checkpoint.open("ckpt/")          # a checkpoint, or the latest under a root
    print(ckpt.step, ckpt.names())
    w = ckpt.read("fc1.weight")              # the global array, checksums verified
    everything = checkpoint.load("ckpt/")    # {name: array}

A checkpoint is a directory `step-<8 digits>/` with one shard per writing
rank (`rank-<5 digits>.bin`, raw little-endian blocks) and `manifest.json`,
which rank 0 writes last and atomically; directories without a manifest are
saves that did not finish and are skipped. bfloat16 tensors are returned as
float32 (exactly: bfloat16 is the top half of a float32).
"""

import json
import os
import re
import zlib

import numpy as np

__all__ = ["CheckpointError", "Checkpoint", "open", "load", "latest"]

_DTYPES = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "bool": "|b1",
           "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
           "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
           "bfloat16": "<u2"}


class CheckpointError(Exception):
    """A missing, incomplete, truncated or corrupt checkpoint."""


def latest(root):
    """The newest complete checkpoint directory under `root`."""
    steps = []
    for name in os.listdir(root):
        m = re.fullmatch(r"step-(\d+)", name)
        if m and os.path.exists(os.path.join(root, name, "manifest.json")):
            steps.append((int(m.group(1)), name))
    if not steps:
        raise CheckpointError(f"no complete checkpoint in {root}")
    return os.path.join(root, max(steps)[1])


class Checkpoint:
    def __init__(self, path):
        if not os.path.exists(os.path.join(path, "manifest.json")):
            path = latest(path)
        self.path = path
        with builtins_open(os.path.join(path, "manifest.json")) as f:
            self.manifest = json.load(f)
        if self.manifest.get("format") != "loom-checkpoint":
            raise CheckpointError(f"{path}/manifest.json is not a loom checkpoint manifest")
        self.version = self.manifest.get("version")
        if self.version not in (1, 2):
            raise CheckpointError(f"{path}/manifest.json: version {self.version!r} "
                                  "is not 1 or 2 (written by a newer Loom?)")
        self.step = self.manifest["step"]
        self.tensors = self.manifest["tensors"]

    def names(self):
        return sorted(self.tensors)

    def read(self, name):
        t = self.tensors[name]
        dtype = np.dtype(_DTYPES[t["dtype"]])
        out = np.zeros(t["shape"], dtype=dtype)
        # Each element is written by exactly one piece (a shifted or
        # duplicated piece is refused, not averaged into zeros).
        written = np.zeros(t["shape"], dtype=np.uint8)
        for p in t["pieces"]:
            with builtins_open(os.path.join(self.path, p["file"]), "rb") as f:
                f.seek(p["byte_offset"])
                raw = f.read(p["bytes"])
            if len(raw) != p["bytes"]:
                raise CheckpointError(f"{self.path}: shard {p['file']} is truncated")
            if zlib.crc32(raw, self._header_crc(name, t, p)) != p["crc32"]:
                raise CheckpointError(f"{self.path}: shard {p['file']} is corrupt: "
                                      f"tensor '{name}' fails its CRC-32 check")
            block = np.frombuffer(raw, dtype=dtype).reshape(p["block"])
            index = tuple(slice(o, o + s) for o, s in zip(p["offset"], p["block"]))
            if out[index].shape != block.shape:
                raise CheckpointError(f"{self.path}: a piece of '{name}' reaches outside it")
            out[index] = block
            written[index] += 1
        if not np.all(written == 1):
            raise CheckpointError(f"{self.path}: the pieces of '{name}' do not cover it "
                                  "exactly once")
        if t["dtype"] == "bfloat16":
            out = (out.astype(np.uint32) << 16).view(np.float32)
        return out


    def _header_crc(self, name, t, p):
        """Version 2 checksums start with the piece's place (pieceChecksum in
        runtime/src/train/checkpoint.cpp); version 1's cover the bytes alone."""
        if self.version == 1:
            return 0
        ints = lambda v: ",".join(str(int(x)) for x in v)  # noqa: E731
        header = "\n".join([name, t["dtype"], ints(t["shape"]), ints(p["offset"]),
                            ints(p["block"]), str(self.step)]) + "\n"
        return zlib.crc32(header.encode())


builtins_open = open


def open(path):  # noqa: A001 - the module's reader, as in tarfile.open
    """The checkpoint at `path`, or the latest complete one under it."""
    return Checkpoint(path)


def load(path):
    """Every tensor of the checkpoint at (or latest under) `path`."""
    c = Checkpoint(path)
    return {name: c.read(name) for name in c.names()}
