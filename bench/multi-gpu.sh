#!/usr/bin/env bash
# bench/multi-gpu.sh -- training as --nj jobs on one and on two GPUs
# (egs/steps with --cmd "utils/run.sh --gpu 1": one job per GPU through
# CUDA_VISIBLE_DEVICES): seconds per EM iteration of
#   1. a large synthetic GMM: --frames (2M) frames of dimension --dim (40) from
#      bench/gen-feats.c, one global GMM of --gauss (512) full-covariance
#      Gaussians (gmm-init on 100k frames, then --iters iterations of
#      steps/train_gmm.sh: N x gmm-acc-stats-gpu -> gmm-sum-accs && gmm-est)
#   2. the Arabic-digits HMM-GMMs of egs/arabic-digits (stage 3: MFCC + deltas +
#      per-utterance CMN, 8 states x up to 8 diagonal Gaussians per digit,
#      --hmm-iters Baum-Welch iterations of steps/train_word_hmm.sh)
# for each count in --gpus ("1 2": 1 job on GPU 0, then 2 jobs on GPUs 0 and
# 1), with the time of the slowest accumulation job and of the sum + update
# job of each iteration (from the job logs), the size of one job's
# accumulators, and whether the 2-job models equal the 1-job models
# (utils/compare_gmms.sh: within 1e-5 + 1e-4 x the largest entry).
# Prints a table, also written to <work>/multi-gpu.txt.
#
# Usage (from the repository root, tools built with make):
#   GH_SHARED=/path/to/shared bench/multi-gpu.sh [options]
# Options (--name value):
#   --device cuda     the tools' --device (cpu: a CPU check, "GPUs" = jobs)
#   --gpus "1 2"      numbers of GPUs (= jobs) to compare
#   --work DIR        [/tmp/gmmhmm-bench]
#   --frames 2000000 --dim 40 --gauss 512 --iters 3
#   --hmm-iters 16    --arabic-speakers 50 (training speakers used; fewer for a quick check)
# A quick CPU check (under a minute):
#   bench/multi-gpu.sh --device cpu --frames 20000 --gauss 8 --iters 2 --hmm-iters 2 --arabic-speakers 4
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
egs=$root/egs
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
shared=${GH_SHARED:-$root/../shared}
device=cuda; gpus="1 2"; work=/tmp/gmmhmm-bench
frames=2000000; dim=40; gauss=512; iters=3; hmm_iters=16; arabic_speakers=50
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "multi-gpu.sh: unexpected argument $1" >&2; exit 1; }
for t in gmm-init gmm-acc-stats-gpu gmm-sum-accs gmm-est gmm-score-gpu hmm-bw hmm-est copy-feats; do
  command -v $t >/dev/null || { echo "multi-gpu.sh: $t not built (run make in $root)" >&2; exit 1; }
done
src=$shared/data/spoken-arabic-digit/Train_Arabic_Digit.txt
[ -f "$src" ] || [ ! -f "$src.gz" ] || src=$src.gz   # plain or gzipped
[ -f "$src" ] || { echo "multi-gpu.sh: missing $src (set GH_SHARED)" >&2; exit 1; }
gpu_list=()
if [ "$device" != cpu ]; then
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -r -a gpu_list <<< "$CUDA_VISIBLE_DEVICES"
  else mapfile -t gpu_list < <(nvidia-smi -L 2>/dev/null | awk '/^GPU [0-9]+:/ { sub(":", "", $2); print $2 }'); fi
  [ ${#gpu_list[@]} -gt 0 ] || { echo "multi-gpu.sh: no GPU found (nvidia-smi -L); use --device cpu for a CPU check" >&2; exit 1; }
  echo "GPUs: $(nvidia-smi -L 2>/dev/null | tr '\n' ';')"
fi
mkdir -p "$work"; cd "$work"
ln -sfn "$egs/steps" steps; ln -sfn "$egs/utils" utils
echo "multi-gpu.sh: working in $work ($(date -u))"

# launcher <n>: the --cmd for n jobs on n GPUs (or n CPU slots)
launcher() {
  if [ "$device" = cpu ]; then echo "utils/run.sh --max-jobs-run $1"; else echo "utils/run.sh --gpu 1"; fi
}
visible() {  # the first n GPUs, comma-separated
  local n=$1 i out=
  for ((i = 0; i < n; i++)); do out+=${out:+,}${gpu_list[$i]}; done
  echo "$out"
}
mean_iter() {  # mean_iter <train-output> <from-iteration>: mean "(T s)" of iterations >= from
  awk -v from=$2 '/^  iteration [0-9]+:/ { it = $2 + 0; if (it >= from && match($0, /\(([0-9.]+) s\)$/)) {
      s += substr($0, RSTART + 1, RLENGTH - 4); n++ } } END { if (n) printf "%.2f", s / n; else printf "-" }' "$1"
}
log_secs() {  # log_secs <glob-of-logs> <max|sum>: from "elapsed time S seconds"
  cat $1 2>/dev/null | awk -v how=$2 '/^# Ended \(code 0\)/ { for (i = 1; i <= NF; i++) if ($i == "time") v = $(i + 1) + 0;
    n++; s += v; if (v > m) m = v } END { if (!n) printf "-"; else printf "%.2f", how == "max" ? m : s }'
}
mean_logs() {  # mean_logs <dir> <from> <to> <acc|update>: mean over iterations of max acc job / update job
  local d=$1 from=$2 to=$3 what=$4 it tot=0 n=0 v
  for ((it = from; it <= to; it++)); do
    if [ $what = acc ]; then v=$(log_secs "$d/log/acc.$it.*.log" max); else v=$(log_secs "$d/log/update.$it.log" max); fi
    [ "$v" = - ] && continue
    tot=$(awk -v a=$tot -v b=$v 'BEGIN { print a + b }'); n=$((n + 1))
  done
  [ $n -gt 0 ] && awk -v a=$tot -v n=$n 'BEGIN { printf "%.2f", a / n }' || echo -
}
results=$work/multi-gpu.rows; : > $results

