#!/usr/bin/env python3
"""Every undefined symbol of a program is defined by a library it loads.

    check_undefined.py PROGRAM

`nm -D --undefined-only` of PROGRAM and of each library `ldd` resolves for
it, against `nm -D --defined-only` of those libraries (weak undefined
symbols may stay undefined). Prints one line; exits 1 naming what nothing
defines, or when a library is not found."""
import re
import subprocess
import sys


def nm(path, *flags):
    out = subprocess.run(["nm", "-D", *flags, path], capture_output=True, text=True,
                         check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def main():
    program = sys.argv[1]
    ldd = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
    missing = [l.strip() for l in ldd.splitlines() if "not found" in l]
    if missing:
        sys.exit(f"{program}: libraries not found: {missing}")
    # "libx.so => /path (0x...)", and the loader itself: "/lib64/ld-linux... (0x...)".
    libs = [m.group(1) for m in re.finditer(r"=> (/\S+)", ldd)] + \
        [m.group(1) for m in re.finditer(r"^\s+(/\S+) \(0x", ldd, re.M)]
    defined = set()
    for lib in libs:
        for fields in nm(lib, "--defined-only"):
            defined.add(fields[-1].split("@")[0])
    undefined = set()
    for path in [program] + libs:
        for fields in nm(path, "--undefined-only"):
            kind, name = fields[-2], fields[-1].split("@")[0]
            if kind not in ("w", "v"):
                undefined.add(name)
    unresolved = sorted(undefined - defined)
    if unresolved:
        sys.exit(f"{program}: {len(unresolved)} undefined symbols nothing loaded "
                 f"defines: {unresolved[:20]}")
    print(f"{program}: {len(undefined)} undefined symbols, all defined by the "
          f"{len(libs)} libraries it loads")


if __name__ == "__main__":
    main()
