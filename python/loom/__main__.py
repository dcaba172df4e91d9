"""python3 -m loom TOOL [ARGS...]: run a Loom tool (loomc, loom-run, or opt for
loom-opt) found by loom.tool_path."""

import os
import sys

from . import LoomToolNotFound, tool_path


def main(argv):
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    try:
        path = tool_path(argv[0])
    except LoomToolNotFound as e:
        print(f"loom: {e}", file=sys.stderr)
        return 2
    os.execv(path, [path, *argv[1:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
