#!/usr/bin/env bash
# test/gpu-hmm-train.sh -- hmm-train (resident HMM-GMM training) on
# the GPU machine, called by test/run-gpu.sh (section 10); prints
# "ok - ..." / "not ok - ..." lines.  Data: 8 speakers of the Arabic digits
# (800 utterances, 33,996 frames, MFCC 13), 10 word HMMs of 4 states, 4
# Baum-Welch iterations mixing up to 2 Gaussians per pdf, then 4 Viterbi
# iterations, blocks of 3,000 frames.
#  a. --device=$DEV against --device=cpu (BLAS): average log-likelihood per
#     frame of every iteration within 1e-4 relative, models within
#     compare_models.py's GPU tolerances (as section 3's gmm-est-gpu); the
#     GMM M-step on the device in every iteration (mix-up included);
#  b. the per-iteration recipe loop on $DEV (train_word_hmm.sh --ranks 0)
#     against hmm-train on $DEV, the same tolerances;
#  c. with 2 or more GPUs: 2 ranks (one per GPU) against 1 rank: reduced
#     sums (GH_TRAIN_DUMP_ACCS), models and HMMs byte-identical (double-double
#     sums, lib/base/dd.h); two 2-rank runs byte-identical;
#  d. --max-device-memory (blocks of 600 frames, room for two resident, the
#     rest streamed) = the resident run bit for bit, BW and Viterbi (realigning
#     in iteration 1 only: the blocks keep the alignment's pairs);
#  e. the block E-step on the device (hmm_estep_pairs) = its host path
#     (GH_HMM_ESTEP=host) bit for bit, resident and streamed, Baum-Welch and
#     Viterbi;
#  f. on cuda: the score groups scored from the whole model (loglikes_subset)
#     = their uploaded sub-models (GH_CUDA_SUBSET=0) bit for bit, device and
#     host paths, Baum-Welch and Viterbi.
# (A dry run elsewhere: DEV=opencl NG=2 test/gpu-hmm-train.sh)
set -u
DEV=${DEV:-cuda}
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$root/bin:$PATH"
export GH_SHARED="${GH_SHARED:-$(cd .. && pwd)/shared}"
[ "$(id -u)" != 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
src=$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt
[ -f "$src" ] || [ ! -f "$src.gz" ] || src=$src.gz   # plain or gzipped
[ -f "$src" ] || { notok "hmm-train: missing $src"; exit 0; }
egs/arabic-digits/local/prepare_data.sh "$src" "$tmp/adata" >/dev/null 2>&1
awk 'NR <= 8 { print $1 }' "$tmp/adata/train/spk2utt" > "$tmp/spk8"
egs/utils/subset_data_dir.sh --spk-list "$tmp/spk8" "$tmp/adata/train" "$tmp/tr" >/dev/null 2>&1
W=$tmp/adata/lang/words.txt
egs/steps/train_word_hmm.sh --device cpu --states 4 --gauss 2 --iters 0 "$tmp/tr" "$W" "$tmp/init" >/dev/null 2>&1 ||
  { notok "hmm-train: flat start failed"; exit 0; }
F=scp:$tmp/tr/feats.scp
TX=ark,t:$tmp/tr/text
gmm_text() { gmm-copy --binary=false "$1" "$1.txt" 2>/dev/null; }
loglikes() { grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]*' "$1" | awk '{ print $NF }'; }
hmm_lls() { grep -oE 'HMM (total|best-path) log-likelihood per frame [-0-9.e+]*' "$1" | awk '{ print $NF }' | tr '\n' ' '; }
close_lls() {  # close_lls <log-a> <log-b>: per-iteration averages within 1e-4 relative
  paste <(loglikes "$1") <(loglikes "$2") | awk '{ n++; d = $1 - $2; if (d < 0) d = -d; s = $2 < 0 ? -$2 : $2
    if (d > 1e-4 * s) bad = 1; if (d / s > m) m = d / s } END { printf "%d iterations, max %.2g", n, m; exit bad || n == 0 }'
}
for mode in bw viterbi; do
  for dev in $DEV cpu; do
    hmm-train --device=$dev --mode=$mode --block-frames=3000 --num-iters=4 --gauss=2 --mixup-end=2 --seed=1 \
      "$tmp/init/0.hmm" "$tmp/init/0.mdl" "$F" "$TX" "$tmp/$mode.$dev.hmm" "$tmp/$mode.$dev.mdl" 2> "$tmp/$mode.$dev.log" ||
      { notok "hmm-train --mode=$mode --device=$dev: $(tail -1 "$tmp/$mode.$dev.log")"; continue 2; }
  done
  grep -q 'no HMM kernels\|CPU reference' "$tmp/$mode.$DEV.log" && echo "# note: HMM kernels fell back to the CPU on $DEV"
  # every iteration's GMM M-step on the device (backend mstep; iterations 1-2 mix up after it), the host's within
  # the tolerances below
  n=$(grep -c 'GMM M-step .* on the device)' "$tmp/$mode.$DEV.log")
  if [ "$n" -eq 4 ]; then ok "hmm-train --mode=$mode on $DEV: GMM M-step on the device in all 4 iterations (2 mixing up)"
  else notok "hmm-train --mode=$mode on $DEV: GMM M-step on the device in $n iterations, not 4 ($(grep -m1 'M-step on the host:' "$tmp/$mode.$DEV.log"))"; fi
  if r=$(close_lls "$tmp/$mode.$DEV.log" "$tmp/$mode.cpu.log"); then ok "hmm-train --mode=$mode $DEV vs cpu: log-likelihoods ($r)"
  else notok "hmm-train --mode=$mode $DEV vs cpu: log-likelihoods ($r)"; fi
  gmm_text "$tmp/$mode.$DEV.mdl"; gmm_text "$tmp/$mode.cpu.mdl"
  if r=$(python3 test/python/compare_models.py "$tmp/$mode.$DEV.mdl.txt" "$tmp/$mode.cpu.mdl.txt" --rtol 1e-4 --cov-rtol 1e-3 2>&1)
  then ok "hmm-train --mode=$mode $DEV vs cpu: models ($r)"; else notok "hmm-train --mode=$mode $DEV vs cpu: models ($r)"; fi
