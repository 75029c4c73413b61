#!/usr/bin/env bats
# Training tools: gmm-init, gmm-est-gpu, gmm-acc-stats-gpu, gmm-est (CPU device).
# References: scikit-learn (test/python/sklearn_em.py), Kaldi fixtures, and the
# accumulate -> sum -> estimate equivalence.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  PY=$BATS_TEST_DIRNAME/../python
  AMI=$GH_SHARED/data/kaldi-ami-feats
  FIX=$GH_SHARED/data/kaldi-fixtures
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  FEATS=ark:$AMI/feats.ark
  # EM options with the hygiene switched off (for the sklearn comparison)
  NOHYG="--min-gaussian-occupancy=0 --min-gaussian-weight=0 --min-variance=1e-10 --max-condition=1e6"
}

# Synthetic 2-pdf data set in text archives: pdf 0 ~ N(0, 1), pdf 1 ~ N(5, 4),
# 2-dim; 4 utterances of 150 frames, the first 60 frames of each pdf 0.
make_synth() {
  python3 - "$T" <<'EOF'
import sys, numpy as np
d = sys.argv[1]; r = np.random.RandomState(0)
with open(d + '/s.feats', 'w') as f, open(d + '/s.ali', 'w') as a, open(d + '/s.utt', 'w') as u, \
     open(d + '/s.post', 'w') as p:
    for k in range(4):
        lab = np.array([0] * 60 + [1] * 90)
        X = np.where(lab[:, None] == 0, r.randn(150, 2), 5 + 2 * r.randn(150, 2))
        f.write('utt%d  [\n' % k + '\n'.join('  %.6f %.6f ' % tuple(x) for x in X) + ' ]\n')
        a.write('utt%d %s\n' % (k, ' '.join(map(str, lab))))
        u.write('utt%d %d\n' % (k, k % 2))
        p.write('utt%d %s\n' % (k, ' '.join('[ %d 1 ]' % l for l in lab)))
EOF
}

loglikes() { grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]*' "$1" | awk '{print $7}'; }

@test "gmm-init: global diag GMM, valid, requested size, deterministic for a seed" {
  run "$BIN/gmm-init" --num-gauss=8 --seed=3 --device=cpu --binary=false "$FEATS" "$T/a.txt"
  [ "$status" -eq 0 ]
  "$BIN/gmm-init" --num-gauss=8 --seed=3 --device=cpu --binary=false "$FEATS" "$T/b.txt" 2>/dev/null
  "$BIN/gmm-init" --num-gauss=8 --seed=4 --device=cpu --binary=false "$FEATS" "$T/c.txt" 2>/dev/null
  cmp "$T/a.txt" "$T/b.txt"
  ! cmp -s "$T/a.txt" "$T/c.txt"
  python3 -c "
import sys, numpy as np; sys.path.insert(0, '$PY')
from kaldi_text import read_text_gmm_set
p = read_text_gmm_set('$T/a.txt'); assert len(p) == 1, len(p); g = p[0]
assert len(g['weights']) == 8 and abs(g['weights'].sum() - 1) < 1e-5
assert all(np.isfinite(g[k]).all() for k in ('weights', 'means', 'covs', 'gconsts')) and (g['covs'] > 0).all()"
}

@test "gmm-init: full covariance and --global-form" {
  run "$BIN/gmm-init" --num-gauss=4 --cov-type=full --global-form --device=cpu --binary=false "$FEATS" "$T/f.txt"
  [ "$status" -eq 0 ]
  head -c 10 "$T/f.txt" | grep -q '<FullGMM>'
  python3 -c "
import sys, numpy as np; sys.path.insert(0, '$PY')
from kaldi_text import read_text_gmm_set
g = read_text_gmm_set('$T/f.txt')[0]
assert g['type'] == 'full' and len(g['weights']) == 4 and abs(g['weights'].sum() - 1) < 1e-5
assert all(np.linalg.eigvalsh(c).min() > 0 for c in g['covs'])"
}

