#!/usr/bin/env bash
# egs/yesno/run.sh -- connected-word recognition from raw WAV on Kaldi's yesno
# corpus (one speaker, 8 words "yes"/"no" per file, silence around and between
# them), every step a gmmhmm tool, run as --nj jobs through --cmd:
#
#   stage 0  data: local/prepare_data.sh -> <work>/data/{train,test,lang}
#            (wav.scp, text, utt2spk, spk2utt; first 20 sorted files train,
#            last 10 test), or --train-data/--test-data
#   stage 1  features: steps/make_mfcc.sh (conf/mfcc.conf: 8 kHz, 13 cepstra
#            with C0, no dither, as Kaldi's egs/yesno/s5) ->
#            steps/make_deltas_cmvn.sh (per-utterance CMN, then deltas: 39 dims)
#   stage 2  training (--train): viterbi (default) = local/train_viterbi.sh:
#            word HMMs "yes" and "no" (--states each, left-to-right) and a
#            5-state ergodic silence "sil" (Kaldi's); HTK's flat start (every
#            pdf the global mean and variance) and 5 Baum-Welch passes, then
#            --iters Viterbi iterations (realign: hmm-viterbi --gmm
#            --transcripts, every file starting and ending in silence, optional
#            silence between words; gmm-acc-stats-gpu --label-type=ali ->
#            gmm-sum-accs -> gmm-est), mixing up to --gauss per pdf over the
#            first half; every step as --nj jobs through --cmd, logs in
#            exp/mono/log/ with Kaldi's header lines; --seed for gmm-init and
#            the mix-up.  bw = steps/train_word_hmm.sh: the same words, a
#            --sil-states left-to-right silence, optional edge silence, --iters
#            Baum-Welch iterations, single Gaussians for the first quarter, then
#            mixing up to --gauss until half-way
#   stage 3  decoding: steps/decode_words.sh: word loop (yes | no | sil)*
#            (hmm-make-loop: --word-penalty nats per word entered;
#            --loop-silence-prob: after a word, the silence with this
#            probability, 1 = a silence between any two words, so one long word
#            cannot be decoded as two; with --train viterbi paths start and end
#            in silence), hmm-viterbi --gmm -> compute-wer on the test
#            and (sanity) train files
#   stage 4  <work>/results.txt and loglike.png (printed)
#
# Options (--name value or --name=value):
#   --work DIR [/tmp/gmmhmm-$USER/yesno]  --nj 2  --cmd utils/run.sh
#   --device auto  --seed 1  --stage 0  --stop-stage 4
#   --train-data DIR --test-data DIR  (wav.scp or feats.scp, utt2spk, spk2utt, text;
#                 a one-speaker directory is split per utterance for the jobs)
#   --words FILE  the words, one a line, HMM i = line i (default: yes, no for the
#                 built-in data, else the training text's words, sorted)
#   --train viterbi|bw [viterbi]  --states 8 --sil-states 3 (bw only) --gauss 8 --iters 30
#   --word-penalty 20 --loop-silence-prob 1 --acoustic-scale 1 (Kaldi decodes with 0.1)
#   --ranks 1: training as resident jobs (hmm-train) of N MPI ranks started by
#     --cmd; 0: one process per step per iteration (--nj, --cmd)
# The defaults were chosen by 5-fold cross-validation over all 30 files
# (local/cv_experiment.sh; the table is in RESULTS).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(dirname "$here"); root=$(dirname "$egs")
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
shared=${GH_SHARED:-$root/../shared}
src=$shared/data/yesno/waves

