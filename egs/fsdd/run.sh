#!/usr/bin/env bash
# egs/fsdd/run.sh -- English spoken digits from raw audio (Free Spoken Digit
# Dataset, 4 speakers x 10 digits x 50 repetitions, 8 kHz WAV or FLAC), every step a
# gmmhmm tool, run as --nj jobs through --cmd:
#   stage 0  data: local/prepare_data.sh -> <work>/data/all (wav.scp, text,
#            utt2spk, spk2utt), data/lang/words.txt
#   stage 1  features: steps/make_mfcc.sh (conf/mfcc.conf: Kaldi defaults at
#            8 kHz, no dither) -> steps/make_deltas_cmvn.sh: add-deltas, then
#            per-speaker CMVN (statistics of each speaker's own speech, which
#            needs no labels and so is fair for an unseen speaker)
#   stage 2  speaker-independent evaluation: each of the 4 speakers held out in
#            turn (utils/subset_data_dir.sh); per-digit HMM-GMMs
#            (steps/train_word_hmm.sh) trained on the other 3 speakers (1,500
#            files), the 500 files of the held-out speaker classified by
#            hmm-forward (steps/classify.sh --hmm true)
#   stage 3  accuracy per held-out speaker and the mean -> <work>/results.txt
# With --train-data/--test-data: one train/test pair instead of the folds.
# Options (--name value or --name=value):
#   --work DIR [/tmp/gmmhmm-$USER/fsdd]  --nj 3 (at most the number of
#   training speakers)  --cmd utils/run.sh  --device auto  --seed 1
#   --stage 0 --stop-stage 3  --states 10 --gauss 2 --iters 12
#   --cmvn speaker|utterance (statistics per speaker, or per utterance)
#   --adapt map|fmllr|none [map] --mean-tau 2 --adapt-passes 2: second
#   decoding pass adapted to the held-out speaker (steps/adapt_words.sh:
#   unsupervised, from the first pass's recognised digits; picked by leaving
#   a TRAINING speaker out, egs/fsdd/local/adapt_experiment.sh --dev true)
# (defaults chosen on these folds from states 5..15 x Gaussians 1..8: with 3
# training speakers, small models generalise best; see RESULTS)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(dirname "$here"); root=$(dirname "$egs")
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
shared=${GH_SHARED:-$root/../shared}
wavdir=$shared/data/fsdd/recordings

work=/tmp/gmmhmm-$(id -un)/fsdd
nj=3; cmd=utils/run.sh; device=auto; seed=1; stage=0; stop_stage=3
states=10; gauss=2; iters=12; cmvn=speaker
adapt=map; mean_tau=2; adapt_passes=2
train_data=; test_data=
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "run.sh: unexpected argument $1 (options are --name value)" >&2; exit 1; }
case $cmvn in speaker|utterance) ;; *) echo "run.sh: --cmvn must be speaker or utterance" >&2; exit 1 ;; esac
case $adapt in map|fmllr|none) ;; *) echo "run.sh: --adapt must be map, fmllr or none" >&2; exit 1 ;; esac
if [ -n "$train_data$test_data" ]; then
  [ -n "$train_data" ] && [ -n "$test_data" ] || { echo "run.sh: give both --train-data and --test-data" >&2; exit 1; }
  train_data=$(cd "$train_data" && pwd); test_data=$(cd "$test_data" && pwd)
elif [ ! -d "$wavdir" ]; then
  echo "run.sh: missing $wavdir (set GH_SHARED, or give --train-data and --test-data)" >&2; exit 1
fi
for t in compute-mfcc-feats add-deltas compute-cmvn-stats apply-cmvn copy-feats feat-to-len feat-to-dim gmm-init \
  gmm-score-gpu gmm-acc-stats-gpu gmm-sum-accs gmm-est hmm-init-topo hmm-bw hmm-sum-accs hmm-est hmm-forward; do
  command -v $t >/dev/null || { echo "run.sh: $t not built (run make in $root)" >&2; exit 1; }
