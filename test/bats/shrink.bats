#!/usr/bin/env bats
# fc-shrink, --shrinkage-stats and --shrink (lib/gmm/shrink.h, doc/shrink.md), CPU device.
# References: scikit-learn LedoitWolf / OAS / ShrunkCovariance and float64 numpy
# (test/python/shrink_ref.py) on a one-Gaussian model, whose posteriors are 1
# (unit weights) or the frame weights of a posterior archive (weighted).

setup() {
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  PY=$BATS_TEST_DIRNAME/../python
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  # no flooring in the comparisons: the floors would change S on purpose
  NOFLOOR="--min-variance=1e-10 --max-condition=0"
}

# 40 frames of a correlated 6-dim Gaussian (n < 10 D, so shrinkage matters);
# model: one full Gaussian from gmm-init (not updated: its mean is not the data
# mean, so the statistics' shift from the model mean to the sample mean is used).
make_one() {  # <dir> <n> <dim> <seed>
  mkdir -p "$1"
  python3 "$PY/shrink_ref.py" gen "$1" --n "$2" --dim "$3" --seed "$4"
  # n may be below gmm-init's 10 frames per Gaussian (shrinkage is for n < D): allowed explicitly
  "$BIN/gmm-init" --cov-type=full --num-gauss=1 --min-frames-per-gauss=0 --device=cpu "ark,t:$1/x.feats" "$1/0.mdl" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu --shrinkage-stats=true "$1/0.mdl" "ark,t:$1/x.feats" "$1/x.acc" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu --shrinkage-stats=true --label-type=post "$1/0.mdl" "ark,t:$1/x.feats" \
    "ark,t:$1/x.post" "$1/w.acc" 2>/dev/null
}

# A failing run: non-zero exit, exactly one ERROR line naming $2, no output file $3.
fails_cleanly() {  # <stderr-file> <must-contain> <output-file>
  [ "$(grep -c 'ERROR' "$1")" -eq 1 ] || { cat "$1"; return 1; }
  grep -q -- "$2" "$1" || { cat "$1"; return 1; }
  [ ! -e "$3" ] || { echo "output $3 left behind"; return 1; }
}

@test "fc-shrink lw, oas: equal scikit-learn LedoitWolf / OAS on one Gaussian, unit weights" {
  make_one "$T/a" 40 6 1
  for m in lw oas; do
    "$BIN/fc-shrink" --binary=false --method=$m $NOFLOOR "$T/a/0.mdl" "$T/a/x.acc" "$T/a/$m.txt" 2>"$T/a/$m.log"
    grep -q "shrinkage $m: lambda mean" "$T/a/$m.log"
    run python3 "$PY/shrink_ref.py" check "$T/a/$m.txt" "$T/a" --method $m --rtol 1e-5
    echo "$output"; [ "$status" -eq 0 ]
  done
}

@test "fc-shrink fixed: equals scikit-learn ShrunkCovariance (target identity) and numpy (target diag)" {
  make_one "$T/a" 40 6 2
  for t in identity diag; do
    "$BIN/fc-shrink" --binary=false --method=fixed --factor=0.3 --target=$t $NOFLOOR "$T/a/0.mdl" "$T/a/x.acc" \
      "$T/a/f.txt" 2>/dev/null
    run python3 "$PY/shrink_ref.py" check "$T/a/f.txt" "$T/a" --method fixed --factor 0.3 --target $t
    echo "$output"; [ "$status" -eq 0 ]
  done
  "$BIN/fc-shrink" --binary=false --method=occupancy --tau=25 $NOFLOOR "$T/a/0.mdl" "$T/a/x.acc" "$T/a/o.txt" 2>/dev/null
  run python3 "$PY/shrink_ref.py" check "$T/a/o.txt" "$T/a" --method occupancy --tau 25
  echo "$output"; [ "$status" -eq 0 ]
}

