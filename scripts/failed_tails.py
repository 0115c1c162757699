#!/usr/bin/python3
"""failed_tails.py BUILD_DIR [LINES] — prints the last LINES (default 40)
lines of each failed test's output from CTest's LastTest.log.  CI's log is
cut in the middle when it is long, so scripts/test.sh repeats what failed
at the end, where it is still read."""
import os
import re
import sys


def main():
    build = sys.argv[1]
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    log = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(log):
        return 0
    with open(log, errors="replace") as f:
        text = f.read()
    # each test: "N/M Testing: NAME" ... "Output:\n----\n" OUTPUT "<end of output>" ... "Test Failed."
    for m in re.finditer(r"^\d+/\d+ Testing: (\S+)\n(.*?)^Test (Passed|Failed|Not Run)", text, re.M | re.S):
        if m.group(3) == "Passed":
            continue
        body = m.group(2)
        out = body.split("Output:\n", 1)[-1]
        out = out.split("<end of output>", 1)[0]
        tail = out.strip("\n-").splitlines()[-lines:]
        print("=== %s (%s): last %d lines ===" % (m.group(1), m.group(3).lower(), len(tail)))
        print("\n".join(tail))
    return 0


if __name__ == "__main__":
    sys.exit(main())
