#!/usr/bin/env bash
# utils/fix_data_dir.sh -- make a data directory consistent (Kaldi's name and
# calling convention, our own bash + awk):
#
#   utils/fix_data_dir.sh <data-dir>
#
# Sorts every table (LC_ALL=C, first field; later duplicates of a key are
# dropped), keeps only the utterances that are in utt2spk and in every one of
# feats.scp, text, segments, utt2* and wav.scp (wav.scp by recording when
# segments exists), rebuilds spk2utt from utt2spk, and keeps only the speakers
# left in cmvn.scp and spk2*.  The originals go to <data-dir>/.backup/.
# Prints how many utterances were kept; fails if none were.
set -euo pipefail
if [ $# -ne 1 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
d=${1%/}
me=fix_data_dir.sh
export LC_ALL=C
[ -f "$d"/utt2spk ] || { echo "$me: $d/utt2spk is missing" >&2; exit 1; }
mkdir -p "$d"/.backup
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fix_data_dir.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

sort_uniq() { awk 'NF > 0 && !seen[$1]++' "$1" | sort -s -k1,1; }
utt_files=$(cd "$d" && ls feats.scp text segments utt2* 2>/dev/null || true)
n_before=$(awk 'NF > 0' "$d"/utt2spk | wc -l)
sort_uniq "$d"/utt2spk > "$tmp"/utts
for f in $utt_files; do
  [ "$f" = utt2spk ] && continue
  awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$d"/"$f" "$tmp"/utts > "$tmp"/utts.new; mv "$tmp"/utts.new "$tmp"/utts
done
if [ -f "$d"/wav.scp ]; then
  if [ -f "$d"/segments ]; then
    awk 'NR == FNR { w[$1] = 1; next } ($2 in w) { print $1 }' "$d"/wav.scp "$d"/segments > "$tmp"/ok
  else
    awk '{ print $1 }' "$d"/wav.scp > "$tmp"/ok
  fi
  awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$tmp"/ok "$tmp"/utts > "$tmp"/utts.new; mv "$tmp"/utts.new "$tmp"/utts
fi
n_after=$(wc -l < "$tmp"/utts)
[ "$n_after" -gt 0 ] || { echo "$me: $d: no utterance is in every table; nothing left" >&2; exit 1; }

keep() {  # keep <file> <keys-file>: lines of file whose key is in keys-file, sorted
  cp "$d"/"$1" "$d"/.backup/"$1"
  sort_uniq "$d"/.backup/"$1" | awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' "$2" - > "$tmp"/out
  mv "$tmp"/out "$d"/"$1"
}
for f in $utt_files; do keep "$f" "$tmp"/utts; done
if [ -f "$d"/wav.scp ]; then
  if [ -f "$d"/segments ]; then awk '{ print $2 }' "$d"/segments | sort -u > "$tmp"/recs; keep wav.scp "$tmp"/recs
  else keep wav.scp "$tmp"/utts; fi
fi
[ -f "$d"/spk2utt ] && cp "$d"/spk2utt "$d"/.backup/spk2utt
awk '{ if (!($2 in s)) o[++k] = $2; s[$2] = s[$2] " " $1 } END { for (i = 1; i <= k; i++) print o[i] s[o[i]] }' \
  "$d"/utt2spk | sort -k1,1 > "$tmp"/spk2utt
mv "$tmp"/spk2utt "$d"/spk2utt
awk '{ print $1 }' "$d"/spk2utt > "$tmp"/spks
for f in $(cd "$d" && ls cmvn.scp spk2* 2>/dev/null || true); do
  [ "$f" = spk2utt ] || keep "$f" "$tmp"/spks
done
echo "$me: $d: kept $n_after of $n_before utterances ($(wc -l < "$tmp"/spks) speakers); originals in $d/.backup" >&2
