#!/usr/bin/python3
"""regressions.py DIR — writes every input that crashed a fuzzer into
DIR/{loader,npy,run}/, built from its description here (no binary is
committed); tests/fuzz/regressions.sh replays them.  Each entry says what
it broke and where it was fixed (tests/fuzz/README.md has the list)."""
import os
import shutil
import sys

CASES = {}   # name -> (targets, function returning bytes)


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    for t in ("loader", "npy", "run"):
        os.makedirs(os.path.join(out, t))
    for name, (targets, make) in sorted(CASES.items()):
        data = make()
        for t in targets:
            with open(os.path.join(out, t, name), "wb") as f:
                f.write(data)
    print(f"{len(CASES)} regression inputs in {out}")


if __name__ == "__main__":
    main()