@test "fc-shrink ss: equals Schafer-Strimmer target D in numpy, unit and posterior weights" {
  make_one "$T/a" 40 6 3
  "$BIN/fc-shrink" --binary=false --method=ss $NOFLOOR "$T/a/0.mdl" "$T/a/x.acc" "$T/a/ss.txt" 2>/dev/null
  run python3 "$PY/shrink_ref.py" check "$T/a/ss.txt" "$T/a" --method ss
  echo "$output"; [ "$status" -eq 0 ]
  "$BIN/fc-shrink" --binary=false --method=ss $NOFLOOR "$T/a/0.mdl" "$T/a/w.acc" "$T/a/wss.txt" 2>/dev/null
  run python3 "$PY/shrink_ref.py" check "$T/a/wss.txt" "$T/a" --method ss --weighted
  echo "$output"; [ "$status" -eq 0 ]
}

@test "fc-shrink lw, oas with posterior weights: equal the brute-force weighted estimators (N = n_eff)" {
  make_one "$T/a" 40 6 4
  for m in lw oas; do
    "$BIN/fc-shrink" --binary=false --method=$m $NOFLOOR "$T/a/0.mdl" "$T/a/w.acc" "$T/a/$m.txt" 2>"$T/a/$m.log"
    grep -q "N = effective sample size" "$T/a/$m.log"
    run python3 "$PY/shrink_ref.py" check "$T/a/$m.txt" "$T/a" --method $m --weighted
    echo "$output"; [ "$status" -eq 0 ]
  done
  # the weighted result differs from the unit-weight one (the test can fail)
  "$BIN/fc-shrink" --binary=false --method=lw $NOFLOOR "$T/a/0.mdl" "$T/a/x.acc" "$T/a/u.txt" 2>/dev/null
  ! cmp -s "$T/a/u.txt" "$T/a/lw.txt"
}

