#!/usr/bin/env bash
# utils/validate_data_dir.sh -- check a Kaldi data directory (our own bash + awk,
# Kaldi's name and options):
#
#   utils/validate_data_dir.sh [--no-feats] [--no-wav] [--no-text] <data-dir>
#
# Checks: utt2spk (two fields a line) and spk2utt exist and agree; every table
# (utt2spk, spk2utt, feats.scp, wav.scp, text, segments, cmvn.scp, utt2*) has
# one line per key, keys sorted as LC_ALL=C sort does; feats.scp, text and
# wav.scp (or segments) have exactly the utterances of utt2spk; the recordings
# of segments are in wav.scp; cmvn.scp has exactly the speakers of spk2utt.
# There must be feats.scp or wav.scp (--no-feats / --no-wav: do not require
# them; --no-text is accepted for Kaldi's callers: text is optional).  Prints one line per problem, naming the file and an offending key,
# and exits 1 if there was any; prints a one-line summary and exits 0 if not.
# utils/fix_data_dir.sh repairs most of these.
set -uo pipefail
no_feats=false; no_wav=false; no_text=false
while [ $# -gt 0 ]; do
  case $1 in
    --no-feats) no_feats=true; shift ;; --no-wav) no_wav=true; shift ;; --no-text) no_text=true; shift ;;
    --*) echo "validate_data_dir.sh: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ]; then sed -n '2,/^set -uo/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
d=${1%/}
me=validate_data_dir.sh
errors=0
err() { echo "$me: $*" >&2; errors=$((errors + 1)); }
[ -d "$d" ] || { echo "$me: no such directory: $d" >&2; exit 1; }
export LC_ALL=C

# check_sorted <file>: keys sorted (C locale) and unique, no empty lines.
check_sorted() {
  awk -v f="$1" -v me=$me '
    NF == 0 { printf "%s: %s line %d is empty\n", me, f, NR > "/dev/stderr"; exit 1 }
    NR > 1 && $1 == prev { printf "%s: %s has key %s twice (lines %d and %d)\n", me, f, $1, NR - 1, NR > "/dev/stderr"; exit 1 }
    NR > 1 && $1 < prev { printf "%s: %s is not sorted (LC_ALL=C sort): line %d key %s comes after %s\n", me, f, NR, $1, prev > "/dev/stderr"; exit 1 }
    { prev = $1 }' "$1" || errors=$((errors + 1))
}
# same_keys <file-a> <file-b> <what>: the first fields of a and b are the same set.
same_keys() {
  awk -v a="$1" -v b="$2" -v what="$3" -v me=$me '
    NR == FNR { ka[$1] = 1; next }
    { kb[$1] = 1; if (!($1 in ka)) { nb++; if (nb == 1) eb = $1 } }
    END {
      for (k in ka) if (!(k in kb)) { na++; if (na == 1 || k < ea) ea = k }
      if (na) printf "%s: %d %s in %s %s not in %s (e.g. %s)\n", me, na, what (na == 1 ? "" : "s"), a, na == 1 ? "is" : "are", b, ea > "/dev/stderr"
      if (nb) printf "%s: %d %s in %s %s not in %s (e.g. %s)\n", me, nb, what (nb == 1 ? "" : "s"), b, nb == 1 ? "is" : "are", a, eb > "/dev/stderr"
      exit (na || nb) }' "$1" "$2" || errors=$((errors + 1))
}

if [ ! -f "$d"/utt2spk ]; then
  err "$d/utt2spk is missing (every data directory needs one; one speaker per utterance is fine: 'utt utt')"
  exit 1
fi
awk -v f="$d"/utt2spk -v me=$me 'NF != 2 && NF != 0 { printf "%s: %s line %d has %d fields, expected 2 (utterance speaker)\n", me, f, NR, NF > "/dev/stderr"; exit 1 }' \
  "$d"/utt2spk || errors=$((errors + 1))
check_sorted "$d"/utt2spk
if [ ! -f "$d"/spk2utt ]; then
  err "$d/spk2utt is missing (make it with utils/utt2spk_to_spk2utt.sh $d/utt2spk > $d/spk2utt)"
