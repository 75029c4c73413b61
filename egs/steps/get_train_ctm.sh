#!/usr/bin/env bash
# steps/get_train_ctm.sh -- the word CTM of a directory of training alignments (Kaldi's
# steps/get_train_ctm.sh calling convention; one tool, ali-to-word-ctm, in place of
# linear-to-nbest | lattice-align-words[-lexicon] | lattice-1best | nbest-to-ctm):
#
#   steps/get_train_ctm.sh [options] <data-dir> <lang-dir> <ali-dir|model-dir> [<output-dir>]
#   e.g. steps/get_train_ctm.sh data/train data/lang exp/mono_ali   (-> exp/mono_ali/ctm)
#
# <ali-dir> holds final.mdl, num_jobs and ali.JOB.gz; words come from <data-dir>/text (a word
# missing from <lang>/words.txt as <lang>/oov.int, Kaldi's sym2int.pl --map-oov) and
# <lang>/phones/word_boundary.int if it exists, else phones/align_lexicon.int, as Kaldi's
# script chooses.  Writes <output-dir>/ctm (default <ali-dir>), words as text; logs in
# <output-dir>/log/get_ctm.JOB.log.  An utterance whose phones do not spell its transcript
# is left out with a warning in its job's log (Kaldi's tools do the same).
# Options: --cmd utils/run.sh  --frame-shift 0.01  --print-silence false  --stage 0
#   --use-segments true (a segments file is not supported: an error)
set -euo pipefail
cmd=$(realpath -s --relative-to=. "$(dirname "$0")/../utils/run.sh"); frame_shift=0.01; print_silence=false; stage=0
use_segments=true
. "$(dirname "$0")/../utils/parse_options.sh"
if [ $# -ne 3 ] && [ $# -ne 4 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; lang=${2%/}; ali_dir=${3%/}; dir=${4:-$ali_dir}
me=get_train_ctm.sh
for f in "$lang"/words.txt "$lang"/oov.int "$ali_dir"/final.mdl "$ali_dir"/ali.1.gz "$ali_dir"/num_jobs "$data"/text; do
  [ -f "$f" ] || { echo "$me: expecting file $f to exist" >&2; exit 1; }
done
if [ -f "$data"/segments ] && $use_segments; then
  echo "$me: $data/segments: CTMs relative to segmented recordings are not supported yet (--use-segments false)" >&2
  exit 1
fi
if [ -f "$lang"/phones/word_boundary.int ]; then info=$lang/phones/word_boundary.int
elif [ -f "$lang"/phones/align_lexicon.int ]; then info=$lang/phones/align_lexicon.int
else echo "$me: neither $lang/phones/word_boundary.int nor $lang/phones/align_lexicon.int exists: cannot align." >&2; exit 1
fi
nj=$(cat "$ali_dir"/num_jobs)
mkdir -p "$dir"/log
if [ $stage -le 0 ]; then
  awk -v oov="$(cat "$lang"/oov.int)" 'NR == FNR { id[$1] = $2; next }
    { printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", ($i in id) ? id[$i] : oov; print "" }' \
    "$lang"/words.txt "$data"/text > "$dir"/text.int
  $cmd JOB=1:$nj "$dir"/log/get_ctm.JOB.log \
    ali-to-word-ctm --frame-shift=$frame_shift --print-silence=$print_silence --word-symbol-table="$lang"/words.txt \
    "$info" "$ali_dir"/final.mdl "ark:gunzip -c $ali_dir/ali.JOB.gz|" ark:"$dir"/text.int "$dir"/ctm.JOB
fi
if [ $stage -le 1 ]; then
  for j in $(seq $nj); do cat "$dir"/ctm.$j; done > "$dir"/ctm.tmp
  mv "$dir"/ctm.tmp "$dir"/ctm
  rm -f "$dir"/ctm.[0-9]* "$dir"/text.int
fi