@test "fc-shrink: output positive definite for every method, even from singular S (n < D)" {
  make_one "$T/s" 5 8 5
  for spec in "fixed --factor=0" "fixed --factor=1" "occupancy --tau=0" oas lw ss diag; do
    m=${spec%% *}; opt=""; [ "$m" != "$spec" ] && opt=${spec#* }
    "$BIN/fc-shrink" --binary=false --method=$m $opt "$T/s/0.mdl" "$T/s/x.acc" "$T/s/o.txt" 2>/dev/null
    python3 -c "
import sys, numpy as np; sys.path.insert(0, '$PY')
from kaldi_text import read_text_gmm_set
C = read_text_gmm_set('$T/s/o.txt')[0]['covs'][0]
C = np.diag(C) if C.ndim == 1 else C
e = np.linalg.eigvalsh(C); print('$spec', e.min(), e.max() / e.min())
assert e.min() >= 1e-3 * (1 - 1e-5) and e.max() / e.min() <= 1e4 * (1 + 1e-3), e"
  done
}

@test "shrinkage statistics: gmm-sum-accs of two jobs equals one job; text and binary read back" {
  make_one "$T/a" 60 4 6
  python3 - "$T/a" <<'EOF'
import sys
d = sys.argv[1]; lines = open(d + '/x.feats').read().split('\n')
rows = [l for l in lines[1:] if l.strip() and l.strip() != ']']
rows = [r.replace(' ]', '') for r in rows]
open(d + '/p.feats', 'w').write('u1  [\n' + '\n'.join(rows[:25]) + ' ]\nu2  [\n' + '\n'.join(rows[25:]) + ' ]\n')
open(d + '/p1.feats', 'w').write('u1  [\n' + '\n'.join(rows[:25]) + ' ]\n')
open(d + '/p2.feats', 'w').write('u2  [\n' + '\n'.join(rows[25:]) + ' ]\n')
EOF
  for f in p p1 p2; do
    "$BIN/gmm-acc-stats-gpu" --device=cpu --shrinkage-stats=true --binary=false "$T/a/0.mdl" "ark,t:$T/a/$f.feats" \
      "$T/a/$f.acc" 2>/dev/null
  done
  grep -q '<SHRINKSTATS>' "$T/a/p.acc"
  "$BIN/gmm-sum-accs" --binary=false "$T/a/sum.acc" "$T/a/p1.acc" "$T/a/p2.acc" 2>/dev/null
  python3 - "$T/a/sum.acc" "$T/a/p.acc" <<'EOF'
import sys, numpy as np
def nums(p):
    t = open(p).read().split('<SHRINKSTATS>')[1].split()
    return np.array([float(x) for x in t if x[0] in '-0123456789'])
a, b = nums(sys.argv[1]), nums(sys.argv[2])
assert a.shape == b.shape, (a.shape, b.shape)
err = np.abs(a - b).max() / np.abs(b).max(); print('max rel diff', err); assert err < 1e-12, err
EOF
  # binary <-> text round trip keeps the block exactly (doubles)
  "$BIN/gmm-sum-accs" --binary=true "$T/a/b.acc" "$T/a/p.acc" 2>/dev/null
  "$BIN/gmm-sum-accs" --binary=false "$T/a/t.acc" "$T/a/b.acc" 2>/dev/null
  cmp "$T/a/t.acc" "$T/a/p.acc"
  # and fc-shrink lw from the summed accs equals lw from the single job
  "$BIN/fc-shrink" --method=lw "$T/a/0.mdl" "$T/a/sum.acc" "$T/a/1.mdl" 2>/dev/null
  "$BIN/fc-shrink" --method=lw "$T/a/0.mdl" "$T/a/p.acc" "$T/a/2.mdl" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$T/a/1.mdl" "$T/a/1.txt" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$T/a/2.mdl" "$T/a/2.txt" 2>/dev/null
  python3 "$PY/compare_models.py" "$T/a/1.txt" "$T/a/2.txt" --rtol 1e-6
}

@test "shrinkage statistics: accs without them still read as plain accs; Kaldi part unchanged" {
  make_one "$T/a" 40 4 7
  "$BIN/gmm-acc-stats-gpu" --device=cpu --binary=false "$T/a/0.mdl" "ark,t:$T/a/x.feats" "$T/a/plain.acc" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu --binary=false --shrinkage-stats=true "$T/a/0.mdl" "ark,t:$T/a/x.feats" \
    "$T/a/s.acc" 2>/dev/null
  # the standard accumulators are a byte-identical prefix
  n=$(wc -c < "$T/a/plain.acc")
  cmp -n "$n" "$T/a/plain.acc" "$T/a/s.acc"
  head -c "$n" "$T/a/s.acc" | cmp - "$T/a/plain.acc"
  grep -q '^<SHRINKSTATS>\|<SHRINKSTATS>' "$T/a/s.acc"
  ! grep -q '<SHRINKSTATS>' "$T/a/plain.acc"
}

@test "gmm-est --shrink equals gmm-est then fc-shrink; gmm-est-gpu --shrink equals acc + gmm-est --shrink" {
  make_one "$T/a" 300 5 8
  for m in ss lw oas fixed:0.4 occupancy:100; do
    "$BIN/gmm-est" --shrink=$m "$T/a/0.mdl" "$T/a/x.acc" "$T/a/e.mdl" 2>"$T/a/e.log"
    grep -q "shrinkage ${m%%:*}: lambda mean" "$T/a/e.log"
    "$BIN/gmm-est" "$T/a/0.mdl" "$T/a/x.acc" "$T/a/ml.mdl" 2>/dev/null
    opt="--method=${m%%:*}"
    case $m in fixed:*) opt="$opt --factor=${m#*:}" ;; occupancy:*) opt="$opt --tau=${m#*:}" ;; esac
    "$BIN/fc-shrink" $opt "$T/a/ml.mdl" "$T/a/x.acc" "$T/a/fc.mdl" 2>/dev/null
    "$BIN/gmm-est-gpu" --device=cpu --shrink=$m "$T/a/0.mdl" "ark,t:$T/a/x.feats" "$T/a/g.mdl" 2>/dev/null
    for f in e fc g ml; do "$BIN/gmm-copy" --binary=false "$T/a/$f.mdl" "$T/a/$f.txt" 2>/dev/null; done
    # means: 1e-3 sd (fc-shrink reads them back from float means_invvars of the ML model)
    python3 "$PY/compare_models.py" "$T/a/e.txt" "$T/a/fc.txt" --rtol 1e-3 --cov-rtol 1e-5
    # accs through a file are float (as Kaldi writes them): 1e-4
    python3 "$PY/compare_models.py" "$T/a/g.txt" "$T/a/e.txt" --rtol 1e-4
    ! python3 "$PY/compare_models.py" "$T/a/ml.txt" "$T/a/e.txt" --rtol 1e-5 >/dev/null
  done
}

