#!/usr/bin/env bash
# egs/arabic-digits/run.sh -- one GMM per digit on real speech (UCI Spoken
# Arabic Digit, 13 MFCCs, 66 speakers), every step a pipeline of gmmhmm tools.
#
#   1. UCI text -> Kaldi archive + scp (copy-feats); keys <speaker>-d<digit>-r<rep>
#   2. split by speaker: 50 train speakers, 16 dev speakers (8 male, 8 female)
#   3. per-frame alignments (every frame of an utterance -> its digit's pdf)
#   4. per configuration: gmm-init (k-means++ per pdf) -> gmm-est-gpu (EM) ->
#      gmm-score-gpu | matrix-sum-rows -> pick the best pdf -> accuracy, confusions
#   5. scikit-learn GaussianMixture with the same sizes on the same split (peer)
#   6. HMM-GMMs (../steps/train_word_hmm.sh): per-digit left-to-right HMMs, flat start,
#      Baum-Welch (hmm-bw) + gmm-est-gpu with mixing up, classification by
#      hmm-forward; on MFCC + deltas with per-utterance mean normalisation
#      (add-deltas, compute-cmvn-stats, apply-cmvn), next to one GMM per digit
#      on the same features
#
# Every configuration is trained once per seed (k-means++ seeding differs), and
# the accuracy is reported per seed and as the mean, since one run's accuracy
# moves by a point or two with the initialisation (scikit-learn's too).
#
# Options: --device=auto|cpu|cuda, --configs="diag:4 diag:8 ...", --iters=N,
#          --seeds="1 2 3", --sklearn=true|false, --hmm=true|false, --stage=N.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
export PATH="$root/bin:$PATH"
shared=${GH_SHARED:-$root/../shared}
src=$shared/data/spoken-arabic-digit/Train_Arabic_Digit.txt

device=auto
configs="diag:4 diag:8 diag:16 full:2 full:4 full:8"
iters=20
seeds="1 2 3"
sklearn=true
hmm=true
stage=0
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;;
    --configs=*) configs=${a#*=} ;;
    --iters=*) iters=${a#*=} ;;
    --seeds=*) seeds=${a#*=} ;;
    --sklearn=*) sklearn=${a#*=} ;;
    --hmm=*) hmm=${a#*=} ;;
    --stage=*) stage=${a#*=} ;;
    *) echo "run.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
[ -f "$src" ] || { echo "run.sh: missing $src (set GH_SHARED)" >&2; exit 1; }
for t in copy-feats feat-to-len copy-int-vector gmm-init gmm-est-gpu gmm-score-gpu matrix-sum-rows \
  add-deltas compute-cmvn-stats apply-cmvn hmm-init-topo hmm-bw hmm-forward; do
  command -v $t >/dev/null || { echo "run.sh: $t not built (run make)" >&2; exit 1; }
done

dev_spk="tr_m25 tr_m26 tr_m27 tr_m28 tr_m29 tr_m30 tr_m31 tr_m32 tr_f25 tr_f26 tr_f27 tr_f28 tr_f29 tr_f30 tr_f31 tr_f32"

if [ $stage -le 0 ]; then
  echo "== data preparation"
  mkdir -p data
  awk -f local/uci2text-ark.awk "$src" | copy-feats ark,t:- ark,scp:data/all.ark,data/all.scp
  echo "$dev_spk" | tr ' ' '\n' > data/dev.spk
  awk 'NR == FNR { dev[$1] = 1; next } { split($1, a, "-"); print > (a[1] in dev ? "data/dev.scp" : "data/train.scp") }' \
    data/dev.spk data/all.scp
  for set in train dev; do
    # utt2label: key -> digit (pdf id); alignments: every frame -> that pdf.
    awk '{ split($1, a, "-"); print $1, substr(a[2], 2) }' data/$set.scp > data/$set.utt2label
    feat-to-len scp:data/$set.scp ark,t:- |
      awk 'NR == FNR { lab[$1] = $2; next } { printf "%s", $1; for (i = 0; i < $2; i++) printf " %s", lab[$1]; printf "\n" }' \
        data/$set.utt2label - |
      copy-int-vector ark,t:- ark:data/$set.ali
    echo "$set: $(wc -l < data/$set.scp) utterances, $(feat-to-len scp:data/$set.scp) frames"
    # MFCC + deltas + delta-deltas (39 dims), per-utterance mean normalisation.
    mkdir -p data/dcmn
    add-deltas scp:data/$set.scp ark:- 2>/dev/null | compute-cmvn-stats ark:- ark:data/dcmn/$set.cmvn 2>/dev/null
    add-deltas scp:data/$set.scp ark:- 2>/dev/null |
      apply-cmvn --norm-vars=false ark:data/dcmn/$set.cmvn ark:- ark,scp:data/dcmn/$set.ark,data/dcmn/$set.scp 2>/dev/null
  done