work=/tmp/gmmhmm-$(id -un)/yesno
nj=2; cmd=utils/run.sh; device=auto; seed=1; stage=0; stop_stage=4
train_data=; test_data=; words=
states=8        # per word (5-fold CV over the 30 files, RESULTS)
sil_states=3
gauss=8         # Gaussians per pdf after mixing up
iters=30
word_penalty=20 # nats per word entered in the loop
loop_silence_prob=1 # after a word, the loop's silence with this probability (decode_words.sh)
acoustic_scale=1
train=viterbi   # viterbi: local/train_viterbi.sh; bw: steps/train_word_hmm.sh (see RESULTS)
ranks=1         # training as resident jobs (hmm-train) of N MPI ranks; 0: per-iteration jobs
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "run.sh: unexpected argument $1 (options are --name value)" >&2; exit 1; }
case $train in viterbi|bw) ;; *) echo "run.sh: --train must be viterbi or bw" >&2; exit 1 ;; esac
if [ -n "$train_data$test_data" ]; then
  [ -n "$train_data" ] && [ -n "$test_data" ] || { echo "run.sh: give both --train-data and --test-data" >&2; exit 1; }
  train_data=$(cd "$train_data" && pwd); test_data=$(cd "$test_data" && pwd)
  [ -z "$words" ] || words=$(cd "$(dirname "$words")" && pwd)/$(basename "$words")
