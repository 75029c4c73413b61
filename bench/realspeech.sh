#!/usr/bin/env bash
# bench/realspeech.sh -- GMM training on real speech features beside generated ones of the same
# shape, with the PyTorch user's job (../shared/peers/e2e_job.py) on the same feats.scp in the
# same run (bench/RESULTS.md, "Real speech").  Data sets:
#   arabic  the UCI Arabic-digit training MFCCs (all 6,600 utterances of Train_Arabic_Digit.txt,
#           13 dims) with add-deltas (39 dims), replicated --copies (8) times under new keys
#           (feats.scp entries pointing at the same archive: 2,106,048 frames at 8)
#   fsdd    the FSDD recordings' MFCCs (compute-mfcc-feats at 8 kHz, 13 ceps, add-deltas: 39
#           dims, 79,091 frames), replicated --fsdd-copies (1) times
#   syn     bench/gen-feats.c's generated clusters, as many frames and dims as arabic
#           (--syn false skips it)
# Models: --full (512) full and --diag (2048) diagonal Gaussians per data set, gmm-init
# --num-iters=0 --max-frames=100000 --kmeans-iters=3 (the UBM job's initialisation), then
# gmm-train --num-iters=--iters (20) --verbose=1 on --device (cuda).
# One row per (data, model):
#   real <data> <cov> G=<n> D=<d> frames=<N> device=<dev>: whole_s estep_med_s iter_med_s
#     estep_frames_per_s (frames / median E-step of iterations >= 3), cand_per_frame (mean
#     number of Gaussians within 40 nats of the frame's best: one E-step of the final model on the
#     cpu backend over the first ~20,000 frames, so alike for every device),
#     fp32= whitened= cand= double= host= (shares of (frame, pdf) pairs on each arithmetic
#     path, kernels/backend.h GH_PATH_*; "-" where the backend does not count), avg_loglike
# and, where CUDA torch and the peer are there, a "real peer" row with the peer's JSON and the
# ratios (whole job, per iteration).
# Usage (from anywhere, tools built):
#   GH_SHARED=/path/to/shared bench/realspeech.sh [--device cuda] [--copies 8] [--fsdd-copies 1]
#     [--full 512] [--diag 2048] [--iters 20] [--work /tmp/gmmhmm-bench-real] [--peer true]
#     [--syn true] [--data "arabic fsdd"] [--precision auto]
# Quick CPU check (bench/RESULTS.md gives its rows):
#   bench/realspeech.sh --device cpu --copies 1 --full 64 --diag 256 --iters 4 --peer false
# On the GPU machine the data comes from .dev/shared/data (GH_SHARED=$PWD/.dev/shared).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
egs=$root/egs
export PATH="${GH_BIN:-$root/bin}:$PATH"
shared=${GH_SHARED:-$root/../shared}
device=cuda; copies=8; fsdd_copies=1; full=512; diag=2048; iters=20; work=/tmp/gmmhmm-bench-real; peer=true
syn=true; data="arabic fsdd"; precision=auto
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "realspeech.sh: unexpected argument $1" >&2; exit 1; }
for t in gmm-init gmm-train feat-to-len feat-to-dim add-deltas compute-mfcc-feats copy-feats; do
  command -v $t >/dev/null || { echo "realspeech.sh: $t not built (run make in $root)" >&2; exit 1; }
