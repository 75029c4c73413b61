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
  $B/gmm-score-gpu $B/hmm-forward $B/hmm-viterbi $B/hmm-init-topo $B/copy-feats $B/hmm-train || exit 1
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
# hmm-train: the transcripts read on a thread of their own beside the feature
# index (io/table.h gh_rand_reader_open_bg); inputs made by the ordinary build
ARABIC=$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt
[ -f "$ARABIC" ] || [ ! -f "$ARABIC.gz" ] || ARABIC=$ARABIC.gz   # plain or gzipped
if [ -f "$ARABIC" ] && [ -x bin/hmm-train ]; then
  ( export PATH=$PWD/bin:$PATH
    egs/arabic-digits/local/prepare_data.sh "$ARABIC" "$t/a" > /dev/null 2>&1
    awk 'NR <= 2 { print $1 }' "$t/a/train/spk2utt" > "$t/spk2"
    egs/utils/subset_data_dir.sh --spk-list "$t/spk2" "$t/a/train" "$t/tr" > /dev/null 2>&1
    egs/steps/train_word_hmm.sh --device cpu --states 3 --gauss 1 --iters 0 "$t/tr" "$t/a/lang/words.txt" "$t/init" \
      > /dev/null 2>&1 ) || { echo "not ok - tsan: hmm-train's inputs could not be made"; fail=1; }
  # OMP_NUM_THREADS=1: libgomp's own threads are invisible to TSan (its M-step loops would be
  # reported); report_thread_leaks=0: an error exits (_exit) without joining the device start's thread
  export OMP_NUM_THREADS=1 TSAN_OPTIONS=$TSAN_OPTIONS:report_thread_leaks=0
  check "hmm-train, transcripts beside the feature index" 0 $B/hmm-train --device=cpu-ref --num-iters=1 \
    "$t/init/0.hmm" "$t/init/0.mdl" "scp:$t/tr/feats.scp" "ark,t:$t/tr/text" "$t/o.hmm" "$t/o.mdl"
  check "hmm-train, a transcripts error on its thread" 1 $B/hmm-train --device=cpu-ref --num-iters=1 \
    "$t/init/0.hmm" "$t/init/0.mdl" "scp:$t/tr/feats.scp" "ark,t:$t/nothere" "$t/o2.hmm" "$t/o2.mdl"
else
  echo "ok - tsan: hmm-train # skip (no Arabic digits under \$GH_SHARED or no bin/hmm-train)"
fi
exit $fail
