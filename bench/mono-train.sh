#!/usr/bin/env bash
# bench/mono-train.sh -- whole-job monophone training (read -> num-iters passes
# with realignment -> written model), bench/RESULTS.md M1: gmm-train-mono
# (drivers/train/am-train.h) against Kaldi's own steps/train_mono.sh on our
# tools (--nj, utils/run.pl) in the same run, on cathy
# ($GH_SHARED/data/cathy, 13-dim MFCCs + CMVN + deltas, the lang directory of
# utils/prepare_lang.sh) replicated to --hours hours of 10 ms frames: the
# utterances are listed again under new keys (r001-..., one speaker id per
# copy and original speaker, pointing at the same archive bytes: nothing is
# copied).  Reports the wall time of each path, the per-pass average
# log-likelihood of both, and the trainer's per-pass parts (realignment with
# its GMM scoring, E-step, M-step) summed over the passes; the table is also
# written to <work>/mono-train.txt.  --exact true adds a second trainer run with
# exact realignment (gmm-train-mono --exact: the batched exact aligner of
# drivers/align on --device instead of the beam decoder on the CPU) and its
# row beside the beam one.
#
# Usage (from the repository root, tools built with make):
#   GH_SHARED=/path/to/shared bench/mono-train.sh [options]
# Options (--name value):
#   --hours 24  --device cuda  --ranks 1  --nj 2  --num-iters 40  --totgauss 1000
#   --script true (false: the trainer only)  --exact false  --work DIR [/tmp/gmmhmm-bench-mono]
# A CPU run at small size: bench/mono-train.sh --device cpu --hours 0.1
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="${GH_BIN:-$root/bin}:$PATH" LC_ALL=C
shared=${GH_SHARED:-$root/../shared}
hours=24; device=cuda; ranks=1; nj=2; num_iters=40; totgauss=1000; script=true; exact=false
work=/tmp/gmmhmm-bench-mono
. "$root/egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "mono-train.sh: unexpected argument $1" >&2; exit 1; }
D=$shared/data/cathy KS=$shared/kaldi-scripts
[ -f "$D/feats.scp" ] || { echo "mono-train.sh: missing $D/feats.scp (set GH_SHARED)" >&2; exit 1; }
command -v gmm-train-mono >/dev/null || { echo "mono-train.sh: gmm-train-mono not built (make in $root)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$work"; cd "$work"
ln -sfn "$KS/steps" steps
mkdir -p utils
for f in "$KS"/utils/*; do ln -sfn "$f" utils/; done
for f in "$root"/egs/utils/*; do ln -sfn "$f" utils/; done
export PATH="$PWD/utils:$PATH"
echo "mono-train.sh: working in $work ($(date -u)); $(nproc) cores; $(nvidia-smi -L 2>/dev/null | tr '\n' ';')"

if [ ! -f data/lang/L.fst ]; then
  mkdir -p data/local; rm -rf data/local/dict; cp -r "$D/dict" data/local/dict
  utils/prepare_lang.sh data/local/dict "<UNK>" data/local/lang_tmp data/lang > prepare_lang.log 2>&1
fi
# cathy's frames per utterance, then as many copies (the last one cut) as the hours need
feat-to-len "scp:sed 's| feats.ark:| $D/feats.ark:|' $D/feats.scp |" ark,t:- 2>/dev/null > len.txt
want=$(awk -v h=$hours 'BEGIN { printf "%d", h * 360000 }')
base=$(awk '{ s += $2 } END { print s }' len.txt)
cmvn=$(awk '$1 == "cathy" {print $2}' "$D/cmvn.scp" | sed "s|^cmvn.ark:|$D/cmvn.ark:|")
rm -rf data/rep; mkdir -p data/rep
awk -v want=$want -v base=$base -v D="$D" -v cmvn="$cmvn" '
  FILENAME == ARGV[1] { len[$1] = $2; next }
  FILENAME == ARGV[2] { text[$1] = $0; next }
  { feats[++n] = $1; loc[$1] = $2 }
  END {
    got = 0
    for (c = 1; got < want; c++)
      for (i = 1; i <= n && got < want; i++) {
        k = feats[i]; u = sprintf("r%03d-%s", c, k); s = sprintf("r%03d-cathy-%s", c, substr(k, 7, 8))
        sub(/^feats.ark:/, D "/feats.ark:", loc[k])
        print u, loc[k] > "data/rep/feats.scp"; t = text[k]; sub(/^[^ ]*/, u, t); print t > "data/rep/text"
        print u, s > "data/rep/utt2spk"; if (!(s in seen)) { seen[s] = 1; print s, cmvn > "data/rep/cmvn.scp" }
        got += len[k]
      }
  }' len.txt "$D/text" "$D/feats.scp"
