#!/usr/bin/env bash
# valgrind_run.sh STRATA SEED_DIR — `strata run` under valgrind's memcheck,
# leak-free: a seed model (C2f, two threads, sanitizer on), then an error
# path (a model that loads and an input it refuses: exit 1, nothing leaked).
# Any memcheck error or definite/indirect leak exits 9.
set -euo pipefail
strata=${1:?usage: valgrind_run.sh STRATA SEED_DIR}
seed=${2:?usage: valgrind_run.sh STRATA SEED_DIR}
vg=(valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect -q)
out=$(mktemp -d "${TMPDIR:-/tmp}/strata_valgrind_XXXXXX")
trap 'rm -rf "$out"' EXIT
"${vg[@]}" "$strata" run "$seed/c2f.onnx" -i "$seed/c2f_input_0.npy" -o "$out" --threads 2 --sanitize
[ -f "$out/y.npy" ] || { echo "valgrind_run: no output written" >&2; exit 1; }
rc=0
"${vg[@]}" "$strata" run "$seed/dynamic_mlp.onnx" -i "x=$seed/c2f_input_0.npy" -o "$out" 2>"$out/err" || rc=$?
cat "$out/err"
if [ "$rc" -ne 1 ]; then echo "valgrind_run: the refused input exited $rc, expected 1" >&2; exit 1; fi
echo "valgrind_run: PASS"
