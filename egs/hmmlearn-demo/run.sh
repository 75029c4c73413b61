#!/usr/bin/env bash
# egs/hmmlearn-demo/run.sh -- an hmmlearn user's first model, on non-speech
# data: a fully connected (ergodic) Gaussian HMM, hmmlearn's GaussianHMM
# default, trained by Baum-Welch with gmmhmm tools and compared with hmmlearn
# started from the same initial model.
#
#   stage 0  data: local/hmmlearn_compare.py make -> <work>/data: --seqs
#            sequences of --length 2-D frames sampled from a known --states
#            state Gaussian HMM (feats.scp via kaldiio; states.txt, the true
#            state sequences)
#   stage 1  initial model: hmm-init-topo --topology=ergodic (every state
#            initial with 1/S, every transition 1/S, ending anywhere: hmmlearn's
#            startprob_/transmat_ initialisation); gmm-init --num-gauss=S
#            --num-iters=0 (k-means++ and k-means over all frames) ->
#            gmm-copy --split-gaussians (state s = cluster s; hmmlearn takes its
#            means from k-means too, its covariances from all the data)
#   stage 2  --iters Baum-Welch iterations in one process: hmm-train without a
#            transcripts table (every sequence uses the one HMM; features read
#            once, resident); --pipeline true: the same iterations as separate
#            tools, gmm-score-gpu | hmm-bw --hmm=m (state posteriors, start and
#            transition probabilities re-estimated) -> gmm-est-gpu
#            --label-type=post (means, variances), one process each per iteration
#   stage 3  hmm-forward (total log-likelihood) and hmm-viterbi --write-states of
#            the final model; local/hmmlearn_compare.py compare: hmmlearn's fit
#            from our initial model (init_params="", --iters iterations), the
#            log-likelihood per iteration of both, the final parameters, the
#            state accuracy of both against the true states; local/python_class.py:
#            the Python package's gmmhmm.GaussianHMM and hmmlearn's GaussianHMM
#            fitted from their own initialisations (wall time, iterations)
#   stage 4  <work>/results.txt and <work>/loglike.png (printed)
#
# Options (--name value or --name=value):
#   --work DIR [/tmp/gmmhmm-$USER/hmmlearn-demo]  --device auto  --seed 1
#   --states 3 --seqs 30 --length 200 --iters 10  --stage 0 --stop-stage 4
#   --pipeline false (true: stage 2 as one tool per step and iteration)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(dirname "$here"); root=$(dirname "$egs")
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
work=/tmp/gmmhmm-$(id -un)/hmmlearn-demo
device=auto; seed=1; states=3; seqs=30; length=200; iters=10; stage=0; stop_stage=4; pipeline=false
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "run.sh: unexpected argument $1 (options are --name value)" >&2; exit 1; }
python3 -c 'import numpy, kaldiio, hmmlearn' 2>/dev/null ||
  { echo "run.sh: needs python3 with numpy, kaldiio and hmmlearn (tools/install-deps.sh)" >&2; exit 1; }
for t in hmm-init-topo gmm-init gmm-copy hmm-train gmm-score-gpu hmm-bw gmm-est-gpu hmm-forward hmm-viterbi; do
  command -v $t >/dev/null || { echo "run.sh: $t not built (run make in $root)" >&2; exit 1; }
done
mkdir -p "$work"; work=$(cd "$work" && pwd); cd "$work"
ln -sfn "$egs/utils" utils
echo "run.sh: working in $work"
dir=exp/ergodic; feats=scp:data/feats.scp

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  echo "== stage 0: $seqs sequences of $length frames from a $states-state Gaussian HMM (seed $seed)"
  rm -rf data; mkdir -p data
  python3 "$here/local/hmmlearn_compare.py" make data --states $states --seqs $seqs --length $length --seed $seed
fi
if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  echo "== stage 1: ergodic $states-state HMM, state Gaussians from k-means"
  rm -rf $dir; mkdir -p $dir/log
  echo m > $dir/hmms.txt
  hmm-init-topo --topology=ergodic --num-states=$states $dir/hmms.txt $dir/0.hmm 2> $dir/log/topo.log
  gmm-init --device=$device --num-gauss=$states --num-iters=0 --seed=$seed $feats $dir/kmeans.mdl 2> $dir/log/init.log
  gmm-copy --split-gaussians $dir/kmeans.mdl $dir/0.mdl 2>> $dir/log/init.log