@test "gmm-est-gpu --write-accs --shrinkage-stats writes the block; lw over several EM iterations runs" {
  make_one "$T/a" 300 5 9
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=3 --shrink=lw --write-accs="$T/a/last.acc" --shrinkage-stats=true \
    --binary=false "$T/a/0.mdl" "ark,t:$T/a/x.feats" "$T/a/3.mdl" 2>"$T/a/log"
  [ "$(grep -c 'shrinkage lw: lambda mean' "$T/a/log")" -eq 3 ]
  grep -q '<SHRINKSTATS>' "$T/a/last.acc"
  "$BIN/fc-shrink" --method=ss "$T/a/3.mdl" "$T/a/last.acc" "$T/a/ss.mdl" 2>/dev/null
}

@test "fc-shrink bad input: one clear error line, non-zero exit, no output file" {
  make_one "$T/a" 40 4 10
  o=$T/a/out.mdl
  run "$BIN/fc-shrink" --method=fixed --factor=1.5 "$T/a/0.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "must be in \[0, 1\], got 1.5" "$o"
  run "$BIN/fc-shrink" --method=fixed --factor=-0.1 "$T/a/0.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "got -0.1" "$o"
  run "$BIN/fc-shrink" --method=occupancy --tau=-3 "$T/a/0.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "tau" "$o"
  run "$BIN/fc-shrink" --method=fixed "$T/a/0.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "needs --factor" "$o"
  run "$BIN/fc-shrink" --method=bogus "$T/a/0.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "unknown --method=bogus" "$o"
  # lw / ss without shrinkage statistics
  "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/a/0.mdl" "ark,t:$T/a/x.feats" "$T/a/plain.acc" 2>/dev/null
  for m in lw ss; do
    run "$BIN/fc-shrink" --method=$m "$T/a/0.mdl" "$T/a/plain.acc" "$o"
    [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "plain.acc has no shrinkage statistics" "$o"
    run "$BIN/gmm-est" --shrink=$m "$T/a/0.mdl" "$T/a/plain.acc" "$o"
    [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "plain.acc has no shrinkage statistics" "$o"
  done
  # a diagonal model for a full-only method
  "$BIN/gmm-init" --cov-type=diag --num-gauss=1 --device=cpu "ark,t:$T/a/x.feats" "$T/a/d.mdl" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/a/d.mdl" "ark,t:$T/a/x.feats" "$T/a/d.acc" 2>/dev/null
  run "$BIN/fc-shrink" --method=oas "$T/a/d.mdl" "$T/a/d.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "d.mdl, pdf 0: diagonal covariances" "$o"
  run "$BIN/gmm-acc-stats-gpu" --device=cpu --shrinkage-stats=true "$T/a/d.mdl" "ark,t:$T/a/x.feats" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "pdf 0 has diagonal covariances" "$o"
  run "$BIN/gmm-est-gpu" --device=cpu --shrink=ss "$T/a/d.mdl" "ark,t:$T/a/x.feats" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "diagonal covariances" "$o"
  # --method=diag is fine on a diagonal model
  "$BIN/fc-shrink" --method=diag "$T/a/d.mdl" "$T/a/d.acc" "$T/a/dd.mdl" 2>/dev/null
  # accs that do not match the model
  "$BIN/gmm-init" --cov-type=full --num-gauss=2 --device=cpu "ark,t:$T/a/x.feats" "$T/a/two.mdl" 2>/dev/null
  run "$BIN/fc-shrink" --method=ss "$T/a/two.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "x.acc, pdf 0: 1 full Gaussians of dimension 4, but" "$o"
  # bad --shrink specs
  run "$BIN/gmm-est" --shrink=fixed:2 "$T/a/0.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "must be in \[0, 1\], got 2" "$o"
  run "$BIN/gmm-est" --shrink=lw:3 "$T/a/0.mdl" "$T/a/x.acc" "$o"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "takes no parameter" "$o"
  # summing accs of different models (centres differ), and with / without the block
  "$BIN/gmm-est" --min-gaussian-occupancy=0 "$T/a/0.mdl" "$T/a/x.acc" "$T/a/m1.mdl" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu --shrinkage-stats=true "$T/a/m1.mdl" "ark,t:$T/a/x.feats" "$T/a/m1.acc" 2>/dev/null
  run "$BIN/gmm-sum-accs" "$o" "$T/a/x.acc" "$T/a/m1.acc"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "different centres" "$o"
  run "$BIN/gmm-sum-accs" "$o" "$T/a/x.acc" "$T/a/plain.acc"
  [ "$status" -ne 0 ]; echo "$output" > "$T/e"; fails_cleanly "$T/e" "shrinkage statistics" "$o"
}

@test "fc-shrink on a real model: Kaldi full-covariance UBM (ami-full16) with accs from its features" {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  FIX=$GH_SHARED/data/kaldi-fixtures; AMI=$GH_SHARED/data/kaldi-ami-feats
  [ -f "$FIX/ami-full16.fgmm" ] || skip "no $FIX/ami-full16.fgmm"
  "$BIN/gmm-acc-stats-gpu" --device=cpu --shrinkage-stats=true "$FIX/ami-full16.fgmm" "ark:$AMI/feats.ark" \
    "$T/u.acc" 2>/dev/null
  for m in oas lw ss diag; do
    "$BIN/fc-shrink" --method=$m "$FIX/ami-full16.fgmm" "$T/u.acc" "$T/u.$m" 2>"$T/u.log"
    grep -q "shrinkage $m: lambda mean" "$T/u.log"
    "$BIN/gmm-info" "$T/u.$m" >/dev/null 2>&1
    head -c 12 "$T/u.$m" | grep -aq '<FullGMM>\|<DiagGMM>'   # stays a bare Kaldi global GMM
  done
}

@test "a backend without acc_shrink (OpenCL) falls back to the CPU reference: same statistics" {
  make_one "$T/a" 200 5 11
  "$BIN/gmm-acc-stats-gpu" --device=opencl --shrinkage-stats=true --binary=false "$T/a/0.mdl" "ark,t:$T/a/x.feats" \
    "$T/a/o.acc" 2>"$T/a/o.log" || skip "no OpenCL device: $(tail -1 "$T/a/o.log")"
  grep -q 'no shrinkage-statistics kernel: running it on the CPU reference' "$T/a/o.log"
  "$BIN/gmm-acc-stats-gpu" --device=cpu --shrinkage-stats=true --binary=false "$T/a/0.mdl" "ark,t:$T/a/x.feats" \
    "$T/a/c.acc" 2>/dev/null
  block() { python3 -c "import sys; print(open(sys.argv[1]).read().split('<SHRINKSTATS>')[1])" "$1"; }
  [ "$(block "$T/a/o.acc")" = "$(block "$T/a/c.acc")" ]
}