echo "== synthetic data: $frames frames, dimension $dim"
mkdir -p "$work/build"
cc -O2 -o "$work/build/gen-feats" "$root/bench/gen-feats.c" -lm
syn=data/syn_${frames}_$dim
if [ ! -f $syn/spk2utt ] || [ "$(feat-to-len scp:$syn/feats.scp 2>/dev/null)" != "$frames" ]; then
  rm -rf $syn; mkdir -p data; "$work/build/gen-feats" --frames=$frames --dim=$dim --clusters=$gauss \
    --utts-per-spk=$(( frames / 1000 / 16 > 0 ? frames / 1000 / 16 : 1 )) $syn
fi
spk=$(wc -l < $syn/spk2utt)
echo "== synthetic: gmm-init ($gauss full Gaussians, k-means on at most 100000 frames)"
init=exp/syn_init_${gauss}; mkdir -p $init
if [ ! -f $init/0.mdl ]; then
  t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=${gpu_list[0]:-} gmm-init --device=$device --cov-type=full --num-gauss=$gauss --num-iters=0 \
    --max-frames=100000 --kmeans-iters=3 scp:$syn/feats.scp $init/0.mdl 2> $init/init.log ||
    { echo "multi-gpu.sh: gmm-init failed, see $work/$init/init.log" >&2; exit 1; }
  echo "   ($(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN { printf "%.1f", b - a }') s)"