fi
if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  echo "== stage 2: $iters Baum-Welch iterations ($([ $pipeline = true ] && echo 'one tool per step' || echo hmm-train))"
  : > $dir/loglike.txt
  t0=$(date +%s.%N)
  if [ $pipeline != true ]; then
    hmm-train --device=$device --num-iters=$iters $dir/0.hmm $dir/0.mdl $feats $dir/$iters.hmm $dir/$iters.mdl \
      2> $dir/log/train.log
    grep -o 'iteration [0-9]*: .*HMM total log-likelihood per frame [-0-9.e+]*' $dir/log/train.log |
      awk '{ sub(":", "", $2); printf "%d %.6f\n", $2, $NF }' > $dir/loglike.txt
    awk '{ printf "  iteration %d: average log-likelihood per frame %s\n", $1, $2 }' $dir/loglike.txt
  fi
  for it in $( [ $pipeline = true ] && seq 1 $iters); do
    p=$((it - 1))
    gmm-score-gpu --device=$device $dir/$p.mdl $feats ark:- 2> $dir/log/score.$it.log |
      hmm-bw --device=$device --hmm=m $dir/$p.hmm ark:- ark:$dir/post.ark $dir/$it.hmm 2> $dir/log/bw.$it.log
    gmm-est-gpu --device=$device --label-type=post $dir/$p.mdl $feats ark:$dir/post.ark $dir/$it.mdl 2> $dir/log/est.$it.log
    ll=$(grep -o 'average log-likelihood [-0-9.e+]* per frame' $dir/log/bw.$it.log | awk '{ print $3 }')
    echo "$it $ll" >> $dir/loglike.txt
    echo "  iteration $it: average log-likelihood per frame $ll"
  done
  rm -f $dir/post.ark
  echo "  $iters iterations in $(echo "$(date +%s.%N) - $t0" | bc -l | xargs printf %.2f) s"
  cp $dir/$iters.mdl $dir/final.mdl; cp $dir/$iters.hmm $dir/final.hmm
fi
if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  echo "== stage 3: decoding and hmmlearn from the same initial model"
  gmm-score-gpu --device=$device $dir/final.mdl $feats ark:$dir/loglikes.ark 2> $dir/log/score.final.log
  hmm-forward --device=$device $dir/final.hmm ark:$dir/loglikes.ark ark,t:$dir/forward.txt 2> $dir/log/forward.log
  hmm-viterbi --device=$device --hmm=m --write-states $dir/final.hmm ark:$dir/loglikes.ark ark,t:$dir/states.txt \
    2> $dir/log/viterbi.log
  for m in 0 final; do gmm-copy --binary=false $dir/$m.mdl $dir/$m.mdl.txt 2> /dev/null; done
  hmm-copy --binary=false $dir/final.hmm $dir/final.hmm.txt 2> /dev/null
  python3 "$here/local/hmmlearn_compare.py" compare data $dir/0.mdl.txt $dir/loglike.txt $dir/final.mdl.txt \
    $dir/final.hmm.txt $dir/states.txt --iters $iters > $dir/compare.txt
  # the Python package: the same fit through gmmhmm.GaussianHMM (hmm-train underneath) and hmmlearn
  if python3 -c 'import gmmhmm' 2>/dev/null || [ -d "$root/python/gmmhmm" ]; then
    GMMHMM_BIN=${GH_BIN:-$root/bin} PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
      python3 "$here/local/python_class.py" data --states $states --iters $iters --seed $seed --device $device \
      >> $dir/compare.txt
  fi
fi
if [ $stop_stage -ge 4 ]; then
  {
    echo "# hmmlearn-demo: ergodic $states-state Gaussian HMM, $iters Baum-Welch iterations, gmmhmm vs hmmlearn"
    echo "# data: $seqs synthetic sequences of $length 2-D frames from a known $states-state HMM (seed $seed)"
    echo "final total log-likelihood (hmm-forward): $(awk '{ s += $3 } END { printf "%.3f", s }' $dir/forward.txt)"
    cat $dir/compare.txt
  } > results.txt.tmp
  mv results.txt.tmp results.txt
  rm -f loglike.png
  python3 utils/plot_results.py loglike loglike.png "ergodic HMM: Baum-Welch" $dir ||
    echo "run.sh: no loglike.png (see the message above)" >&2
  echo "== results ($work/results.txt)"
  cat results.txt
fi
