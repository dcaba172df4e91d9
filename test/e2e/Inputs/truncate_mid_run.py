"""Runs a training command and truncates one of its data files while it
trains (issue 17: a data file truncated mid-run killed every rank with
SIGBUS, since the files were mapped). Waits for the command to print
`step <after> `, cuts the file down to its first `keep` bytes, then waits
for the command to end (at most 120 s). Prints the command's output and
"exit <code>": a signal shows as a negative code.

usage: truncate_mid_run.py FILE KEEP AFTER -- COMMAND..."""
import os
import subprocess
import sys
import threading

path, keep, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
command = sys.argv[sys.argv.index("--") + 1:]
proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
lines = []
cut = threading.Event()


def read():
    for line in proc.stdout:
        lines.append(line)
        if not cut.is_set() and line.startswith("step %d " % after):
            os.truncate(path, keep)
            cut.set()


reader = threading.Thread(target=read)
reader.start()
try:
    code = proc.wait(timeout=120)
except subprocess.TimeoutExpired:
    proc.kill()
    code = "timeout (killed after 120 s)"
reader.join()
# The steps' lines are left out: which step the cut lands on is a race.
sys.stdout.write("".join(l for l in lines if not l.startswith("step ")))
print("truncated: %s" % ("yes" if cut.is_set() else "no"))
print("exit %s" % code)
