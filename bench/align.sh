#!/usr/bin/env bash
# bench/align.sh -- forced alignment speed (bench/RESULTS.md, "Alignment"):
# gmm-align-compiled with Kaldi's mono/final.mdl ($GH_SHARED/data/kaldi-fixtures/align)
# on the cathy corpus (1,582 utterances, 475,973 frames = 1.32 hours at 10 ms) replicated
# to --hours of audio under new keys (scp entries pointing at the same archive bytes, so
# nothing is copied; the last copy cut at the hour mark), graphs from our
# compile-train-graphs, features as align_si.sh makes them (CMVN + deltas).
# Modes: exact (--exact: the batched exact aligner, backend.h align_batch, on the device)
# and beam (--beam=10 --retry-beam=40: scores on the device, Kaldi's FasterDecoder on the
# CPU), each on --device and on the CPU backend (--device=cpu) of the same host.
# Reports per run: wall seconds (read -> written alignments), the GMM scoring and
# alignment seconds of the tool's --verbose=1 line, and real-time factors
# RTF = seconds / audio seconds (whole run and alignment alone).  Prints a table,
# also written to <work>/align.txt.
#
# Usage (from the repository root, tools built with make):
#   GH_SHARED=/path/to/shared bench/align.sh [options]
# Options (--name value):
#   --device cuda  --hours 24  --modes "exact beam"  --cpu true  --batch-size 256  --work DIR [/tmp/gmmhmm-bench-align]
# A quick check without a GPU: bench/align.sh --device opencl --hours 0.1
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="${GH_BIN:-$root/bin}:$PATH" LC_ALL=C
shared=${GH_SHARED:-$root/../shared}
device=cuda; hours=24; modes="exact beam"; cpu=true; batch_size=256
work=/tmp/gmmhmm-bench-align
. "$root/egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "align.sh: unexpected argument $1" >&2; exit 1; }
D=$shared/data/cathy F=$shared/data/kaldi-fixtures/align
[ -f "$F/mono/final.mdl" ] || { echo "align.sh: missing $F/mono/final.mdl (set GH_SHARED)" >&2; exit 1; }
command -v gmm-align-compiled >/dev/null || { echo "align.sh: tools not built (make in $root)" >&2; exit 1; }
mkdir -p "$work"; cd "$work"
echo "align.sh: working in $work ($(date -u)); $(nvidia-smi -L 2>/dev/null | tr '\n' ';')$(nproc) CPU cores"
MDL=$F/mono/final.mdl
if [ ! -f graphs.scp ]; then
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" > raw.scp
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > cmvn.scp
  apply-cmvn --utt2spk=ark:"$D/utt2spk" scp:cmvn.scp scp:raw.scp ark:- 2>/dev/null |
    add-deltas ark:- ark,scp:$work/feats.ark,$work/feats.scp 2>/dev/null
  awk 'NR == FNR {id[$1] = $2; next} {printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", id[$i]; print ""}' \
    "$F/lang/words.txt" "$D/text" > int.txt
  compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/mono/tree" "$MDL" \
    "gunzip -c $F/lang/L.fst.gz|" ark:int.txt ark,scp:$work/graphs.ark,$work/graphs.tmp.scp 2>/dev/null
  feat-to-len scp:feats.scp ark,t:lens 2>/dev/null
  mv graphs.tmp.scp graphs.scp
fi
# replicate in key order until the frames reach the hours asked for
target=$(awk -v h="$hours" 'BEGIN {printf "%d", h * 360000}')
awk -v target="$target" 'NR == FNR {len[$1] = $2; keys[++n] = $1; next} END {
    for (c = 1; tot < target; ++c) for (i = 1; i <= n && tot < target; ++i) { print c, keys[i]; tot += len[keys[i]] } }' \
  lens /dev/null > rep.list
awk 'NR == FNR {e[$1] = $2; next} {printf "r%04d-%s %s\n", $1, $2, e[$2]}' feats.scp rep.list > rfeats.scp
awk 'NR == FNR {e[$1] = $2; next} {printf "r%04d-%s %s\n", $1, $2, e[$2]}' graphs.scp rep.list > rgraphs.scp
frames=$(awk 'NR == FNR {len[$1] = $2; next} {s += len[$2]} END {print s}' lens rep.list)
audio=$(awk -v f="$frames" 'BEGIN {printf "%.1f", f / 100}')
echo "data: $(wc -l < rep.list) utterances, $frames frames = $audio s of audio ($(awk -v a="$audio" 'BEGIN {printf "%.2f", a / 3600}') hours)"
SCALES="--transition-scale=1.0 --acoustic-scale=0.1 --self-loop-scale=0.1"
devs=$device; [ "$cpu" = true ] && [ "$device" != cpu ] && devs="$device cpu"
printf '%-8s %-6s %9s %9s %9s %10s %10s  %s\n' device mode wall_s score_s align_s RTF_wall RTF_align alignments > align.txt
for mode in $modes; do
  case $mode in
    exact) opts="--exact --batch-size=$batch_size";;
    beam) opts="--beam=10 --retry-beam=40";;
    *) echo "align.sh: unknown mode $mode" >&2; exit 1;;
  esac
  for dev in $devs; do
    t0=$(date +%s.%N)
    if ! gmm-align-compiled --verbose=1 $SCALES $opts --device=$dev "$MDL" scp:rgraphs.scp scp:rfeats.scp \
        ark:ali.$dev.$mode 2> log.$dev.$mode; then
      echo "align.sh: $dev $mode failed (log.$dev.$mode)"; tail -3 log.$dev.$mode; continue
    fi
    t1=$(date +%s.%N)
    line=$(grep 'frames/s): GMM' log.$dev.$mode)
    score=$(sed -n 's/.*GMM log-likelihoods \([0-9.]*\) s.*/\1/p' <<<"$line")
    alignt=$(sed -n 's/.*decoding \([0-9.]*\) s.*/\1/p' <<<"$line")
    sum=$(md5sum < ali.$dev.$mode | cut -c1-8)
    awk -v d=$dev -v m=$mode -v t0=$t0 -v t1=$t1 -v s=$score -v a=$alignt -v au=$audio -v h=$sum 'BEGIN {
      w = t1 - t0; printf "%-8s %-6s %9.2f %9.2f %9.2f %10.2e %10.2e  md5 %s\n", d, m, w, s, a, w / au, a / au, h }' >> align.txt
    tail -n 1 align.txt
  done
done
echo "== alignment: $frames frames ($audio s of audio); RTF = seconds / audio seconds"
cat align.txt
