#!/usr/bin/env bats
# Reproducibility of training, CPU device; test/run-gpu.sh checks
# the same on CUDA.  What is guaranteed: the same data, model and options on
# the same device give byte-identical models and accumulators (statistics
# are summed in a fixed order, no order-dependent atomics); splitting the
# data into jobs (gmm-acc-stats-gpu per job + gmm-sum-accs) changes only
# the order of the summation: equal within rounding.  Kaldi's accs format
# stores floats, so each job's partial sums are rounded to float (6e-8
# relative to the part) before gmm-sum-accs adds them; where the parts
# cancel (first-order sums of zero-mean MFCCs) the difference relative to
# the total reaches a few 1e-6: tolerance 1e-5 of (1 + |total|).

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  AMI=$GH_SHARED/data/kaldi-ami-feats
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  sed "s| | $AMI/|" "$AMI/feats.scp" > "$T/all.scp"
}

# cmp_nums a b tol: the same tokens; numbers within tol * (1 + |b|).
cmp_nums() {
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

@test "gmm-est-gpu twice: byte-identical models (full and diag, 3 iterations)" {
  for cov in full diag; do
    "$BIN/gmm-init" --device=cpu --cov-type=$cov --num-gauss=4 --num-iters=0 "scp:$T/all.scp" "$T/$cov.0" 2>/dev/null
    "$BIN/gmm-est-gpu" --device=cpu --num-iters=3 "$T/$cov.0" "scp:$T/all.scp" "$T/$cov.a" 2>/dev/null
    "$BIN/gmm-est-gpu" --device=cpu --num-iters=3 "$T/$cov.0" "scp:$T/all.scp" "$T/$cov.b" 2>/dev/null
    [ -s "$T/$cov.a" ]
    cmp "$T/$cov.a" "$T/$cov.b"
    # and the models did change (the test is not comparing two copies of the input)
    ! cmp -s "$T/$cov.0" "$T/$cov.a"
  done
}

@test "gmm-acc-stats-gpu: 3 jobs + gmm-sum-accs == 1 job within summation order" {
  sed -n 1,3p "$T/all.scp" > "$T/j1.scp"; sed -n 4,7p "$T/all.scp" > "$T/j2.scp"; sed -n '8,$p' "$T/all.scp" > "$T/j3.scp"
  "$BIN/gmm-init" --device=cpu --cov-type=full --num-gauss=4 --num-iters=0 "scp:$T/all.scp" "$T/m0" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu --binary=false "$T/m0" "scp:$T/all.scp" "$T/one.acc" 2>/dev/null
  for j in 1 2 3; do "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/m0" "scp:$T/j$j.scp" "$T/j$j.acc" 2>/dev/null; done
  "$BIN/gmm-sum-accs" --binary=false "$T/three.acc" "$T/j1.acc" "$T/j2.acc" "$T/j3.acc" 2>/dev/null
  run cmp_nums "$T/three.acc" "$T/one.acc" 1e-5
  echo "$output"
  [ "$status" -eq 0 ]
  # the jobs really split the data: one job's accumulators differ from the total
  "$BIN/gmm-sum-accs" --binary=false "$T/j1t.acc" "$T/j1.acc" 2>/dev/null
  run cmp_nums "$T/j1t.acc" "$T/one.acc" 1e-5
  [ "$status" -ne 0 ]
}

@test "--precision: bad value -> one-line error" {
  run "$BIN/gmm-score-gpu" --precision=fp16 "$GH_SHARED/data/kaldi-fixtures/ami-full16.fgmm" "ark:$AMI/feats.ark" ark:/dev/null
  [ "$status" -ne 0 ]
  [[ "$output" == *"--precision must be"* ]]
}
