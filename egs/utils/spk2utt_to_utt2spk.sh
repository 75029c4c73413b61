#!/usr/bin/env bash
# utils/spk2utt_to_utt2spk.sh [<spk2utt>] > utt2spk -- the inverse of
# utt2spk_to_spk2utt.sh, utterances sorted (LC_ALL=C).
set -euo pipefail
awk '{ for (i = 2; i <= NF; i++) print $i, $1 }' "${1:--}" | LC_ALL=C sort -k1,1