done

# b. the per-iteration recipe on $DEV against the resident trainer on $DEV
egs/steps/train_word_hmm.sh --ranks 0 --nj 1 --device $DEV --states 4 --gauss 2 --iters 4 "$tmp/tr" "$W" "$tmp/loop" \
  > "$tmp/loop.out" 2>&1 || notok "train_word_hmm.sh --ranks 0 --device $DEV: $(tail -1 "$tmp/loop.out")"
egs/steps/train_word_hmm.sh --device $DEV --states 4 --gauss 2 --iters 4 "$tmp/tr" "$W" "$tmp/res" \
  > "$tmp/res.out" 2>&1 || notok "train_word_hmm.sh --device $DEV: $(tail -1 "$tmp/res.out")"
if [ -f "$tmp/loop/final.mdl" ] && [ -f "$tmp/res/final.mdl" ]; then
  a=$(grep -o 'frame [-0-9.]*' "$tmp/loop.out" | awk '{ print $2 }' | tr '\n' ' ')
  b=$(grep -o 'frame [-0-9.]*' "$tmp/res.out" | awk '{ print $2 }' | tr '\n' ' ')
  if r=$(awk -v a="$a" -v b="$b" 'BEGIN { n = split(a, x); split(b, y); for (i = 1; i <= n; i++) { d = x[i] - y[i]
      if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i]; if (d / s > m) m = d / s }
      printf "%d iterations, max %.2g", n, m; exit !(n == 4 && m <= 1e-4) }'); then
    ok "train_word_hmm.sh on $DEV: resident vs per-iteration loop, log-likelihoods ($r)"
  else notok "train_word_hmm.sh on $DEV: resident vs per-iteration loop, log-likelihoods ($r)"; fi
  gmm_text "$tmp/loop/final.mdl"; gmm_text "$tmp/res/final.mdl"
  if r=$(python3 test/python/compare_models.py "$tmp/loop/final.mdl.txt" "$tmp/res/final.mdl.txt" --rtol 1e-4 --cov-rtol 1e-3 2>&1)
  then ok "train_word_hmm.sh on $DEV: resident vs per-iteration loop, models ($r)"
  else notok "train_word_hmm.sh on $DEV: resident vs per-iteration loop, models ($r)"; fi
