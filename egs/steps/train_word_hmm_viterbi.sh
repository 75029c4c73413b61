#!/usr/bin/env bash
# steps/train_word_hmm_viterbi.sh -- isolated-word HMM-GMMs by Viterbi training
# (the structure of Kaldi's steps/train_mono.sh), beside steps/train_word_hmm.sh
# (Baum-Welch); same arguments and outputs:
#   hmm-init-topo: one L-to-R HMM per word (word w, state k -> pdf w*states + k)
#   equal alignment: each training utterance split into equal parts over its
#     word's states (Kaldi's align-equal-compiled) -> gmm-init, one Gaussian per pdf
#   per iteration: on the realignment iterations (--realign-iters, Kaldi's
#     train_mono.sh schedule: every iteration up to 10, then every other one)
#     gmm-score-gpu | hmm-viterbi --transcripts (one pdf per frame, the best
#     path through the utterance's word HMM); then gmm-est-gpu
#     --label-type=ali (one EM update of the GMMs on the fixed alignment),
#     mixing up linearly to --gauss Gaussians per pdf over the first half of the
#     iterations (Kaldi increases Gaussians every iteration up to a maximum)
#   transitions stay those of hmm-init-topo (Kaldi re-estimates them from the
#     alignment counts; a Baum-Welch pass can do it: hmm-bw <hmm> ... <hmm-out>)
# Output: <dir>/final.mdl (GMM set), <dir>/final.hmm (HMM set, word w = HMM w).
# --ranks=N (default 1): the iterations run as ONE job of N MPI ranks, hmm-train
# --mode=viterbi (features read once, graphs compiled once), started by --cmd
# (utils/run.sh: mpirun; utils/slurm.sh: srun; N = 1: a plain process);
# --ranks=0: one process per step per iteration as above.  Same model within
# the rounding of the double sums (test/bats/hmm-train.bats).
#
# Usage: steps/train_word_hmm_viterbi.sh [options] <train-feats-rspecifier> <utt2word> <num-words> <dir>
# Options: --device=auto --cov=diag --states=5 --gauss=8 --iters=12 --seed=1
#          --skip-prob=0.2 --self-loop-prob=0.6
#          --realign-iters="1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38"
#          --ranks=1 --cmd=utils/run.sh
set -euo pipefail
device=auto; cov=diag; states=5; gauss=8; iters=12; seed=1; skip=0.2; loop=0.6; ranks=1
cmd=$(cd "$(dirname "$0")/../utils" && pwd)/run.sh
realign_iters="1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38"
args=()
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;; --cov=*) cov=${a#*=} ;; --states=*) states=${a#*=} ;;
    --gauss=*) gauss=${a#*=} ;; --iters=*) iters=${a#*=} ;; --seed=*) seed=${a#*=} ;;
    --skip-prob=*) skip=${a#*=} ;; --self-loop-prob=*) loop=${a#*=} ;; --realign-iters=*) realign_iters=${a#*=} ;;
    --ranks=*) ranks=${a#*=} ;; --cmd=*) cmd=${a#*=} ;;
    --*) echo "train_word_hmm_viterbi.sh: unknown option $a" >&2; exit 1 ;;
    *) args+=("$a") ;;
  esac
done
[ ${#args[@]} -eq 4 ] || { sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
feats=${args[0]}; utt2word=${args[1]}; nwords=${args[2]}; dir=${args[3]}
mkdir -p $dir
seq 0 $((nwords - 1)) > $dir/words.txt
npdf=$((nwords * states))
hmm-init-topo --num-states=$states --self-loop-prob=$loop --skip-prob=$skip $dir/words.txt $dir/final.hmm 2> $dir/topo.log
cp $utt2word $dir/train.text   # transcripts: utterance -> HMM name (= word index)
feat-to-len "$feats" ark,t:- 2> /dev/null |
  awk -v S=$states 'NR == FNR { w[$1] = $2; next }
    !($1 in w) { print "train_word_hmm_viterbi.sh: no word for " $1 > "/dev/stderr"; exit 1 }
    { T = $2; printf "%s", $1; for (t = 0; t < T; t++) printf " %d", w[$1] * S + int(t * S / T); printf "\n" }' \
    $utt2word - | copy-int-vector ark,t:- ark:$dir/ali.ark 2> /dev/null
gmm-init --device=$device --cov-type=$cov --num-gauss=1 --num-pdfs=$npdf --seed=$seed --num-iters=0 \
  --labels=ark:$dir/ali.ark "$feats" $dir/0.mdl 2> $dir/init.log
mixup_iters=$(( iters / 2 )); [ $mixup_iters -ge 1 ] || mixup_iters=1
if [ "$ranks" != 0 ]; then
  rank_opt=; [ "$ranks" = 1 ] || rank_opt="--ranks $ranks"
  $cmd $rank_opt $dir/train.log \
    hmm-train --device=$device --mode=viterbi --realign-iters="$realign_iters" --num-iters=$iters \
      --gauss=$gauss --mixup-start=1 --mixup-end=$mixup_iters --seed=$seed $dir/final.hmm $dir/0.mdl "$feats" \
      ark,t:$dir/train.text $dir/final.hmm $dir/final.mdl ||
    { echo "train_word_hmm_viterbi.sh: hmm-train failed, see $dir/train.log" >&2; exit 1; }
  grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]*\|[0-9]* Gaussians; ' $dir/train.log |
    awk '/^iteration/ { l = $0; next } { print "  " l ", " $1 " Gaussians" }'
  exit 0
fi
mdl=$dir/0.mdl
for it in $(seq 1 $iters); do
  target=0
  if [ $it -le $mixup_iters ] && [ $gauss -gt 1 ]; then
    # P + floor(P (g - 1) it / n): steps/train_word_hmm.sh's rule (and hmm-train's)
    target=$(awk -v it=$it -v n=$mixup_iters -v g=$gauss -v p=$npdf 'BEGIN { printf "%d", p + int(p * (g - 1) * it / n) }')
  fi
  if [[ " $realign_iters " == *" $it "* ]]; then
    gmm-score-gpu --device=$device $mdl "$feats" ark:- 2> $dir/score.$it.log |
      hmm-viterbi --device=$device --transcripts=ark,t:$dir/train.text $dir/final.hmm ark:- ark:$dir/ali.ark \
        2> $dir/align.$it.log
  fi
  gmm-est-gpu --device=$device --label-type=ali --mix-up=$target --seed=$seed $mdl "$feats" \
    ark:$dir/ali.ark $dir/$it.mdl 2> $dir/est.$it.log
  echo "  iteration $it: $(grep -o 'avg loglike per frame [-0-9.e+]*' $dir/est.$it.log | tail -1)," \
    "$(grep -o '[0-9]* Gaussians;' $dir/est.$it.log | tail -1 | tr -d ';')"
  [ $it -gt 1 ] && rm -f $dir/$((it - 1)).mdl
  mdl=$dir/$it.mdl
done
mv $mdl $dir/final.mdl
