#!/usr/bin/env bash
# local/prepare_data.sh -- Kaldi data directories for UCI Spoken Arabic Digit:
#
#   local/prepare_data.sh <Train_Arabic_Digit.txt[.gz]> <data-root>
#
# reads the UCI text, plain or gzipped (gzip -dcf), and writes
# <data-root>/all/{feats.ark,feats.scp} (13 MFCCs, copy-feats from the
# UCI text), <data-root>/train and <data-root>/dev (feats.scp, utt2spk,
# spk2utt, text: one digit word "0".."9" per utterance) and
# <data-root>/lang/words.txt (the digits, one a line; word i = pdf/HMM i).
# Keys <speaker>-d<digit>-r<rep>; 16 dev speakers (tr_m25..32, tr_f25..32),
# the other 50 train.  To run the recipe on another corpus, make the same
# files (validate with utils/validate_data_dir.sh) and pass --train-data and
# --test-data to run.sh instead.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; }
src=$1; data=$2
here=$(cd "$(dirname "$0")" && pwd)
utils=$here/../../utils
[ -f "$src" ] || { echo "prepare_data.sh: missing $src (set GH_SHARED)" >&2; exit 1; }
mkdir -p $data/all $data/train $data/dev $data/lang
all=$(cd $data/all && pwd)
gzip -dcf "$src" | awk -f $here/uci2text-ark.awk | copy-feats ark,t:- ark,scp:$all/feats.ark,$all/feats.scp.tmp 2> $data/all/copy-feats.log
LC_ALL=C sort -k1,1 $all/feats.scp.tmp > $all/feats.scp; rm $all/feats.scp.tmp
dev_spk="tr_m25 tr_m26 tr_m27 tr_m28 tr_m29 tr_m30 tr_m31 tr_m32 tr_f25 tr_f26 tr_f27 tr_f28 tr_f29 tr_f30 tr_f31 tr_f32"
echo "$dev_spk" | tr ' ' '\n' > $data/dev.spk
for set in train dev; do
  awk -v set=$set 'NR == FNR { dev[$1] = 1; next }
    { split($1, a, "-"); if ((a[1] in dev) == (set == "dev")) print }' $data/dev.spk $all/feats.scp > $data/$set/feats.scp
  awk '{ split($1, a, "-"); print $1, a[1] }' $data/$set/feats.scp > $data/$set/utt2spk
  $utils/utt2spk_to_spk2utt.sh $data/$set/utt2spk > $data/$set/spk2utt
  awk '{ split($1, a, "-"); print $1, substr(a[2], 2) }' $data/$set/feats.scp > $data/$set/text
  $utils/validate_data_dir.sh $data/$set
done
seq 0 9 > $data/lang/words.txt
