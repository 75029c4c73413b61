#!/usr/bin/env bash
# egs/arabic-digits/run.sh -- one GMM per digit, and HMM-GMMs, on real speech
# (UCI Spoken Arabic Digit, 13 MFCCs, 66 speakers); every step a gmmhmm tool,
# run as --nj parallel jobs through --cmd (utils/run.sh, utils/slurm.sh).
#
#   stage 0  data: local/prepare_data.sh -> <work>/data/{train,dev,lang}
#            (Kaldi data directories: feats.scp, utt2spk, spk2utt, text; 50
#            train speakers, 16 dev speakers), or --train-data/--test-data
#   stage 1  per configuration and seed: steps/train_gmm.sh (gmm-init, then
#            --iters EM iterations as --nj accumulation jobs -> gmm-sum-accs
#            -> gmm-est), steps/classify.sh (gmm-score-gpu | matrix-sum-rows,
#            the digit with the highest total log-likelihood)
#   stage 2  scikit-learn GaussianMixture with the same sizes on the same
#            split (peer; only on the built-in data)
#   stage 3  MFCC + deltas + per-utterance mean normalisation
#            (steps/make_deltas_cmvn.sh), one GMM per digit (full, 4) and
#            HMM-GMMs per digit (steps/train_word_hmm.sh: flat start,
#            Baum-Welch as --nj jobs, mixing up), classified by hmm-forward;
#            with --viterbi true also by Viterbi training
#            (steps/train_word_hmm_viterbi.sh, one job, same sizes); then per
#            --adapt method a second, speaker-adapted decoding pass of each
#            dev speaker (steps/adapt_words.sh: unsupervised, from the first
#            pass's recognised digits; MAP tau 2, 2 passes, the setting picked
#            on FSDD by leaving a TRAINING speaker out, not on these dev
#            speakers; every setting tried: local/adapt_grid.sh, RESULTS)
#   stage 4  summary -> <work>/results.txt (printed)
#
# Every configuration is trained once per seed (k-means++ seeding differs), and
# the accuracy is reported per seed and as the mean, since one run's accuracy
# moves by a point or two with the initialisation (scikit-learn's too).
#
# Options (--name value or --name=value):
#   --work DIR        where data/ and exp/ go [/tmp/gmmhmm-$USER/arabic-digits]
#   --nj 4 --cmd utils/run.sh   parallel jobs and their launcher (e.g.
#                     --cmd "utils/slurm.sh --mem 2G", --cmd "utils/run.sh --gpu 1")
#   --device auto     auto, cpu, cpu-ref, cuda, cuda:N, opencl, opencl:P:D
#   --seed "1 2 3"    seeds of the GMM configurations (--seeds is the same)
#   --stage 0 --stop-stage 4
#   --train-data DIR --test-data DIR   your own data directories (feats.scp
#                     or wav.scp, utt2spk, spk2utt, text with one word per
#                     utterance) instead of stage 0's; --words FILE lists the
#                     words (default: those of the training text)
#   --configs "diag:4 diag:8 diag:16 full:2 full:4 full:8" --iters 20
#   --sklearn true --hmm true
#   --hmm-states 8 --hmm-gauss 8 --hmm-iters 16   stage 3's HMM-GMM sizes
#   --viterbi true    also train the HMM-GMMs by Viterbi training
#   --ranks 1         GMM and HMM-GMM training as one resident job (gmm-train,
#                     hmm-train) of N MPI ranks started by --cmd; 0: per-iteration
#                     --nj jobs (acc -> sum -> est processes)
#   --adapt map       second pass adapted per dev speaker: map, fmllr, none,
#                     or several ("map fmllr"); --mean-tau 2 --adapt-passes 2
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(dirname "$here"); root=$(dirname "$egs")
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
shared=${GH_SHARED:-$root/../shared}
src=$shared/data/spoken-arabic-digit/Train_Arabic_Digit.txt
[ -f "$src" ] || [ ! -f "$src.gz" ] || src=$src.gz   # the corpus as shipped: plain or gzipped