done
mkdir -p "$work/build"; cd "$work"
now() { date +%s.%N; }
since() { awk -v a=$1 -v b=$(now) 'BEGIN { printf "%.3f", b - a }'; }
med() {  # med <log> <field: wall|E-step>: median over iterations >= 3 (all when fewer)
  awk -v f="$2" '/iteration [0-9]+: avg loglike/ { it = 0; for (i = 1; i <= NF; i++) if ($i == "iteration") it = $(i + 1) + 0;
      for (i = 1; i < NF; i++) if ($i == f) { v[it] = $(i + 1) + 0; if (it > n) n = it } }
      END { for (i = 1; i <= n; i++) if (n < 3 || i >= 3) print v[i] }' "$1" | sort -g |
    awk '{ a[++n] = $1 } END { if (!n) printf "-"; else printf "%.4f", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'
}
replicate() {  # replicate <scp> <copies> <out scp>: the same archive entries under new keys
  local c; for ((c = 1; c <= $2; c++)); do awk -v c=$c '{ printf "r%02d-%s\n", c, $0 }' "$1"; done > "$3"
}
echo "realspeech.sh: device $device, precision $precision, $full full / $diag diag Gaussians, $iters iterations ($(date -u))"
[ "$device" = cpu ] || nvidia-smi -L 2>/dev/null | sed 's/^/  /' || true

# ---- features ----
if [[ " $data " == *" arabic "* ]]; then
  src=$shared/data/spoken-arabic-digit/Train_Arabic_Digit.txt
  [ -f "$src" ] || [ ! -f "$src.gz" ] || src=$src.gz
  if [ ! -f arabic/base.scp ]; then
    [ -f "$src" ] || { echo "realspeech.sh: missing $src (set GH_SHARED)" >&2; exit 1; }
    rm -rf arabic; mkdir -p arabic
    "$egs/arabic-digits/local/prepare_data.sh" "$src" arabic/prep > /dev/null
    add-deltas scp:arabic/prep/all/feats.scp ark,scp:$work/arabic/deltas.ark,arabic/base.scp 2> arabic/deltas.log
    rm -rf arabic/prep
  fi
  replicate arabic/base.scp $copies arabic/feats.scp
