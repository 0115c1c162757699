#!/usr/bin/env bash
# gen_ops_table.sh STRATA [README] — writes `strata inspect --ops` (the op x
# backend x dtype matrix of the kernel tables) into README.md between the
# <!-- ops-table:begin --> and <!-- ops-table:end --> markers.
#   --check: exit 1 (and say so) when the README's table differs instead
#   of writing it; exit 77 when a backend's table is not built here (the
#   README shows all three).
set -euo pipefail
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
STRATA=${1:?usage: gen_ops_table.sh [--check] STRATA [README]}
README=${2:-$(cd "$(dirname "$0")/.." && pwd)/README.md}
table=$("$STRATA" inspect --ops 2>/dev/null)
# a last row: how many op rows each backend has a kernel for (not "-";
# "body" and "plan" rows, which planning writes out, are not kernels)
table=$(printf '%s\n' "$table" | awk -F' [|] ' '
  { print }
  NR == 1 { nc = NF }
  NR > 2 { for (c = 3; c <= nc; c++) { v = $c; sub(/ [|]$/, "", v); if (v != "-" && v != "body" && v != "plan") n[c]++ } }
  END { printf "| **op rows with a kernel** |"; for (c = 3; c <= nc; c++) printf " | %d", n[c]; printf " |" }')
if grep -q "(not built)" <<<"$table"; then
  echo "gen_ops_table: a backend's kernel table is not built here; the README's table needs all three"
  exit 77
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
awk -v table="$table" '
  /<!-- ops-table:begin -->/ { print; print table; skip = 1; next }
  /<!-- ops-table:end -->/ { skip = 0 }
  !skip { print }' "$README" > "$tmp"
grep -q "<!-- ops-table:begin -->" "$README" || { echo "gen_ops_table: no markers in $README"; exit 1; }
if [ $check = 1 ]; then
  if ! cmp -s "$tmp" "$README"; then
    echo "gen_ops_table: README.md's op table is not what the kernel tables say; run scripts/gen_ops_table.sh build/strata"
    diff "$README" "$tmp" | head -20
    exit 1
  fi
  echo "gen_ops_table: README.md's op table matches the kernel tables"
else
  cp "$tmp" "$README"
fi
