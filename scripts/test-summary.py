#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Count meson test results across runs into one plain summary line."""
import json
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError:
        print(f"summary: {path} is missing: counted as a failure")
        failed += 1
        continue
    for line in lines:
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
