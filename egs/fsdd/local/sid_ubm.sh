#!/usr/bin/env bash
# local/sid_ubm.sh -- a diagonal then a full-covariance UBM with the same
# tool calls, options and pipes as Kaldi's egs/sre08/v1/sid/train_diag_ubm.sh
# and sid/train_full_ubm.sh (our own script, gmmhmm's tools under Kaldi's
# names; doc/kaldi.md):
#
#   local/sid_ubm.sh [options] <data-dir> <diag-dir> <full-dir>
#
# <data-dir> holds feats.scp and vad.scp (and utt2spk for the job split:
# utils/split_data.sh, whole speakers per job).  Writes <diag-dir>/final.dubm
# and <full-dir>/final.ubm, logs in */log/.
# Options (--name value or --name=value; Kaldi's defaults in brackets where
# the fixture run of $GH_SHARED/data/kaldi-fixtures/ubm used others):
#   --cmd run.pl  --nj 2  --num-gauss 32  --num-threads 2  --num-iters 4 (diag)
#   --num-iters-init 10 [20]  --full-iters 3 [4]  --subsample 2 [5]
#   --num-gselect 30 (diag)  --full-gselect 20  --num-frames 500000
#   --initial-gauss-proportion 0.5  --min-gaussian-weight 0.0001
#   --remove-low-count-gaussians true  --delta-window 3 --delta-order 2
#   --device auto: added to the GMM tools' options (auto: the GPU when
#   there is one, else the CPU).
set -euo pipefail
cmd=run.pl; nj=2; num_gauss=32; num_threads=2; num_iters=4; num_iters_init=10; full_iters=3
subsample=2; num_gselect=30; full_gselect=20; num_frames=500000; initial_gauss_proportion=0.5
min_gaussian_weight=0.0001; remove_low_count_gaussians=true; delta_window=3; delta_order=2; device=auto
while [[ $# -gt 0 && $1 == --* ]]; do
  o=${1#--}; if [[ $o == *=* ]]; then v=${o#*=}; o=${o%%=*}; shift; else v=${2:?"option --$o needs a value"}; shift 2; fi
  o=${o//-/_}
  case $o in
    cmd|nj|num_gauss|num_threads|num_iters|num_iters_init|full_iters|subsample|num_gselect|full_gselect|num_frames|\
initial_gauss_proportion|min_gaussian_weight|remove_low_count_gaussians|delta_window|delta_order|device) printf -v "$o" '%s' "$v" ;;
    *) echo "sid_ubm.sh: unknown option --${o//_/-}" >&2; exit 1 ;;
  esac
done
[ $# -eq 3 ] || { sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; }
data=$1; dir=$2; fdir=$3
utils=$(cd "$(dirname "$0")/../../utils" && pwd)
export PATH="$utils:$PATH"
dev="--device=$device"
for f in feats.scp vad.scp; do [ -f $data/$f ] || { echo "sid_ubm.sh: no $data/$f" >&2; exit 1; }; done
mkdir -p $dir/log $fdir/log
# the job split (Kaldi: utils/split_data.sh; vad.scp follows feats.scp)
$utils/split_data.sh $data $nj >/dev/null
sdata=$data/split$nj
for j in $(seq $nj); do
  awk 'NR == FNR { k[$1] = 1; next } ($1 in k)' $sdata/$j/feats.scp $data/vad.scp > $sdata/$j/vad.scp
done
delta_opts="--delta-window=$delta_window --delta-order=$delta_order"
all_feats="ark,s,cs:add-deltas $delta_opts scp:$data/feats.scp ark:- | apply-cmvn-sliding --norm-vars=false --center=true --cmn-window=300 ark:- ark:- | select-voiced-frames ark:- scp,s,cs:$data/vad.scp ark:- |"
feats="ark,s,cs:add-deltas $delta_opts scp:$sdata/JOB/feats.scp ark:- | apply-cmvn-sliding --norm-vars=false --center=true --cmn-window=300 ark:- ark:- | select-voiced-frames ark:- scp,s,cs:$sdata/JOB/vad.scp ark:- | subsample-feats --n=$subsample ark:- ark:- |"
num_gauss_init=$(awk -v p=$initial_gauss_proportion -v n=$num_gauss 'BEGIN { print int(p * n) }')

# ---- train_diag_ubm.sh ----
$cmd --num-threads $num_threads $dir/log/gmm_init.log \
  gmm-global-init-from-feats $dev --num-threads=$num_threads --num-frames=$num_frames \
    --min-gaussian-weight=$min_gaussian_weight \
    --num-gauss=$num_gauss --num-gauss-init=$num_gauss_init --num-iters=$num_iters_init \
    "$all_feats" $dir/0.dubm
$cmd JOB=1:$nj $dir/log/gselect.JOB.log \
  gmm-gselect $dev --n=$num_gselect $dir/0.dubm "$feats" "ark:|gzip -c >$dir/gselect.JOB.gz"
for x in $(seq 0 $((num_iters - 1))); do
  $cmd JOB=1:$nj $dir/log/acc.$x.JOB.log \
    gmm-global-acc-stats $dev "--gselect=ark,s,cs:gunzip -c $dir/gselect.JOB.gz|" \
      $dir/$x.dubm "$feats" $dir/$x.JOB.acc
  if [ $x -lt $((num_iters - 1)) ]; then opt="--remove-low-count-gaussians=false"
  else opt="--remove-low-count-gaussians=$remove_low_count_gaussians"; fi
  $cmd $dir/log/update.$x.log \
    gmm-global-est $opt --min-gaussian-weight=$min_gaussian_weight $dir/$x.dubm "gmm-global-sum-accs - $dir/$x.*.acc|" \
      $dir/$((x + 1)).dubm
  rm $dir/$x.*.acc $dir/$x.dubm
done
rm $dir/gselect.*.gz
mv $dir/$num_iters.dubm $dir/final.dubm

# ---- train_full_ubm.sh ----
$cmd $fdir/log/convert_diag_to_full.log gmm-global-to-fgmm $dir/final.dubm $fdir/0.ubm
$cmd JOB=1:$nj $fdir/log/gselect.JOB.log \
  gmm-gselect $dev --n=$full_gselect "fgmm-global-to-gmm $fdir/0.ubm - |" "$feats" \
    "ark:|gzip -c >$fdir/gselect.JOB.gz"
x=0
while [ $x -lt $full_iters ]; do
  $cmd JOB=1:$nj $fdir/log/acc.$x.JOB.log \
    fgmm-global-acc-stats $dev "--gselect=ark,s,cs:gunzip -c $fdir/gselect.JOB.gz|" $fdir/$x.ubm "$feats" \
      $fdir/$x.JOB.acc
  if [ $((x + 1)) -eq $full_iters ]; then lowcount_opt="--remove-low-count-gaussians=$remove_low_count_gaussians"
  else lowcount_opt="--remove-low-count-gaussians=false"; fi
  $cmd $fdir/log/update.$x.log \
    fgmm-global-est $lowcount_opt --min-gaussian-weight=$min_gaussian_weight --verbose=2 $fdir/$x.ubm \
      "fgmm-global-sum-accs - $fdir/$x.*.acc |" $fdir/$((x + 1)).ubm
  rm $fdir/$x.*.acc $fdir/$x.ubm
  x=$((x + 1))
done
rm $fdir/gselect.*.gz
mv $fdir/$x.ubm $fdir/final.ubm
