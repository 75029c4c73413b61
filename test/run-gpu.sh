#!/usr/bin/env bash
# test/run-gpu.sh -- `make test-gpu`: the CUDA backend against the CPU
# reference.  Run on a machine with an NVIDIA GPU (fails if none is usable).
#  0. build/test/test_cuda_device: the backend starts on the GPU exactly when
#     the build has code for its compute capability (GH_CUDA_ARCHS).
#  1. build/test/test_kernels: CPU and CUDA loglikes and E-step statistics vs
#     a float64 reference on random diagonal, full and mixed models with a
#     variable number of Gaussians per pdf (D = 1..128, G up to 1024 incl.
#     global UBMs that the CUDA backend splits into Gaussian segments,
#     chunked inputs), and CUDA vs CPU on a chunked problem; the device
#     M-step (eigenvalue floors by Jacobi, --rel-variance-floor) against the
#     host M-step, the k-means ops and gmm-init on CUDA bit-identical to the
#     CPU.
#  1b. build/test/test_cuda_white: the E-step's batched path for pdfs outside the
#     fp32 budget (whitened / double forms) vs float64 and the cpu backend.
#  2. gmm-score-gpu --device=cuda vs --device=cpu-ref on real data (AMI
#     features with Kaldi's diag/full global GMMs; yes/no features with a
#     Kaldi monophone .mdl), and --device=cuda vs Kaldi's own frame
#     likelihoods.
#  3. gmm-est-gpu EM, cuda vs cpu (Arabic digits); gmm-init cuda = cpu-ref bytes.
#  4. HMM kernels: build/test/test_hmm_cuda (kernels/cuda/cuda-hmm.cu vs the CPU
#     reference on random graphs and batches incl. 12,000-frame utterances;
#     prints "# bench" lines with frames/s), and the HMM tools with
#     --device=cuda vs --device=cpu-ref on the yesno model's loglikes.
#  5. GEMM forms vs Kaldi on AMI; reproducibility: two gmm-est-gpu runs
#     byte-identical, 3 jobs + gmm-sum-accs vs 1 job.
#  6. OpenCL on NVIDIA's driver: build/test/test_opencl and test/bats/opencl.bats.
#  7. speaker adaptation: gmm-est-fmllr / gmm-adapt-map cuda vs cpu (and vs Kaldi).
#  8. shrinkage statistics: build/test/test_shrink (kernels/cuda/shrink.cu vs the
#     CPU reference) and gmm-acc-stats-gpu --shrinkage-stats / gmm-est-gpu --shrink=lw
#     --device=cuda vs --device=cpu-ref on the AMI full UBM.
#  9. gmm-train: test/gpu-train.sh (one process vs gmm-est-gpu, cuda vs cpu,
#     --max-device-memory, 2 ranks vs 1 and NCCL vs MPI where there are 2 GPUs,
#     byte-identical); build/test/test_dist_em's CUDA acc_commit checks.
#  10. Kaldi's global-GMM tools: test/bats/kaldi-ubm.bats with
#     GSEL_DEVICE=cuda (its device test: the acc_gselect op,
#     kernels/cuda/gselect.cu, and the tools' CUDA paths vs the CPU
#     reference and Kaldi; the file's other tests run on the CPU), and the
#     sid UBM acceptance test/bats/kaldi-sid.bats with SID_DEVICE=cuda.
# 11. hmm-train: test/gpu-hmm-train.sh (cuda vs cpu, resident vs the recipe's
#     per-iteration loop, 2 ranks vs 1 where there are 2 GPUs).
# 12. the batched exact aligner: build/test/test_align (kernels/cuda/cuda-align.cu vs
#     the CPU reference and float64 on random graphs, checkpoints on 40,000 frames) and
#     test/bats/align-device.bats with ALIGN_DEVICE=cuda (cathy with Kaldi's final.mdl:
#     the CPU decoder's alignments, scores and frame log-likelihoods byte for byte).
# "cpu" in the comparisons below is the plain-loop reference (--device=cpu-ref;
# the loops map cpu -> cpu-ref); the CPU BLAS backend (--device=cpu) is checked
# against float64 in test_kernels and against the reference by the CPU suite.
# Prints "N passed, N failed"; exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
export GH_SHARED="${GH_SHARED:-$(cd .. && pwd)/shared}"
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
notok() { fail=$((fail + 1)); echo "not ok - $*"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "not ok - no NVIDIA GPU visible (nvidia-smi)"; echo "0 passed, 1 failed"; exit 1
fi

# 0. the device check (kernels/cuda/cuda.cu): the backend starts on this GPU
#    exactly when the build has code for its compute capability
if [ -x build/test/test_cuda_device ]; then
  out=$(build/test/test_cuda_device 2>&1); rc=$?
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
  pass=$((pass + p)); fail=$((fail + f))
  grep -E '^not ok' <<<"$out"
  if grep -q 'no CUDA device' <<<"$out"; then notok "test_cuda_device found no CUDA device although a GPU is present"; fi
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then notok "test_cuda_device exited $rc"; fi
else
  notok "build/test/test_cuda_device not built (make build/test/test_cuda_device)"
fi

# 1. unit tests (must not skip the CUDA part here)
if [ -x build/test/test_kernels ]; then
  out=$(build/test/test_kernels 2>&1); rc=$?
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
  pass=$((pass + p)); fail=$((fail + f))
  grep -E '^not ok|SKIP' <<<"$out"
  if grep -q 'SKIP no GPU' <<<"$out"; then notok "test_kernels skipped CUDA although a GPU is present"; fi
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then notok "test_kernels exited $rc"; fi
else
  notok "build/test/test_kernels not built (make build/test/test_kernels)"
fi

# 1b. the batched path of the pdfs outside the fp32 budget (kernels/cuda/cuda-white.cu):
#     whitened and double forms vs float64 and the cpu backend on ill-conditioned full
#     models (condition 1e2-1e4, offsets 0-1e4 sigma)
if [ -x build/test/test_cuda_white ]; then
  out=$(build/test/test_cuda_white 2>&1); rc=$?
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
  pass=$((pass + p)); fail=$((fail + f))
  grep -E '^not ok|SKIP' <<<"$out"
  if grep -q 'SKIP no GPU' <<<"$out"; then notok "test_cuda_white skipped CUDA although a GPU is present"; fi
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then notok "test_cuda_white exited $rc"; fi
else
  notok "build/test/test_cuda_white not built (make build/test/test_cuda_white)"
fi

# 2. the tool, cuda vs cpu (and vs Kaldi) on real data
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmp_mats() {  # cmp_mats a.txt b.txt tol : max |a-b|/(1+|b|) over all values of all keys
  python3 - "$@" <<'PY'
import sys
def parse(path):
    toks = open(path).read().split(); out = {}; i = 0
    while i < len(toks):
        key = toks[i]; j = toks.index(']', i + 2)
        out[key] = [float(v) for v in toks[i + 2:j]]; i = j + 1
    return out
a, b, tol = parse(sys.argv[1]), parse(sys.argv[2]), float(sys.argv[3])
if sorted(a) != sorted(b): print("keys differ"); sys.exit(1)
worst = 0.0
for k in b:
    if len(a[k]) != len(b[k]): print("length differs for", k); sys.exit(1)
    worst = max([worst] + [abs(x - y) / (1 + abs(y)) for x, y in zip(a[k], b[k])])
print("max rel diff %.3g" % worst); sys.exit(0 if worst <= tol else 1)
PY
}
D=$GH_SHARED/data
cases=(
  "ami-diag16|$D/kaldi-fixtures/ami-diag16.gmm|$D/kaldi-ami-feats/feats.ark|$D/kaldi-fixtures/ami-diag16.frame-likes.txt"
  "ami-full16|$D/kaldi-fixtures/ami-full16.fgmm|$D/kaldi-ami-feats/feats.ark|$D/kaldi-fixtures/ami-full16.frame-likes.txt"
  "yesno-mono-mdl|$D/kaldi-yesno-mono-model/0.mdl|$D/kaldi-fixtures/mfcc-deltas.ark|"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name model feats kaldi <<<"$c"
  if bin/gmm-score-gpu --device=cuda "$model" "ark:$feats" "ark,t:$tmp/cuda.txt" 2>"$tmp/log" &&
     grep -q "using device cuda" "$tmp/log"; then ok "$name: gmm-score-gpu --device=cuda runs"
  else notok "$name: gmm-score-gpu --device=cuda"; cat "$tmp/log"; continue; fi
  bin/gmm-score-gpu --device=cpu-ref "$model" "ark:$feats" "ark,t:$tmp/cpu.txt" 2>/dev/null
  if r=$(cmp_mats "$tmp/cuda.txt" "$tmp/cpu.txt" 1e-5); then ok "$name: cuda vs cpu ($r)"; else notok "$name: cuda vs cpu ($r)"; fi
  if [ -n "$kaldi" ]; then
    if r=$(cmp_mats "$tmp/cuda.txt" "$kaldi" 1e-4); then ok "$name: cuda vs Kaldi ($r)"; else notok "$name: cuda vs Kaldi ($r)"; fi
  fi
done
# batching must not change the numbers
bin/gmm-score-gpu --device=cuda --batch-frames=1 "$D/kaldi-fixtures/ami-full16.fgmm" "ark:$D/kaldi-ami-feats/feats.ark" "ark,t:$tmp/b1.txt" 2>/dev/null
bin/gmm-score-gpu --device=cuda "$D/kaldi-fixtures/ami-full16.fgmm" "ark:$D/kaldi-ami-feats/feats.ark" "ark,t:$tmp/b2.txt" 2>/dev/null
if r=$(cmp_mats "$tmp/b1.txt" "$tmp/b2.txt" 0); then ok "cuda: --batch-frames=1 equals batched ($r)"; else notok "cuda: --batch-frames=1 vs batched ($r)"; fi
# the pipelined path (two batches in the backend, uploads straight from the
# page-locked batch: D = 40 needs no padding), growing batches of several
# chunks, a UBM of 1024 Gaussians (tensor-core kernels): cuda vs cpu-ref and
# against one synchronous batch per utterance.  Tolerance vs cpu-ref 1e-3:
# this k-means model leaves frames far from every Gaussian, whose expanded
# terms x^2/var reach ~1e5 against loglikes of ~100 -- fp32 cancellation
# that the CPU BLAS backend shows too (1.3e-4 on 30,000 of these frames);
# the kernels' accuracy is checked against float64 in test_kernels
cc -O2 -o "$tmp/gen-feats" bench/gen-feats.c -lm &&
  "$tmp/gen-feats" --frames=120000 --dim=40 --clusters=16 --utt-frames=3000 "$tmp/g40" >/dev/null 2>&1 &&
  bin/gmm-init --num-gauss=1024 --num-iters=0 --kmeans-iters=2 --device=cuda "ark:$tmp/g40/feats.ark" "$tmp/ubm40" 2>/dev/null
if [ -f "$tmp/ubm40" ]; then
  bin/gmm-score-gpu --device=cuda --batch-frames=70000 "$tmp/ubm40" "ark:$tmp/g40/feats.ark" "ark,t:$tmp/p1.txt" 2>/dev/null
  bin/gmm-score-gpu --device=cpu-ref "$tmp/ubm40" "ark:$tmp/g40/feats.ark" "ark,t:$tmp/p2.txt" 2>/dev/null
  bin/gmm-score-gpu --device=cuda --batch-frames=1 "$tmp/ubm40" "ark:$tmp/g40/feats.ark" "ark,t:$tmp/p3.txt" 2>/dev/null
  if r=$(cmp_mats "$tmp/p1.txt" "$tmp/p2.txt" 1e-3); then ok "cuda pipelined batches, D=40 UBM 1024: vs cpu-ref ($r)"; else notok "cuda pipelined batches vs cpu-ref ($r)"; fi
  if r=$(cmp_mats "$tmp/p1.txt" "$tmp/p3.txt" 0); then ok "cuda pipelined batches equal one batch per utterance ($r)"; else notok "cuda pipelined vs one batch per utterance ($r)"; fi
else
  notok "pipelined-batch test: gen-feats or gmm-init failed"
fi

# 3. EM: gmm-est-gpu --device=cuda vs --device=cpu-ref on real speech (Arabic
#    digits, 13-dim MFCC, per-digit GMMs trained from alignments), diag and
#    full covariance, 5 iterations from the same initial model; and a
#    --write-accs comparison (E-step statistics summed on the GPU vs CPU).
ar=$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt
[ -f "$ar" ] || [ ! -f "$ar.gz" ] || ar=$ar.gz   # plain or gzipped
if [ -f "$ar" ]; then
  gzip -dcf "$ar" | awk -f egs/arabic-digits/local/uci2text-ark.awk | bin/copy-feats ark,t:- "ark:$tmp/ar.ark" 2>/dev/null
  bin/feat-to-len "ark:$tmp/ar.ark" ark,t:- 2>/dev/null |
    awk '{ split($1, a, "-"); d = substr(a[2], 2); printf "%s", $1; for (i = 0; i < $2; i++) printf " %s", d; printf "\n" }' |
    bin/copy-int-vector ark,t:- "ark:$tmp/ar.ali" 2>/dev/null
  for cov in diag full; do
    bin/gmm-init --device=cpu-ref --cov-type=$cov --num-gauss=8 --num-iters=0 --labels="ark:$tmp/ar.ali" \
      "ark:$tmp/ar.ark" "$tmp/$cov.0" 2>/dev/null
    # the k-means distances on the GPU (kernels/cuda/cuda-kmeans.cu): the same bytes
    bin/gmm-init --device=cuda --cov-type=$cov --num-gauss=8 --num-iters=0 --labels="ark:$tmp/ar.ali" \
      "ark:$tmp/ar.ark" "$tmp/$cov.0.cuda" 2>/dev/null
    if cmp -s "$tmp/$cov.0" "$tmp/$cov.0.cuda"; then ok "$cov: gmm-init --device=cuda writes the cpu-ref model byte for byte"
    else notok "$cov: gmm-init --device=cuda and --device=cpu-ref models differ"; fi
    for dev in cpu cuda; do
      bin/gmm-est-gpu --device=${dev/#cpu/cpu-ref} --num-iters=5 --write-accs="$tmp/$cov.$dev.acc" --binary=false \
        "$tmp/$cov.0" "ark:$tmp/ar.ark" "ark:$tmp/ar.ali" "$tmp/$cov.$dev.txt" 2>"$tmp/$cov.$dev.log"
    done
    if grep -q "using device cuda" "$tmp/$cov.cuda.log"; then ok "$cov: gmm-est-gpu --device=cuda runs"; else notok "$cov: gmm-est-gpu --device=cuda"; cat "$tmp/$cov.cuda.log"; fi
    grep -h "iteration 5" "$tmp/$cov.cpu.log" "$tmp/$cov.cuda.log" | sed 's/^/# /'
    if r=$(python3 test/python/compare_models.py "$tmp/$cov.cuda.txt" "$tmp/$cov.cpu.txt" --rtol 1e-4 --cov-rtol 1e-3 2>&1); then
      ok "$cov: EM 5 iterations cuda vs cpu ($(echo $r | tr '\n' ' '))"
    else notok "$cov: EM cuda vs cpu ($(echo $r | tr '\n' ' '))"; fi
  done
else
  notok "missing $ar (set GH_SHARED)"
fi

# 4. HMM kernels: CUDA vs the CPU reference (unit test, with speed lines),
#    then the tools on real loglikes (yesno monophone model, word loop).
if [ -x build/test/test_hmm_cuda ]; then
  out=$(build/test/test_hmm_cuda 2>&1); rc=$?
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
  pass=$((pass + p)); fail=$((fail + f))
  grep -E '^not ok|^# bench|^# batch' <<<"$out"
  if grep -q 'SKIP no GPU' <<<"$out"; then notok "test_hmm_cuda skipped CUDA although a GPU is present"; fi
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then notok "test_hmm_cuda exited $rc"; fi
else
  notok "build/test/test_hmm_cuda not built (make build/test/test_hmm_cuda)"
fi
cmp_nums() {  # cmp_nums a b tol: same tokens; numbers within tol*(1+|b|)
  python3 - "$@" <<'PY'
import sys
a, b, tol = open(sys.argv[1]).read().split(), open(sys.argv[2]).read().split(), float(sys.argv[3])
if len(a) != len(b): print("token counts differ: %d vs %d" % (len(a), len(b))); sys.exit(1)
worst = 0.0
for x, y in zip(a, b):
    try: fx, fy = float(x), float(y)
    except ValueError:
        if x != y: print("token %r vs %r" % (x, y)); sys.exit(1)
        continue
    if fx != fy: worst = max(worst, abs(fx - fy) / (1 + abs(fy)))
print("max rel diff %.3g" % worst); sys.exit(0 if worst <= tol else 1)
PY
}
yn=$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl
if [ -f "$yn" ]; then
  # all 22 pdfs of the model (more loglike columns than the HMMs' pdfs is an error)
  printf 'yes 0 1 2 3 4 5 6\nno 7 8 9 10 11 12 13\nsil 14 15 16 17 18 19 20 21\n' > "$tmp/yn.txt"
  bin/hmm-init-topo --silence=sil --word-loop=loop "$tmp/yn.txt" "$tmp/yn.hmm" 2>/dev/null
  bin/gmm-score-gpu --device=cpu-ref "$yn" "ark:$D/kaldi-fixtures/mfcc-deltas.ark" "ark:$tmp/yn.ll" 2>/dev/null
  for dev in cpu cuda; do
    bin/hmm-forward --device=${dev/#cpu/cpu-ref} --hmm=loop "$tmp/yn.hmm" "ark:$tmp/yn.ll" "ark,t:$tmp/fwd.$dev" 2>"$tmp/hmm.$dev.log"
    bin/hmm-viterbi --device=${dev/#cpu/cpu-ref} --hmm=loop "$tmp/yn.hmm" "ark:$tmp/yn.ll" "ark,t:$tmp/ali.$dev" 2>>"$tmp/hmm.$dev.log"
    bin/hmm-bw --device=${dev/#cpu/cpu-ref} --hmm=loop --binary=false "$tmp/yn.hmm" "ark:$tmp/yn.ll" "ark,t:$tmp/post.$dev" \
      "$tmp/yn1.$dev.hmm" 2>>"$tmp/hmm.$dev.log"
  done
  if [ "$(grep -c 'using device cuda' "$tmp/hmm.cuda.log")" -eq 3 ] && ! grep -q 'no HMM kernels' "$tmp/hmm.cuda.log"; then
    ok "hmm tools --device=cuda run on the CUDA HMM kernels"
  else notok "hmm tools --device=cuda"; cat "$tmp/hmm.cuda.log"; fi
  if r=$(cmp_nums "$tmp/fwd.cuda" "$tmp/fwd.cpu" 1e-5); then ok "hmm-forward cuda vs cpu ($r)"; else notok "hmm-forward cuda vs cpu ($r)"; fi
  if cmp -s "$tmp/ali.cuda" "$tmp/ali.cpu"; then ok "hmm-viterbi cuda vs cpu: identical alignments"; else notok "hmm-viterbi cuda vs cpu: alignments differ"; fi
  if r=$(cmp_nums "$tmp/post.cuda" "$tmp/post.cpu" 1e-4); then ok "hmm-bw posteriors cuda vs cpu ($r)"; else notok "hmm-bw posteriors cuda vs cpu ($r)"; fi
  if r=$(cmp_nums "$tmp/yn1.cuda.hmm" "$tmp/yn1.cpu.hmm" 1e-4); then ok "hmm-bw re-estimated HMMs cuda vs cpu ($r)"; else notok "hmm-bw HMMs cuda vs cpu ($r)"; fi
else
  notok "missing $yn (set GH_SHARED)"
fi

# 7. speaker adaptation: gmm-est-fmllr / gmm-adapt-map, statistics by
# the CUDA E-step vs the CPU one (AMI global GMM per speaker and per utterance,
# also vs Kaldi's transforms; the yes/no .mdl with pdf alignments).
fx=$D/kaldi-fixtures
for mode in spk utt; do
  if [ $mode = spk ]; then o="--spk2utt=ark:$fx/ami.spk2utt"; else o="--fmllr-min-count=100"; fi
  for dev in cpu cuda; do
    bin/gmm-est-fmllr --device=${dev/#cpu/cpu-ref} $o "$fx/ami-diag16.gmm" "ark:$D/kaldi-ami-feats/feats.ark" "ark,t:$tmp/fm.$mode.$dev" 2>"$tmp/fm.$dev.log"
  done
  if grep -q "using device cuda" "$tmp/fm.cuda.log" && r=$(cmp_mats "$tmp/fm.$mode.cuda" "$tmp/fm.$mode.cpu" 1e-4); then
    ok "gmm-est-fmllr ($mode) cuda vs cpu ($r)"; else notok "gmm-est-fmllr ($mode) cuda vs cpu ($r)"; cat "$tmp/fm.cuda.log"; fi
  bin/copy-feats "ark:$fx/ami-diag16.fmllr-$mode.ark" "ark,t:$tmp/fm.$mode.kaldi" 2>/dev/null
  if r=$(cmp_mats "$tmp/fm.$mode.cuda" "$tmp/fm.$mode.kaldi" 3e-4); then ok "gmm-est-fmllr ($mode) cuda vs Kaldi ($r)"; else notok "gmm-est-fmllr ($mode) cuda vs Kaldi ($r)"; fi
done
for dev in cpu cuda; do
  bin/gmm-adapt-map --device=${dev/#cpu/cpu-ref} --update-flags=mvw --binary=false "$fx/ami-diag16.gmm" "ark:$D/kaldi-ami-feats/feats.ark" "$tmp/map.$dev" 2>/dev/null
done
if r=$(cmp_nums "$tmp/map.cuda" "$tmp/map.cpu" 1e-4); then ok "gmm-adapt-map cuda vs cpu ($r)"; else notok "gmm-adapt-map cuda vs cpu ($r)"; fi
if [ -f "$yn" ]; then
  # pdf alignment: blocks of 10 frames cycling through the 22 pdfs
  bin/feat-to-len "ark:$D/kaldi-fixtures/mfcc-deltas.ark" ark,t:- 2>/dev/null |
    awk '{printf "%s", $1; for (t = 0; t < $2; t++) printf " %d", int(t / 10) % 22; print ""}' > "$tmp/yn.ali"
  for dev in cpu cuda; do
    bin/gmm-est-fmllr --device=${dev/#cpu/cpu-ref} --fmllr-min-count=50 "$yn" "ark:$D/kaldi-fixtures/mfcc-deltas.ark" "ark,t:$tmp/yn.ali" "ark,t:$tmp/ynfm.$dev" 2>/dev/null
    bin/gmm-adapt-map --device=${dev/#cpu/cpu-ref} --binary=false "$yn" "ark:$D/kaldi-fixtures/mfcc-deltas.ark" "ark,t:$tmp/yn.ali" "$tmp/ynmap.$dev" 2>/dev/null
  done
  if r=$(cmp_mats "$tmp/ynfm.cuda" "$tmp/ynfm.cpu" 1e-4); then ok "gmm-est-fmllr with alignments (yes/no .mdl) cuda vs cpu ($r)"; else notok "gmm-est-fmllr yes/no cuda vs cpu ($r)"; fi
  if r=$(cmp_nums "$tmp/ynmap.cuda" "$tmp/ynmap.cpu" 1e-4); then ok "gmm-adapt-map with alignments (yes/no .mdl) cuda vs cpu ($r)"; else notok "gmm-adapt-map yes/no cuda vs cpu ($r)"; fi
fi

# 5. GEMM forms and reproducibility (kernels/cuda/cuda-gemm.cu):
#    gmm-score-gpu through the GEMM forms (forced: GH_CUDA_SCORE=gemm) in
#    fp32 and 3xTF32 vs Kaldi's own frame likelihoods on real AMI MFCCs;
#    two runs of gmm-est-gpu --device=cuda write byte-identical models (full
#    and diag global GMMs on AMI: the GEMM E-step, statistics summed in a
#    fixed order); gmm-acc-stats-gpu in 3 jobs + gmm-sum-accs equals one job
#    within summation order: each frame is centred at the model's centre,
#    the same in every job, but the statistics are fp32 sums within a chunk
#    (the CPU backend sums in double: 1e-5 in test/bats/repro.bats), and
#    other chunks round otherwise.  On this data the GPU E-step's own error
#    against the double reference (cpu-ref) is 1.7e-4 (full) and 1.2e-5
#    (diag) of 1 + |x|; the 3-job sums differed from the 1-job ones by 9.4e-5
#    and 1.5e-5 on an H200 (bench/RESULTS.md D16): 3e-4.  (With each
#    job's own data mean as the centre 1.1e-4;
#    with an unweighted mean of Gaussian means 2.2e-4.)
for pr in fp32 tf32x3; do
  GH_CUDA_SCORE=gemm bin/gmm-score-gpu --device=cuda --precision=$pr "$D/kaldi-fixtures/ami-full16.fgmm" \
    "ark:$D/kaldi-ami-feats/feats.ark" "ark,t:$tmp/g.$pr.txt" 2>/dev/null
  if r=$(cmp_mats "$tmp/g.$pr.txt" "$D/kaldi-fixtures/ami-full16.frame-likes.txt" 1e-4); then ok "ami-full16 GEMM $pr vs Kaldi ($r)"
  else notok "ami-full16 GEMM $pr vs Kaldi ($r)"; fi
done
sed "s| | $D/kaldi-ami-feats/|" "$D/kaldi-ami-feats/feats.scp" > "$tmp/all.scp"
sed -n 1,3p "$tmp/all.scp" > "$tmp/j1.scp"; sed -n 4,7p "$tmp/all.scp" > "$tmp/j2.scp"; sed -n '8,$p' "$tmp/all.scp" > "$tmp/j3.scp"
for cov in full diag; do
  bin/gmm-init --device=cpu-ref --cov-type=$cov --num-gauss=8 --num-iters=0 "scp:$tmp/all.scp" "$tmp/r$cov.0" 2>/dev/null
  for run in 1 2; do
    bin/gmm-est-gpu --device=cuda --num-iters=3 "$tmp/r$cov.0" "scp:$tmp/all.scp" "$tmp/r$cov.$run" 2>/dev/null
  done
  if [ -s "$tmp/r$cov.1" ] && cmp -s "$tmp/r$cov.1" "$tmp/r$cov.2"; then ok "$cov: two gmm-est-gpu --device=cuda runs write byte-identical models"
  else notok "$cov: two gmm-est-gpu --device=cuda runs differ"; fi
  bin/gmm-acc-stats-gpu --device=cuda --binary=false "$tmp/r$cov.0" "scp:$tmp/all.scp" "$tmp/one.acc" 2>/dev/null
  for j in 1 2 3; do bin/gmm-acc-stats-gpu --device=cuda "$tmp/r$cov.0" "scp:$tmp/j$j.scp" "$tmp/j$j.acc" 2>/dev/null; done
  bin/gmm-sum-accs --binary=false "$tmp/three.acc" "$tmp/j1.acc" "$tmp/j2.acc" "$tmp/j3.acc" 2>/dev/null
  if r=$(cmp_nums "$tmp/three.acc" "$tmp/one.acc" 3e-4); then ok "$cov: cuda accs, 3 jobs + gmm-sum-accs vs 1 job ($r)"
  else notok "$cov: cuda accs, 3 jobs vs 1 job ($r)"; fi
done

# 6. OpenCL on NVIDIA's driver (kernels/opencl/): register NVIDIA's ICD when
#    running as root and it is missing; --device=opencl then picks the first
#    OpenCL GPU (PoCL only offers a CPU device).  build/test/test_opencl (every
#    op vs the CPU reference) and test/bats/opencl.bats (the tools, opencl vs
#    cpu on real data).  A failure here is counted, never hides the CUDA results.
if [ "$(id -u)" = 0 ] && [ ! -e /etc/OpenCL/vendors/nvidia.icd ] && ldconfig -p 2>/dev/null | grep -q libnvidia-opencl.so.1; then
  mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd &&
    echo "# registered /etc/OpenCL/vendors/nvidia.icd"
fi
if [ -x build/test/test_opencl ]; then
  out=$(GH_OPENCL_BENCH=1 build/test/test_opencl 2>&1); rc=$?
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
  pass=$((pass + p)); fail=$((fail + f))
  grep -E '^not ok|SKIP|^# device|^# bench' <<<"$out"
  if ! grep -q '^# device: opencl (NVIDIA' <<<"$out"; then notok "test_opencl did not run on NVIDIA's OpenCL"; fi
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then notok "test_opencl exited $rc"; fi
  if bin/gmm-score-gpu --device=opencl "$D/kaldi-fixtures/ami-full16.fgmm" "ark:$D/kaldi-ami-feats/feats.ark" ark:/dev/null 2>"$tmp/ocl.log" &&
     grep -q 'using device opencl (NVIDIA' "$tmp/ocl.log"; then ok "gmm-score-gpu --device=opencl runs on NVIDIA's OpenCL"
  else notok "gmm-score-gpu --device=opencl on NVIDIA"; cat "$tmp/ocl.log"; fi
  if command -v bats >/dev/null; then
    out=$(OCL_DEVICE=opencl bats --tap test/bats/opencl.bats 2>&1)
    p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
    pass=$((pass + p)); fail=$((fail + f))
    grep -E -A8 '^not ok' <<<"$out"; grep -iE '# skip' <<<"$out" && notok "opencl.bats skipped tests"
  else
    notok "bats is not installed: test/bats/opencl.bats (OpenCL tools vs cpu) not run"
  fi
else
  notok "build/test/test_opencl not built (no CL/cl.h or libOpenCL at build time?)"
fi
# 7b. The numerical contract on CUDA (doc/reliability.md): test/bats/numerics.bats
#    with GH_NUMERICS_DEVICES=cuda (log-likelihoods vs the float64 reference
#    of test/python/numerics_ref.py, 1e-3 nats + 1e-5 relative).
if command -v bats >/dev/null; then
  out=$(GH_NUMERICS_DEVICES=cuda bats --tap test/bats/numerics.bats 2>&1)
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
  pass=$((pass + p)); fail=$((fail + f))
  grep -E -A12 '^not ok' <<<"$out"
else
  notok "bats is not installed: test/bats/numerics.bats (numerical contract on cuda) not run"
fi
# 8. shrinkage statistics (kernels/cuda/shrink.cu vs kernels/cpu/shrink.c; doc/shrink.md):
#    build/test/test_shrink (random 4-pdf model, must not skip CUDA here), then
#    gmm-acc-stats-gpu --shrinkage-stats=true on the AMI full UBM and gmm-est-gpu --shrink=lw.
if [ -x build/test/test_shrink ]; then
  out=$(build/test/test_shrink 2>&1)
  if grep -q '^ok .*CUDA shrinkage statistics = CPU' <<<"$out"; then ok "test_shrink: $(grep 'CUDA shrinkage' <<<"$out" | sed 's/^ok [0-9]* - //')"
  else notok "test_shrink CUDA part"; grep -E '^not ok|SKIP' <<<"$out"; fi
else notok "build/test/test_shrink not built"; fi
fu=$D/kaldi-fixtures/ami-full16.fgmm
for dev in cpu cuda; do
  bin/gmm-acc-stats-gpu --device=${dev/#cpu/cpu-ref} --shrinkage-stats=true --binary=false "$fu" "ark:$D/kaldi-ami-feats/feats.ark" \
    "$tmp/shr.$dev.acc" 2>"$tmp/shr.$dev.log"
  python3 -c "import sys; print(open(sys.argv[1]).read().split('<SHRINKSTATS>')[1])" "$tmp/shr.$dev.acc" > "$tmp/shr.$dev.block"
  bin/gmm-est-gpu --device=${dev/#cpu/cpu-ref} --num-iters=2 --shrink=lw --binary=false "$fu" "ark:$D/kaldi-ami-feats/feats.ark" \
    "$tmp/shr.$dev.mdl" 2>>"$tmp/shr.$dev.log"
done
if grep -q 'no shrinkage-statistics kernel' "$tmp/shr.cuda.log"; then notok "shrinkage statistics ran on the CPU fallback"; cat "$tmp/shr.cuda.log"; fi
if r=$(cmp_nums "$tmp/shr.cuda.block" "$tmp/shr.cpu.block" 1e-7); then ok "gmm-acc-stats-gpu --shrinkage-stats cuda vs cpu, AMI full16 ($r)"
else notok "gmm-acc-stats-gpu --shrinkage-stats cuda vs cpu ($r)"; fi
if r=$(python3 test/python/compare_models.py "$tmp/shr.cuda.mdl" "$tmp/shr.cpu.mdl" --rtol 1e-4 --cov-rtol 1e-3 2>&1); then
  ok "gmm-est-gpu --shrink=lw cuda vs cpu ($r)"; else notok "gmm-est-gpu --shrink=lw cuda vs cpu ($r)"; fi

# 9. gmm-train: 1 process = gmm-est-gpu, cuda vs cpu, streamed = resident,
#    and with 2+ GPUs 2 ranks vs 1, NCCL vs MPI (test/gpu-train.sh).
out=$(test/gpu-train.sh 2>&1)
echo "$out" | grep -E '^(ok|not ok) '
pass=$((pass + $(grep -c '^ok ' <<<"$out"))); fail=$((fail + $(grep -c '^not ok ' <<<"$out")))
#    acc_commit on CUDA (the double-double block sums) = lib/base/dd.h's host sums, bitwise
if [ -x build/test/test_dist_em ]; then
  out=$(build/test/test_dist_em 2>&1)
  echo "$out" | grep -E '^(ok|not ok) .*(cuda|CUDA)'
  grep -q 'SKIP no CUDA device' <<<"$out" && notok "test_dist_em skipped CUDA although a GPU is present"
  out=$(grep -E '^(ok|not ok) .*cuda' <<<"$out")
else
  out="not ok - build/test/test_dist_em not built"; echo "$out"
fi
pass=$((pass + $(grep -c '^ok ' <<<"$out"))); fail=$((fail + $(grep -c '^not ok ' <<<"$out")))
# 10. Kaldi's global-GMM tools and the sid UBM acceptance on CUDA
if command -v bats >/dev/null; then
  for run in "GSEL_DEVICE=cuda:test/bats/kaldi-ubm.bats" "SID_DEVICE=cuda:test/bats/kaldi-sid.bats"; do
    out=$(env "${run%%:*}" PATH="$PWD/bin:$PATH" bats --tap "${run#*:}" 2>&1)
    p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
    pass=$((pass + p)); fail=$((fail + f))
    grep -E -A12 '^not ok' <<<"$out"; grep -iE '# skip' <<<"$out" && notok "${run#*:} skipped tests"
  done
else
  notok "bats is not installed: test/bats/kaldi-ubm.bats, kaldi-sid.bats not run on CUDA"
fi

# 11. hmm-train: cuda vs cpu (BW, Viterbi), resident vs the per-iteration
#     recipe loop, 2 ranks vs 1 where there are 2 GPUs (test/gpu-hmm-train.sh).
out=$(test/gpu-hmm-train.sh 2>&1)
echo "$out" | grep -E '^(ok|not ok) |^# '
pass=$((pass + $(grep -c '^ok ' <<<"$out"))); fail=$((fail + $(grep -c '^not ok ' <<<"$out")))

# 12. the batched exact aligner on CUDA
if [ -x build/test/test_align ]; then
  out=$(build/test/test_align 2>&1)
  echo "$out" | grep -E '^(ok|not ok) .*cuda'
  grep -q 'SKIP no GPU' <<<"$out" && notok "test_align skipped CUDA although a GPU is present"
  out=$(grep -E '^(ok|not ok) .*cuda' <<<"$out")
  [ -n "$out" ] || out="not ok - test_align printed no CUDA check"
else
  out="not ok - build/test/test_align not built"; echo "$out"
fi
pass=$((pass + $(grep -c '^ok ' <<<"$out"))); fail=$((fail + $(grep -c '^not ok ' <<<"$out")))
if command -v bats >/dev/null; then
  out=$(ALIGN_DEVICE=cuda PATH="$PWD/bin:$PATH" bats --tap test/bats/align-device.bats 2>&1)
  pass=$((pass + $(grep -c '^ok ' <<<"$out"))); fail=$((fail + $(grep -c '^not ok ' <<<"$out")))
  grep -E -A12 '^not ok' <<<"$out"
else
  notok "bats is not installed: test/bats/align-device.bats not run on CUDA"
fi

echo "${pass} passed, ${fail} failed"
[ "$fail" -eq 0 ]
