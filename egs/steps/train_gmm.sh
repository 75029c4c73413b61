#!/usr/bin/env bash
# steps/train_gmm.sh -- GMM training as N parallel jobs per EM iteration:
#   gmm-init (k-means++ + --init-iters EM iterations, one job, all data), then
#   per iteration: --nj jobs of gmm-acc-stats-gpu on the parts of
#   utils/split_data.sh (by speaker) -> one job of gmm-sum-accs && gmm-est.
# One global GMM, or with --words one GMM per word: the utterance's word in
# <data-dir>/text (one word per line) is its pdf, word i = line i + 1 of the
# words file (pdf ids from 0).
#
# Usage: steps/train_gmm.sh [options] <data-dir> <dir>
#   e.g. steps/train_gmm.sh --nj 4 --cmd utils/run.sh --words data/lang/words.txt \
#          --cov-type full --num-gauss 4 data/train exp/gmm_full4
# <data-dir> needs feats.scp (and utt2spk, text with --words).  Writes
# <dir>/0.mdl .. <dir>/N.mdl, <dir>/final.mdl, <dir>/log/*.log (one per job);
# the accumulators are removed after each iteration.
# Options (--name value or --name=value):
#   --ranks 1            N > 0: train as ONE job of N MPI ranks (gmm-train: the
#                        data resident on each rank's device, accumulators summed
#                        over the ranks; --cmd utils/run.sh starts it with mpirun,
#                        utils/slurm.sh with srun); 0: per-iteration jobs (--nj)
#   --nj 4               number of parallel accumulation jobs (--ranks 0)
#   --cmd utils/run.sh   job launcher (utils/run.sh, utils/slurm.sh, with options)
#   --device auto        --device of the tools (auto, cpu, cuda, cuda:N)
#   --words ""           one GMM per word of this list (else one global GMM)
#   --cov-type diag      diag or full
#   --num-gauss 4        Gaussians per pdf (gmm-init)
#   --init-iters 10      EM iterations inside gmm-init
#   --num-iters 20       EM iterations as N jobs -> sum -> estimate
#   --seed 1             k-means++ seed
#   --sum-fan-in 16      sum the accumulators in a tree of this fan-in (more
#                        than this many jobs: parallel gmm-sum-accs jobs first)
#   --stage -1           resume: -1 = from the initialisation; N >= 0 = from
#                        iteration N (needs <dir>/N.mdl)
# With --nj N each job's accumulators (double files) are summed in another
# order, so the model equals the --nj 1 model within 1e-5 + 1e-4 x
# the largest entry of each vector or matrix (utils/compare_gmms.sh, checked
# by test/bats/recipes.bats), not bitwise.  With --ranks N the accumulators stay in
# double and are summed in a fixed order, so any N gives the --ranks 1 model
# within double rounding (test/bats/train-mpi.bats); doc/recipes.md says when
# to use which.
set -euo pipefail
nj=4; cmd=$(realpath -s --relative-to=. "$(dirname "$0")/../utils/run.sh"); device=auto; words=; cov_type=diag; num_gauss=4; init_iters=10; num_iters=20
seed=1; stage=-1; sum_fan_in=16; ranks=1
. "$(dirname "$0")/../utils/parse_options.sh"
if [ $# -ne 2 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; dir=${2%/}
utils=$(cd "$(dirname "$0")/../utils" && pwd)
me=train_gmm.sh
[ "$sum_fan_in" -ge 2 ] 2>/dev/null || { echo "$me: --sum-fan-in must be an integer >= 2 (got $sum_fan_in)" >&2; exit 1; }
for f in "$data"/feats.scp ${words:+"$words"}; do [ -f "$f" ] || { echo "$me: missing $f" >&2; exit 1; }; done
mkdir -p "$dir"/log
if [ "$ranks" = 0 ]; then
  "$utils"/split_data.sh "$data" $nj
  sdata=$data/split$nj
fi

labels=; lab_opts=; init_opts=()
if [ -n "$words" ]; then
  [ -f "$data"/text ] || { echo "$me: --words needs $data/text" >&2; exit 1; }
  # utterance -> pdf id (word index), one int per utterance (--label-type=utt)
  awk -v me=$me -v W="$words" -v T="$data"/text 'NR == FNR { id[$1] = FNR - 1; next }
    NF != 2 { printf "%s: %s: utterance %s has %d words, expected 1\n", me, T, $1, NF - 1 > "/dev/stderr"; exit 1 }
    !($2 in id) { printf "%s: %s: word %s of utterance %s is not in %s\n", me, T, $2, $1, W > "/dev/stderr"; exit 1 }
    { print $1, id[$2] }' "$words" "$data"/text > "$dir"/utt2pdf.tmp
  mv "$dir"/utt2pdf.tmp "$dir"/utt2pdf
  labels=ark,t:$dir/utt2pdf
  lab_opts="--label-type=utt"
  init_opts=(--labels="$labels" --label-type=utt --num-pdfs="$(wc -l < "$words")")
fi

if [ $stage -le -1 ]; then
  $cmd "$dir"/log/init.log \
    gmm-init --device=$device --cov-type=$cov_type --num-gauss=$num_gauss --num-iters=$init_iters \
      --seed=$seed ${init_opts[@]+"${init_opts[@]}"} scp:"$data"/feats.scp "$dir"/0.mdl
fi
if [ "$ranks" != 0 ]; then
  # one resident job of N ranks: <dir>/N.mdl after each iteration (rank 0)
  start=$(( stage > 0 ? stage : 0 ))
  if [ $start -lt $num_iters ]; then
    t0=$(date +%s.%N)
    launch=(); [ "$ranks" -le 1 ] || launch=(--ranks "$ranks")   # 1 rank: a plain process, no mpirun
    $cmd ${launch[@]+"${launch[@]}"} "$dir"/log/train.$start.log \
      gmm-train --device=$device $lab_opts --num-iters=$((num_iters - start)) --first-iter=$((start + 1)) \
        --iter-models="$dir" "$dir"/$start.mdl scp:"$data"/feats.scp ${labels:+"$labels"} "$dir"/$num_iters.mdl
    grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]* over [0-9]* frames' "$dir"/log/train.$start.log |
      sed 's/^/  /'
    echo "  $ranks ranks, $((num_iters - start)) iterations:" \
      "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
  fi
  num_iters_jobs=0