work=/tmp/gmmhmm-$(id -un)/arabic-digits
nj=4; cmd=utils/run.sh; device=auto
configs="diag:4 diag:8 diag:16 full:2 full:4 full:8"
iters=20; seed="1 2 3"; seeds=; sklearn=true; hmm=true; stage=0; stop_stage=4
train_data=; test_data=; words=
hmm_states=8; hmm_gauss=8; hmm_iters=16; viterbi=true; adapt=map; mean_tau=2; adapt_passes=2; ranks=1
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "run.sh: unexpected argument $1 (options are --name value)" >&2; exit 1; }
[ -z "$seeds" ] || seed=$seeds
for m in $adapt; do
  case $m in map|fmllr|none) ;; *) echo "run.sh: --adapt must be map, fmllr, none or a list of them" >&2; exit 1 ;; esac
done
adapt=$(echo $adapt | tr ' ' '\n' | grep -vx none | tr '\n' ' ' || true)
if [ -n "$train_data$test_data" ]; then
  [ -n "$train_data" ] && [ -n "$test_data" ] || { echo "run.sh: give both --train-data and --test-data" >&2; exit 1; }
  train_data=$(cd "$train_data" && pwd); test_data=$(cd "$test_data" && pwd)
  [ -z "$words" ] || words=$(cd "$(dirname "$words")" && pwd)/$(basename "$words")
  sklearn=false
elif [ ! -f "$src" ]; then
  echo "run.sh: missing $src (set GH_SHARED, or give --train-data and --test-data)" >&2; exit 1
fi
for t in copy-feats feat-to-len gmm-init gmm-acc-stats-gpu gmm-sum-accs gmm-est gmm-score-gpu matrix-sum-rows \
  add-deltas compute-cmvn-stats apply-cmvn hmm-init-topo hmm-bw hmm-sum-accs hmm-est hmm-forward \
  hmm-viterbi gmm-est-gpu copy-int-vector gmm-adapt-map gmm-est-fmllr transform-feats; do
  command -v $t >/dev/null || { echo "run.sh: $t not built (run make in $root)" >&2; exit 1; }
