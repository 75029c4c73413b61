#!/usr/bin/env bash
# bench/io.sh -- I/O overlap (bench/RESULTS.md B12) for `make bench` (bench/run.sh):
# gmm-score-gpu end to end on an archive in the page cache against its own
# loglikes kernel time, with the output to ark:/dev/null.  The tool reads,
# scores and writes in three overlapped threads (drivers/gmm/score-pipeline.c); the
# target is end to end >= 80% of the kernel's frames/s where the output size
# allows.  Shapes (random models from bench-score --write-model, synthetic
# features from bench/gen-feats.c, 1,000-frame utterances):
#   UBM 1 x 1024 full, D=40, IO_FRAMES (1,000,000) frames (1 float out per frame)
#   UBM 1 x 2048 diag, D=40, IO_FRAMES frames
#   5000 x 16 full, D=36, IO_FRAMES / 10 frames (20 KB out per frame)
#   1 x 1 diag, D=40, IO_FRAMES frames: a trivial kernel, so end to end is
#   the tool's own I/O path (archive reader, transfers, writer): the bound
#   of the rows above
# Prints one line per shape:
#   io <type> P=<pdfs> G=<gauss> D=<dim> T=<frames> <device>: end to end <fps> frames/s, kernel <fps> frames/s, ratio <r>
# then the archive reader alone on the D=40 archive (bench/bench-read.c: the
# reader thread's work without the scorer and writer; best of 3):
#   io reader alone D=40 T=<frames>: read view: <s> s, <M> M frames/s, <GB/s> GB/s of matrix data
# and the parallel archive reader alone (bench-read --obj=scan: what the tool
# uses on a plain archive file, --io-threads), in one thread (the scanning
# thread preads too) and with the tool's default number of copy threads:
#   io parallel reader alone D=40 T=<frames> threads=<n>: read scan <n> threads: <s> s, <M> M frames/s, <GB/s> GB/s of matrix data
# Environment: DEVICE (auto), IO_FRAMES (1000000), IO_WORK (temporary folder).
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-auto}; N=${IO_FRAMES:-1000000}
work=${IO_WORK:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${IO_WORK:-}" ] || trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/gen-feats" bench/gen-feats.c -lm || exit 1
for shape in "full 1 1024 40 $N" "diag 1 2048 40 $N" "full 5000 16 36 $((N / 10))" "diag 1 1 40 $N"; do
  set -- $shape
  d=$work/feats_$4_$5
  [ -f "$d/feats.ark" ] || "$work/gen-feats" --frames=$5 --dim=$4 --clusters=64 --utt-frames=1000 "$d" 2>/dev/null ||
    { echo "io: gen-feats failed"; exit 1; }
  cat "$d/feats.ark" > /dev/null # into the page cache
  build/bench/bench-score --type=$1 --pdfs=$2 --gauss=$3 --dim=$4 --write-model="$work/model" 2>/dev/null ||
    { echo "io: bench-score --write-model failed"; exit 1; }
  log=$(bin/gmm-score-gpu --device="$DEVICE" "$work/model" "ark:$d/feats.ark" ark:/dev/null 2>&1)
  line=$(grep 'frames/s on' <<<"$log") || { echo "io $1 $2 x $3: gmm-score-gpu failed: $(tail -1 <<<"$log")"; continue; }
  e2e=$(sed -E 's/.* ([0-9]+) frames\/s on .*/\1/' <<<"$line")
  kern=$(sed -E 's/.*kernel alone ([0-9]+) frames\/s.*/\1/' <<<"$line")
  dev=$(sed -E 's/.*frames\/s on (.*) \(loglikes kernel.*/\1/' <<<"$line")
  awk -v t=$1 -v p=$2 -v g=$3 -v dim=$4 -v n=$5 -v dev="$dev" -v e=$e2e -v k=$kern 'BEGIN {
    printf "io %s P=%d G=%d D=%d T=%d %s: end to end %d frames/s, kernel %d frames/s, ratio %.2f\n",
           t, p, g, dim, n, dev, e, k, (k > 0 ? e / k : 0) }'
done
d=$work/feats_40_$N
cc -O2 -std=c11 -D_GNU_SOURCE -Ilib -Ikernels -o "$work/bench-read" bench/bench-read.c build/libgmmhmm.a -lz -lm -fopenmp -lpthread &&
  echo "io reader alone D=40 T=$N: $("$work/bench-read" --reps=3 "ark:$d/feats.ark" | sort -t, -k2 -g -r | head -1)" &&
  nt=$(( $(nproc) / 2 < 2 ? 2 : $(nproc) / 2 > 8 ? 8 : $(nproc) / 2 )) && # gmm-score-gpu's --io-threads=-1
  for n in 0 $nt; do
    echo "io parallel reader alone D=40 T=$N threads=$n: $("$work/bench-read" --obj=scan --threads=$n --reps=3 "ark:$d/feats.ark" | sort -t, -k2 -g -r | head -1)"
  done
