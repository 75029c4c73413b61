#!/usr/bin/env bash
# local/train.sh -- word HMM-GMMs for connected yes/no from a flat start, every
# step a gmmhmm tool:
#   hmm-init-topo: left-to-right HMMs "yes", "no" (--states) and "sil"
#     (--sil-states), consecutive pdf ids
#   flat start: every frame a uniform posterior over all pdfs -> gmm-init: every
#     pdf one Gaussian with the global mean and variance (HTK's HCompV flat
#     start), so the first Baum-Welch pass is shaped by the topology alone
#   per iteration: gmm-score-gpu | hmm-bw --transcripts --optional-silence=sil
#     (pdf posteriors + re-estimated transitions of the word and silence HMMs)
#     -> gmm-est-gpu --label-type=post; single Gaussians until the alignment
#     has settled (a quarter of the iterations), then mixing up in steps to
#     --gauss per pdf until half-way, then plain re-estimation
# Usage: local/train.sh [--device=auto] [--states=5] [--sil-states=3] [--gauss=8]
#          [--iters=30] [--self-loop-prob=0.8] <data-dir> <exp-dir>
# <data-dir> has feats.scp and text; writes <exp-dir>/final.{hmm,mdl}.
set -euo pipefail
device=auto; states=5; sil_states=3; gauss=8; iters=30; self_loop=0.8; args=()
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;; --states=*) states=${a#*=} ;; --sil-states=*) sil_states=${a#*=} ;;
    --gauss=*) gauss=${a#*=} ;; --iters=*) iters=${a#*=} ;; --self-loop-prob=*) self_loop=${a#*=} ;;
    --*) echo "train.sh: unknown option $a" >&2; exit 1 ;;
    *) args+=("$a") ;;
  esac
done
[ ${#args[@]} -eq 2 ] || { echo "usage: local/train.sh [options] <data-dir> <exp-dir>" >&2; exit 1; }
data=${args[0]}; dir=${args[1]}
mkdir -p $dir
printf 'yes\nno\n' > $dir/words.txt
hmm-init-topo --num-states=$states --silence=sil --silence-states=$sil_states --self-loop-prob=$self_loop \
  $dir/words.txt $dir/0.hmm 2> $dir/init.log
npdf=$((2 * states + sil_states))
feat-to-len scp:$data/feats.scp ark,t:- 2>/dev/null |
  awk -v P=$npdf '{ printf "%s", $1
    for (t = 0; t < $2; t++) { printf " ["; for (p = 0; p < P; p++) printf " %d %.7g", p, 1 / P; printf " ]" }
    printf "\n" }' |
  copy-post ark,t:- ark:$dir/flat.post 2>> $dir/init.log
gmm-init --device=$device --num-gauss=1 --num-pdfs=$npdf --num-iters=0 --labels=ark:$dir/flat.post \
  --label-type=post scp:$data/feats.scp $dir/0.mdl 2>> $dir/init.log
rm -f $dir/flat.post
m0=$(( iters / 4 + 1 )); m1=$(( iters / 2 )); [ $m1 -ge $m0 ] || m1=$m0
hmm=$dir/0.hmm; mdl=$dir/0.mdl
for it in $(seq 1 $iters); do
  target=0
  if [ $it -ge $m0 ] && [ $it -le $m1 ] && [ $gauss -gt 1 ]; then
    target=$(( npdf + npdf * (gauss - 1) * (it - m0 + 1) / (m1 - m0 + 1) ))
  fi
  gmm-score-gpu --device=$device $mdl scp:$data/feats.scp ark:- 2> $dir/score.$it.log |
    hmm-bw --device=$device --transcripts=ark,t:$data/text --optional-silence=sil $hmm ark:- \
      ark:$dir/post.ark $dir/$it.hmm 2> $dir/bw.$it.log
  gmm-est-gpu --device=$device --label-type=post --mix-up=$target $mdl scp:$data/feats.scp \
    ark:$dir/post.ark $dir/$it.mdl 2> $dir/est.$it.log
  if [ $it -eq 1 ] || [ $it -eq $iters ] || [ $(( it % 5 )) -eq 0 ]; then
    echo "  iteration $it: $(grep -o 'average log-likelihood [-0-9.e+]* per frame' $dir/bw.$it.log | tail -1)," \
      "$(grep -o '[0-9]* Gaussians' $dir/est.$it.log | tail -1)"
  fi
  [ $it -gt 1 ] && rm -f $dir/$((it - 1)).mdl $dir/$((it - 1)).hmm
  hmm=$dir/$it.hmm; mdl=$dir/$it.mdl
done
rm -f $dir/post.ark
mv $hmm $dir/final.hmm; mv $mdl $dir/final.mdl
