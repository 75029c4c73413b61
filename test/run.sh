#!/usr/bin/env bash
# Runs the CPU test suite: every C unit test in build/test/ and every Bats file
# in test/bats/.  Prints one summary line "N passed, N failed" and exits
# non-zero if anything failed.  GH_SHARED points at the shared data folder
# (default: ../shared next to the repository).
set -u
cd "$(dirname "$0")/.."
export GH_SHARED="${GH_SHARED:-$(cd .. && pwd)/shared}"
export PATH="$PWD/bin:$PATH"
pass=0; fail=0; skipped=0; failed_names=()
# TAP "ok N - ... # SKIP ..." (C tests) and "ok N ... # skip ..." (Bats) count as skipped.
count_skips() { grep -ciE '^ok .*# skip' <<<"$1"; }
for t in build/test/*; do
  [ -f "$t" ] && [ -x "$t" ] || continue
  out=$("$t" 2>&1); rc=$?
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out"); k=$(count_skips "$out")
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p - k)); fail=$((fail + f)); skipped=$((skipped + k))
  if [ "$f" -gt 0 ]; then failed_names+=("$t"); echo "$out" | grep -E '^(not ok|#)' | sed "s|^|$(basename "$t"): |"; fi
done
if ls test/bats/*.bats >/dev/null 2>&1; then
  out=$(bats --tap test/bats 2>&1); rc=$?
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out"); k=$(count_skips "$out")
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$out" | tail -20; fi
  pass=$((pass + p - k)); fail=$((fail + f)); skipped=$((skipped + k))
  [ "$f" -gt 0 ] && echo "$out" | grep -A12 '^not ok'
fi
echo "${pass} passed, ${fail} failed, ${skipped} skipped"
[ "$fail" -eq 0 ]
