#!/usr/bin/env bash
# steps/make_deltas_cmvn.sh -- a new data directory whose features are those of
# another with deltas and cepstral mean (and variance) normalisation applied,
# as N parallel jobs over the speaker split:
#
#   steps/make_deltas_cmvn.sh [options] <src-data> <dst-data> [<log-dir> [<feat-dir>]]
#   e.g. steps/make_deltas_cmvn.sh --nj 4 --cmvn speaker --norm-vars true data/train data/train_dcmvn
#
# --order deltas-cmvn: add-deltas, then statistics of those features and
#   apply-cmvn (the arabic-digits and FSDD recipes);  cmvn-deltas: statistics
#   of the source features, apply-cmvn, then add-deltas (Kaldi's order; yesno).
# --cmvn speaker (statistics per speaker of spk2utt), utterance (per utterance)
#   or none.  --norm-vars false|true.  --delta-order 2 (0: no deltas).
# <dst-data> gets the source's tables (utt2spk, spk2utt, text, wav.scp, ...)
# and a feats.scp to <feat-dir>/feats_<name>.JOB.ark (default <dst-data>/data);
# the statistics stay in <feat-dir>/cmvn_<name>.JOB.ark.
# Options: --nj 4, --cmd utils/run.sh.
set -euo pipefail
nj=4; cmd=$(realpath -s --relative-to=. "$(dirname "$0")/../utils/run.sh"); order=deltas-cmvn; cmvn=utterance; norm_vars=false; delta_order=2
. "$(dirname "$0")/../utils/parse_options.sh"
if [ $# -lt 2 ] || [ $# -gt 4 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
src=${1%/}; dst=${2%/}; logdir=${3:-$dst/log}; featdir=${4:-$dst/data}
utils=$(cd "$(dirname "$0")/../utils" && pwd)
me=make_deltas_cmvn.sh
name=$(basename "$dst")
case $order in deltas-cmvn|cmvn-deltas) ;; *) echo "$me: --order must be deltas-cmvn or cmvn-deltas, not $order" >&2; exit 1 ;; esac
case $cmvn in speaker|utterance|none) ;; *) echo "$me: --cmvn must be speaker, utterance or none, not $cmvn" >&2; exit 1 ;; esac
[ -f "$src"/feats.scp ] || { echo "$me: $src/feats.scp is missing" >&2; exit 1; }
[ "$(cd "$src" && pwd)" != "$(mkdir -p "$dst" && cd "$dst" && pwd)" ] || { echo "$me: source and destination are the same: $src" >&2; exit 1; }
"$utils"/validate_data_dir.sh "$src" 2>/dev/null || "$utils"/validate_data_dir.sh "$src"
mkdir -p "$logdir" "$featdir"
featdir=$(cd "$featdir" && pwd)
for f in $(cd "$src" && ls utt2spk spk2utt text wav.scp segments utt2* spk2* 2>/dev/null | sort -u); do
  case $f in utt2num_frames|utt2dur) ;; *) cp "$src"/"$f" "$dst"/"$f" ;; esac
done
rm -f "$dst"/feats.scp "$dst"/cmvn.scp
"$utils"/split_data.sh "$src" $nj
sdata=$src/split$nj
deltas="cat"; [ $delta_order -eq 0 ] || deltas="add-deltas --delta-order=$delta_order ark:- ark:-"
case $cmvn in
  speaker) stats_opt="--spk2utt=ark,t:$sdata/JOB/spk2utt"; apply_opt="--utt2spk=ark,t:$sdata/JOB/utt2spk" ;;
  *) stats_opt=; apply_opt= ;;
esac
out="ark,scp:$featdir/feats_$name.JOB.ark,$featdir/feats_$name.JOB.scp"
stats=$featdir/cmvn_$name.JOB.ark
rm -f "$featdir"/feats_"$name".*.scp
if [ $cmvn = none ]; then
  $cmd JOB=1:$nj "$logdir"/make_feats_"$name".JOB.log \
    copy-feats scp:"$sdata"/JOB/feats.scp ark:- \| $deltas \| copy-feats ark:- "$out"
elif [ $order = deltas-cmvn ]; then
  $cmd JOB=1:$nj "$logdir"/make_feats_"$name".JOB.log \
    copy-feats scp:"$sdata"/JOB/feats.scp ark:- \| $deltas \| compute-cmvn-stats ${stats_opt:+"$stats_opt"} ark:- ark:"$stats" \&\& \
    copy-feats scp:"$sdata"/JOB/feats.scp ark:- \| $deltas \| \
    apply-cmvn --norm-vars=$norm_vars ${apply_opt:+"$apply_opt"} ark:"$stats" ark:- "$out"
else
  $cmd JOB=1:$nj "$logdir"/make_feats_"$name".JOB.log \
    compute-cmvn-stats ${stats_opt:+"$stats_opt"} scp:"$sdata"/JOB/feats.scp ark:"$stats" \&\& \
    apply-cmvn --norm-vars=$norm_vars ${apply_opt:+"$apply_opt"} ark:"$stats" scp:"$sdata"/JOB/feats.scp ark:- \| $deltas \| \
    copy-feats ark:- "$out"
fi
for j in $(seq 1 $nj); do cat "$featdir"/feats_"$name"."$j".scp; done | LC_ALL=C sort -k1,1 > "$dst"/feats.scp.tmp
mv "$dst"/feats.scp.tmp "$dst"/feats.scp
n=$(wc -l < "$dst"/feats.scp); ns=$(wc -l < "$src"/feats.scp)
[ "$n" -eq "$ns" ] || { echo "$me: $dst: features for $n of $ns utterances (see $logdir/make_feats_$name.*.log)" >&2; exit 1; }
echo "$me: $dst: $n utterances ($order, cmvn $cmvn, norm-vars $norm_vars)" >&2
