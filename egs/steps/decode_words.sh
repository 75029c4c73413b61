#!/usr/bin/env bash
# steps/decode_words.sh -- connected-word decoding with a word loop as N
# parallel jobs, scored by compute-wer:
#
#   steps/decode_words.sh [options] <data-dir> <model-dir> <decode-dir>
#   e.g. steps/decode_words.sh --nj 2 --silence sil --word-penalty 20 data/test exp/mono exp/mono/decode_test
#
# hmm-make-loop builds the loop (word | ... | silence)* from <model-dir>/final.hmm
# (every HMM but a previous loop), then per job hmm-viterbi --gmm=final.mdl
# --hmm=loop --words-wspecifier (GMM scoring in the same process) -> <decode-dir>/hyp.txt; if
# <data-dir>/text exists, compute-wer --text --mode=present -> <decode-dir>/wer.txt
# (first line "%WER ...", printed) and per-utterance details in per_utt.
# Options: --nj 4, --cmd utils/run.sh, --device auto, --silence "" (name of
# the silence HMM), --word-penalty 0, --acoustic-scale 1, --edge-silence false
# (true: paths start and end in the silence, hmm-make-loop --edge-silence),
# --loop-silence-prob -1 (P in [0, 1]: leaving a word, the loop goes to the
# silence with probability P, hmm-make-loop --silence-prob; 1: a silence
# between any two words; < 0: equal shares).
set -euo pipefail
nj=4; cmd=$(realpath -s --relative-to=. "$(dirname "$0")/../utils/run.sh"); device=auto; silence=; word_penalty=0; acoustic_scale=1; edge_silence=false
loop_silence_prob=-1
. "$(dirname "$0")/../utils/parse_options.sh"
if [ $# -ne 3 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; mdir=${2%/}; dir=${3%/}
utils=$(cd "$(dirname "$0")/../utils" && pwd)
me=decode_words.sh
for f in "$data"/feats.scp "$mdir"/final.mdl "$mdir"/final.hmm; do [ -f "$f" ] || { echo "$me: missing $f" >&2; exit 1; }; done
mkdir -p "$dir"/log
sil_opt=; [ -z "$silence" ] || sil_opt=--silence=$silence
hmm-make-loop $sil_opt --edge-silence=$edge_silence --silence-prob=$loop_silence_prob --word-loop=loop --word-penalty=$word_penalty "$mdir"/final.hmm "$dir"/loop.hmm \
  2> "$dir"/log/make-loop.log || { echo "$me: hmm-make-loop failed, see $dir/log/make-loop.log" >&2; exit 1; }
"$utils"/split_data.sh "$data" $nj
sdata=$data/split$nj
rm -f "$dir"/hyp.*.txt
$cmd JOB=1:$nj "$dir"/log/decode.JOB.log \
  hmm-viterbi --device=$device --gmm="$mdir"/final.mdl --acoustic-scale=$acoustic_scale --hmm=loop \
    --words-wspecifier=ark,t:"$dir"/hyp.JOB.txt "$dir"/loop.hmm scp:"$sdata"/JOB/feats.scp ark:"$dir"/ali.JOB.ark
for j in $(seq 1 $nj); do cat "$dir"/hyp."$j".txt; done | LC_ALL=C sort -k1,1 > "$dir"/hyp.txt
rm -f "$dir"/hyp.*.txt
if [ -f "$data"/text ]; then
  compute-wer --text --mode=present --per-utt="$dir"/per_utt ark:"$data"/text ark:"$dir"/hyp.txt > "$dir"/wer.txt 2> "$dir"/log/wer.log ||
    { echo "$me: compute-wer failed, see $dir/log/wer.log" >&2; exit 1; }
  head -1 "$dir"/wer.txt
fi