fi

results=exp/results.txt
if [ $stage -le 1 ]; then
  mkdir -p exp
  : > $results
  for cfg in $configs; do
    cov=${cfg%%:*}; ng=${cfg##*:}
    for seed in $seeds; do
      dir=exp/${cov}${ng}_s$seed
      mkdir -p $dir
      echo "== $cfg seed $seed: gmm-init, $iters gmm-est-gpu iterations, gmm-score-gpu"
      gmm-init --device=$device --cov-type=$cov --num-gauss=$ng --seed=$seed --labels=ark:data/train.ali \
        scp:data/train.scp $dir/0.mdl 2> $dir/init.log
      gmm-est-gpu --device=$device --num-iters=$iters $dir/0.mdl scp:data/train.scp ark:data/train.ali \
        $dir/final.mdl 2> $dir/est.log
      grep -E 'iteration' $dir/est.log | tail -1
      gmm-score-gpu --device=$device $dir/final.mdl scp:data/dev.scp ark:- 2> $dir/score.log |
        matrix-sum-rows ark:- ark,t:$dir/dev.totals 2>> $dir/score.log
      ../steps/score_words.sh data/dev.utt2label $dir/dev.totals "gmmhmm $cfg seed $seed" | tee $dir/scoring.txt
      head -1 $dir/scoring.txt >> $results
    done
  done
fi

if [ $stage -le 2 ] && [ "$sklearn" = true ]; then
  echo "== scikit-learn GaussianMixture, same split and sizes"
  python3 local/sklearn_baseline.py --seeds="$seeds" "$src" data/dev.spk $configs | tee -a $results
fi
hmm_results=exp/results_hmm.txt
if [ $stage -le 3 ] && [ "$hmm" = true ]; then
  : > $hmm_results
  echo "== MFCC+deltas+CMN: one GMM per digit (full, 4 Gaussians), for comparison"
  dir=exp/dcmn_full4; mkdir -p $dir
  gmm-init --device=$device --cov-type=full --num-gauss=4 --labels=ark:data/train.ali \
    scp:data/dcmn/train.scp $dir/0.mdl 2> $dir/init.log
  gmm-est-gpu --device=$device --num-iters=$iters $dir/0.mdl scp:data/dcmn/train.scp ark:data/train.ali \
    $dir/final.mdl 2> $dir/est.log
  gmm-score-gpu --device=$device $dir/final.mdl scp:data/dcmn/dev.scp ark:- 2> $dir/score.log |
    matrix-sum-rows ark:- ark,t:$dir/dev.totals 2>> $dir/score.log
  ../steps/score_words.sh data/dev.utt2label $dir/dev.totals "GMM per digit (full, 4), MFCC+deltas+CMN" |
    tee $dir/scoring.txt | head -1 | tee -a $hmm_results
  echo "== MFCC+deltas+CMN: HMM-GMM per digit (8 states, diag, mixed up to 8 Gaussians, 16 iterations)"
  dir=exp/hmm_s8_diag8
  ../steps/train_word_hmm.sh --device=$device --cov=diag --states=8 --gauss=8 --iters=16 \
    scp:data/dcmn/train.scp data/train.utt2label 10 $dir
  gmm-score-gpu --device=$device $dir/final.mdl scp:data/dcmn/dev.scp ark:- 2> $dir/decode.log |
    hmm-forward --device=$device $dir/final.hmm ark:- ark,t:$dir/dev.ll 2>> $dir/decode.log
  ../steps/score_words.sh data/dev.utt2label $dir/dev.ll "HMM-GMM (8 states, diag, 8), MFCC+deltas+CMN" |
    tee $dir/scoring.txt
  head -1 $dir/scoring.txt >> $hmm_results
fi

echo "== summary: dev accuracy per configuration, mean over seeds ($seeds), 13 MFCCs"
local/summarize.sh $results
if [ "$hmm" = true ] && [ -s $hmm_results ]; then
  echo "== summary: MFCC + deltas + per-utterance CMN"
  cat $hmm_results
fi