else
  check_sorted "$d"/spk2utt
  # Missing speakers, and utterances filed under another speaker.
  awk -v me=$me -v d="$d" '
    NR == FNR { spk[$1] = $2; next }
    { if (!($1 in seen)) seen[$1] = 1; for (i = 2; i <= NF; i++) { n2[$i]++; s2[$i] = $1 } }
    END {
      for (u in spk) {
        if (!(spk[u] in seen)) { printf "%s: speaker %s (of utterance %s in %s/utt2spk) is missing from %s/spk2utt\n", me, spk[u], u, d, d > "/dev/stderr"; exit 1 }
        if (!(u in s2)) { printf "%s: utterance %s of %s/utt2spk is in no line of %s/spk2utt\n", me, u, d, d > "/dev/stderr"; exit 1 }
        if (s2[u] != spk[u] || n2[u] > 1) { printf "%s: utterance %s has speaker %s in %s/utt2spk but %s in %s/spk2utt\n", me, u, spk[u], d, s2[u], d > "/dev/stderr"; exit 1 }
      }
      for (u in s2) if (!(u in spk)) { printf "%s: utterance %s of %s/spk2utt is not in %s/utt2spk\n", me, u, d, d > "/dev/stderr"; exit 1 }
    }' "$d"/utt2spk "$d"/spk2utt || errors=$((errors + 1))
fi

if [ -f "$d"/feats.scp ]; then
  check_sorted "$d"/feats.scp
  same_keys "$d"/utt2spk "$d"/feats.scp "utterance"
elif ! $no_feats && { [ ! -f "$d"/wav.scp ] || $no_wav; }; then
  err "$d has no feats.scp (and no wav.scp to compute it from); use --no-feats if that is intended"
fi
if [ -f "$d"/segments ]; then
  check_sorted "$d"/segments
  same_keys "$d"/utt2spk "$d"/segments "utterance"
  awk -v me=$me -v d="$d" 'NF != 4 { printf "%s: %s/segments line %d has %d fields, expected 4 (utterance recording start end)\n", me, d, NR, NF > "/dev/stderr"; exit 1 }
    $4 <= $3 && $4 != -1 { printf "%s: %s/segments line %d: end %s is not after start %s\n", me, d, NR, $4, $3 > "/dev/stderr"; exit 1 }' \
    "$d"/segments || errors=$((errors + 1))
fi
if [ -f "$d"/wav.scp ]; then
  check_sorted "$d"/wav.scp
  if [ -f "$d"/segments ]; then
    awk -v me=$me -v d="$d" 'NR == FNR { w[$1] = 1; next } !($2 in w) { printf "%s: recording %s of %s/segments is not in %s/wav.scp\n", me, $2, d, d > "/dev/stderr"; exit 1 }' \
      "$d"/wav.scp "$d"/segments || errors=$((errors + 1))
  else
    same_keys "$d"/utt2spk "$d"/wav.scp "utterance"
  fi
elif ! $no_wav && [ ! -f "$d"/feats.scp ]; then
  err "$d has neither wav.scp nor feats.scp"
fi
if [ -f "$d"/text ]; then
  check_sorted "$d"/text
  same_keys "$d"/utt2spk "$d"/text "utterance"
fi
if [ -f "$d"/cmvn.scp ] && [ -f "$d"/spk2utt ]; then
  check_sorted "$d"/cmvn.scp
  same_keys "$d"/spk2utt "$d"/cmvn.scp "speaker"
fi
for f in $d/utt2*; do
  case $f in $d/utt2spk|$d/utt2\*) continue ;; esac
  check_sorted "$f"
  same_keys "$d"/utt2spk "$f" "utterance"
done

if [ $errors -gt 0 ]; then
  echo "$me: $d: $errors problem(s) found (utils/fix_data_dir.sh $d keeps only utterances found everywhere, sorted)" >&2
  exit 1
fi
nu=$(wc -l < "$d"/utt2spk); ns=$(wc -l < "$d"/spk2utt)
echo "$me: $d is OK: $nu utterances, $ns speakers$( [ -f "$d"/feats.scp ] && echo ", feats.scp")$( [ -f "$d"/wav.scp ] && echo ", wav.scp")$( [ -f "$d"/text ] && echo ", text")$( [ -f "$d"/cmvn.scp ] && echo ", cmvn.scp")" >&2
