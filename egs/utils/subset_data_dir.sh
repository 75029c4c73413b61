#!/usr/bin/env bash
# utils/subset_data_dir.sh -- a data directory with a subset of the utterances
# of another (Kaldi's name and calling convention, our own bash + awk):
#
#   utils/subset_data_dir.sh --spk-list <speakers-file> <src-data> <dst-data>
#   utils/subset_data_dir.sh --utt-list <utterances-file> <src-data> <dst-data>
#
# The list has one speaker (utterance) id per line (first field).  Every table
# of <src-data> (utt2spk, spk2utt, feats.scp, wav.scp, text, segments, cmvn.scp,
# utt2*, spk2*) is filtered; the result is checked by utils/fix_data_dir.sh.
set -euo pipefail
if [ $# -ne 4 ] || { [ "$1" != --spk-list ] && [ "$1" != --utt-list ]; }; then
  sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1
fi
mode=$1; list=$2; src=${3%/}; dst=${4%/}
me=subset_data_dir.sh
[ -f "$src"/utt2spk ] || { echo "$me: $src/utt2spk is missing" >&2; exit 1; }
[ -f "$list" ] || { echo "$me: no such list: $list" >&2; exit 1; }
[ "$(cd "$src" && pwd)" != "$(mkdir -p "$dst" && cd "$dst" && pwd)" ] || { echo "$me: source and destination are the same" >&2; exit 1; }
rm -f "$dst"/*
if [ "$mode" = --spk-list ]; then
  awk 'NR == FNR { k[$1] = 1; next } ($2 in k)' "$list" "$src"/utt2spk > "$dst"/utt2spk
else
  awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$list" "$src"/utt2spk > "$dst"/utt2spk
fi
[ -s "$dst"/utt2spk ] || { echo "$me: no utterance of $src is in $list" >&2; exit 1; }
awk '{ print $2 }' "$dst"/utt2spk | sort -u > "$dst"/.spks
for f in $(cd "$src" && ls feats.scp wav.scp text segments cmvn.scp utt2* spk2* 2>/dev/null); do
  case $f in
    utt2spk) ;;
    cmvn.scp|spk2*) awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$dst"/.spks "$src"/"$f" > "$dst"/"$f" ;;
    wav.scp) if [ -f "$src"/segments ]; then
               awk 'NR == FNR { k[$1] = 1; next } ($1 in k) { print $2 }' "$dst"/utt2spk "$src"/segments | sort -u > "$dst"/.recs
               awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$dst"/.recs "$src"/wav.scp > "$dst"/wav.scp; rm "$dst"/.recs
             else awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$dst"/utt2spk "$src"/wav.scp > "$dst"/wav.scp; fi ;;
    *) awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$dst"/utt2spk "$src"/"$f" > "$dst"/"$f" ;;
  esac
done
rm -f "$dst"/.spks
utils_dir=$(cd "$(dirname "$0")" && pwd)
"$utils_dir"/fix_data_dir.sh "$dst" 2>/dev/null
rm -rf "$dst"/.backup
