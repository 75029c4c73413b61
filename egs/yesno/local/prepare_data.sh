#!/usr/bin/env bash
# local/prepare_data.sh -- Kaldi data directories for the yesno corpus:
#
#   local/prepare_data.sh <waves-dir> <data-root>
#
# 30 files <0|1>_..._<0|1>.wav (8 words each; 1 = yes, 0 = no): the first 20
# names (sorted) -> <data-root>/train, the last 10 -> <data-root>/test, each
# with wav.scp, text ("yes no ..."), utt2spk and spk2utt (one speaker in the
# corpus, so every utterance is its own speaker: per-utterance CMN, and jobs
# can split by utterance); <data-root>/lang/words.txt ("yes", "no").
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; }
src=$1; data=$2
utils=$(cd "$(dirname "$0")/../../utils" && pwd)
ls "$src"/*.wav >/dev/null 2>&1 || { echo "prepare_data.sh: no WAVs in $src (set GH_SHARED)" >&2; exit 1; }
mkdir -p "$data"/all "$data"/train "$data"/test "$data"/lang
for f in "$src"/*.wav; do echo "$(basename "$f" .wav) $f"; done | LC_ALL=C sort > "$data"/all/wav.scp
n=$(wc -l < "$data"/all/wav.scp)
[ "$n" -eq 30 ] || echo "prepare_data.sh: warning: $n WAV files, expected 30" >&2
head -n 20 "$data"/all/wav.scp > "$data"/train/wav.scp
tail -n +21 "$data"/all/wav.scp > "$data"/test/wav.scp
for set in train test; do
  d=$data/$set
  awk '{ n = split($1, w, "_"); printf "%s", $1; for (i = 1; i <= n; i++) printf " %s", w[i] == "1" ? "yes" : "no"; printf "\n" }' \
    "$d"/wav.scp > "$d"/text
  awk '{ print $1, $1 }' "$d"/wav.scp > "$d"/utt2spk
  "$utils"/utt2spk_to_spk2utt.sh "$d"/utt2spk > "$d"/spk2utt
  "$utils"/validate_data_dir.sh --no-feats "$d"
done
rm -rf "$data"/all
printf 'yes\nno\n' > "$data"/lang/words.txt