sort -o data/rep/cmvn.scp data/rep/cmvn.scp
utils/utt2spk_to_spk2utt.pl data/rep/utt2spk > data/rep/spk2utt
frames=$(awk 'NR == FNR { len[$1] = $2; next } { split($1, a, "-"); k = substr($1, 6); s += len[k] } END { print s }' \
  len.txt data/rep/feats.scp)
echo "data: $(wc -l < data/rep/text) utterances, $frames frames ($(awk -v f=$frames 'BEGIN { printf "%.2f", f / 360000 }') h)"

opts=(--num-iters $num_iters --totgauss $totgauss)
out=mono-train.txt
: > $out
# run_am <dir> <log> [options]: the trainer's whole job; prints its wall seconds
run_am() {
  local dir=$1 log=$2; shift 2
  rm -rf $dir
  local start=$(date +%s.%N)
  if [ "$ranks" -gt 1 ]; then
    mpirun -np $ranks gmm-train-mono --device=$device --num-iters=$num_iters --totgauss=$totgauss "$@" data/rep \
      data/lang $dir 2> $log
  else
    gmm-train-mono --device=$device --num-iters=$num_iters --totgauss=$totgauss "$@" data/rep data/lang $dir 2> $log
  fi
  awk -v s=$start -v e=$(date +%s.%N) 'BEGIN { printf "%.1f", e - s }'
}
# the per-pass parts of a trainer run summed
parts() {
  grep -v '^#' $1/log/train.log | awk '$5 == 1 { na++; a += $9; sc += $10; al += $6 * $3; af += $3; fail += $7 }
    { e += $11; m += $12 }
    END { printf "realignment %.2f s on %d passes (GMM scoring %.2f s; mean alignment log-likelihood %.4f per frame, %d failures), E-step %.2f s, M-step %.2f s", a, na, sc, al / af, fail, e, m }'
}
t_am=$(run_am exp/am am.log)
t_amx=-
[ "$exact" = true ] && t_amx=$(run_am exp/amx amx.log --exact)
grep -m1 "using device" am.log || true
t_script=-
if [ "$script" = true ]; then
  rm -rf exp/script data/rep/split*
  start=$(date +%s.%N)
  steps/train_mono.sh --nj $nj --cmd utils/run.pl "${opts[@]}" data/rep data/lang exp/script > script.log 2>&1
  t_script=$(awk -v s=$start -v e=$(date +%s.%N) 'BEGIN { printf "%.1f", e - s }')
fi
{
  echo "# $frames frames ($(awk -v f=$frames 'BEGIN { printf "%.2f", f / 360000 }') h), $num_iters passes, totgauss $totgauss, device $device, ranks $ranks; script --nj $nj"
  echo "# whole job (read -> passes -> written model): gmm-train-mono $t_am s; steps/train_mono.sh $t_script s"
  awk '/^# total/ { print "# gmm-train-mono parts: " $0 }' exp/am/log/train.log
  echo "# summed over passes, beam realignment:  $(parts exp/am)"
  if [ "$exact" = true ]; then
    echo "# gmm-train-mono --exact: whole job $t_amx s; final pass $(grep -v '^#' exp/amx/log/train.log | tail -1 | cut -d' ' -f2) per frame"
    echo "# summed over passes, exact realignment: $(parts exp/amx)"
  fi
  echo "# pass  gmm-train-mono  steps/train_mono.sh  (avg log-likelihood per frame)"
  for ((x = 0; x < num_iters; x++)); do
    ours=$(awk -v x=$x '!/^#/ && $1 == x { print $2 }' exp/am/log/train.log)
    ref=-
    if [ "$script" = true ]; then
      if [ $x -eq 0 ]; then logs=exp/script/log/align.0.*.log; else logs=exp/script/log/acc.$x.*.log; fi
      ref=$(cat $logs | awk '/Overall avg like per frame/ { s += $(NF-3) * $(NF-1); n += $(NF-1) } END { printf "%.6f", s / n }')
    fi
    echo "$x $ours $ref"
  done
} | tee $out