fi
# one job's accumulators (their size does not depend on the data)
head -1 $syn/feats.scp > $init/one.scp
gmm-acc-stats-gpu --device=$device $init/0.mdl scp:$init/one.scp $init/one.acc 2>/dev/null
syn_acc_bytes=$(stat -c %s $init/one.acc)
# The same accumulation as one job and as the sum of the last count's jobs
# (one model, the initial one): equal up to float summation order when each
# frame's arithmetic does not depend on the split.
nsplit=$(echo $gpus | awk '{ print $NF }')
if [ $nsplit -gt 1 ] && [ $nsplit -le $spk ] && { [ "$device" = cpu ] || [ $nsplit -le ${#gpu_list[@]} ]; }; then
  utils/split_data.sh $syn $nsplit >/dev/null
  inv=$init/split; rm -rf $inv; mkdir -p $inv
  CUDA_VISIBLE_DEVICES=${gpu_list[0]:-} gmm-acc-stats-gpu --device=$device $init/0.mdl scp:$syn/feats.scp $inv/all.acc 2> $inv/all.log
  pids=
  for ((j = 1; j <= nsplit; j++)); do
    CUDA_VISIBLE_DEVICES=${gpu_list[$(( (j - 1) % (${#gpu_list[@]} > 0 ? ${#gpu_list[@]} : 1) ))]:-} gmm-acc-stats-gpu --device=$device \
      $init/0.mdl scp:$syn/split$nsplit/$j/feats.scp $inv/$j.acc 2> $inv/$j.log & pids+=" $!"
  done
  wait $pids
  gmm-sum-accs $inv/sum.acc $(for ((j = 1; j <= nsplit; j++)); do echo $inv/$j.acc; done) 2>/dev/null
  gmm-sum-accs --binary=false $inv/all.txt $inv/all.acc 2>/dev/null
  gmm-sum-accs --binary=false $inv/sum.txt $inv/sum.acc 2>/dev/null
  python3 "$root/bench/cmp-accs.py" $inv/all.txt $inv/sum.txt > $inv/cmp.txt || echo "(cmp-accs.py failed)" > $inv/cmp.txt
  gmm-est $init/0.mdl $inv/all.acc $inv/all.mdl 2>/dev/null; gmm-est $init/0.mdl $inv/sum.acc $inv/sum.mdl 2>/dev/null
fi

for g in $gpus; do
  if [ "$device" != cpu ] && [ $g -gt ${#gpu_list[@]} ]; then echo "-- skipping $g GPUs: only ${#gpu_list[@]} here"; continue; fi
  [ $g -le $spk ] || { echo "-- skipping $g jobs: only $spk speakers"; continue; }
  dir=exp/syn_${gauss}_g$g; rm -rf $dir; mkdir -p $dir; cp $init/0.mdl $dir/0.mdl
  echo "== synthetic GMM, $g job(s) on $g $( [ $device = cpu ] && echo 'CPU slot(s)' || echo "GPU(s): $(visible $g)")"
  ( [ "$device" = cpu ] || export CUDA_VISIBLE_DEVICES=$(visible $g)
    steps/train_gmm.sh --ranks 0 --nj $g --cmd "$(launcher $g)" --device $device --stage 0 --num-iters $iters \
      $syn $dir ) | tee $dir/train.out
  echo "synthetic GMM ($frames x $dim, $gauss full) $g $g $(mean_iter $dir/train.out 0) $(mean_logs $dir 0 $((iters - 1)) acc) $(mean_logs $dir 0 $((iters - 1)) update) $syn_acc_bytes $frames" >> $results
done

# the same synthetic job as ONE resident job of 1 and 2 ranks (gmm-train, MPI)
echo "== synthetic GMM, resident: gmm-train as 1 and $(echo $gpus | awk '{ print $NF }') rank(s) (bench/train.sh)"
GH_SHARED=$shared "$root/bench/train.sh" --device $device --ranks "$gpus" --frames $frames --dim $dim \
  --gauss $gauss --iters $iters --work "$work" --peer false || echo "(bench/train.sh failed)"

# the Arabic HMM-GMM topology on --frames replicated frames as ONE resident job of 1 and 2
# ranks (hmm-train, MPI): bench/hmm-train.sh's table
echo "== Arabic HMM-GMM, resident: hmm-train as 1 and $(echo $gpus | awk '{ print $NF }') rank(s), $frames frames (bench/hmm-train.sh)"
GH_SHARED=$shared "$root/bench/hmm-train.sh" --device $device --ranks "$gpus" --frames $frames --iters 6 \
  --work "$work/hmm-train" || echo "(bench/hmm-train.sh failed)"

echo "== Arabic digits: data, MFCC + deltas + per-utterance CMN"
if [ ! -f data/arabic/train_dcmn/feats.scp ] || [ "$(wc -l < data/arabic/train/spk2utt 2>/dev/null)" != "$arabic_speakers" ]; then
  rm -rf data/arabic
  "$egs/arabic-digits/local/prepare_data.sh" "$src" data/arabic_all 2>/dev/null
  mkdir -p data/arabic; cp -r data/arabic_all/lang data/arabic/
  head -n $arabic_speakers data/arabic_all/train/spk2utt | awk '{ print $1 }' > data/arabic/train.spk
  utils/subset_data_dir.sh --spk-list data/arabic/train.spk data/arabic_all/train data/arabic/train
  steps/make_deltas_cmvn.sh --nj 1 --order deltas-cmvn --cmvn utterance data/arabic/train data/arabic/train_dcmn 2>/dev/null
fi
hmm_frames=$(feat-to-len scp:data/arabic/train_dcmn/feats.scp 2>/dev/null)
for g in $gpus; do
  if [ "$device" != cpu ] && [ $g -gt ${#gpu_list[@]} ]; then continue; fi
  dir=exp/hmm_g$g; rm -rf $dir
  echo "== Arabic HMM-GMM, $g job(s)"
  ( [ "$device" = cpu ] || export CUDA_VISIBLE_DEVICES=$(visible $g)
    steps/train_word_hmm.sh --ranks 0 --nj $g --cmd "$(launcher $g)" --device $device --cov diag --states 8 --gauss 8 \
      --iters $hmm_iters data/arabic/train_dcmn data/arabic/lang/words.txt $dir ) | tee $dir.out
  mv $dir.out $dir/train.out
  # one job's GMM accumulators (size independent of the data)
  head -1 data/arabic/train_dcmn/feats.scp > $dir/one.scp
  gmm-score-gpu --device=$device $dir/final.mdl scp:$dir/one.scp ark:- 2>/dev/null |
    hmm-bw --device=$device --transcripts=ark,t:data/arabic/train_dcmn/text $dir/final.hmm ark:- ark:$dir/one.post 2>/dev/null
  gmm-acc-stats-gpu --device=$device --label-type=post $dir/final.mdl scp:$dir/one.scp ark:$dir/one.post $dir/one.acc 2>/dev/null
  bytes=$(stat -c %s $dir/one.acc 2>/dev/null || echo 0)
  from=$(( hmm_iters / 2 + 1 ))   # after mixing up: the final model size
  echo "Arabic HMM-GMM (${hmm_frames} frames, 80 pdfs x 8 diag, its ${from}..$hmm_iters) $g $g $(mean_iter $dir/train.out $from) $(mean_logs $dir $from $hmm_iters acc) $(mean_logs $dir $from $hmm_iters update) $bytes $hmm_frames" >> $results
done

same() {  # same <a> <b>: yes/NO and the largest difference as a share of the tolerance
  [ -f "$1" ] && [ -f "$2" ] || { echo "-"; return; }
  local out ok=yes
  out=$(utils/compare_gmms.sh "$1" "$2" 2>/dev/null) || ok=NO
  local r; r=$(sed -n 's/.*largest difference \(.*\) of that/\1/p' <<< "$out")
  [ $ok = yes ] && echo "yes (${r:-?} of the tolerance)" || echo "NO (${r:-?} x the tolerance)"
}
g1=$(echo $gpus | awk '{ print $1 }'); g2=$(echo $gpus | awk '{ print $NF }')
{
  echo "# bench/multi-gpu.sh ($(date -u +%Y-%m-%d), device $device$( [ $device = cpu ] || echo ", $(nvidia-smi -L 2>/dev/null | head -1 | cut -d'(' -f1)"))"
  printf "%-58s %4s %4s %9s %9s %9s %12s %10s %8s\n" "case" "GPUs" "jobs" "s/iter" "acc-job" "sum+est" "frames/s" "accs/job" "speed-up"
  awk '{ n = NF; bytes = $(n - 1); fr = $n; upd = $(n - 2); acc = $(n - 3); it = $(n - 4); jobs = $(n - 5); g = $(n - 6)
         name = $1; for (i = 2; i <= n - 7; i++) name = name " " $i
         if (!(name in base)) base[name] = it
         printf "%-58s %4s %4s %9s %9s %9s %12s %9.2fM %8s\n", name, g, jobs, it, acc, upd,
           (it > 0 ? sprintf("%.3g", fr / it) : "-"), bytes / 1e6, (it > 0 ? sprintf("%.2fx", base[name] / it) : "-") }' $results
  echo "(s/iter: mean wall time of an iteration of the step; acc-job: its slowest accumulation job; sum+est: the"
  echo " gmm-sum-accs && gmm-est job; accs/job: bytes of one job's GMM accumulators. Models of $g2 jobs equal to $g1 job:"
  echo " synthetic $(same exp/syn_${gauss}_g$g1/$iters.mdl exp/syn_${gauss}_g$g2/$iters.mdl), Arabic HMM-GMM $(same exp/hmm_g$g1/final.mdl exp/hmm_g$g2/final.mdl)"
  echo " (utils/compare_gmms.sh, 1e-5 + 1e-4 x largest entry).)"
  if [ -f $init/split/cmp.txt ]; then
    echo "Split invariance, synthetic, initial model: $nsplit jobs' accumulators summed vs 1 job's (largest |a-b| / largest |a|"
    echo " of each Gaussian's block):"; cat $init/split/cmp.txt
    echo " models re-estimated from them: $(same $init/split/all.mdl $init/split/sum.mdl)"
  fi
} > multi-gpu.txt
echo "== results ($work/multi-gpu.txt)"
cat multi-gpu.txt
