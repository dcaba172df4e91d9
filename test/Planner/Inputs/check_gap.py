"""Checks a time-limited plan's gap against the unlimited plan (gap.test)."""
import json
import sys

limited, full = (json.load(open(f)) for f in sys.argv[1:3])
for name, p in (("limited", limited), ("full", full)):
    s = p["solver"]
    print(f"{name}: status {s['status']}, gap {100 * s['gap']:.2f}%, step {p['step_s']:.4f} s, "
          f"bound {s['bound_s']:.4f} s, {s['ilps_stopped']} of {s['ilps']} ILPs stopped")
distance = (limited["step_s"] - full["step_s"]) / limited["step_s"]
gap = limited["solver"]["gap"]
ok = (gap + 1e-9 >= distance and limited["solver"]["bound_s"] <= full["step_s"] * (1 + 1e-9)
      and distance > 0)
print(f"{'PASS' if ok else 'FAIL'}: the limited run's gap covers the distance to the best plan "
      f"({100 * gap:.2f}% >= {100 * distance:.2f}%)")
sys.exit(0 if ok else 1)
