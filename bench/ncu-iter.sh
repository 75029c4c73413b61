#!/usr/bin/env bash
# bench/ncu-iter.sh -- the GPU kernel time of one training iteration, per
# kernel: `ncu --metrics gpu__time_duration.sum` over a run of N and a run of
# N + 1 iterations of the same command, the difference (bench/ncu-sum.py) is
# iteration N + 1's kernels.  Set the command's mixing-up so that iteration N
# + 1 has the model size of interest (e.g. hmm-train --mixup-start=1
# --mixup-end=1).  Compare the total with the iteration's wall time in the
# command's own log (without ncu) to see how long the GPU waits for the host.
# Usage (the command with its iteration option last but one, "--num-iters=", and
# the rest after "--"):
#   bench/ncu-iter.sh N TOOL --num-iters= -- ARGS...
# e.g. in bench/hmm-train.sh's work directory (8 M frames, N = 2; bench/RESULTS.md
# H5):
#   bench/ncu-iter.sh 2 hmm-train --num-iters= -- --device=cuda --mode=bw --gauss=8 --mixup-start=1 \
#     --mixup-end=1 init/0.hmm init/0.mdl scp:data/rep/feats.scp ark,t:data/rep/text /tmp/o.hmm /tmp/o.mdl
set -euo pipefail
[ $# -ge 4 ] && [ "$4" = -- ] || { sed -n '2,/^set /p' "$0" | sed '$d' >&2; exit 2; }
n=$1 tool=$2 opt=$3
shift 4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for k in $n $((n + 1)); do
  ncu --clock-control none --print-units base --metrics gpu__time_duration.sum --csv \
    "$tool" "$opt$k" "$@" > "$tmp/$k.csv" 2> "$tmp/$k.err" || { echo "ncu $tool $opt$k failed:" >&2; tail -3 "$tmp/$k.err" >&2; exit 1; }
done
echo "# kernels of iteration $((n + 1)) of $tool (ncu, $(date -u))"
python3 "$here/ncu-sum.py" "$tmp/$n.csv" "$tmp/$((n + 1)).csv"
