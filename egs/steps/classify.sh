#!/usr/bin/env bash
# steps/classify.sh -- isolated-word classification of a data directory as N
# parallel jobs, and its accuracy:
#
#   steps/classify.sh [options] <data-dir> <words.txt> <model-dir> <decode-dir>
#   e.g. steps/classify.sh --nj 4 --hmm true data/dev data/lang/words.txt exp/hmm exp/hmm/decode_dev
#
# Per utterance, a score per word (word i = line i + 1 of words.txt):
#   --hmm false: gmm-score-gpu <model-dir>/final.mdl | matrix-sum-rows (one GMM
#     per word: the total frame log-likelihood under each pdf)
#   --hmm true:  hmm-forward --gmm=<model-dir>/final.mdl <model-dir>/final.hmm (the GMMs
#     scored in the same process: one device per job)
# -> <decode-dir>/scores.txt; the best word against <data-dir>/text (one word
# per utterance) -> <decode-dir>/scoring.txt: "[<name>: ]accuracy: P% (k/n)"
# then the confusion matrix (steps/score_words.sh), also printed.
# Options: --nj 4, --cmd utils/run.sh, --device auto, --hmm false, --name "".
set -euo pipefail
nj=4; cmd=$(realpath -s --relative-to=. "$(dirname "$0")/../utils/run.sh"); device=auto; hmm=false; name=
. "$(dirname "$0")/../utils/parse_options.sh"
if [ $# -ne 4 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; words=$2; mdir=${3%/}; dir=${4%/}
here=$(cd "$(dirname "$0")" && pwd)
utils=$here/../utils
me=classify.sh
for f in $data/feats.scp $data/text $words $mdir/final.mdl; do [ -f "$f" ] || { echo "$me: missing $f" >&2; exit 1; }; done
$hmm && { [ -f "$mdir"/final.hmm ] || { echo "$me: missing $mdir/final.hmm" >&2; exit 1; }; }
mkdir -p "$dir"/log
"$utils"/split_data.sh "$data" $nj
sdata=$data/split$nj
rm -f "$dir"/scores.*.txt
if $hmm; then
  $cmd JOB=1:$nj "$dir"/log/decode.JOB.log \
    hmm-forward --device=$device --gmm="$mdir"/final.mdl "$mdir"/final.hmm scp:"$sdata"/JOB/feats.scp \
      ark,t:"$dir"/scores.JOB.txt
else
  $cmd JOB=1:$nj "$dir"/log/decode.JOB.log \
    gmm-score-gpu --device=$device "$mdir"/final.mdl scp:"$sdata"/JOB/feats.scp ark:- \| \
    matrix-sum-rows ark:- ark,t:"$dir"/scores.JOB.txt
fi
for j in $(seq 1 $nj); do cat "$dir"/scores."$j".txt; done > "$dir"/scores.txt
rm -f "$dir"/scores.*.txt
awk -v me=$me -v W="$words" 'NR == FNR { id[$1] = FNR - 1; next }
  !($2 in id) { printf "%s: word %s of utterance %s is not in %s\n", me, $2, $1, W > "/dev/stderr"; exit 1 }
  { print $1, id[$2] }' "$words" "$data"/text > "$dir"/utt2word
"$here"/score_words.sh "$dir"/utt2word "$dir"/scores.txt "$name" > "$dir"/scoring.txt
cat "$dir"/scoring.txt
