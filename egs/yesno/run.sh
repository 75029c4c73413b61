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
#   stage 2  training: steps/train_word_hmm.sh: word HMMs "yes" and "no"
#            (--states each) and silence "sil" (--sil-states); flat start from
#            the global mean and variance; --iters iterations of gmm-score-gpu |
#            hmm-bw --transcripts --optional-silence=sil as --nj jobs ->
#            hmm-est, gmm-est; single Gaussians for the first quarter of the
#            iterations, then mixing up to --gauss per pdf until half-way
#   stage 3  decoding: steps/decode_words.sh: word loop (yes | no | sil)*
#            (hmm-make-loop, word insertion penalty), gmm-score-gpu |
#            hmm-viterbi -> compute-wer on the test and (sanity) train files
#   stage 4  <work>/results.txt (printed)
#
# Options (--name value or --name=value):
#   --work DIR [/tmp/gmmhmm-$USER/yesno]  --nj 2  --cmd utils/run.sh
#   --device auto  --seed 1  --stage 0  --stop-stage 4
#   --train-data DIR --test-data DIR  (wav.scp or feats.scp, utt2spk, spk2utt, text)
#   --words FILE  the words, one a line, HMM i = line i (default: yes, no for the
#                 built-in data, else the training text's words, sorted)
#   --states 5 --sil-states 3 --gauss 8 --iters 30 --word-penalty 20
#   --acoustic-scale 1 (Kaldi decodes with 0.1)
#   --train viterbi|bw [viterbi]: viterbi = local/train_viterbi.sh (flat start,
#     5 Baum-Welch passes, then Viterbi training; 5-state ergodic silence, the
#     first and last silence obligatory in training and decoding); bw = the
#     Baum-Welch stage 2 above (--sil-states L-to-R silence, optional edges).
#     Picked by cross-validation on the training files (local/cv_experiment.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(dirname "$here"); root=$(dirname "$egs")
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
shared=${GH_SHARED:-$root/../shared}
src=$shared/data/yesno/waves

work=/tmp/gmmhmm-$(id -un)/yesno
nj=2; cmd=utils/run.sh; device=auto; seed=1; stage=0; stop_stage=4
train_data=; test_data=; words=
states=5        # per word
sil_states=3
gauss=8         # Gaussians per pdf after mixing up
iters=30
word_penalty=20 # nats per word entered in the loop
acoustic_scale=1
train=viterbi   # viterbi: local/train_viterbi.sh; bw: steps/train_word_hmm.sh (see README)
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
mkdir -p "$work"; cd "$work"
ln -sfn "$egs/steps" steps; ln -sfn "$egs/utils" utils
echo "run.sh: working in $work"
dir=exp/mono

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  echo "== stage 0: data directories"
  rm -rf data/train data/test data/*_feats
  if [ -n "$train_data" ]; then
    for s in train:$train_data test:$test_data; do
      set_=${s%%:*}; d=${s#*:}; mkdir -p data/"$set_"
      for f in utt2spk spk2utt text feats.scp wav.scp segments; do [ ! -f "$d"/$f ] || cp "$d"/$f data/"$set_"/; done
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
  echo "== stage 2: training: words ($states states), sil ($sil_states states), $iters Baum-Welch iterations, up to $gauss Gaussians per pdf"
  mkdir -p data/lang
  awk '{ for (i = 2; i <= NF; i++) print $i }' data/train/text | LC_ALL=C sort -u | grep -vx sil > data/lang/words.txt.tmp
  # the corpus' own order (yes, no) when it is the built-in data
  if [ -n "$words" ]; then cp "$words" data/lang/words.txt; rm data/lang/words.txt.tmp
  elif [ -z "$train_data" ]; then printf 'yes\nno\n' > data/lang/words.txt; rm data/lang/words.txt.tmp
  else mv data/lang/words.txt.tmp data/lang/words.txt; fi
  if [ $train = viterbi ]; then
    rm -rf $dir
    "$here"/local/train_viterbi.sh --device=$device --init=flat-bw --states=$states --sil-states=5 \
      --sil-topology=ergodic --gauss=$gauss --iters=$iters --words=data/lang/words.txt data/train_feats $dir
  else
  steps/train_word_hmm.sh --nj $nj --cmd "$cmd" --device $device --states $states --silence sil \
    --sil-states $sil_states --gauss $gauss --iters $iters --flat-start global --skip-prob 0 --self-loop-prob 0.8 \
    --mixup-start $(( iters / 4 + 1 )) --mixup-end $(( iters / 2 )) --seed $seed --est-seed 0 \
    data/train_feats data/lang/words.txt $dir | awk 'NR == 1 || NR % 5 == 0'
  fi
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  echo "== stage 3: decoding: word loop (yes | no | sil)*, word penalty $word_penalty, acoustic scale $acoustic_scale"
  for s in test train; do
    steps/decode_words.sh --nj $nj --cmd "$cmd" --device $device --silence sil --word-penalty $word_penalty \
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
    echo "# yesno: word error rates (details: $dir/decode_*/per_utt)"
    for s in train test; do
      [ ! -f $dir/decode_$s/wer.txt ] || echo "$s ($(wc -l < data/${s}_feats/text) files): $(head -1 $dir/decode_$s/wer.txt)"
    done
  } > results.txt.tmp
  mv results.txt.tmp results.txt
  echo "== results ($work/results.txt)"
  cat results.txt
  echo "(run.sh took $(( $(date +%s) - start )) s)"
fi