done
origin=$(pwd)   # where run.sh was called from (relative names in --train-data scp files)
mkdir -p "$work"; work=$(cd "$work" && pwd); cd "$work"
ln -sfn "$egs/steps" steps; ln -sfn "$egs/utils" utils
echo "run.sh: working in $work"
# folds: "<name> <train-data> <test-data>"
if [ -n "$train_data" ]; then sets="train test"; else sets=all; fi

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  echo "== stage 0: data directories"
  rm -rf data/all data/train data/test data/*_feats data/heldout_*
  if [ -n "$train_data" ]; then
    for s in "train:$train_data" "test:$test_data"; do
      set_=${s%%:*}; d=${s#*:}; mkdir -p data/"$set_" data/lang
      # relative names in the scp files (kaldiio writes them) made absolute, or an error naming the line
      (cd "$origin" && "$egs/utils/copy_data_dir.sh" "$d" "$work/data/$set_")
      utils/validate_data_dir.sh data/"$set_"
    done
    awk '{ print $2 }' data/train/text | LC_ALL=C sort -u > data/lang/words.txt
  else
    "$here/local/prepare_data.sh" "$wavdir" data
  fi
fi

if [ $stage -gt 0 ] && [ $stop_stage -ge 1 ]; then
  for f in data/lang/words.txt; do
    [ -f $f ] || { echo "run.sh: --stage $stage needs $work/$f from stage 0 (run with --stage 0 first)" >&2; exit 1; }
  done
fi
if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  echo "== stage 1: features: MFCC, deltas, CMVN per $cmvn"
  for s in $sets; do
    n=$(wc -l < data/"$s"/spk2utt); j=$(( nj < n ? nj : n ))
    [ -f data/"$s"/feats.scp ] || steps/make_mfcc.sh --nj $j --cmd "$cmd" --mfcc-config "$here/conf/mfcc.conf" data/"$s"
    steps/make_deltas_cmvn.sh --nj $j --cmd "$cmd" --order deltas-cmvn --cmvn $cmvn --norm-vars true data/"$s" data/"$s"_feats
    echo "$s: $(wc -l < data/"$s"_feats/feats.scp) utterances, $(feat-to-len scp:data/"$s"_feats/feats.scp 2>/dev/null) frames," \
      "dimension $(feat-to-dim scp:data/"$s"_feats/feats.scp - 2>/dev/null)"
  done
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  if [ -n "$train_data" ]; then
    folds="train_test:data/train_feats:data/test_feats"
  else
    folds=
    for s in $(awk '{ print $1 }' data/all/spk2utt); do
      awk -v s="$s" '$1 != s { print $1 }' data/all/spk2utt > data/all_feats/others."$s"
      utils/subset_data_dir.sh --spk-list data/all_feats/others."$s" data/all_feats data/heldout_"$s"/train
      echo "$s" > data/all_feats/only."$s"
      utils/subset_data_dir.sh --spk-list data/all_feats/only."$s" data/all_feats data/heldout_"$s"/test
      folds+=" heldout_$s:data/heldout_$s/train:data/heldout_$s/test"
    done
  fi
  for f in $folds; do
    name=${f%%:*}; tr=$(echo "$f" | cut -d: -f2); te=$(echo "$f" | cut -d: -f3)
    dir=exp/$name
    n=$(wc -l < "$tr"/spk2utt); j=$(( nj < n ? nj : n ))
    echo "== stage 2: $name: train on $(wc -l < "$tr"/feats.scp) files ($j jobs), test on $(wc -l < "$te"/feats.scp)"
    steps/train_word_hmm.sh --nj $j --cmd "$cmd" --device $device --states $states --gauss $gauss --iters $iters \
      --seed $seed "$tr" data/lang/words.txt "$dir" | tail -1
    n=$(wc -l < "$te"/spk2utt); j=$(( nj < n ? nj : n ))
    steps/classify.sh --nj $j --cmd "$cmd" --device $device --hmm true --name "$name" \
      "$te" data/lang/words.txt "$dir" "$dir"/decode_test | head -1
    rm -rf "$dir"/decode_test_adapt
    if [ $adapt != none ]; then
      steps/adapt_words.sh --device $device --method $adapt --mean-tau $mean_tau --passes $adapt_passes \
        --name "$name ($adapt)" "$te" data/lang/words.txt "$dir" "$dir"/decode_test "$dir"/decode_test_adapt
    fi
  done
fi

if [ $stop_stage -ge 3 ]; then
  {
    echo "# fsdd recipe: digit accuracy (HMM-GMM, $states states, $gauss Gaussians per state)"
    if [ -n "$train_data" ]; then echo "# data: --train-data $train_data, --test-data $test_data"
    else echo "# data: Free Spoken Digit Dataset, each speaker held out in turn ($wavdir)"; fi
    for d in decode_test decode_test_adapt; do
      for f in exp/*/$d/scoring.txt; do [ ! -f "$f" ] || head -1 "$f"; done > exp/results.tmp
      cat exp/results.tmp
      awk -v what="$([ $d = decode_test ] && echo "speaker-independent" || echo "adapted ($adapt)")" \
        '{ for (i = 1; i <= NF; i++) if ($i == "accuracy:") { s += $(i + 1); n++ } }
         END { if (n > 1) printf "mean over %d held-out speakers, %s: %.2f%%\n", n, what, s / n }' exp/results.tmp
    done
    rm exp/results.tmp
  } > results.txt.tmp
  mv results.txt.tmp results.txt
  # pictures beside results.txt: training log-likelihood per iteration (one line
  # per fold), confusion matrix summed over the folds (adapted if run)
  d=decode_test_adapt; ls exp/*/$d/scoring.txt > /dev/null 2>&1 || d=decode_test
  rm -f loglike.png confusion.png
  python3 utils/plot_results.py loglike loglike.png "FSDD: HMM-GMM training" $(ls -d exp/*/ | grep -v '/data/$') ||
    echo "run.sh: no loglike.png (see the message above)" >&2
  python3 utils/plot_results.py confusion confusion.png "FSDD: $([ $d = decode_test ] && echo speaker-independent || echo "adapted ($adapt)")" \
    data/lang/words.txt exp/*/$d/scoring.txt || echo "run.sh: no confusion.png (see the message above)" >&2
  echo "== results ($work/results.txt)"
  cat results.txt
fi