done
origin=$(pwd)   # where run.sh was called from (relative names in --train-data scp files)
mkdir -p "$work"; work=$(cd "$work" && pwd); cd "$work"
ln -sfn "$egs/steps" steps; ln -sfn "$egs/utils" utils   # as Kaldi recipes link them
echo "run.sh: working in $work"
results=$work/results.txt

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  echo "== stage 0: data directories"
  rm -rf data/train data/dev data/*_dcmn
  if [ -n "$train_data" ]; then
    mkdir -p data/lang
    for s in "train:$train_data" "dev:$test_data"; do
      set_=${s%%:*}; d=${s#*:}; mkdir -p data/"$set_"
      # relative names in the scp files (kaldiio writes them) made absolute, or an error naming the line
      (cd "$origin" && "$egs/utils/copy_data_dir.sh" "$d" "$work/data/$set_")
      utils/validate_data_dir.sh data/"$set_"
      [ -f data/"$set_"/feats.scp ] || steps/make_mfcc.sh --nj $nj --cmd "$cmd" data/"$set_"
    done
    if [ -n "$words" ]; then cp "$words" data/lang/words.txt
    else awk '{ print $2 }' data/train/text | LC_ALL=C sort -u > data/lang/words.txt; fi
  else
    local_prep=$here/local/prepare_data.sh
    $local_prep "$src" data
  fi
  for s in train dev; do
    # every feature file must be readable now, not in a job log later
    nf=$(feat-to-len scp:data/$s/feats.scp 2> data/$s/feat-to-len.log) ||
      { echo "run.sh: cannot read the features of data/$s/feats.scp: $(grep ERROR data/$s/feat-to-len.log | tail -1)" >&2; exit 1; }
    echo "$s: $(wc -l < data/$s/feats.scp) utterances, $nf frames"
  done
fi

if [ $stage -gt 0 ] && [ $stop_stage -ge 1 ]; then
  for f in data/train/feats.scp data/dev/feats.scp data/lang/words.txt; do
    [ -f $f ] || { echo "run.sh: --stage $stage needs $work/$f from stage 0 (run with --stage 0 first)" >&2; exit 1; }
  done
fi
if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  echo "== stage 1: one GMM per digit, seeds $seed"
  for cfg in $configs; do
    cov=${cfg%%:*}; ng=${cfg##*:}
    for s in $seed; do
      dir=exp/${cov}${ng}_s$s
      echo "-- $cfg seed $s: steps/train_gmm.sh (gmm-init, $iters iterations $([ "$ranks" = 0 ] && echo "as $nj jobs" || echo "in one gmm-train job of $ranks rank(s)")), steps/classify.sh"
      steps/train_gmm.sh --nj $nj --ranks $ranks --cmd "$cmd" --device $device --words data/lang/words.txt --cov-type "$cov" \
        --num-gauss "$ng" --num-iters $iters --seed "$s" data/train "$dir" | tail -1
      steps/classify.sh --nj $nj --cmd "$cmd" --device $device --name "gmmhmm $cfg seed $s" \
        data/dev data/lang/words.txt "$dir" "$dir"/decode_dev | head -1
    done
  done
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ] && [ "$sklearn" = true ]; then
  echo "== stage 2: scikit-learn GaussianMixture, same split and sizes"
  mkdir -p exp/sklearn
  python3 "$here/local/sklearn_baseline.py" --seeds="$seed" "$src" data/dev.spk $configs | tee exp/sklearn/results.txt
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ] && [ "$hmm" = true ]; then
  echo "== stage 3: MFCC + deltas + per-utterance CMN"
  for s in train dev; do
    steps/make_deltas_cmvn.sh --nj $nj --cmd "$cmd" --order deltas-cmvn --cmvn utterance data/$s data/${s}_dcmn
  done
  echo "-- one GMM per digit (full, 4 Gaussians), for comparison"
  dir=exp/dcmn_full4
  steps/train_gmm.sh --nj $nj --ranks $ranks --cmd "$cmd" --device $device --words data/lang/words.txt --cov-type full \
    --num-gauss 4 --num-iters $iters --seed 1 data/train_dcmn $dir | tail -1
  steps/classify.sh --nj $nj --cmd "$cmd" --device $device --name "GMM per digit (full, 4), MFCC+deltas+CMN" \
    data/dev_dcmn data/lang/words.txt $dir $dir/decode_dev | head -1
  hsys="BW:exp/hmm_s${hmm_states}_diag${hmm_gauss}"
  [ "$viterbi" != true ] || hsys+=" Viterbi:exp/hmm_s${hmm_states}_diag${hmm_gauss}_vit"
  for h in $hsys; do
    tr=${h%%:*}; dir=${h#*:}
    echo "-- HMM-GMM per digit ($hmm_states states, diag, mixed up to $hmm_gauss Gaussians, $hmm_iters iterations, $tr)"
    if [ "$tr" = BW ]; then
      steps/train_word_hmm.sh --nj $nj --cmd "$cmd" --device $device --cov diag --states $hmm_states \
        --ranks $ranks --gauss $hmm_gauss --iters $hmm_iters data/train_dcmn data/lang/words.txt "$dir"
    else
      # the Viterbi trainer takes utterance -> word index (line of words.txt, 0-based)
      mkdir -p "$dir"
      awk 'NR == FNR { id[$1] = FNR - 1; next } { print $1, id[$2] }' data/lang/words.txt data/train_dcmn/text \
        > "$dir"/utt2word
      steps/train_word_hmm_viterbi.sh --device=$device --cov=diag --states=$hmm_states --gauss=$hmm_gauss \
        --ranks=$ranks \
        --iters=$hmm_iters scp:data/train_dcmn/feats.scp "$dir"/utt2word $(wc -l < data/lang/words.txt) "$dir" | tail -1
    fi
    name="HMM-GMM ($hmm_states states, diag, $hmm_gauss, $tr), MFCC+deltas+CMN"
    steps/classify.sh --nj $nj --cmd "$cmd" --device $device --hmm true \
      --name "$name" data/dev_dcmn data/lang/words.txt "$dir" "$dir"/decode_dev
    rm -rf "$dir"/decode_dev_map "$dir"/decode_dev_fmllr
    for m in $adapt; do
      steps/adapt_words.sh --device $device --method "$m" --mean-tau $mean_tau --passes $adapt_passes \
        --name "$name, adapted per dev speaker ($m$([ "$m" = map ] && echo " tau $mean_tau"), $adapt_passes passes)" \
        data/dev_dcmn data/lang/words.txt "$dir" "$dir"/decode_dev "$dir"/decode_dev_"$m"
    done
  done
fi

if [ $stop_stage -ge 4 ]; then
  dim=$(feat-to-dim scp:data/train/feats.scp - 2>/dev/null || echo "?")
  if [ -n "$train_data" ]; then
    datadesc="--train-data $train_data ($(wc -l < data/train/feats.scp) utterances), --test-data $test_data ($(wc -l < data/dev/feats.scp) utterances)"
    featdesc="the data directories' features ($dim dimensions)"
  else
    datadesc="UCI Spoken Arabic Digit, 50 training speakers, 16 dev speakers ($src)"
    featdesc="$dim MFCCs"
  fi
  {
    echo "# arabic-digits recipe: dev accuracy ($(date -u +%Y-%m-%d), nj $nj, device $device)"
    echo "# data: $datadesc"
    # The scoring.txt of every --configs x --seed model in <work>/exp, whichever stages ran now.
    for cfg in $configs; do for s in $seed; do
      f=exp/${cfg%%:*}${cfg##*:}_s$s/decode_dev/scoring.txt
      [ ! -f "$f" ] || head -1 "$f"
    done; done > exp/gmm_results.txt
    [ ! -f exp/sklearn/results.txt ] || cat exp/sklearn/results.txt >> exp/gmm_results.txt
    if [ -s exp/gmm_results.txt ]; then
      echo "== per configuration, mean over seeds (min..max), $featdesc"
      "$here/local/summarize.sh" exp/gmm_results.txt
    fi
    h=exp/hmm_s${hmm_states}_diag${hmm_gauss}
    if ls $h*/decode_dev/scoring.txt exp/dcmn_full4/decode_dev/scoring.txt > /dev/null 2>&1; then
      echo "== MFCC + deltas + per-utterance CMN"
      for f in exp/dcmn_full4/decode_dev/scoring.txt $h/decode_dev*/scoring.txt ${h}_vit/decode_dev*/scoring.txt; do
        [ ! -f "$f" ] || head -1 "$f"
      done
    fi
  } > "$results".tmp
  mv "$results".tmp "$results"
  # pictures beside results.txt: training log-likelihood per iteration of every
  # model trained, and the confusion matrix of the last system of results.txt
  # (the HMM-GMM, adapted if run, else the GMM per digit)
  rm -f loglike.png confusion.png
  dirs=$(for d in exp/*/; do
    if ls "$d"log/update.*.log > /dev/null 2>&1 || ls "$d"est.*.log > /dev/null 2>&1 ||
       ls "$d"log/train*.log > /dev/null 2>&1 || ls "$d"train.log > /dev/null 2>&1; then echo "$d"; fi; done)
  [ -z "$dirs" ] || python3 utils/plot_results.py loglike loglike.png "Arabic digits: training" $dirs ||
    echo "run.sh: no loglike.png (see the message above)" >&2
  last=
  for f in $(for cfg in $configs; do for s in $seed; do echo "exp/${cfg%%:*}${cfg##*:}_s$s/decode_dev/scoring.txt"; done; done) \
    exp/dcmn_full4/decode_dev/scoring.txt $h/decode_dev/scoring.txt $h/decode_dev_*/scoring.txt; do
    [ ! -f "$f" ] || last=$f
  done
  [ -z "$last" ] || python3 utils/plot_results.py confusion confusion.png "Arabic digits: $(head -1 "$last" | sed 's/: accuracy.*//')" \
    data/lang/words.txt "$last" || echo "run.sh: no confusion.png (see the message above)" >&2
  echo "== results ($results)"
  cat "$results"
fi