@test "gmm-init: log-likelihood within 0.5 nats/frame of scikit-learn's own fit" {
  "$BIN/gmm-init" --num-gauss=8 --seed=1 --device=cpu --binary=false "$FEATS" "$T/i.txt" 2>/dev/null
  run python3 "$PY/sklearn_em.py" fit --feats "$AMI/feats.ark" --ours "$T/i.txt" --margin 0.5
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "gmm-est-gpu: EM log-likelihood is non-decreasing (diag and full)" {
  for ct in diag full; do
    "$BIN/gmm-init" --num-gauss=6 --cov-type=$ct --num-iters=0 --device=cpu "$FEATS" "$T/m0" 2>/dev/null
    "$BIN/gmm-est-gpu" --device=cpu --num-iters=8 "$T/m0" "$FEATS" "$T/m8" 2>"$T/log"
    loglikes "$T/log" > "$T/ll"
    [ "$(wc -l < "$T/ll")" -eq 8 ]
    awk 'NR > 1 && $1 < prev - 1e-4 { bad = 1 } { prev = $1 } END { exit bad }' "$T/ll"
  done
}

@test "gmm-est-gpu: agrees with scikit-learn EM from the same initial model (diag, 10 iterations)" {
  "$BIN/gmm-init" --num-gauss=8 --num-iters=0 --binary=false "$FEATS" "$T/init.txt" 2>/dev/null
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=10 $NOHYG --binary=false "$T/init.txt" "$FEATS" "$T/ours.txt" 2>"$T/log"
  ll=$(loglikes "$T/log" | tail -1)
  run python3 "$PY/sklearn_em.py" compare --feats "$AMI/feats.ark" --init "$T/init.txt" --ours "$T/ours.txt" \
    --iters 10 --our-ll "$ll" --tol 1e-4
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "gmm-est-gpu: agrees with scikit-learn EM from the same initial model (full, 10 iterations)" {
  "$BIN/gmm-init" --num-gauss=4 --cov-type=full --num-iters=0 --binary=false "$FEATS" "$T/init.txt" 2>/dev/null
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=10 $NOHYG --binary=false "$T/init.txt" "$FEATS" "$T/ours.txt" 2>"$T/log"
  ll=$(loglikes "$T/log" | tail -1)
  run python3 "$PY/sklearn_em.py" compare --feats "$AMI/feats.ark" --init "$T/init.txt" --ours "$T/ours.txt" \
    --iters 10 --our-ll "$ll" --tol 1e-4
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "gmm-acc-stats-gpu on two halves + gmm-sum-accs + gmm-est == one gmm-est-gpu iteration" {
  sed "s| | $AMI/|" "$AMI/feats.scp" > "$T/all.scp"
  head -5 "$T/all.scp" > "$T/h1.scp"; tail -n +6 "$T/all.scp" > "$T/h2.scp"
  "$BIN/gmm-init" --num-gauss=8 --num-iters=2 --device=cpu "$FEATS" "$T/m0" 2>/dev/null
  "$BIN/gmm-est-gpu" --device=cpu "$T/m0" "scp:$T/all.scp" "$T/m1" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/m0" "scp:$T/h1.scp" "$T/1.acc" 2>/dev/null
  "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/m0" "scp:$T/h2.scp" "$T/2.acc" 2>/dev/null
  "$BIN/gmm-sum-accs" "$T/s.acc" "$T/1.acc" "$T/2.acc" 2>/dev/null
  "$BIN/gmm-est" "$T/m0" "$T/s.acc" "$T/m1b" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$T/m1" "$T/m1.txt" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$T/m1b" "$T/m1b.txt" 2>/dev/null
  # accs files hold float (Kaldi's format): covariances s/occ - mu^2 lose ~1e-5 relative
  run python3 "$PY/compare_models.py" "$T/m1b.txt" "$T/m1.txt" --rtol 1e-5 --cov-rtol 1e-4
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "gmm-est: reproduces Kaldi's fgmm-global-est on the Kaldi accumulators" {
  "$BIN/gmm-est" --min-gaussian-occupancy=3 "$FIX/ami-full16.fgmm" "$FIX/ami-full16.acc" "$T/k.mdl" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$T/k.mdl" "$T/k.txt" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$FIX/ami-full16.fgmm" "$T/ref.txt" 2>/dev/null
  run python3 "$PY/compare_models.py" "$T/k.txt" "$T/ref.txt" --rtol 2e-5
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "gmm-est-gpu, gmm-global-init-from-feats: one process by design, also inside a launcher's environment" {
  # (they run gh_dist_em as one rank: a per-job tool started in an MPI or
  # srun step of several tasks must not take itself for one of the ranks)
  "$BIN/gmm-init" --num-gauss=4 --num-iters=0 "$FEATS" "$T/m0" 2>/dev/null
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=2 "$T/m0" "$FEATS" "$T/a" 2>/dev/null
  OMPI_COMM_WORLD_SIZE=2 SLURM_STEP_ID=0 SLURM_NTASKS=4 "$BIN/gmm-est-gpu" --device=cpu --num-iters=2 "$T/m0" \
    "$FEATS" "$T/b"
  cmp "$T/a" "$T/b"
  OMPI_COMM_WORLD_SIZE=2 "$BIN/gmm-global-init-from-feats" --device=cpu --num-gauss=4 --num-iters=2 "$FEATS" "$T/c"
  [ -s "$T/c" ]
}

@test "gmm-est-gpu: --write-accs, and gmm-est from them gives the same model" {
  "$BIN/gmm-init" --num-gauss=4 --num-iters=0 "$FEATS" "$T/m0" 2>/dev/null
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=2 --write-accs="$T/last.acc" "$T/m0" "$FEATS" "$T/m2" 2>/dev/null
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=1 "$T/m0" "$FEATS" "$T/m1" 2>/dev/null
  "$BIN/gmm-est" "$T/m1" "$T/last.acc" "$T/m2b" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$T/m2" "$T/a.txt" 2>/dev/null
  "$BIN/gmm-copy" --binary=false "$T/m2b" "$T/b.txt" 2>/dev/null
  python3 "$PY/compare_models.py" "$T/b.txt" "$T/a.txt" --rtol 1e-5 --cov-rtol 1e-4
}

@test "gmm-est-gpu / gmm-est: --mix-up grows the Gaussians" {
  "$BIN/gmm-init" --num-gauss=4 --num-iters=0 "$FEATS" "$T/m0" 2>/dev/null
  run "$BIN/gmm-est-gpu" --device=cpu --num-iters=3 --mix-up=10 "$T/m0" "$FEATS" "$T/m3"
  [ "$status" -eq 0 ]
  [[ "$output" == *"mixed up from 4 to 10 Gaussians"* ]]
  "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/m3" "$FEATS" "$T/a.acc" 2>/dev/null
  run "$BIN/gmm-est" --mix-up=16 "$T/m3" "$T/a.acc" "$T/m4"
  [ "$status" -eq 0 ]
  [[ "$output" == *"to 16 Gaussians"* ]]
}

@test "per-pdf training from alignments, per-utterance labels and posteriors (2-pdf synthetic set)" {
  make_synth
  "$BIN/gmm-init" --labels="ark:$T/s.ali" --num-gauss=2 --device=cpu --binary=false "ark:$T/s.feats" "$T/p0.txt" 2>/dev/null
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=3 --binary=false "$T/p0.txt" "ark:$T/s.feats" "ark:$T/s.ali" "$T/p1.txt" 2>/dev/null
  python3 -c "
import sys, numpy as np; sys.path.insert(0, '$PY')
from kaldi_text import read_text_gmm_set
p = read_text_gmm_set('$T/p1.txt'); assert len(p) == 2
m0 = (p[0]['weights'][:, None] * p[0]['means']).sum(0); m1 = (p[1]['weights'][:, None] * p[1]['means']).sum(0)
assert np.abs(m0).max() < 0.3 and np.abs(m1 - 5).max() < 0.5, (m0, m1)"
  # posteriors with weight 1 give the same model as the alignments
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=3 --label-type=post --binary=false "$T/p0.txt" "ark:$T/s.feats" "ark:$T/s.post" "$T/p1p.txt" 2>/dev/null
  python3 "$PY/compare_models.py" "$T/p1p.txt" "$T/p1.txt" --rtol 1e-6
  # per-utterance pdf ids
  run "$BIN/gmm-init" --labels="ark:$T/s.utt" --label-type=utt --num-pdfs=3 --num-gauss=2 --device=cpu "ark:$T/s.feats" "$T/u0"
  [ "$status" -eq 0 ]
  [[ "$output" == *"pdf 2 has no frames"* ]]
  "$BIN/gmm-acc-stats-gpu" --device=cpu --label-type=utt "$T/u0" "ark:$T/s.feats" "ark:$T/s.utt" "$T/u.acc" 2>/dev/null
  "$BIN/gmm-est" "$T/u0" "$T/u.acc" "$T/u1" 2>/dev/null
}

@test "bad input: NaN in features -> one-line error naming the key, no output" {
  make_synth
  sed '3s/^  [-0-9.]* /  nan /' "$T/s.feats" > "$T/nan.feats"
  "$BIN/gmm-init" --num-gauss=1 --num-iters=0 "ark:$T/s.feats" "$T/g0" 2>/dev/null
  run "$BIN/gmm-est-gpu" --device=cpu "$T/g0" "ark:$T/nan.feats" "$T/out"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR"*"utt0"* ]]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  [ ! -e "$T/out" ]
  ! ls "$T"/out.tmp.* 2>/dev/null
}

# A binary archive + scp of 3 utterances x $2 (default 40) frames x 3 dims
# (python, Kaldi's binary FM layout), utt1 frame 5 dim 1 set to $1 (a
# number, or nan).
make_bin_ark() {
  python3 - "$T" "$1" "${2:-40}" <<'EOF'
import sys, struct, numpy as np
d, v, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]); r = np.random.RandomState(1)
with open(d + '/b.ark', 'wb') as f, open(d + '/b.scp', 'w') as s:
    for k in range(3):
        X = r.randn(n, 3).astype('<f4')
        if k == 1: X[5, 1] = v
        f.write(b'utt%d ' % k); s.write('utt%d %s/b.ark:%d\n' % (k, d, f.tell()))
        f.write(b'\0BFM \x04' + struct.pack('<i', n) + b'\x04' + struct.pack('<i', 3) + X.tobytes())
EOF
}

@test "scp of binary matrices: read by index (in parallel) into the same accumulators as the archive in order" {
  sed "s| | $AMI/|" "$AMI/feats.scp" > "$T/all.scp"
  "$BIN/gmm-init" --device=cpu --cov-type=full --num-gauss=4 --num-iters=0 "$FEATS" "$T/m0" 2>/dev/null
  run "$BIN/gmm-acc-stats-gpu" --device=cpu --verbose=1 "$T/m0" "scp:$T/all.scp" "$T/scp.acc"
  [ "$status" -eq 0 ]
  [[ "$output" == *"matrices read by index"* ]]
  run "$BIN/gmm-acc-stats-gpu" --device=cpu --verbose=1 "$T/m0" "$FEATS" "$T/ark.acc"
  [ "$status" -eq 0 ]
  [[ "$output" != *"read by index"* ]]
  cmp "$T/scp.acc" "$T/ark.acc"
  # >= 4096 frames: the payloads are read by several threads
  make_bin_ark 0.5 2000
  "$BIN/gmm-init" --device=cpu --num-gauss=2 --num-iters=0 "scp:$T/b.scp" "$T/g2" 2>/dev/null
  run env OMP_NUM_THREADS=4 "$BIN/gmm-acc-stats-gpu" --device=cpu --verbose=1 "$T/g2" "scp:$T/b.scp" "$T/p.acc"
  [ "$status" -eq 0 ]
  [[ "$output" == *"3 matrices read by index, 4 threads"* ]]
  "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/g2" "ark:$T/b.ark" "$T/s.acc" 2>/dev/null
  cmp "$T/p.acc" "$T/s.acc"
  # compressed entries take the sequential reader
  sed "s| | $AMI/|" "$AMI/feats_compressed.scp" > "$T/c.scp"
  run "$BIN/gmm-acc-stats-gpu" --device=cpu --verbose=1 "$T/m0" "scp:$T/c.scp" "$T/c.acc"
  [ "$status" -eq 0 ]
  [[ "$output" != *"read by index"* ]]
}

@test "bad input, scp by index: NaN names key, row and column; bad offset and truncated archive fall back to the sequential reader's error" {
  make_bin_ark 0.5
  "$BIN/gmm-init" --device=cpu --num-gauss=1 --num-iters=0 "scp:$T/b.scp" "$T/g0" 2>/dev/null
  run "$BIN/gmm-acc-stats-gpu" --device=cpu --verbose=1 "$T/g0" "scp:$T/b.scp" "$T/ok.acc"
  [ "$status" -eq 0 ]
  [[ "$output" == *"read by index"* ]]
  make_bin_ark nan
  run "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/g0" "scp:$T/b.scp" "$T/out"
  [ "$status" -ne 0 ]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  [[ "$output" == *"utt1"*"NaN at row 5, col 1"* ]]
  [ ! -e "$T/out" ]
  # an offset one byte off: not a matrix header there
  make_bin_ark 0.5
  awk '$1 == "utt2" { n = split($2, a, ":"); $2 = a[1] ":" a[2] + 1 } { print }' "$T/b.scp" > "$T/off.scp"
  run "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/g0" "scp:$T/off.scp" "$T/out"
  [ "$status" -ne 0 ]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  [[ "$output" == *"utt2"* ]]
  [ ! -e "$T/out" ]
  # the archive cut short inside utt2's payload
  truncate -s -8 "$T/b.ark"
  run "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/g0" "scp:$T/b.scp" "$T/out"
  [ "$status" -ne 0 ]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  [[ "$output" == *"utt2"* ]]
  [ ! -e "$T/out" ]
}

@test "bad input: model/feature dimension mismatch" {
  make_synth
  "$BIN/gmm-init" --num-gauss=2 --num-iters=0 "$FEATS" "$T/m13" 2>/dev/null
  run "$BIN/gmm-est-gpu" --device=cpu "$T/m13" "ark:$T/s.feats" "$T/out"
  [ "$status" -ne 0 ]
  [[ "$output" == *"utt0"*"dimension 2"*"13"* ]]
  [ ! -e "$T/out" ]
}

@test "bad input: alignment length mismatch and pdf out of range" {
  make_synth
  "$BIN/gmm-init" --labels="ark:$T/s.ali" --num-gauss=1 --num-iters=0 "ark:$T/s.feats" "$T/p0" 2>/dev/null
  sed '2s/ 1$//' "$T/s.ali" > "$T/short.ali"
  run "$BIN/gmm-est-gpu" --device=cpu "$T/p0" "ark:$T/s.feats" "ark:$T/short.ali" "$T/out"
  [ "$status" -ne 0 ]
  [[ "$output" == *"short.ali"*"utt1"*"149"*"150"* ]]
  [ ! -e "$T/out" ]
  sed '1s/ 1$/ 7/' "$T/s.ali" > "$T/bad.ali"
  run "$BIN/gmm-acc-stats-gpu" --device=cpu "$T/p0" "ark:$T/s.feats" "ark:$T/bad.ali" "$T/out.acc"
  [ "$status" -ne 0 ]
  [[ "$output" == *"utt0"*"pdf id 7"* ]]
  [ ! -e "$T/out.acc" ]
}

@test "bad input: utterances missing from the alignments are skipped and counted; none left -> error" {
  make_synth
  "$BIN/gmm-init" --labels="ark:$T/s.ali" --num-gauss=1 --num-iters=0 "ark:$T/s.feats" "$T/p0" 2>/dev/null
  grep -v '^utt2 ' "$T/s.ali" > "$T/part.ali"
  run "$BIN/gmm-est-gpu" --device=cpu "$T/p0" "ark:$T/s.feats" "ark:$T/part.ali" "$T/out"
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING"*"utt2"* ]]
  [[ "$output" == *"1 utterances had no labels"* ]]
  [ -e "$T/out" ]
  # gmm-train names the keys too (before: the count only), the first three
  run "$BIN/gmm-train" --device=cpu "$T/p0" "ark:$T/s.feats" "ark:$T/part.ali" "$T/outt"
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING: 1 utterances had no labels in ark:$T/part.ali and were skipped: 'utt2'"* ]]
  head -1 "$T/s.ali" > "$T/one.ali"
  run "$BIN/gmm-train" --device=cpu "$T/p0" "ark:$T/s.feats" "ark:$T/one.ali" "$T/outt"
  [ "$status" -eq 0 ]
  [[ "$output" == *"3 utterances had no labels in ark:$T/one.ali and were skipped: 'utt1', 'utt2', 'utt3'"* ]]
  sed 's/^utt/other/' "$T/s.ali" > "$T/none.ali"
  run "$BIN/gmm-est-gpu" --device=cpu "$T/p0" "ark:$T/s.feats" "ark:$T/none.ali" "$T/out2"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR"*"no frames"* ]]
  [ ! -e "$T/out2" ]
}

@test "bad input: missing files -> one-line error naming the file, no output" {
  run "$BIN/gmm-est-gpu" --device=cpu "$T/nonexistent.mdl" "$FEATS" "$T/out"
  [ "$status" -ne 0 ]
  [[ "$output" == *"nonexistent.mdl"* ]]
  [ ! -e "$T/out" ]
  "$BIN/gmm-init" --num-gauss=1 --num-iters=0 "$FEATS" "$T/m0" 2>/dev/null
  run "$BIN/gmm-est-gpu" --device=cpu "$T/m0" "ark:$T/missing.ark" "$T/out"
  [ "$status" -ne 0 ]
  [[ "$output" == *"missing.ark"* ]]
  [ ! -e "$T/out" ]
  run "$BIN/gmm-est" "$T/m0" "$T/missing.acc" "$T/out"
  [ "$status" -ne 0 ]
  [[ "$output" == *"missing.acc"* ]]
  [ ! -e "$T/out" ]
  run "$BIN/gmm-est-gpu" --device=cpu
  [ "$status" -ne 0 ]
}
