#!/usr/bin/env bash
# bench/hmm-train.sh -- the resident HMM-GMM trainer (hmm-train) on R = 1 and
# R = 2 ranks (one GPU each), bench/RESULTS.md H1-H3: the Arabic-digits
# HMM-GMM topology (egs/arabic-digits stage 3: MFCC + deltas + per-utterance
# CMN, 10 words x --states 8 states, mixed up to --gauss 8 diagonal Gaussians
# per pdf) on --frames frames (default 8M) made by replicating the 6,600
# training utterances under new keys (an scp whose entries point at the same
# archive bytes, so nothing is copied), --iters Baum-Welch iterations.
# Reports per configuration: whole-job wall time (start to the written
# model), the median wall time of iterations 3..N (the timing convention of
# bench/RESULTS.md), its E-step part and the reduction, and whether the R = 2 model
# equals the R = 1 model (utils/compare_gmms.sh); optionally (--loop true)
# the per-iteration recipe (steps/train_word_hmm.sh --ranks 0 --nj 1)
# on the same data for two iterations.  Prints a table, also written to
# <work>/hmm-train.txt.
#
# Usage (from the repository root, tools built with make, Open MPI's mpirun):
#   GH_SHARED=/path/to/shared bench/hmm-train.sh [options]
# Options (--name value):
#   --device cuda  --ranks "1 2"  --frames 8000000  --iters 6  --states 8  --gauss 8
#   --mode bw (or viterbi)  --block-frames 262144  --loop false  --work DIR [/tmp/gmmhmm-bench-hmm]
# A quick CPU check (a minute): bench/hmm-train.sh --device cpu --frames 200000 --iters 3
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
egs=$root/egs
export PATH="${GH_BIN:-$root/bin}:$PATH"
shared=${GH_SHARED:-$root/../shared}
device=cuda; ranks="1 2"; frames=8000000; iters=6; states=8; gauss=8; mode=bw; block_frames=262144; loop=false
work=/tmp/gmmhmm-bench-hmm
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "hmm-train.sh: unexpected argument $1" >&2; exit 1; }
src=$shared/data/spoken-arabic-digit/Train_Arabic_Digit.txt
[ -f "$src" ] || [ ! -f "$src.gz" ] || src=$src.gz   # plain or gzipped
[ -f "$src" ] || { echo "hmm-train.sh: missing $src (set GH_SHARED)" >&2; exit 1; }
command -v hmm-train >/dev/null || { echo "hmm-train.sh: hmm-train not built (make in $root)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$work"; cd "$work"
ln -sfn "$egs/steps" steps; ln -sfn "$egs/utils" utils
echo "hmm-train.sh: working in $work ($(date -u)); $(nvidia-smi -L 2>/dev/null | tr '\n' ';')"

# the Arabic training data with deltas and CMN (stage 3's features)
if [ ! -f data/train_dcmn/feats.scp ]; then
  "$egs/arabic-digits/local/prepare_data.sh" "$src" data > /dev/null
  steps/make_deltas_cmvn.sh --nj 4 --cmd utils/run.sh --order deltas-cmvn --cmvn utterance data/train data/train_dcmn \
    > /dev/null
fi
base=$(feat-to-len scp:data/train_dcmn/feats.scp ark,t:- 2>/dev/null | awk '{ s += $2 } END { print s }')
copies=$(( (frames + base - 1) / base ))
rm -rf data/rep; mkdir -p data/rep
for ((c = 1; c <= copies; c++)); do
  awk -v c=$c '{ printf "r%03d-%s", c, $0; print "" }' data/train_dcmn/feats.scp
done > data/rep/feats.scp
for ((c = 1; c <= copies; c++)); do
  awk -v c=$c '{ printf "r%03d-%s", c, $0; print "" }' data/train_dcmn/text
done > data/rep/text
nframes=$(( base * copies ))
echo "data: $(wc -l < data/rep/feats.scp) utterances, $nframes frames ($copies copies of $base), dim $(feat-to-dim scp:data/train_dcmn/feats.scp - 2>/dev/null)"
# initial models: the recipe's flat start on the original data
[ -f init/0.mdl ] || steps/train_word_hmm.sh --device $device --states $states --gauss $gauss --iters 0 \
  data/train_dcmn data/lang/words.txt init > /dev/null

rows=$work/hmm-train.rows; : > $rows
median_iter() {  # median_iter <log> <what: total|estep|reduce>: median over iterations >= 3
  awk -v what=$2 '/LOG: iteration [0-9]+:/ { it = $4 + 0; if (it < 3) next
      if (what == "total") { match($0, /Gaussians; [0-9.e+-]+ s/); v = substr($0, RSTART + 11, RLENGTH - 13) }
      else if (what == "estep") { match($0, /E-step [0-9.e+-]+ s/); v = substr($0, RSTART + 7, RLENGTH - 9) }
      else { match($0, /reduction [0-9.e+-]+ s/); v = substr($0, RSTART + 10, RLENGTH - 12) }
      print v + 0 }' "$1" | sort -g |
    awk '{ a[n++] = $1 } END { if (!n) printf "-"; else printf "%.3f", n % 2 ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2 }'
}
for R in $ranks; do
  launch=; [ $R -gt 1 ] && launch="mpirun --oversubscribe --bind-to none -np $R"
  t0=$(date +%s.%N)
  $launch hmm-train --verbose=1 --device=$device --mode=$mode --num-iters=$iters --gauss=$gauss --mixup-end=$(( iters / 2 )) \
    --block-frames=$block_frames init/0.hmm init/0.mdl scp:data/rep/feats.scp ark,t:data/rep/text \
    r$R.hmm r$R.mdl 2> r$R.log || { echo "hmm-train failed with $R ranks: see $work/r$R.log" >&2; tail -3 r$R.log >&2; exit 1; }
  wall=$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN { printf "%.2f", b - a }')
  eq=-
  if [ $R -gt 1 ] && [ -f r1.mdl ]; then
    utils/compare_gmms.sh r1.mdl r$R.mdl > /dev/null 2>&1 && eq=yes || eq=NO
  fi
  printf "%-28s %6s %10s %10s %10s %10s %8s\n" "hmm-train $mode R=$R ($device)" $R "$wall" \
    "$(median_iter r$R.log total)" "$(median_iter r$R.log estep)" "$(median_iter r$R.log reduce)" "$eq" >> $rows
