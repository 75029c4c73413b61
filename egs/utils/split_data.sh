#!/usr/bin/env bash
# utils/split_data.sh -- split a data directory into N parts for N parallel jobs
# (Kaldi's utils/split_data.sh convention, our own bash + awk):
#
#   utils/split_data.sh [--per-utt] <data-dir> <N>
#
# writes <data-dir>/splitN/1 .. <data-dir>/splitN/N (splitNutt with --per-utt).
# Every utterance goes to exactly one part.  With utt2spk (and without
# --per-utt) whole speakers are assigned, so no speaker is in two parts:
# speakers in order of first appearance in utt2spk, cut into N consecutive runs of about equal
# numbers of utterances, no part empty; with fewer speakers than parts it
# says so and splits per utterance (still into splitN; steps that need whole
# speakers per job, e.g. steps/compute_cmvn_stats.sh, use at most one job per
# speaker).  Files split per utterance: feats.scp, text, segments, utt2* and
# wav.scp (per recording when segments exists); per speaker: spk2utt, cmvn.scp,
# spk2*.  Lines keep their order.  The split is rewritten on every call.
set -euo pipefail
per_utt=false
[ "${1:-}" = --per-utt ] && { per_utt=true; shift; }
if [ $# -ne 2 ]; then
  sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1
fi
data=${1%/}; n=$2
me=split_data.sh
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$me: the number of parts must be a positive integer, not '$n'" >&2; exit 1; }
[ -d "$data" ] || { echo "$me: no such data directory: $data" >&2; exit 1; }
# The utterance list: utt2spk, else feats.scp, else wav.scp (keys = utterances).
if [ -f $data/utt2spk ] && ! $per_utt; then list=$data/utt2spk; by_spk=true
elif [ -f $data/utt2spk ]; then list=$data/utt2spk; by_spk=false
elif [ -f $data/feats.scp ]; then list=$data/feats.scp; by_spk=false
elif [ -f $data/wav.scp ] && [ ! -f $data/segments ]; then list=$data/wav.scp; by_spk=false
else echo "$me: $data has none of utt2spk, feats.scp, wav.scp" >&2; exit 1
fi
# Fewer speakers than parts (e.g. a one-speaker corpus such as yes/no with
# Kaldi's utt2spk "utt global"): split per utterance instead, with a message.
if $by_spk; then
  nspk=$(awk 'NF > 0 && !($2 in s) { s[$2]; n++ } END { print n + 0 }' $list)
  if [ "$nspk" -lt "$n" ]; then
    echo "$me: $data has $nspk speaker(s) for $n jobs: splitting per utterance instead (a speaker's" \
      "utterances may go to several parts)" >&2
    by_spk=false
  fi
fi
suffix=; $per_utt && suffix=utt
out=$data/split$n$suffix
tmp=$(mktemp -d "$data/.split$n$suffix.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# utt -> part (1-based), in $tmp/utt2part; speaker -> part in $tmp/spk2part.
awk -v n=$n -v by_spk=$by_spk -v list="$list" -v tmp="$tmp" -v me=$me '
  NF == 0 { next }
  { u = $1; s = (by_spk == "true") ? $2 : $1
    if (u in seen) { print me ": duplicate utterance " u " in " list > "/dev/stderr"; bad = 1; exit 1 }
    seen[u] = 1; utt[++nu] = u; spkof[u] = s
    if (!(s in cnt)) spk[++ns] = s; cnt[s]++ }
  END {
    if (bad) exit 1
    if (ns < n) { printf "%s: cannot split %s into %d parts: only %d %s\n", me, list, n, ns,
                  by_spk == "true" ? "speakers (use --per-utt, or fewer jobs)" : "utterances" > "/dev/stderr"; exit 1 }
    j = 1; inj = 0; cum = 0
    for (i = 1; i <= ns; i++) {
      # move on when this part has its share, or when the speakers left are
      # only just enough to give every later part one
      if (inj > 0 && j < n && (cum >= j * nu / n || ns - i + 1 <= n - j)) { j++; inj = 0 }
      part[spk[i]] = j; inj++; cum += cnt[spk[i]]
    }
    if (j != n) { print me ": internal error: " j " parts for " n > "/dev/stderr"; exit 1 }
    for (i = 1; i <= ns; i++) print spk[i], part[spk[i]] > (tmp "/spk2part")
    for (i = 1; i <= nu; i++) print utt[i], part[spkof[utt[i]]] > (tmp "/utt2part")
  }' "$list"

for j in $(seq 1 $n); do mkdir -p "$tmp/$j"; done
# split_file <file> <key-map>: each line goes to the part of its first field.
split_file() {
  awk -v tmp="$tmp" -v name="$(basename "$1")" -v file="$1" -v me=$me '
    NR == FNR { part[$1] = $2; next }
    NF == 0 { next }
    !($1 in part) { next }
    { print > (tmp "/" part[$1] "/" name) }' "$2" "$1"
  for j in $(seq 1 $n); do touch "$tmp/$j/$(basename "$1")"; done
}
for f in feats.scp text segments $(cd $data && ls utt2* 2>/dev/null | grep -v '\.bak$' || true); do
  [ -f $data/$f ] && split_file $data/$f $tmp/utt2part
done
if [ -f $data/wav.scp ]; then
  if [ -f $data/segments ]; then
    awk 'NR == FNR { part[$1] = $2; next } ($1 in part) { print $2, part[$1] }' $tmp/utt2part $data/segments |
      sort -u > $tmp/rec2part
    split_file $data/wav.scp $tmp/rec2part
  else
    split_file $data/wav.scp $tmp/utt2part
  fi
fi
if $by_spk; then
  for f in spk2utt cmvn.scp $(cd $data && ls spk2* 2>/dev/null | grep -v '^spk2utt$' || true); do
    [ -f $data/$f ] && split_file $data/$f $tmp/spk2part
  done
elif [ -f $data/utt2spk ]; then
  # per-utterance parts of a data dir with speakers: spk2utt rebuilt per part;
  # cmvn.scp keyed by speaker is copied whole (a speaker may span parts).
  for j in $(seq 1 $n); do
    awk '{ if (!($2 in s)) o[++k] = $2; s[$2] = s[$2] " " $1 } END { for (i = 1; i <= k; i++) print o[i] s[o[i]] }' \
      $tmp/$j/utt2spk > $tmp/$j/spk2utt
    [ -f $data/cmvn.scp ] && cp $data/cmvn.scp $tmp/$j/
  done
fi
rm -f $tmp/utt2part $tmp/spk2part $tmp/rec2part
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
