#!/usr/bin/env bash
# local/adapt_grid.sh -- every second-pass adaptation setting tried on Arabic
# digits (RESULTS), on the HMM-GMMs a run.sh --work <work> already trained
# (exp/hmm_s8_diag8 = Baum-Welch, exp/hmm_s8_diag8_vit = Viterbi, their
# first-pass decode_dev), by steps/adapt_words.sh:
#
#   local/adapt_grid.sh [--device cpu] [--taus "1 2 5 10"] [--passes "1 2"] [--models "exp/hmm_s8_diag8 exp/hmm_s8_diag8_vit"] <work> [<out>]
#
# writes one accuracy line per (model, method, tau, passes) to <out>
# [<work>/adapt_grid.txt].  To pick a setting WITHOUT the dev speakers, run it
# on a run.sh whose --test-data are held-out TRAINING speakers (RESULTS: 8 of
# the 50, models trained on the other 42); the dev run only reports.
set -euo pipefail
device=cpu; taus="1 2 5 10"; passes="1 2"; models="exp/hmm_s8_diag8 exp/hmm_s8_diag8_vit"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../utils/parse_options.sh"
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; }
work=$(cd "$1" && pwd); out=${2:-$work/adapt_grid.txt}
export PATH="${GH_BIN:-$here/../../../bin}:$PATH"
steps=$here/../../steps
cd "$work"
: > "$out.tmp"
for dir in $models; do
  [ -f $dir/decode_dev/scores.txt ] || continue
  head -1 $dir/decode_dev/scoring.txt >> "$out.tmp"
  for p in $passes; do
    for t in $taus; do
      $steps/adapt_words.sh --device $device --method map --mean-tau $t --passes $p --name "$dir map tau $t, $p passes" \
        data/dev_dcmn data/lang/words.txt $dir $dir/decode_dev $dir/grid_map_t${t}_p$p >> "$out.tmp"
    done
    $steps/adapt_words.sh --device $device --method fmllr --passes $p --name "$dir fmllr, $p passes" \
      data/dev_dcmn data/lang/words.txt $dir $dir/decode_dev $dir/grid_fmllr_p$p >> "$out.tmp"
  done
done
mv "$out.tmp" "$out"
cat "$out"
