#!/usr/bin/env bash
# egs/yesno/run.sh -- connected-word recognition from raw WAV on Kaldi's yesno
# corpus (one speaker, 8 words "yes"/"no" per file, silence around and between
# them), every step a gmmhmm tool (shell/awk only to build lists):
#
#   0. data: wav.scp and text (file name = transcript, 1 = yes, 0 = no) for the
#      30 files of $GH_SHARED/data/yesno; the first 20 sorted names train, the
#      last 10 test
#   1. features: compute-mfcc-feats (8 kHz, 13 cepstra with C0, no dither, as
#      Kaldi's egs/yesno/s5 conf/mfcc.conf) -> per-utterance CMN
#      (compute-cmvn-stats + apply-cmvn; one speaker) -> add-deltas (39 dims)
#   2. topology: hmm-init-topo, left-to-right word HMMs "yes" and "no"
#      (--states each) and a silence HMM "sil" (--sil-states)
#   3. training (local/train.sh): flat start (every pdf = the global mean and
#      variance of the training frames) -> iterations of gmm-score-gpu |
#      hmm-bw --transcripts --optional-silence=sil (pdf posteriors and new
#      transitions) -> gmm-est-gpu --label-type=post, mixing up to --gauss
#      Gaussians per pdf once the alignment has settled
#   4. decoding: hmm-make-loop builds the word loop (yes | no | sil)* from the
#      trained HMMs with a word insertion penalty; gmm-score-gpu |
#      hmm-viterbi --hmm=loop --words-wspecifier -> compute-wer against the
#      reference, on the 10 test files and (sanity) the 20 training files
#
# Options: --device=auto|cpu|cuda, --states=N, --sil-states=N, --gauss=N,
#          --iters=N, --word-penalty=P, --acoustic-scale=S, --stage=N, --work=DIR (where data/ and
#          exp/ go; default: this directory).
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
root=$(cd ../.. && pwd)
export PATH="$root/bin:$PATH"
shared=${GH_SHARED:-$root/../shared}
src=$shared/data/yesno/waves

device=auto
states=5        # per word
sil_states=3
gauss=8         # Gaussians per pdf after mixing up
iters=30
word_penalty=20 # nats per word entered in the loop
acwt=1         # --acoustic-scale of hmm-viterbi (Kaldi decodes with 0.1)
stage=0
work=.
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;;
    --states=*) states=${a#*=} ;;
    --sil-states=*) sil_states=${a#*=} ;;
    --gauss=*) gauss=${a#*=} ;;
    --iters=*) iters=${a#*=} ;;
    --word-penalty=*) word_penalty=${a#*=} ;;
    --acoustic-scale=*) acwt=${a#*=} ;;
    --stage=*) stage=${a#*=} ;;
    --work=*) work=${a#*=} ;;
    *) echo "run.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
ls "$src"/*.wav >/dev/null 2>&1 || { echo "run.sh: no WAVs in $src (set GH_SHARED)" >&2; exit 1; }
for t in compute-mfcc-feats compute-cmvn-stats apply-cmvn add-deltas feat-to-len copy-post gmm-init \
  gmm-score-gpu gmm-est-gpu hmm-init-topo hmm-bw hmm-make-loop hmm-viterbi compute-wer; do
  command -v $t >/dev/null || { echo "run.sh: $t not built (run make)" >&2; exit 1; }
done
start=$(date +%s)
mkdir -p "$work"; cd "$work"

if [ $stage -le 0 ]; then
  echo "== data: 30 files, first 20 (sorted) train, last 10 test"
  mkdir -p data/all data/train data/test
  # wav.scp: key = file name without .wav; text: 1 -> yes, 0 -> no.
  for f in "$src"/*.wav; do echo "$(basename "$f" .wav) $f"; done | LC_ALL=C sort > data/all/wav.scp
  awk '{ n = split($1, d, "_"); printf "%s", $1; for (i = 1; i <= n; i++) printf " %s", d[i] == "1" ? "yes" : "no"; printf "\n" }' \
    data/all/wav.scp > data/all/text
  n=$(wc -l < data/all/wav.scp)
  [ "$n" -eq 30 ] || echo "run.sh: warning: $n WAV files, expected 30" >&2
  head -n 20 data/all/wav.scp > data/train/wav.scp
  tail -n +21 data/all/wav.scp > data/test/wav.scp
  for set in train test; do
    awk 'NR == FNR { keep[$1] = 1; next } $1 in keep' data/$set/wav.scp data/all/text > data/$set/text
  done
fi

if [ $stage -le 1 ]; then
  echo "== features: MFCC (8 kHz, no dither, C0), per-utterance CMN, deltas"
  for set in train test; do
    d=data/$set
    compute-mfcc-feats --sample-frequency=8000 --dither=0 --use-energy=false scp:$d/wav.scp \
      ark,scp:$d/mfcc.ark,$d/mfcc.scp 2> $d/feats.log
    # No --spk2utt: one set of stats per utterance (one speaker in the corpus anyway).
    compute-cmvn-stats scp:$d/mfcc.scp ark:$d/cmvn.ark 2>> $d/feats.log
    apply-cmvn ark:$d/cmvn.ark scp:$d/mfcc.scp ark:- 2>> $d/feats.log |
      add-deltas ark:- ark,scp:$d/feats.ark,$d/feats.scp 2>> $d/feats.log
    echo "$set: $(wc -l < $d/feats.scp) utterances, $(feat-to-len scp:$d/feats.scp 2>/dev/null) frames"
  done
fi

dir=exp/mono
if [ $stage -le 2 ]; then
  echo "== training: words yes/no ($states states), sil ($sil_states states), $iters Baum-Welch iterations, up to $gauss Gaussians per pdf"
  "$here"/local/train.sh --device=$device --states=$states --sil-states=$sil_states --gauss=$gauss --iters=$iters \
    data/train $dir
fi

if [ $stage -le 3 ]; then
  echo "== decoding: word loop (yes | no | sil)*, word penalty $word_penalty, acoustic scale $acwt"
  hmm-make-loop --silence=sil --word-loop=loop --word-penalty=$word_penalty $dir/final.hmm $dir/loop.hmm \
    2> $dir/make-loop.log
  for set in test train; do
    d=$dir/decode_$set; mkdir -p $d
    gmm-score-gpu --device=$device $dir/final.mdl scp:data/$set/feats.scp ark:- 2> $d/decode.log |
      hmm-viterbi --device=$device --acoustic-scale=$acwt --hmm=loop --words-wspecifier=ark,t:$d/hyp.txt $dir/loop.hmm ark:- \
        ark:$d/ali.ark 2>> $d/decode.log
    # Kaldi's compute-wer; per-utterance ref/hyp/op lines in per_utt.
    compute-wer --text --mode=present --per-utt=$d/per_utt ark:data/$set/text ark:$d/hyp.txt \
      > $d/wer.txt 2> $d/wer.log
  done
  echo "== decoded word sequences of the test files (reference | hypothesis)"
  awk 'NR == FNR { ref[$1] = $0; sub(/^[^ ]+ /, "", ref[$1]); next }
       { k = $1; $1 = ""; sub(/^ /, ""); printf "%s  %-40s | %s%s\n", k, ref[k], $0, ref[k] == $0 ? "" : "   <-- error" }' \
    data/test/text $dir/decode_test/hyp.txt
  echo "== results (details: $dir/decode_*/per_utt)"
  for set in train test; do
    echo "$set ($(wc -l < data/$set/text) files): $(head -1 $dir/decode_$set/wer.txt)"
  done
  echo "(run.sh took $(( $(date +%s) - start )) s)"
fi
