#!/usr/bin/env python3
"""Writes .npy files whose headers lie: hostile_npy.py DIR.

huge.npy: 2^40 elements, 16 bytes of data; neg.npy: a negative dimension;
over.npy: dimensions whose product overflows 64 bits; big.npy: a dimension
past int64; short.npy: (2, 3) float32 with 16 of its 24 bytes.
"""
import os
import struct
import sys


def raw(path, shape, data):
    h = ("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape).encode()
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data)


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
raw(os.path.join(out, "huge.npy"), "(1099511627776,)", b"\0" * 16)
raw(os.path.join(out, "neg.npy"), "(-2, 3)", b"\0" * 16)
raw(os.path.join(out, "over.npy"), "(4294967296, 4294967296, 16)", b"\0" * 16)
raw(os.path.join(out, "big.npy"), "(99999999999999999999,)", b"\0" * 16)
raw(os.path.join(out, "short.npy"), "(2, 3)", b"\0" * 16)
