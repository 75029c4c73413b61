#!/usr/bin/env bash
# utils/copy_data_dir.sh -- copy a user's Kaldi data directory into a recipe's
# work directory, making its file names absolute (our own bash + awk; Kaldi
# has a utils/copy_data_dir.sh with other options):
#
#   utils/copy_data_dir.sh <src-data-dir> <dest-data-dir>
#
# Copies utt2spk, spk2utt, text, segments, utt2* and spk2* as they are, and
# feats.scp, cmvn.scp, vad.scp and wav.scp with every relative file name made
# absolute, so that the copy works from any directory (recipes cd into
# --work).  A relative name is resolved against <src-data-dir> itself, else
# against the directory this script was called from (Kaldi's convention:
# names relative to the recipe directory; kaldiio writes names relative to
# where Python ran).  A name found in neither place is an error naming the
# file, its line and key.  Commands ("... |") are left as they are; "-"
# (standard input) is refused.
set -euo pipefail
me=copy_data_dir.sh
if [ $# -ne 2 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
src=${1%/}; dst=${2%/}
[ -d "$src" ] || { echo "$me: no such data directory: $src" >&2; exit 1; }
caller=$(pwd)
srcabs=$(cd "$src" && pwd)
mkdir -p "$dst"
for f in utt2spk spk2utt text segments $(cd "$src" && ls utt2* spk2* 2>/dev/null | sort -u || true); do
  case $f in utt2spk|spk2utt|text|segments) ;; *.bak) continue ;; esac
  [ ! -f "$src/$f" ] || cp "$src/$f" "$dst/$f"
done
# name_of: the file name of an scp entry (the part after the key), without
# a ":<offset>" or ":<offset>[...]" suffix; commands ("... |") and absolute
# names print nothing (left as they are).
split_awk='
  function split_entry(line,   rest) {
    key = line; sub(/[ \t].*$/, "", key)
    rest = line; sub(/^[ \t]*[^ \t]+[ \t]*/, "", rest); sub(/[ \t]+$/, "", rest)
    name = rest; suffix = ""
    if (match(name, /:[0-9]+(\[[^]]*\])?$/)) { suffix = substr(name, RSTART); name = substr(name, 1, RSTART - 1) }
    return rest
  }'
for f in feats.scp cmvn.scp vad.scp wav.scp; do
  [ -f "$src/$f" ] || continue
  # 1. the relative names, once each; 2. where each exists (bash tests, no
  # shell quoting of names); 3. the copy, every relative name made absolute.
  found=$(mktemp "$dst/.$f.found.XXXXXX")
  awk "$split_awk"'
    NF == 0 { next }
    { rest = split_entry($0) }
    rest == "" || rest ~ /\|[ \t]*$/ || rest == "-" || name ~ /^\// { next }
    !(name in seen) { seen[name]; print name }' "$src/$f" |
    while IFS= read -r n; do
      if [ -e "$srcabs/$n" ]; then printf '%s\t%s\n' "$n" "$srcabs/$n"
      elif [ -e "$caller/$n" ]; then printf '%s\t%s\n' "$n" "$caller/$n"; fi
    done > "$found"
  awk -v me=$me -v file="$src/$f" -v base="$srcabs" -v caller="$caller" "$split_awk"'
    FILENAME == ARGV[1] { t = index($0, "\t"); abs[substr($0, 1, t - 1)] = substr($0, t + 1); next }
    NF == 0 { print; next }
    {
      rest = split_entry($0)
      if (rest == "") { printf "%s: %s, line %d, key %s: no file name\n", me, file, FNR, key > "/dev/stderr"; exit 1 }
      if (rest ~ /\|[ \t]*$/) { print; next }              # a command ("... |"): left as it is
      if (rest == "-") { printf "%s: %s, line %d, key %s: \"-\" (standard input) cannot be copied\n", me, file, FNR, key > "/dev/stderr"; exit 1 }
      if (name ~ /^\//) { print; next }
      if (name in abs) { print key, abs[name] suffix; next }
      printf "%s: %s, line %d, key %s: relative file name \"%s\" found neither under %s nor under %s (give absolute names, or names relative to the data directory)\n", me, file, FNR, key, name, base, caller > "/dev/stderr"
      exit 1
    }' "$found" "$src/$f" > "$dst/$f.tmp" || { rm -f "$dst/$f.tmp" "$found"; exit 1; }
  rm -f "$found"
  mv "$dst/$f.tmp" "$dst/$f"
done
