#!/usr/bin/env bash
# steps/adapt_words.sh -- second decoding pass of isolated words with speaker
# adaptation to each test speaker, unsupervised (doc/adapt.md):
#
#   steps/adapt_words.sh [options] <data-dir> <words.txt> <model-dir> <first-pass-dir> <decode-dir>
#   e.g. steps/adapt_words.sh --method map --mean-tau 5 data/test data/lang/words.txt exp/hmm \
#          exp/hmm/decode_test exp/hmm/decode_test_map
#
# From the first pass (<first-pass-dir>/scores.txt, e.g. of steps/classify.sh
# --hmm true), per pass: each utterance aligned to its recognised word
# (hmm-viterbi --gmm --transcripts: a pdf per frame), then per
# speaker of <data-dir>/spk2utt
#   --method map:   the model's means MAP-adapted to the speaker (gmm-adapt-map
#                   --mean-tau --spk2utt; Reynolds et al. 2000: map.ark, one
#                   model per speaker), each file scored with its speaker's
#                   model (gmm-score-gpu --spk-models --utt2spk)
#   --method fmllr: one fMLLR transform per speaker (gmm-est-fmllr --spk2utt),
#                   transform-feats --utt2spk, scored with the model
# and the next pass starts from these scores.  No reference labels are used;
# <data-dir>/text only scores the result.  Writes <decode-dir>/scores.txt and
# scoring.txt (steps/score_words.sh), the transforms / adapted models, and
# prints the accuracy line.
# Options (--name value or --name=value): --method map|fmllr [map]
#   --mean-tau [2] --passes [2] --fmllr-iters [40] --device [auto] --name [""]
# (map, tau 2 and two passes were picked on FSDD by leaving a TRAINING speaker
# out: egs/fsdd/local/adapt_experiment.sh --dev true; see README)
set -euo pipefail
method=map; tau=2; passes=2; fmllr_iters=40; device=auto; name=; args=()
while [ $# -gt 0 ]; do
  case $1 in
    --*=*) k=${1%%=*}; v=${1#*=}; shift ;;
    --*) k=$1; v=${2:-}; shift 2 ;;
    *) args+=("$1"); shift; continue ;;
  esac
  case $k in
    --method) method=$v ;; --mean-tau) tau=$v ;; --passes) passes=$v ;; --fmllr-iters) fmllr_iters=$v ;;
    --device) device=$v ;; --name) name=$v ;;
    *) echo "adapt_words.sh: unknown option $k" >&2; exit 1 ;;
  esac
done
[ ${#args[@]} -eq 5 ] || { sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; }
data=${args[0]%/}; words=${args[1]}; mdir=${args[2]%/}; first=${args[3]%/}; dir=${args[4]%/}
here=$(cd "$(dirname "$0")" && pwd)
me=adapt_words.sh
for f in $data/feats.scp $data/spk2utt $data/utt2spk $data/text $words $mdir/final.mdl $mdir/final.hmm $first/scores.txt; do
  [ -f "$f" ] || { echo "$me: missing $f" >&2; exit 1; }
done
case $method in map|fmllr) ;; *) echo "$me: --method must be map or fmllr" >&2; exit 1 ;; esac
mkdir -p "$dir"/log
# recognised word (HMM name = line of words.txt) per utterance
best() { awk 'NR == FNR { w[FNR - 1] = $1; next }
  { b = -1; for (i = 3; i <= NF && $i != "]"; i++) if (b < 0 || $i + 0 > bv) { bv = $i + 0; b = i - 3 }
    print $1, w[b] }' "$words" "$1"; }
best "$first"/scores.txt > "$dir"/hyp.0
for p in $(seq 1 "$passes"); do
  hmm-viterbi --device="$device" --gmm="$mdir"/final.mdl --transcripts=ark,t:"$dir"/hyp.$((p - 1)) "$mdir"/final.hmm \
    scp:"$data"/feats.scp ark:"$dir"/ali.ark 2> "$dir"/log/align."$p".log
  : > "$dir"/scores.txt
  if [ "$method" = fmllr ]; then
    gmm-est-fmllr --device="$device" --fmllr-iters="$fmllr_iters" --spk2utt=ark,t:"$data"/spk2utt "$mdir"/final.mdl \
      scp:"$data"/feats.scp ark:"$dir"/ali.ark ark:"$dir"/trans.ark 2> "$dir"/log/fmllr."$p".log
    transform-feats --utt2spk=ark,t:"$data"/utt2spk ark:"$dir"/trans.ark scp:"$data"/feats.scp ark:- 2>> "$dir"/log/fmllr."$p".log |
      hmm-forward --device="$device" --gmm="$mdir"/final.mdl "$mdir"/final.hmm ark:- ark,t:"$dir"/scores.txt \
        2> "$dir"/log/decode."$p".log
  else
    # one adapted model per speaker (a table), then every utterance scored
    # under its speaker's: one process each, whatever the number of speakers
    gmm-adapt-map --device="$device" --mean-tau="$tau" --spk2utt=ark,t:"$data"/spk2utt "$mdir"/final.mdl \
      scp:"$data"/feats.scp ark:"$dir"/ali.ark ark:"$dir"/map.ark 2>> "$dir"/log/map."$p".log
    gmm-score-gpu --device="$device" --utt2spk=ark,t:"$data"/utt2spk --spk-models=ark:"$dir"/map.ark \
      "$mdir"/final.mdl scp:"$data"/feats.scp ark:- 2>> "$dir"/log/decode."$p".log |
      hmm-forward --device="$device" "$mdir"/final.hmm ark:- ark,t:"$dir"/scores.txt 2>> "$dir"/log/decode."$p".log
  fi
  best "$dir"/scores.txt > "$dir"/hyp."$p"
done
rm -f "$dir"/ali.ark
awk -v me=$me -v W="$words" 'NR == FNR { id[$1] = FNR - 1; next }
  !($2 in id) { printf "%s: word %s of utterance %s is not in %s\n", me, $2, $1, W > "/dev/stderr"; exit 1 }
  { print $1, id[$2] }' "$words" "$data"/text > "$dir"/utt2word
"$here"/score_words.sh "$dir"/utt2word "$dir"/scores.txt "$name" > "$dir"/scoring.txt
head -1 "$dir"/scoring.txt