fi
if [[ " $data " == *" fsdd "* ]]; then
  rec=$shared/data/fsdd/recordings
  if [ ! -f fsdd/base.scp ]; then
    [ -d "$rec" ] || { echo "realspeech.sh: missing $rec (set GH_SHARED)" >&2; exit 1; }
    rm -rf fsdd; mkdir -p fsdd
    e=wav; compgen -G "$rec/*.wav" > /dev/null || e=flac
    for f in "$rec"/*.$e; do echo "$(basename "$f" .$e) $f"; done | LC_ALL=C sort > fsdd/wav.scp
    compute-mfcc-feats --sample-frequency=8000 --num-ceps=13 --dither=0 scp:fsdd/wav.scp ark:- 2> fsdd/mfcc.log |
      add-deltas ark:- ark,scp:$work/fsdd/deltas.ark,fsdd/base.scp 2> fsdd/deltas.log
  fi
  replicate fsdd/base.scp $fsdd_copies fsdd/feats.scp
fi
sets=$data
if [ "$syn" = true ] && [ -f arabic/feats.scp ]; then
  nf=$(feat-to-len scp:arabic/feats.scp 2>/dev/null); nd=$(feat-to-dim scp:arabic/feats.scp - 2>/dev/null)
  cc -O2 -o build/gen-feats "$root/bench/gen-feats.c" -lm
  if [ ! -f syn/feats.scp ] || [ "$(feat-to-len scp:syn/feats.scp 2>/dev/null)" != "$nf" ]; then
    rm -rf syn; build/gen-feats --frames=$nf --dim=$nd --clusters=$full syn > /dev/null
  fi
  sets="$sets syn"
fi

peer_ok=0
if [ "$peer" = true ] && [ "$device" != cpu ] && [ -f "$shared/peers/e2e_job.py" ] &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then peer_ok=1; fi

# ---- one training job per (data, covariance type) ----
row() {  # row <data> <full|diag> <gauss>
  local d=$1 cov=$2 g=$3 x=exp/$1_$2_$3 t0 whole nf dim
  mkdir -p $x
  nf=$(feat-to-len scp:$d/feats.scp 2>/dev/null); dim=$(feat-to-dim scp:$d/feats.scp - 2>/dev/null)
  if [ ! -f $x/0.mdl ]; then
    gmm-init --device=$device --cov-type=$cov --num-gauss=$g --num-iters=0 --max-frames=100000 --kmeans-iters=3 \
      scp:$d/feats.scp $x/0.mdl 2> $x/init.log || { echo "real $d $cov G=$g: gmm-init failed ($work/$x/init.log)"; return 0; }
  fi
  cat $d/*.ark > /dev/null 2>&1 || true   # the page cache, alike for every job
  t0=$(now)
  gmm-train --device=$device --precision=$precision --verbose=1 --num-iters=$iters $x/0.mdl scp:$d/feats.scp $x/final.mdl \
    2> $x/train.log || { echo "real $d $cov G=$g: gmm-train failed ($work/$x/train.log)"; tail -3 $x/train.log; return 0; }
  whole=$(since $t0)
  local est=$(med $x/train.log E-step) wall=$(med $x/train.log wall)
  local fps=$(awk -v n=$nf -v e=$est 'BEGIN { if (e == "-" || e <= 0) print "-"; else printf "%.4g", n / e }')
  local paths=$(grep -o 'paths: .*' $x/train.log | tail -1)
  local shares=$(awk -v s="$paths" 'BEGIN { n = split("fp32 whitened cand double host", k, " ")
      for (i = 1; i <= n; i++) { v = "-"; if (match(s, k[i] " [0-9.e+-]+%")) { v = substr(s, RSTART + length(k[i]) + 1, RLENGTH - length(k[i]) - 1) }
        printf "%s%s=%s", (i > 1 ? " " : ""), k[i], v } }')
  # candidates: a property of the model and the data, measured alike for every device: one E-step of
  # the final model on the cpu backend over the first utterances (~20,000 frames)
  local cand=-
  if [ -f $x/final.mdl ]; then
    awk -v n=$nf '{ print } NR * n / '"$(wc -l < $d/feats.scp)"' >= 20000 { exit }' $d/feats.scp > $x/cand.scp
    gmm-est-gpu --device=cpu --verbose=1 --num-iters=1 $x/final.mdl scp:$x/cand.scp $x/cand.mdl 2> $x/cand.log &&
      cand=$(sed -n 's/.*; \([0-9.e+-]*\) Gaussians per pair within.*/\1/p' $x/cand.log | tail -1)
    cand=${cand:--}
  fi
  local ll=$(grep -o 'last avg loglike per frame [-0-9.e+]*' $x/train.log | awk '{ print $NF }')
  echo "real $d $cov G=$g D=$dim frames=$nf device=$device: whole_s=$whole estep_med_s=$est iter_med_s=$wall" \
    "estep_frames_per_s=$fps cand_per_frame=$cand $shares avg_loglike=${ll:--}"
  if [ $peer_ok = 1 ]; then
    t0=$(now)
    local j; j=$(OUT=$work/$x python3 "$shared/peers/e2e_job.py" $d/feats.scp $g $cov $iters 2>/dev/null | tail -1) || j=
    local pw=$(since $t0)
    [ -n "$j" ] || { echo "real peer $d $cov G=$g: failed"; return 0; }
    python3 -c "
import json, sys
p = json.loads(sys.argv[1]); w, it = float(sys.argv[2]), sys.argv[3]
print('real peer $d $cov G=$g: whole_s=%s %s; ratio whole_job %.2fx' % (sys.argv[4], sys.argv[1], p['total_s'] / w)
      + ('' if it == '-' else ', per_iteration %.2fx' % (p['em_s_per_iter'] / float(it))))" "$j" "$whole" "$wall" "$pw" ||
      echo "real peer $d $cov G=$g: $j"
  fi
}
for d in $sets; do
  [ "$full" -gt 0 ] && row $d full $full
  [ "$diag" -gt 0 ] && row $d diag $diag
done
[ $peer_ok = 1 ] || echo "real peer: skipped (device $device, --peer $peer; the peer needs CUDA torch and $shared/peers/e2e_job.py)"