done
if [ "$loop" = true ]; then
  t0=$(date +%s.%N)
  rm -rf loop
  steps/train_word_hmm.sh --ranks 0 --nj 1 --device $device --states $states --gauss $gauss --iters 2 \
    data/rep data/lang/words.txt loop > loop.out
  wall=$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN { printf "%.2f", b - a }')
  it=$(awk '/^  iteration 2:/ && match($0, /\(([0-9.]+) s\)$/) { print substr($0, RSTART + 1, RLENGTH - 4) }' loop.out)
  printf "%-28s %6s %10s %10s %10s %10s %8s\n" "per-iteration loop (2 its)" 1 "$wall" "${it:--}" - - - >> $rows
fi
{
  echo "# HMM-GMM training, $nframes frames, $states states x $gauss diag Gaussians x 10 words, $iters $mode iterations"
  echo "# $(date -u), $(nvidia-smi -L 2>/dev/null | head -1)"
  printf "%-28s %6s %10s %10s %10s %10s %8s\n" configuration ranks "job s" "iter s" "E-step s" "reduce s" "=R1"
  cat $rows
  r1=$(awk '$0 ~ /R=1 / { print $(NF - 3) }' $rows); r2=$(awk '$0 ~ /R=2 / { print $(NF - 3) }' $rows)
  [ -z "$r1" ] || [ -z "$r2" ] || awk -v a=$r1 -v b=$r2 'BEGIN { if (b > 0) printf "per-iteration speed-up, 2 ranks / 1 rank: %.2fx\n", a / b }'
  echo "E-step parts of rank 0's last iteration (hmm-train --verbose=1):"
  for R in $ranks; do
    echo "  R=$R: $(grep 'rank 0, iteration [0-9]*: E-step parts' r$R.log | tail -1 | sed 's/.*E-step parts: //')"
  done
} | tee $work/hmm-train.txt
