#!/usr/bin/env bash
# utils/utt2spk_to_spk2utt.sh [<utt2spk>] > spk2utt -- "utt spk" lines to
# "spk utt1 utt2 ..." lines, speakers sorted (LC_ALL=C), utterances in input
# order (Kaldi's utils/utt2spk_to_spk2utt.pl).
set -euo pipefail
awk '{ if (!($2 in s)) o[++k] = $2; s[$2] = s[$2] " " $1 } END { for (i = 1; i <= k; i++) print o[i] s[o[i]] }' "${1:--}" |
  LC_ALL=C sort -k1,1