else
  num_iters_jobs=$num_iters
fi
for it in $(seq 0 $((num_iters_jobs - 1))); do
  [ "$it" -ge $stage ] || continue
  t0=$(date +%s.%N)
  # Old accumulators of this iteration must not be summed if a job fails now.
  rm -f "$dir"/"$it".*.acc "$dir"/"$it".acc
  $cmd JOB=1:$nj "$dir"/log/acc."$it".JOB.log \
    gmm-acc-stats-gpu --device=$device $lab_opts "$dir"/"$it".mdl scp:"$sdata"/JOB/feats.scp ${labels:+"$labels"} "$dir"/"$it".JOB.acc
  # A sum tree while there are more than --sum-fan-in files: groups of that
  # many summed by parallel jobs (lists in <dir>/<it>.sumL.K.list).
  files=(); for j in $(seq 1 $nj); do files+=("$dir/$it.$j.acc"); done
  level=0
  while [ ${#files[@]} -gt $sum_fan_in ]; do
    level=$((level + 1)); k=$(( (${#files[@]} + sum_fan_in - 1) / sum_fan_in ))
    for g in $(seq 1 $k); do
      printf '%s\n' "${files[@]:$(( (g - 1) * sum_fan_in )):$sum_fan_in}" > "$dir"/"$it".sum$level."$g".list
    done
    # (one shell command line: the paths %q-quoted, the list read a line a file)
    q_acc=$(printf %q "$dir/$it.s$level"); q_list=$(printf %q "$dir/$it.sum$level")
    $cmd JOB=1:$k "$dir"/log/sum."$it".$level.JOB.log \
      "mapfile -t f < $q_list.JOB.list && gmm-sum-accs $q_acc.JOB.acc \"\${f[@]}\""
    files=(); for g in $(seq 1 $k); do files+=("$dir/$it.s$level.$g.acc"); done
  done
  # one job sums the rest and estimates (as Kaldi's "gmm-est ... 'gmm-sum-accs - ...|'")
  $cmd "$dir"/log/update."$it".log \
    gmm-sum-accs "$dir"/"$it".acc "${files[@]}" \&\& \
    gmm-est "$dir"/"$it".mdl "$dir"/"$it".acc "$dir"/$((it + 1)).mdl
  echo "  iteration $it: $(grep -o 'avg loglike per frame [-0-9.e+]* over [0-9]* frames' "$dir"/log/update."$it".log | tail -1)" \
    "($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s)"
  rm -f "$dir"/"$it".*.acc "$dir"/"$it".acc "$dir"/"$it".sum*.list
done
cp "$dir"/$num_iters.mdl "$dir"/final.mdl.tmp && mv "$dir"/final.mdl.tmp "$dir"/final.mdl
