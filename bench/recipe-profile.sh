#!/usr/bin/env bash
# bench/recipe-profile.sh -- where a whole recipe's time goes, per tool.
# Runs egs/arabic-digits/run.sh end to end (stages 0-4: data, GMM and
# HMM-GMM training, scoring, the speaker-adapted passes) as a user runs it,
# with $GH_ACCOUNTING set, so that every gmmhmm tool appends one line when it
# exits (lib/base/gh-base.h, gh_account: wall, CPU and device start-up
# seconds), then prints the whole run's seconds and one row per tool:
#   recipe-profile arabic-digits device=D nj=N: T s whole run, R tool runs, S s starting devices
#   tool  runs  wall-s  device-start-s  cpu-s
# (wall-s sums over processes, which overlap in pipelines and --nj jobs).
# Environment: DEVICE (auto; the recipe's --device), RECIPE_NJ (2),
# RECIPE_ARGS (--configs full:4 --seed 1 --sklearn false), RECIPE_WORK (a
# temporary folder, removed at the end unless given), GH_SHARED.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GH_SHARED=${GH_SHARED:-$(cd .. && pwd)/shared}
DEVICE=${DEVICE:-auto}; NJ=${RECIPE_NJ:-2}
ARGS=${RECIPE_ARGS:---configs full:4 --seed 1 --sklearn false}
if [ ! -f "$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt" ] && [ ! -f "$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt.gz" ]; then
  echo "recipe-profile arabic-digits: skipped (no $GH_SHARED/data/spoken-arabic-digit)"; exit 0
fi
keep=1; work=${RECIPE_WORK:-}
[ -n "$work" ] || { work=$(mktemp -d); keep=0; }
mkdir -p "$work"
trap '[ $keep = 1 ] || rm -rf "$work"' EXIT
acct=$work/accounting.txt
: > "$acct"
t0=$(date +%s.%N)
# shellcheck disable=SC2086  # RECIPE_ARGS is a list of options
if ! GH_ACCOUNTING=$acct egs/arabic-digits/run.sh --work "$work/run" --device "$DEVICE" --nj "$NJ" $ARGS \
     > "$work/run.log" 2>&1; then
  echo "recipe-profile arabic-digits device=$DEVICE: the recipe failed (see $work/run.log)"; keep=1; exit 1
fi
t1=$(date +%s.%N)
awk -v dev="$DEVICE" -v nj="$NJ" -v t0="$t0" -v t1="$t1" '
  { tool = $1; n[tool]++; runs++
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    wall[tool] += v["wall"]; cpu[tool] += v["user"] + v["sys"]
    if ("device_start" in v) { ds[tool] += v["device_start"]; dstot += v["device_start"] }
    delete v }
  END {
    printf "recipe-profile arabic-digits device=%s nj=%s: %.1f s whole run, %d tool runs, %.1f s starting devices\n", dev, nj, t1 - t0, runs, dstot
    printf "  %-28s %6s %9s %15s %8s\n", "tool", "runs", "wall-s", "device-start-s", "cpu-s"
    for (k in n) printf "  %-28s %6d %9.2f %15.2f %8.2f\n", k, n[k], wall[k], ds[k], cpu[k] | "sort -k3 -n -r"
  }' "$acct"
grep -h '^accuracy\|%' "$work/run/results.txt" 2>/dev/null | head -20 | sed 's/^/  /'
