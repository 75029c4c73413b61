#!/usr/bin/env bash
# steps/compute_cmvn_stats.sh -- cepstral mean and variance statistics of a
# data directory, per speaker (Kaldi's steps/compute_cmvn_stats.sh convention):
#
#   steps/compute_cmvn_stats.sh [options] <data-dir> [<log-dir> [<cmvn-dir>]]
#
# Statistics per speaker of spk2utt (compute-cmvn-stats --spk2utt) into
# <cmvn-dir>/cmvn_<name>.JOB.{ark,scp}, as N parallel jobs over the speaker
# split of utils/split_data.sh; writes <data-dir>/cmvn.scp (sorted).  For one
# set of statistics per utterance, use utt2spk "utt utt".
# Options: --nj 4, --cmd utils/run.sh.  Defaults: <log-dir> = <data-dir>/log,
# <cmvn-dir> = <data-dir>/data.
set -euo pipefail
nj=4; cmd=$(cd "$(dirname "$0")/../utils" && pwd)/run.sh
. "$(dirname "$0")/../utils/parse_options.sh"
if [ $# -lt 1 ] || [ $# -gt 3 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; logdir=${2:-$data/log}; cmvndir=${3:-$data/data}
utils=$(cd "$(dirname "$0")/../utils" && pwd)
me=compute_cmvn_stats.sh
name=$(basename $data)
$utils/validate_data_dir.sh $data 2>/dev/null || $utils/validate_data_dir.sh $data
[ -f $data/feats.scp ] || { echo "$me: $data/feats.scp is missing" >&2; exit 1; }
mkdir -p $logdir $cmvndir
cmvndir=$(cd $cmvndir && pwd)
# statistics per speaker need whole speakers per job: at most one job per speaker
nspk=$(awk 'NF > 0 && !($2 in s) { s[$2]; n++ } END { print n + 0 }' $data/utt2spk)
[ "$nspk" -ge "$nj" ] || nj=$(( nspk > 0 ? nspk : 1 ))
$utils/split_data.sh $data $nj
sdata=$data/split$nj
rm -f $cmvndir/cmvn_$name.*.scp
$cmd JOB=1:$nj $logdir/cmvn_$name.JOB.log \
  compute-cmvn-stats --spk2utt=ark,t:$sdata/JOB/spk2utt scp:$sdata/JOB/feats.scp \
    ark,scp:$cmvndir/cmvn_$name.JOB.ark,$cmvndir/cmvn_$name.JOB.scp
for j in $(seq 1 $nj); do cat $cmvndir/cmvn_$name.$j.scp; done | LC_ALL=C sort -k1,1 > $data/cmvn.scp.tmp
mv $data/cmvn.scp.tmp $data/cmvn.scp
echo "$me: $data: CMVN statistics of $(wc -l < $data/cmvn.scp) speakers" >&2
