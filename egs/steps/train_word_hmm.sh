#!/usr/bin/env bash
# steps/train_word_hmm.sh -- isolated-word HMM-GMMs (one left-to-right HMM per
# word), every step a gmmhmm tool:
#   hmm-init-topo: one L-to-R HMM per word, consecutive pdf ids
#     (word w, state k -> pdf w*states + k), self-loops and skip arcs
#   flat start: each training utterance split into equal parts over its word's
#     states (an alignment) -> gmm-init, one Gaussian per pdf
#   per iteration: gmm-score-gpu | hmm-bw --transcripts (pdf posteriors and new
#     transition probabilities) -> gmm-est-gpu --label-type=post, mixing up
#     linearly to --gauss Gaussians per pdf over the first half of the iterations
# Output: <dir>/final.mdl (GMM set), <dir>/final.hmm (HMM set, word w = HMM w).
# Decode with: gmm-score-gpu final.mdl <feats> ark:- | hmm-forward final.hmm ark:- <wspec>
#
# Usage: steps/train_word_hmm.sh [options] <train-feats-rspecifier> <utt2word> <num-words> <dir>
#   <utt2word>: text lines "utt word-index" (0-based); every utterance of the
#   features must have one.
# Options: --device=auto --cov=diag --states=5 --gauss=8 --iters=12 --seed=1
#          --skip-prob=0.2 --self-loop-prob=0.6
set -euo pipefail
device=auto; cov=diag; states=5; gauss=8; iters=12; seed=1; skip=0.2; loop=0.6
args=()
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;; --cov=*) cov=${a#*=} ;; --states=*) states=${a#*=} ;;
    --gauss=*) gauss=${a#*=} ;; --iters=*) iters=${a#*=} ;; --seed=*) seed=${a#*=} ;;
    --skip-prob=*) skip=${a#*=} ;; --self-loop-prob=*) loop=${a#*=} ;;
    --*) echo "train_word_hmm.sh: unknown option $a" >&2; exit 1 ;;
    *) args+=("$a") ;;
  esac
done
[ ${#args[@]} -eq 4 ] || { sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
feats=${args[0]}; utt2word=${args[1]}; nwords=${args[2]}; dir=${args[3]}
mkdir -p $dir
seq 0 $((nwords - 1)) > $dir/words.txt
npdf=$((nwords * states))
hmm-init-topo --num-states=$states --self-loop-prob=$loop --skip-prob=$skip $dir/words.txt $dir/0.hmm 2> $dir/topo.log
cp $utt2word $dir/train.text   # transcripts: utterance -> HMM name (= word index)
feat-to-len "$feats" ark,t:- 2> /dev/null |
  awk -v S=$states 'NR == FNR { w[$1] = $2; next }
    !($1 in w) { print "train_word_hmm.sh: no word for " $1 > "/dev/stderr"; exit 1 }
    { T = $2; printf "%s", $1; for (t = 0; t < T; t++) printf " %d", w[$1] * S + int(t * S / T); printf "\n" }' \
    $utt2word - | copy-int-vector ark,t:- ark:$dir/flat.ali 2> /dev/null
gmm-init --device=$device --cov-type=$cov --num-gauss=1 --num-pdfs=$npdf --seed=$seed \
  --labels=ark:$dir/flat.ali "$feats" $dir/0.mdl 2> $dir/init.log
mixup_iters=$(( iters / 2 )); [ $mixup_iters -ge 1 ] || mixup_iters=1
hmm=$dir/0.hmm; mdl=$dir/0.mdl
for it in $(seq 1 $iters); do
  target=0
  if [ $it -le $mixup_iters ] && [ $gauss -gt 1 ]; then
    target=$(awk -v it=$it -v n=$mixup_iters -v g=$gauss -v p=$npdf 'BEGIN { printf "%d", p * (1 + (g - 1) * it / n) }')
  fi
  gmm-score-gpu --device=$device $mdl "$feats" ark:- 2> $dir/score.$it.log |
    hmm-bw --device=$device --transcripts=ark,t:$dir/train.text $hmm ark:- ark:$dir/post.ark $dir/$it.hmm \
      2> $dir/bw.$it.log
  gmm-est-gpu --device=$device --label-type=post --mix-up=$target --seed=$seed $mdl "$feats" \
    ark:$dir/post.ark $dir/$it.mdl 2> $dir/est.$it.log
  echo "  iteration $it: $(grep -o 'avg loglike per frame [-0-9.e+]*' $dir/est.$it.log | tail -1)," \
    "$(grep -o '[0-9]* Gaussians;' $dir/est.$it.log | tail -1 | tr -d ';')"
  [ $it -gt 1 ] && rm -f $dir/$((it - 1)).mdl $dir/$((it - 1)).hmm
  hmm=$dir/$it.hmm; mdl=$dir/$it.mdl
done
rm -f $dir/post.ark
mv $hmm $dir/final.hmm; mv $mdl $dir/final.mdl
