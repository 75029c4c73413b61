#!/usr/bin/env bash
# steps/make_mfcc.sh -- MFCC features of a data directory as N parallel jobs
# (Kaldi's steps/make_mfcc.sh calling convention):
#
#   steps/make_mfcc.sh [options] <data-dir> [<log-dir> [<mfcc-dir>]]
#   e.g. steps/make_mfcc.sh --nj 4 --mfcc-config conf/mfcc.conf data/train exp/make_mfcc/train mfcc
#
# Splits <data-dir> (utils/split_data.sh), runs compute-mfcc-feats on each
# part's wav.scp into <mfcc-dir>/raw_mfcc_<name>.JOB.{ark,scp} and writes
# <data-dir>/feats.scp (sorted).  Defaults: <log-dir> = <data-dir>/log,
# <mfcc-dir> = <data-dir>/data.  segments are not supported yet.
# Options: --nj 4, --cmd utils/run.sh, --mfcc-config "" (a config file of
# compute-mfcc-feats options, one --name=value a line), --write-utt2num-frames false
set -euo pipefail
nj=4; cmd=$(realpath -s --relative-to=. "$(dirname "$0")/../utils/run.sh"); mfcc_config=; write_utt2num_frames=false
. "$(dirname "$0")/../utils/parse_options.sh"
if [ $# -lt 1 ] || [ $# -gt 3 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; logdir=${2:-$data/log}; mfccdir=${3:-$data/data}
utils=$(cd "$(dirname "$0")/../utils" && pwd)
me=make_mfcc.sh
name=$(basename "$data")
[ -f "$data"/wav.scp ] || { echo "$me: $data/wav.scp is missing" >&2; exit 1; }
[ ! -f "$data"/segments ] || { echo "$me: $data/segments: segmented recordings are not supported yet" >&2; exit 1; }
[ -z "$mfcc_config" ] || [ -f "$mfcc_config" ] || { echo "$me: no such config file: $mfcc_config" >&2; exit 1; }
"$utils"/validate_data_dir.sh --no-feats "$data" 2>/dev/null || "$utils"/validate_data_dir.sh --no-feats "$data"
mkdir -p "$logdir" "$mfccdir"
mfccdir=$(cd "$mfccdir" && pwd)   # feats.scp holds absolute paths
"$utils"/split_data.sh "$data" $nj
sdata=$data/split$nj
conf=; [ -z "$mfcc_config" ] || conf=--config=$mfcc_config
rm -f "$mfccdir"/raw_mfcc_"$name".*.scp
$cmd JOB=1:$nj "$logdir"/make_mfcc_"$name".JOB.log \
  compute-mfcc-feats ${conf:+"$conf"} scp:"$sdata"/JOB/wav.scp \
    ark,scp:"$mfccdir"/raw_mfcc_"$name".JOB.ark,"$mfccdir"/raw_mfcc_"$name".JOB.scp
for j in $(seq 1 $nj); do cat "$mfccdir"/raw_mfcc_"$name"."$j".scp; done | LC_ALL=C sort -k1,1 > "$data"/feats.scp.tmp
mv "$data"/feats.scp.tmp "$data"/feats.scp
if $write_utt2num_frames; then
  feat-to-len scp:"$data"/feats.scp ark,t:"$data"/utt2num_frames 2>/dev/null
fi
n=$(wc -l < "$data"/feats.scp); nw=$(wc -l < "$data"/wav.scp)
[ "$n" -eq "$nw" ] || { echo "$me: $data: features for $n of $nw utterances (see $logdir/make_mfcc_$name.*.log)" >&2; exit 1; }
echo "$me: $data: MFCCs of $n utterances" >&2
