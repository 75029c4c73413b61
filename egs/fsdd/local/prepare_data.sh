#!/usr/bin/env bash
# local/prepare_data.sh -- a Kaldi data directory for the Free Spoken Digit
# Dataset:
#
#   local/prepare_data.sh <recordings-dir> <data-root>
#
# <digit>_<speaker>_<index>.wav (or .flac, if the directory has no WAV files;
# libsndfile decodes both) -> <data-root>/all with wav.scp (key
# <speaker>-<digit>-<index>, sorted), text (the digit word "0".."9"), utt2spk,
# spk2utt; <data-root>/lang/words.txt (0..9, word i = HMM i).
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; }
wavdir=$1; data=$2
utils=$(cd "$(dirname "$0")/../../utils" && pwd)
[ -d "$wavdir" ] || { echo "prepare_data.sh: missing $wavdir (set GH_SHARED)" >&2; exit 1; }
mkdir -p $data/all $data/lang
ext=wav; compgen -G "$wavdir/*.wav" > /dev/null || ext=flac   # the recordings as shipped
compgen -G "$wavdir/*.$ext" > /dev/null || { echo "prepare_data.sh: no .wav or .flac files in $wavdir" >&2; exit 1; }
for f in "$wavdir"/*.$ext; do
  b=$(basename $f .$ext)                      # <digit>_<speaker>_<index>
  IFS=_ read -r d s i <<< "$b"
  echo "$s-$d-$i $f"
done | LC_ALL=C sort > $data/all/wav.scp
awk '{ split($1, a, "-"); print $1, a[2] }' $data/all/wav.scp > $data/all/text
awk '{ split($1, a, "-"); print $1, a[1] }' $data/all/wav.scp > $data/all/utt2spk
$utils/utt2spk_to_spk2utt.sh $data/all/utt2spk > $data/all/spk2utt
$utils/validate_data_dir.sh --no-feats $data/all
seq 0 9 > $data/lang/words.txt