fi

# d. streamed blocks on $DEV (blocks of ~600 frames x 13: ~45 KB each; 200 KB keeps two resident)
for mode in bw viterbi; do
  ri=; [ $mode = bw ] || ri="--realign-iters=1 3" # Viterbi: iteration 2 keeps the alignment's pairs in the blocks
  for mm in "" 200K; do
    hmm-train --device=$DEV --mode=$mode ${ri:+"$ri"} --block-frames=600 --num-iters=3 --gauss=2 --mixup-end=1 --seed=1 \
      ${mm:+--max-device-memory=$mm} "$tmp/init/0.hmm" "$tmp/init/0.mdl" "$F" "$TX" "$tmp/s$mode$mm.hmm" \
      "$tmp/s$mode$mm.mdl" 2> "$tmp/s$mode$mm.log" || notok "hmm-train --max-device-memory=$mm on $DEV: $(tail -1 "$tmp/s$mode$mm.log")"
  done
  s=$(grep -oE "[0-9]+ of [0-9]+ blocks resident \(.*\), [0-9]+ streamed" "$tmp/s${mode}200K.log" | head -1)
  if grep -qE "blocks resident \(.*\), [1-9][0-9]* streamed" "$tmp/s${mode}200K.log" && cmp -s "$tmp/s$mode.mdl" "$tmp/s${mode}200K.mdl" &&
     cmp -s "$tmp/s$mode.hmm" "$tmp/s${mode}200K.hmm"; then ok "hmm-train --mode=$mode --max-device-memory on $DEV: streamed = resident bit for bit ($s)"
  else notok "hmm-train --mode=$mode --max-device-memory on $DEV: streamed vs resident (${s:-no streamed blocks})"; fi
done

# e. the block E-step on the device (backend op hmm_estep_pairs, CUDA: scoring, forward-backward and the
#    posteriors sorted into the E-step data without the host) = its host path (GH_HMM_ESTEP=host) bit for bit,
#    resident and streamed (section d's default runs against the same runs on the host path)
#    Viterbi (op GH_HMM_ESTEP_VITERBI): the path stays on the device, realigned in iterations 1 and 3
for mode in bw viterbi; do
  ri=; [ $mode = bw ] || ri="--realign-iters=1 3"
  for mm in "" 200K; do
    GH_HMM_ESTEP=host hmm-train --device=$DEV --mode=$mode ${ri:+"$ri"} --block-frames=600 --num-iters=3 --gauss=2 --mixup-end=1 \
      --seed=1 ${mm:+--max-device-memory=$mm} "$tmp/init/0.hmm" "$tmp/init/0.mdl" "$F" "$TX" "$tmp/h$mode$mm.hmm" \
      "$tmp/h$mode$mm.mdl" 2> "$tmp/h$mode$mm.log" ||
      notok "hmm-train --mode=$mode GH_HMM_ESTEP=host ${mm:+--max-device-memory=$mm }on $DEV: $(tail -1 "$tmp/h$mode$mm.log")"
    if cmp -s "$tmp/s$mode$mm.mdl" "$tmp/h$mode$mm.mdl" && cmp -s "$tmp/s$mode$mm.hmm" "$tmp/h$mode$mm.hmm" &&
       [ "$(hmm_lls "$tmp/s$mode$mm.log")" = "$(hmm_lls "$tmp/h$mode$mm.log")" ]; then
      ok "hmm-train --mode=$mode on $DEV: the block E-step's device path = its host path bit for bit (${mm:-resident}${mm:+ streamed}; models, HMMs, HMM log-likelihoods)"
    else notok "hmm-train --mode=$mode on $DEV: the block E-step's device path differs from its host path (${mm:-resident}${mm:+ streamed})"; fi
  done
