#!/usr/bin/env bash
# utils/prepare_lang.sh -- a lang directory (phones.txt, words.txt, topo, oov.{txt,int},
# phones/*, L.fst, L_disambig.fst) from a dictionary directory, with Kaldi's
# utils/prepare_lang.sh arguments and options and byte-identical outputs (doc/align.md):
#
#   utils/prepare_lang.sh [options] <dict-src-dir> <oov-dict-entry> <tmp-dir> <lang-dir>
#   e.g.: utils/prepare_lang.sh data/local/dict "<UNK>" data/local/lang data/lang
#
# <dict-src-dir> holds silence_phones.txt, nonsilence_phones.txt, optional_silence.txt,
# extra_questions.txt (may be absent) and lexicon.txt or lexiconp.txt (used if present).
# Options (Kaldi's defaults):
#   --num-sil-states 5               states in silence models
#   --num-nonsil-states 3            states in non-silence models
#   --position-dependent-phones true _B _E _I _S word-position variants of the phones
#   --share-silence-phones false     one tree root (shared pdfs) for all silence phones
#   --sil-prob 0.5                   probability of optional silence between words (0: none)
#   --phone-symbol-table ""          an existing phones.txt whose phone ids to keep
# Kaldi's --unk-fst, --extra-word-disambig-syms and
# --num-extra-phone-disambig-syms other than 1 are not supported (an error).
# The work is done by the prepare-lang tool; unlike Kaldi's script, <dict-src-dir> is
# never written to (Kaldi's adds lexiconp.txt there).
set -euo pipefail
num_sil_states=5
num_nonsil_states=3
position_dependent_phones=true
share_silence_phones=false
sil_prob=0.5
unk_fst=
phone_symbol_table=
extra_word_disambig_syms=
num_extra_phone_disambig_syms=1
echo "$0 $*"
. "$(dirname "$0")/parse_options.sh"
me=prepare_lang.sh
if [ $# -ne 4 ]; then
  sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1
fi
for o in unk_fst extra_word_disambig_syms; do
  if [ -n "${!o}" ]; then echo "$me: --${o//_/-} is not supported" >&2; exit 1; fi
done
[ "$num_extra_phone_disambig_syms" = 1 ] || \
  { echo "$me: --num-extra-phone-disambig-syms other than 1 is not supported" >&2; exit 1; }
for b in position_dependent_phones share_silence_phones; do
  case "${!b}" in true|false) ;; *) echo "$me: --${b//_/-} must be true or false, not '${!b}'" >&2; exit 1 ;; esac
done
[ -d "$1" ] || { echo "$me: no such dictionary directory: $1" >&2; exit 1; }
# Kaldi's script removes the old phones/ first, so no stale file survives.
[ -d "$4/phones" ] && rm -r "$4/phones"
exec prepare-lang --num-sil-states="$num_sil_states" --num-nonsil-states="$num_nonsil_states" \
  --position-dependent-phones="$position_dependent_phones" \
  --share-silence-phones="$share_silence_phones" --sil-prob="$sil_prob" \
  ${phone_symbol_table:+--phone-symbol-table="$phone_symbol_table"} "$1" "$2" "$3" "$4"
