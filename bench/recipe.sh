#!/usr/bin/env bash
# bench/recipe.sh -- the real recipe end to end for `make bench` (bench/run.sh):
# Arabic digits (egs/arabic-digits, UCI Spoken Arabic Digit, 6,600 training
# utterances), the two trainings of its stages 1 and 3 on one device:
#   gmm   steps/train_gmm.sh: one full-covariance GMM of 8 Gaussians per digit,
#         20 EM iterations (gmm-init, then per iteration the accumulation jobs,
#         gmm-sum-accs and gmm-est), 13 MFCCs
#   hmm   steps/train_word_hmm.sh: 8-state word HMM-GMMs, diagonal, mixed up to
#         8 Gaussians, 16 Baum-Welch iterations (one resident hmm-train job,
#         the recipe's default; NJ is its --nj for the other steps), MFCC + deltas + CMN
# each timed per iteration (the scripts' own "(N s)" per iteration: every
# process start, archive read and model write included), then classified on
# the dev speakers (not timed) so the row carries the accuracy.
# Prints one line per training:
#   recipe arabic-digits <gmm|hmm> device=D nj=N: T s total, S s/iter (I iterations); <accuracy line>
# Environment: DEVICE (auto), RECIPE_NJ (1), RECIPE_WORK (a temporary folder,
# removed at the end unless given), GH_SHARED.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GH_SHARED=${GH_SHARED:-$(cd .. && pwd)/shared}
DEVICE=${DEVICE:-auto}; NJ=${RECIPE_NJ:-1}
if [ ! -f "$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt" ] && [ ! -f "$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt.gz" ]; then
  echo "recipe arabic-digits: skipped (no $GH_SHARED/data/spoken-arabic-digit)"; exit 0
fi
keep=1; work=${RECIPE_WORK:-}
[ -n "$work" ] || { work=$(mktemp -d); keep=0; }
mkdir -p "$work"
trap '[ $keep = 1 ] || rm -rf "$work"' EXIT
egs/arabic-digits/run.sh --work "$work" --stop-stage 0 > "$work/prep.log" 2>&1 ||
  { echo "recipe arabic-digits: data preparation failed (see $work/prep.log)"; keep=1; exit 1; }
cd "$work"
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
for s in train dev; do
  steps/make_deltas_cmvn.sh --nj "$NJ" --order deltas-cmvn --cmvn utterance data/$s data/${s}_dcmn > /dev/null 2>&1 ||
    { echo "recipe arabic-digits: make_deltas_cmvn failed"; keep=1; exit 1; }
done

# one line from a training log: total, mean seconds per iteration, count
summary() { # NAME LOG T0 T1 ACCURACY-LINE
  awk -v name="$1" -v dev="$DEVICE" -v nj="$NJ" -v t0="$3" -v t1="$4" -v acc="$5" '
    /iteration [0-9]+:.*\([0-9.]+ s\)$/ { s = $(NF - 1); gsub(/[(]/, "", s); sum += s; n++ }
    / ranks?, [0-9]+ iterations: [0-9.]+ s$/ { sum = $(NF - 1) + 0; n = $(NF - 3) + 0 }   # resident gmm-train
    END { printf "recipe arabic-digits %s device=%s nj=%s: %.1f s total, %.3f s/iter (%d iterations); %s\n",
                 name, dev, nj, t1 - t0, n ? sum / n : 0, n, acc }' "$2"
}
now() { date +%s.%N; }

t0=$(now)
steps/train_gmm.sh --nj "$NJ" --ranks "${RANKS:-1}" --device "$DEVICE" --words data/lang/words.txt --cov-type full --num-gauss 8 \
  --num-iters 20 --seed 1 data/train exp/full8 > gmm.log 2>&1 || { echo "recipe arabic-digits gmm: failed"; tail -5 gmm.log; keep=1; exit 1; }
t1=$(now)
acc=$(steps/classify.sh --nj "$NJ" --device "$DEVICE" --name "GMM per digit (full, 8)" data/dev data/lang/words.txt \
  exp/full8 exp/full8/decode_dev 2>/dev/null | head -1)
summary gmm gmm.log "$t0" "$t1" "$acc"

t0=$(now)
steps/train_word_hmm.sh --nj "$NJ" --device "$DEVICE" --cov diag --states 8 --gauss 8 --iters 16 \
  data/train_dcmn data/lang/words.txt exp/hmm > hmm.log 2>&1 || { echo "recipe arabic-digits hmm: failed"; tail -5 hmm.log; keep=1; exit 1; }
t1=$(now)
acc=$(steps/classify.sh --nj "$NJ" --device "$DEVICE" --hmm true --name "HMM-GMM (8 states, diag, 8)" data/dev_dcmn \
  data/lang/words.txt exp/hmm exp/hmm/decode_dev 2>/dev/null | head -1)
summary hmm hmm.log "$t0" "$t1" "$acc"
