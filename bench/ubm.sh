#!/usr/bin/env bash
# bench/ubm.sh -- Kaldi's UBM training loop for `make bench` (bench/run.sh):
# the calls of sid/train_diag_ubm.sh + sid/train_full_ubm.sh
# (egs/fsdd/local/sid_ubm.sh: 32 Gaussians, D = 60, --nj, run.pl, gselect
# lists through gzip, the add-deltas | apply-cmvn-sliding |
# select-voiced-frames | subsample-feats pipeline in every pass) on
#   fsdd   the 2,000 FSDD recordings (79,091 frames, 72,584 voiced), the
#          fixture run of $GH_SHARED/data/kaldi-fixtures/ubm: Kaldi took
#          12.7 s on 2 CPU cores (the reference point of the row)
#   big    the same features replicated to UBM_BIG_FRAMES (36,000,000, about
#          100 hours at 100 frames/s) frames: a feats.scp / vad.scp whose
#          entries point at the FSDD archives again under new keys (no copy
#          on disk); UBM_BIG=0 skips it
# on DEVICE (auto), timed end to end (process starts, the CPU feature
# pipeline, archive I/O and the GPU work included).  Prints per run:
#   ubm sid <fsdd|big> device=D nj=N frames=F: T s total; full avg loglike X (Kaldi's final.ubm Y)
# Environment: DEVICE (auto), UBM_NJ (2 for fsdd), UBM_BIG_NJ (8), UBM_BIG,
# UBM_BIG_FRAMES, UBM_WORK (a temporary folder, removed unless given), GH_SHARED.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
export GH_SHARED=${GH_SHARED:-$(cd .. && pwd)/shared}
export PATH="${GH_BIN:-$root/bin}:$root/egs/utils:$PATH"
DEVICE=${DEVICE:-auto}
W=$GH_SHARED/data/fsdd/recordings
F=$GH_SHARED/data/kaldi-fixtures/ubm
[ -d "$W" ] && [ -f "$F/final.ubm" ] || { echo "ubm sid: skipped (no $W or $F)"; exit 0; }
keep=1; work=${UBM_WORK:-}
[ -n "$work" ] || { work=$(mktemp -d); keep=0; }
trap '[ $keep = 1 ] || rm -rf "$work"' EXIT
mkdir -p "$work/fsdd"
e=wav; compgen -G "$W/*.wav" > /dev/null || e=flac   # the recordings as shipped: WAV or FLAC
for f in "$W"/*.$e; do
  b=$(basename "$f" .$e); IFS=_ read -r d s i <<< "$b"; echo "${s}_${d}_$i $f"
done | LC_ALL=C sort > "$work/wav.scp"
compute-mfcc-feats --sample-frequency=8000 --num-ceps=20 --use-energy=true --dither=0 scp:"$work/wav.scp" \
  ark,scp:"$work/feats.ark,$work/fsdd/feats.scp" 2>/dev/null &&
compute-vad --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 scp:"$work/fsdd/feats.scp" \
  ark,scp:"$work/vad.ark,$work/fsdd/vad.scp" 2>/dev/null || { echo "ubm sid: feature extraction failed"; exit 1; }
awk '{ split($1, a, "_"); print $1, a[1] }' "$work/fsdd/feats.scp" > "$work/fsdd/utt2spk"

one() { # NAME DATA NJ
  local name=$1 data=$2 nj=$3 t0 t1 frames ours ref all
  frames=$(feat-to-len scp:$data/feats.scp ark,t:- 2>/dev/null | awk '{ n += $2 } END { print n }')
  t0=$(date +%s.%N)
  if ! egs/fsdd/local/sid_ubm.sh --device="$DEVICE" --nj "$nj" --num-threads 2 --num-iters 4 --num-iters-init 10 \
       --subsample 2 --full-iters 3 --num-gauss 32 "$data" "$work/$name/diag" "$work/$name/full" > "$work/$name.log" 2>&1; then
    echo "ubm sid $name: failed (see $work/$name.log)"; keep=1; return 1
  fi
  t1=$(date +%s.%N)
  all="ark,s,cs:add-deltas --delta-window=3 --delta-order=2 scp:$work/fsdd/feats.scp ark:- | apply-cmvn-sliding --norm-vars=false --center=true --cmn-window=300 ark:- ark:- | select-voiced-frames ark:- scp,s,cs:$work/fsdd/vad.scp ark:- |"
  ours=$(fgmm-global-get-frame-likes --device="$DEVICE" --average=true "$work/$name/full/final.ubm" "$all" ark:/dev/null 2>&1 | sed -n 's/.*per frame = \([-0-9.e]*\) over.*/\1/p')
  ref=$(fgmm-global-get-frame-likes --device="$DEVICE" --average=true "$F/final.ubm" "$all" ark:/dev/null 2>&1 | sed -n 's/.*per frame = \([-0-9.e]*\) over.*/\1/p')
  echo "ubm sid $name device=$DEVICE nj=$nj frames=$frames: $(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.1f", b - a }') s total; full avg loglike $ours (Kaldi's final.ubm $ref)"
}
one fsdd "$work/fsdd" "${UBM_NJ:-2}"
if [ "${UBM_BIG:-1}" != 0 ]; then
  big=${UBM_BIG_FRAMES:-36000000}
  n=$(feat-to-len scp:$work/fsdd/feats.scp ark,t:- 2>/dev/null | awk '{ n += $2 } END { print n }')
  reps=$(( (big + n - 1) / n ))
  mkdir -p "$work/big"
  for f in feats.scp vad.scp; do
    awk -v r=$reps '{ for (i = 0; i < r; i++) printf "r%04d-%s %s\n", i, $1, $2 }' "$work/fsdd/$f" | LC_ALL=C sort > "$work/big/$f"
  done
  awk '{ split($1, a, "-"); split(a[2], b, "_"); print $1, a[1] "-" b[1] }' "$work/big/feats.scp" > "$work/big/utt2spk"
  one big "$work/big" "${UBM_BIG_NJ:-8}"
fi