elif ! ls "$src"/*.wav >/dev/null 2>&1; then
  echo "run.sh: no WAVs in $src (set GH_SHARED, or give --train-data and --test-data)" >&2; exit 1
fi
for t in compute-mfcc-feats compute-cmvn-stats apply-cmvn add-deltas copy-feats feat-to-len copy-post gmm-init \
  gmm-score-gpu gmm-acc-stats-gpu gmm-sum-accs gmm-est hmm-init-topo hmm-bw hmm-sum-accs hmm-est hmm-make-loop \
  hmm-viterbi compute-wer; do
  command -v $t >/dev/null || { echo "run.sh: $t not built (run make in $root)" >&2; exit 1; }
done
start=$(date +%s)
origin=$(pwd)   # where run.sh was called from (relative names in --train-data scp files)
mkdir -p "$work"; work=$(cd "$work" && pwd); cd "$work"
ln -sfn "$egs/steps" steps; ln -sfn "$egs/utils" utils
echo "run.sh: working in $work"
dir=exp/mono

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  echo "== stage 0: data directories"
  rm -rf data/train data/test data/*_feats
  if [ -n "$train_data" ]; then
    for s in "train:$train_data" "test:$test_data"; do
      set_=${s%%:*}; d=${s#*:}; mkdir -p data/"$set_"
      # relative names in the scp files (kaldiio writes them) made absolute, or an error naming the line
      (cd "$origin" && "$egs/utils/copy_data_dir.sh" "$d" "$work/data/$set_")
      utils/validate_data_dir.sh data/"$set_"
    done
  else
    "$here/local/prepare_data.sh" "$src" data
  fi
fi

if [ $stage -gt 0 ] && [ $stop_stage -ge 1 ]; then
  for f in data/train/text data/test/text; do
    [ -f $f ] || { echo "run.sh: --stage $stage needs $work/$f from stage 0 (run with --stage 0 first)" >&2; exit 1; }
  done
fi
if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  echo "== stage 1: features: MFCC (8 kHz, no dither, C0), per-utterance CMN, deltas"
  for s in train test; do
    [ -f data/$s/wav.scp ] && steps/make_mfcc.sh --nj $nj --cmd "$cmd" --mfcc-config "$here/conf/mfcc.conf" data/$s
    steps/make_deltas_cmvn.sh --nj $nj --cmd "$cmd" --order cmvn-deltas --cmvn utterance data/$s data/${s}_feats
    echo "$s: $(wc -l < data/${s}_feats/feats.scp) utterances, $(feat-to-len scp:data/${s}_feats/feats.scp 2>/dev/null) frames"
  done
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  if [ "$ranks" = 0 ]; then how="$nj jobs per step"; else how="resident hmm-train, $ranks rank(s)"; fi
  if [ $train = viterbi ]; then
    echo "== stage 2: training (local/train_viterbi.sh, $how): words ($states states), sil (5 states, ergodic)," \
      "flat start + 5 Baum-Welch passes, $iters Viterbi iterations, up to $gauss Gaussians per pdf"
  else
    echo "== stage 2: training (steps/train_word_hmm.sh, $how): words ($states states), sil ($sil_states states," \
      "left-to-right), flat start, $iters Baum-Welch iterations, up to $gauss Gaussians per pdf"
  fi
  mkdir -p data/lang
  awk '{ for (i = 2; i <= NF; i++) print $i }' data/train/text | LC_ALL=C sort -u | grep -vx sil > data/lang/words.txt.tmp
  # the corpus' own order (yes, no) when it is the built-in data
  if [ -n "$words" ]; then cp "$words" data/lang/words.txt; rm data/lang/words.txt.tmp
  elif [ -z "$train_data" ]; then printf 'yes\nno\n' > data/lang/words.txt; rm data/lang/words.txt.tmp
  else mv data/lang/words.txt.tmp data/lang/words.txt; fi
  if [ $train = viterbi ]; then
    rm -rf $dir
    "$here"/local/train_viterbi.sh --nj $nj --cmd "$cmd" --seed $seed --device $device --ranks $ranks --init flat-bw \
      --states $states --sil-states 5 --sil-topology ergodic --gauss $gauss --iters $iters \
      --words data/lang/words.txt data/train_feats $dir
  else
  steps/train_word_hmm.sh --nj $nj --cmd "$cmd" --device $device --ranks $ranks \
    --states $states --silence sil \
    --sil-states $sil_states --gauss $gauss --iters $iters --flat-start global --skip-prob 0 --self-loop-prob 0.8 \
    --mixup-start $(( iters / 4 + 1 )) --mixup-end $(( iters / 2 )) --seed $seed --est-seed 0 \
    data/train_feats data/lang/words.txt $dir | awk 'NR == 1 || NR % 5 == 0'
  fi
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  echo "== stage 3: decoding: word loop (yes | no | sil)*, word penalty $word_penalty, silence after a word" \
    "with probability $loop_silence_prob, acoustic scale $acoustic_scale"
  for s in test train; do
    steps/decode_words.sh --nj $nj --cmd "$cmd" --device $device --silence sil --word-penalty $word_penalty \
      --loop-silence-prob $loop_silence_prob \
      --edge-silence $([ $train = viterbi ] && echo true || echo false) \
      --acoustic-scale $acoustic_scale data/${s}_feats $dir $dir/decode_$s > /dev/null
  done
  echo "== decoded word sequences of the test files (reference | hypothesis)"
  awk 'NR == FNR { ref[$1] = $0; sub(/^[^ ]+ /, "", ref[$1]); next }
       { k = $1; $1 = ""; sub(/^ /, ""); printf "%s  %-40s | %s%s\n", k, ref[k], $0, ref[k] == $0 ? "" : "   <-- error" }' \
    data/test_feats/text $dir/decode_test/hyp.txt
fi

if [ $stop_stage -ge 4 ]; then
  {
    echo "# yesno recipe: word error rates (details: $dir/decode_*/per_utt)"
    if [ -n "$train_data" ]; then echo "# data: --train-data $train_data, --test-data $test_data"
    else echo "# data: Kaldi's yesno corpus, first 20 sorted files train, last 10 test ($src)"; fi
    for s in train test; do
      [ ! -f $dir/decode_$s/wer.txt ] || echo "$s ($(wc -l < data/${s}_feats/text) files): $(head -1 $dir/decode_$s/wer.txt)"
    done
  } > results.txt.tmp
  mv results.txt.tmp results.txt
  rm -f loglike.png   # the picture beside results.txt: training log-likelihood per iteration
  python3 utils/plot_results.py loglike loglike.png "yes/no: training ($train)" $dir ||
    echo "run.sh: no loglike.png (see the message above)" >&2
  echo "== results ($work/results.txt)"
  cat results.txt
  echo "(run.sh took $(( $(date +%s) - start )) s)"
fi
