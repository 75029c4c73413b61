#!/usr/bin/env bash
# test/tsan.sh -- ThreadSanitizer over the tools that read, compute and write
# in separate threads (gmm-score-gpu's pipeline, the HMM tools' read-ahead,
# doc/reliability.md): builds them with -fsanitize=thread into build-tsan/
# and bin-tsan/ (gcc, no CUDA) and runs them on the CPU reference backend
# (--device=cpu-ref: no OpenMP, whose runtime TSan cannot see), with batches
# of one to a few frames so the threads hand over often, on good input and on
# input with a bad utterance in the middle.  Any report fails (halt_on_error).
set -u
cd "$(dirname "$0")/.."
export GH_SHARED="${GH_SHARED:-$(cd .. && pwd)/shared}"
FIX=$GH_SHARED/data/kaldi-fixtures FEATS=$GH_SHARED/data/kaldi-ami-feats/feats.ark
B=bin-tsan
${MAKE:-make} -s B=build-tsan BIN=$B NVCC= CFLAGS="-O1 -g -fsanitize=thread" \
  $B/gmm-score-gpu $B/hmm-forward $B/hmm-viterbi $B/hmm-init-topo $B/copy-feats || exit 1
export TSAN_OPTIONS=halt_on_error=1:exitcode=66
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
fail=0
check() { # NAME EXPECTED-STATUS CMD...: TSan exits 66 on a report
  local name=$1 want=$2; shift 2
  "$@" > "$t/out" 2>&1; local rc=$?
  if [ $rc -eq 66 ] || { [ "$want" = 0 ] && [ $rc -ne 0 ]; } || { [ "$want" = 1 ] && [ $rc -eq 0 ]; }; then
    echo "not ok - tsan: $name (status $rc)"; tail -30 "$t/out"; fail=1
  else echo "ok - tsan: $name"; fi
}
$B/copy-feats "ark:$FEATS" "ark,t:$t/good.txt" 2>/dev/null
{ cat "$t/good.txt"; printf 'bad  [\n 1 2 3 ]\n'; awk '/\[/ { $1 = "b-" $1 } 1' "$t/good.txt"; } > "$t/bad.txt"
check "gmm-score-gpu, 1-frame batches" 0 $B/gmm-score-gpu --device=cpu-ref --batch-frames=1 "$FIX/ami-diag16.gmm" "ark:$FEATS" "ark:$t/ll.ark"
check "gmm-score-gpu, bad utterance mid-stream" 1 $B/gmm-score-gpu --device=cpu-ref --batch-frames=1 "$FIX/ami-diag16.gmm" "ark:$t/bad.txt" "ark:$t/x.ark"
# the parallel archive reader (--io-threads): 3 copy threads, long utterances
# split into several jobs (--batch-frames small), a NaN in a binary payload
# mid-stream and the archive cut at the end (the NaN's error line wins)
check "gmm-score-gpu, parallel reader, 3 copy threads" 0 $B/gmm-score-gpu --device=cpu-ref --io-threads=3 --batch-frames=7 "$FIX/ami-diag16.gmm" "ark:$FEATS" "ark:$t/ll3.ark"
cmp -s "$t/ll.ark" "$t/ll3.ark" || { echo "not ok - tsan: parallel reader output differs"; fail=1; }
key=$(head -c 100 "$FEATS" | cut -d' ' -f1)
{ cat "$FEATS"; cat "$FEATS"; } | head -c -10 > "$t/nan.ark"
printf '\x00\x00\xc0\x7f' | dd of="$t/nan.ark" bs=1 seek=$(( $(stat -c %s "$FEATS") + ${#key} + 16 + 4 * 50 )) conv=notrunc 2>/dev/null
check "gmm-score-gpu, parallel reader, NaN mid-stream" 1 $B/gmm-score-gpu --device=cpu-ref --io-threads=3 --batch-frames=50 "$FIX/ami-diag16.gmm" "ark:$t/nan.ark" "ark:$t/x.ark"
grep -q "NaN at row 3, col 11" "$t/out" || { echo "not ok - tsan: parallel reader, NaN: $(tail -1 "$t/out")"; fail=1; }
printf 'a 0 0\nb 0 0 0\n' > "$t/words"
$B/hmm-init-topo "$t/words" "$t/h.hmm" 2>/dev/null
check "hmm-forward, 50-frame batches" 0 $B/hmm-forward --device=cpu-ref --batch-frames=50 "$t/h.hmm" "ark:$t/ll.ark" ark:/dev/null
check "hmm-viterbi, 50-frame batches" 0 $B/hmm-viterbi --device=cpu-ref --batch-frames=50 "$t/h.hmm" "ark:$t/ll.ark" ark:/dev/null
exit $fail