done

# f. the score groups scored from the whole model (backend op loglikes_subset, CUDA: the narrow kernel
#    from the model's own layout, no sub-model uploaded) = the sub-models (GH_CUDA_SUBSET=0) bit for bit,
#    on the device path and the host path (section d's and e's runs), Baum-Welch and Viterbi
if [ "$DEV" = cuda ]; then
  for mode in bw viterbi; do
    ri=; [ $mode = bw ] || ri="--realign-iters=1 3"
    for path in device host; do
      e=; [ $path = host ] && e=host
      GH_CUDA_SUBSET=0 GH_HMM_ESTEP=$e hmm-train --verbose=1 --device=$DEV --mode=$mode ${ri:+"$ri"} --block-frames=600 --num-iters=3 \
        --gauss=2 --mixup-end=1 --seed=1 "$tmp/init/0.hmm" "$tmp/init/0.mdl" "$F" "$TX" "$tmp/q$mode$path.hmm" \
        "$tmp/q$mode$path.mdl" 2> "$tmp/q$mode$path.log" ||
        notok "hmm-train GH_CUDA_SUBSET=0 --mode=$mode ($path path) on $DEV: $(tail -1 "$tmp/q$mode$path.log")"
      o=s; [ $path = host ] && o=h
      if cmp -s "$tmp/$o$mode.mdl" "$tmp/q$mode$path.mdl" && cmp -s "$tmp/$o$mode.hmm" "$tmp/q$mode$path.hmm" &&
         [ "$(hmm_lls "$tmp/$o$mode.log")" = "$(hmm_lls "$tmp/q$mode$path.log")" ]; then
        ok "hmm-train --mode=$mode on $DEV ($path path): score groups from the whole model = their sub-models bit for bit"
      else notok "hmm-train --mode=$mode on $DEV ($path path): score groups from the whole model differ from their sub-models"; fi
    done
  done
fi

# c. 2 ranks (one GPU each) vs 1 rank; same R twice byte-identical
ng=${NG:-$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")}
if [ "$ng" -ge 2 ] && command -v mpirun >/dev/null; then
  for run in 1 2 2b; do
    R=${run%b}
    launch=; [ $R -gt 1 ] && launch="mpirun -np $R --bind-to none --oversubscribe"
    GH_TRAIN_DUMP_ACCS=$tmp/r$run.acc $launch hmm-train --device=$DEV --block-frames=3000 --num-iters=4 --gauss=2 --mixup-end=2 --seed=1 \
      "$tmp/init/0.hmm" "$tmp/init/0.mdl" "$F" "$TX" "$tmp/r$run.hmm" "$tmp/r$run.mdl" 2> "$tmp/r$run.log" ||
      notok "hmm-train $R ranks on $DEV: $(tail -1 "$tmp/r$run.log")"
  done
  if cmp -s "$tmp/r1.acc" "$tmp/r2.acc"; then ok "hmm-train 2 ranks vs 1 on $DEV: accumulators byte-identical"
  else notok "hmm-train 2 ranks vs 1 on $DEV: accumulators differ"; fi
  if cmp -s "$tmp/r1.mdl" "$tmp/r2.mdl" && cmp -s "$tmp/r1.hmm" "$tmp/r2.hmm"; then ok "hmm-train 2 ranks vs 1 on $DEV: models byte-identical"
  else notok "hmm-train 2 ranks vs 1 on $DEV: models differ ($(egs/utils/compare_gmms.sh "$tmp/r1.mdl" "$tmp/r2.mdl" 2>&1 | tail -1))"; fi
  if cmp -s "$tmp/r2.mdl" "$tmp/r2b.mdl" && cmp -s "$tmp/r2.hmm" "$tmp/r2b.hmm"; then ok "hmm-train: two 2-rank runs on $DEV byte-identical"
  else notok "hmm-train: two 2-rank runs on $DEV differ"; fi
else
  echo "# hmm-train: fewer than 2 GPUs (or no mpirun): the 2-rank check is skipped"
fi
