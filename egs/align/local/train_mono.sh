#!/usr/bin/env bash
# local/train_mono.sh -- monophone training with the schedule of Kaldi's
# steps/train_mono.sh, every step a gmmhmm tool, as --nj jobs through --cmd:
#
#   local/train_mono.sh [options] <data-dir> <lang-dir> <exp-dir>
#   e.g. local/train_mono.sh --nj 4 data/train data/lang exp/mono
#
# <data-dir>: feats.scp, cmvn.scp (per speaker), utt2spk, text.  Features:
# apply-cmvn (per speaker) | add-deltas, made on the fly as Kaldi's script
# makes them.  Steps: gmm-init-mono on 10 utterances of job 1 (--shared-phones
# = phones/sets.int); compile-train-graphs (words to ids as sym2int.pl
# --map-oov: a word not in words.txt becomes oov.int); pass 0:
# align-equal-compiled | gmm-acc-stats-ali, gmm-est --min-gaussian-occupancy=3;
# passes 1 .. --num-iters - 1: realignment on --realign-iters
# (gmm-boost-silence | gmm-align-compiled, beam 6 on pass 1, then --beam, retry
# --retry-beam), gmm-acc-stats-ali, gmm-sum-accs, gmm-est --mix-up (Gaussians
# grow by (--totgauss - initial) / --max-iter-inc per pass up to pass
# --max-iter-inc, --power 0.25).  Writes <exp-dir>/{0.mdl,tree,final.mdl,
# final.occs,fsts.JOB.gz,ali.JOB.gz,num_jobs}, logs in <exp-dir>/log/ and the
# per-pass average log-likelihood per frame in <exp-dir>/loglike.txt.
# Options: --nj 4 --cmd utils/run.sh --device auto --num-iters 40 --totgauss 1000
#   --max-iter-inc 30 --boost-silence 1.0 --beam 10 --retry-beam 40 --power 0.25
#   --realign-iters "1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38"
set -euo pipefail
nj=4; cmd=utils/run.sh; device=auto
num_iters=40; totgauss=1000; max_iter_inc=30; boost_silence=1.0; beam=10; retry_beam=40; power=0.25
realign_iters="1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../utils/parse_options.sh"
if [ $# -ne 3 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; lang=${2%/}; dir=${3%/}
me=train_mono.sh
for f in "$data"/feats.scp "$data"/cmvn.scp "$data"/utt2spk "$data"/text "$lang"/L.fst "$lang"/topo \
  "$lang"/words.txt "$lang"/oov.int "$lang"/phones/sets.int "$lang"/phones/disambig.int "$lang"/phones/optional_silence.csl; do
  [ -f "$f" ] || { echo "$me: $f is missing" >&2; exit 1; }
done
scale_opts="--transition-scale=1.0 --acoustic-scale=0.1 --self-loop-scale=0.1"
mkdir -p "$dir"/log
echo $nj > "$dir"/num_jobs
"$here/../../utils/split_data.sh" --per-utt "$data" $nj >/dev/null
sdata=$data/split${nj}utt
oov=$(cat "$lang"/oov.int)
for j in $(seq $nj); do # transcripts as word ids (sym2int.pl --map-oov)
  awk -v oov="$oov" 'NR == FNR { id[$1] = $2; next }
    { printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", ($i in id) ? id[$i] : oov; print "" }' \
    "$lang"/words.txt "$sdata"/$j/text > "$sdata"/$j/text.int
done
feats="ark,s,cs:apply-cmvn --utt2spk=ark:$data/utt2spk scp:$data/cmvn.scp scp:$sdata/JOB/feats.scp ark:- | add-deltas ark:- ark:- |"
dev="--device=$device"

feat_dim=$(feat-to-dim "${feats//JOB/1}" - 2>/dev/null)
$cmd "$dir"/log/init.log \
  gmm-init-mono --shared-phones="$lang"/phones/sets.int "--train-feats=${feats//JOB/1} subset-feats --n=10 ark:- ark:-|" \
  "$lang"/topo "$feat_dim" "$dir"/0.mdl "$dir"/tree
numgauss=$(gmm-info "$dir"/0.mdl 2>/dev/null | awk '/number of gaussians/ { print $NF }')
incgauss=$(( (totgauss - numgauss) / max_iter_inc ))

echo "$me: compiling training graphs"
$cmd JOB=1:$nj "$dir"/log/compile_graphs.JOB.log \
  compile-train-graphs --read-disambig-syms="$lang"/phones/disambig.int "$dir"/tree "$dir"/0.mdl "$lang"/L.fst \
  ark:"$sdata"/JOB/text.int "ark:|gzip -c > $dir/fsts.JOB.gz"

echo "$me: pass 0: equal alignment"
$cmd JOB=1:$nj "$dir"/log/align.0.JOB.log \
  align-equal-compiled "ark:gunzip -c $dir/fsts.JOB.gz|" "$feats" ark:- \| \
  gmm-acc-stats-ali $dev --binary=true "$dir"/0.mdl "$feats" ark:- "$dir"/0.JOB.acc
gmm-est --min-gaussian-occupancy=3 --mix-up=$numgauss --power=$power "$dir"/0.mdl \
  "gmm-sum-accs - $dir/0.*.acc|" "$dir"/1.mdl 2> "$dir"/log/update.0.log
rm -f "$dir"/0.*.acc
: > "$dir"/loglike.txt
b=6 # the first realignment's beam (Kaldi's initial_beam)
x=1
while [ $x -lt $num_iters ]; do
  if echo " $realign_iters " | grep -q " $x "; then
    mdl="gmm-boost-silence --boost=$boost_silence $(cat "$lang"/phones/optional_silence.csl) $dir/$x.mdl - |"
    $cmd JOB=1:$nj "$dir"/log/align.$x.JOB.log \
      gmm-align-compiled $dev $scale_opts --beam=$b --retry-beam=$retry_beam "$mdl" \
      "ark:gunzip -c $dir/fsts.JOB.gz|" "$feats" "ark:|gzip -c > $dir/ali.JOB.gz"
  fi
  $cmd JOB=1:$nj "$dir"/log/acc.$x.JOB.log \
    gmm-acc-stats-ali $dev "$dir"/$x.mdl "$feats" "ark:gunzip -c $dir/ali.JOB.gz|" "$dir"/$x.JOB.acc
  $cmd "$dir"/log/update.$x.log \
    gmm-est --write-occs="$dir"/$((x + 1)).occs --mix-up=$numgauss --power=$power "$dir"/$x.mdl \
    "gmm-sum-accs - $dir/$x.*.acc|" "$dir"/$((x + 1)).mdl
  # the pass's average log-likelihood per frame, from the accumulation logs
  cat "$dir"/log/acc.$x.*.log | awk -v x=$x '/Overall avg like per frame/ {
      for (i = 1; i <= NF; i++) { if ($i == "=") v = $(i + 1); if ($i == "over") f = $(i + 1) }
      tf += f; tl += v * f }
    END { if (tf > 0) printf "%d %.6f %d\n", x, tl / tf, tf }' >> "$dir"/loglike.txt
  rm -f "$dir"/$x.mdl "$dir"/$x.*.acc "$dir"/$x.occs
  [ $x -gt $max_iter_inc ] || numgauss=$((numgauss + incgauss))
  b=$beam
  x=$((x + 1))
done
(cd "$dir" && rm -f final.mdl final.occs && ln -s $x.mdl final.mdl && ln -s $x.occs final.occs)
echo "$me: trained $dir/final.mdl ($num_iters passes, $(gmm-info "$dir"/final.mdl 2>/dev/null | awk '/number of gaussians/ { print $NF }') Gaussians)"
