#!/usr/bin/env bats
# gmm-train as one job of R ranks (Open MPI, CPU backend): the model
# and accumulators do not depend on R -- byte-identical for R = 1, 2, 3 (the
# blocks' double contributions are combined in double-double and rounded
# once: lib/base/dd.h) --, runs are reproducible bit for bit, a plain
# process equals one rank, failures end the whole job with one error naming
# the rank, and ranks with different models refuse to start.
# References: the 1-rank run (byte for byte) and gmm-est-gpu (the same EM
# engine as one plain process: byte for byte).

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  BUILD=${GH_BUILD:-$BATS_TEST_DIRNAME/../../build}
  EGS=$BATS_TEST_DIRNAME/../../egs
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  export PATH="$BIN:$PATH"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  # two cores, up to three ranks: no busy-polling while waiting
  export OMPI_MCA_mpi_yield_when_idle=1
  command -v mpirun >/dev/null || skip "no mpirun (Open MPI: tools/install-deps.sh)"
  [ -z "${GH_SANITIZED:-}" ] || skip "Open MPI's own allocations at MPI_Init are reported by LeakSanitizer"
  "$BIN/gmm-train" --comm=mpi --help 2>&1 | grep -q . || true
  MPIRUN="mpirun --oversubscribe"
}

# 40 utterances of 20..200 frames, dimension 5, two classes; labels: per-frame
# pdf ids (ali); binary ark + scp (the indexed reader) and a text ark (the
# sequential reader).
make_data() {
  python3 - "$T" <<'EOF'
import sys, numpy as np
d = sys.argv[1]; r = np.random.RandomState(3)
with open(d + '/f.txt', 'w') as f, open(d + '/a.txt', 'w') as a:
    for k in range(40):
        n = r.randint(20, 201)
        lab = (np.arange(n) * 3 // n) % 2
        X = np.where(lab[:, None] == 0, r.randn(n, 5), 2.0 + 1.5 * r.randn(n, 5) + 0.3 * r.randn(n, 1))
        # keys deliberately not in sorted order
        key = 'u%02d' % ((k * 17) % 40)
        f.write(key + '  [\n' + '\n'.join(' '.join('%.5f' % v for v in x) for x in X) + ' ]\n')
        a.write(key + ' ' + ' '.join(map(str, lab)) + '\n')
EOF
  copy-feats ark:$T/f.txt ark,scp:$T/f.ark,$T/f.scp 2>/dev/null
}

# gmm-init models: a 1-pdf global GMM of 4 Gaussians and a 2-pdf set (one
# global GMM copied per pdf).
make_models() {
  for ct in diag full; do
    gmm-init --num-gauss=4 --cov-type=$ct --num-iters=0 --seed=1 --device=cpu scp:$T/f.scp $T/g_$ct.0 2>/dev/null
  done
}

acc_rel() { # max relative difference of two raw double dumps (GH_TRAIN_DUMP_ACCS)
  python3 -c "
import numpy as np, sys
a = np.fromfile('$1'); b = np.fromfile('$2')
assert a.shape == b.shape, (a.shape, b.shape)
# relative to each entry, with a floor of 1e-12 of the largest entry (exact zeros)
den = np.maximum(np.abs(a), 1e-12 * np.abs(a).max())
print('%.3g' % np.max(np.abs(a - b) / den))"
}

@test "test_comm: deterministic rank-order sum, double-double sum, broadcast, all-gather under mpirun -np 1, 2, 3" {
  for R in 1 2 3; do
    run $MPIRUN -np $R "$BUILD/test/test_comm"
    echo "$output" | grep -E '^(not ok|#)' || true
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^ok ')" -eq $((20 * R)) ]
    echo "$output" | grep -q "kind mpi, rank $((R - 1)) of $R"
  done
}

@test "gmm-train: a plain process equals gmm-est-gpu's model and one MPI rank, bit for bit" {
  make_data; make_models
  for ct in diag full; do
    gmm-train --device=cpu --num-iters=4 "$T/g_$ct.0" scp:$T/f.scp "$T/p_$ct" 2>"$T/log"
    grep -q "communicator none" "$T/log"
    GH_TRAIN_DUMP_ACCS=$T/p_$ct.acc gmm-train --device=cpu --num-iters=4 --block-frames=500 "$T/g_$ct.0" scp:$T/f.scp "$T/pb_$ct" 2>/dev/null
    GH_TRAIN_DUMP_ACCS=$T/r1_$ct.acc $MPIRUN -np 1 "$BIN/gmm-train" --device=cpu --num-iters=4 --block-frames=500 \
      "$T/g_$ct.0" scp:$T/f.scp "$T/r1_$ct" 2>"$T/log1"
    grep -q "communicator mpi" "$T/log1"
    cmp "$T/pb_$ct" "$T/r1_$ct"
    cmp "$T/p_$ct.acc" "$T/r1_$ct.acc"
    # gmm-est-gpu is gmm-train as one plain process (the same EM engine and blocks)
    gmm-est-gpu --device=cpu --num-iters=4 "$T/g_$ct.0" scp:$T/f.scp "$T/e_$ct" 2>/dev/null
    cmp "$T/e_$ct" "$T/p_$ct"
    gmm-est-gpu --device=cpu --num-iters=4 --block-frames=500 "$T/g_$ct.0" scp:$T/f.scp "$T/eb_$ct" 2>/dev/null
    cmp "$T/eb_$ct" "$T/pb_$ct"
    # one block, three ranks: ranks 1 and 2 have empty shards and still take part
    $MPIRUN -np 3 "$BIN/gmm-train" --device=cpu --num-iters=4 "$T/g_$ct.0" scp:$T/f.scp "$T/e3_$ct" 2>"$T/log3"
    grep -q "rank 2 on host .*shard 2 (empty" "$T/log3"
    cmp "$T/p_$ct" "$T/e3_$ct"
  done
}

@test "gmm-train: 1, 2 and 3 ranks give byte-identical accumulators and models (diag, full, mix-up)" {
  make_data; make_models
  for ct in diag full; do
    opts="--device=cpu --num-iters=5 --block-frames=700 --mix-up=9 --seed=5"
    for R in 1 2 3; do
      GH_TRAIN_DUMP_ACCS=$T/a$R.acc $MPIRUN -np $R "$BIN/gmm-train" $opts "$T/g_$ct.0" scp:$T/f.scp "$T/m$R" 2>"$T/log$R"
      grep -q "mixed up from 4 to 9 Gaussians" "$T/log$R"
      [ "$(grep -c 'iteration [0-9]*: avg loglike' "$T/log$R")" -eq 5 ]
    done
    grep -q "rank 2 on host" "$T/log3"
    grep -q "reduce [0-9.]* s (host-raw)" "$T/log2"
    grep -q "combined in double-double on the device (acc_commit)" "$T/log2"
    for R in 2 3; do
      echo "$ct R=$R accs rel diff $(acc_rel "$T/a1.acc" "$T/a$R.acc")"
      cmp "$T/a1.acc" "$T/a$R.acc"
      cmp "$T/m1" "$T/m$R"
    done
    # the host fallbacks (backends without acc_commit / acc_raw_*): the same
    # bits from the raw arrays; from acc_fetch (uncentred: other bits) the same for every R
    GH_TRAIN_COMMIT=host-raw GH_TRAIN_DUMP_ACCS=$T/h2.acc $MPIRUN -np 2 "$BIN/gmm-train" $opts "$T/g_$ct.0" scp:$T/f.scp \
      "$T/h2" 2>"$T/logh"
    grep -q "combined in double-double on the host (acc_raw_get after each block)" "$T/logh"
    cmp "$T/m1" "$T/h2"
    cmp "$T/a1.acc" "$T/h2.acc"
    for R in 1 3; do
      GH_TRAIN_COMMIT=host-accs GH_TRAIN_DUMP_ACCS=$T/f$R.acc $MPIRUN -np $R "$BIN/gmm-train" $opts "$T/g_$ct.0" \
        scp:$T/f.scp "$T/f$R" 2>"$T/logf$R"
    done
    grep -q "combined in double-double on the host (acc_fetch after each block)" "$T/logf3"
    grep -q "reduce [0-9.]* s (host-accs)" "$T/logf3"
    cmp "$T/f1" "$T/f3"
    cmp "$T/f1.acc" "$T/f3.acc"
    "$EGS/utils/compare_gmms.sh" "$T/m1" "$T/f1"
    # the same R twice: byte-identical model and accumulators
    GH_TRAIN_DUMP_ACCS=$T/b3.acc $MPIRUN -np 3 "$BIN/gmm-train" $opts "$T/g_$ct.0" scp:$T/f.scp "$T/n3" 2>/dev/null
    cmp "$T/m3" "$T/n3"
    cmp "$T/a3.acc" "$T/b3.acc"
  done
}

@test "gmm-train: labelled data (ali), archive and scp readers, 2 ranks equal 1 rank byte for byte" {
  make_data
  # a 2-pdf model from the two classes: gmm-est-gpu's first iteration from a flat start
  gmm-init --num-gauss=3 --cov-type=full --num-iters=0 --device=cpu scp:$T/f.scp $T/g1 2>/dev/null
  gmm-copy --binary=false $T/g1 - 2>/dev/null | python3 -c "
import sys; t = sys.stdin.read().strip(); g = t[t.index('<FullGMM>'):]
print('<DIMENSION> 5 <NUMPDFS> 2'); print(g); print(g)" > $T/s.0
  for R in 1 2; do
    GH_TRAIN_DUMP_ACCS=$T/l$R.acc $MPIRUN -np $R "$BIN/gmm-train" --device=cpu --num-iters=3 --block-frames=400 \
      $T/s.0 scp:$T/f.scp ark:$T/a.txt $T/l$R 2>"$T/log$R"
    GH_TRAIN_DUMP_ACCS=$T/t$R.acc $MPIRUN -np $R "$BIN/gmm-train" --device=cpu --num-iters=3 --block-frames=400 \
      $T/s.0 ark:$T/f.txt ark:$T/a.txt $T/t$R 2>/dev/null
  done
  cmp $T/l1 $T/t1  # the readers give the same frames
  cmp "$T/l1.acc" "$T/l2.acc"
  cmp $T/l1 $T/l2
  cmp $T/t1 $T/t2
}

@test "gmm-train: --iter-models writes every iteration; resuming with --first-iter gives the same model" {
  make_data; make_models
  mkdir -p $T/it
  $MPIRUN -np 2 "$BIN/gmm-train" --device=cpu --num-iters=4 --block-frames=500 --iter-models=$T/it \
    "$T/g_full.0" scp:$T/f.scp $T/final 2>/dev/null
  ls $T/it
  [ -f $T/it/1.mdl ] && [ -f $T/it/4.mdl ]
  cmp $T/it/4.mdl $T/final
  $MPIRUN -np 2 "$BIN/gmm-train" --device=cpu --num-iters=2 --first-iter=3 --block-frames=500 \
    $T/it/2.mdl scp:$T/f.scp $T/resumed 2>"$T/log"
  grep -q "iteration 4:" "$T/log"
  cmp $T/final $T/resumed
}

@test "gmm-train: a rank killed mid-iteration ends the job non-zero, names the rank, writes no model" {
  make_data; make_models
  mkdir -p $T/it
  SECONDS=0
  GH_TEST_KILL=1:2 run timeout 60 $MPIRUN -np 2 "$BIN/gmm-train" --device=cpu --num-iters=4 --block-frames=500 \
    --iter-models=$T/it "$T/g_full.0" scp:$T/f.scp $T/k.mdl
  echo "$output"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "$SECONDS" -lt 30 ]
  echo "$output" | grep -q "rank 1"
  [ ! -e $T/k.mdl ]
  [ -f $T/it/1.mdl ] && [ ! -e $T/it/2.mdl ]
}

@test "gmm-train: a hung rank: --comm-timeout aborts the job with one error naming the hung rank, the ranks that arrived, the rank and shard" {
  make_data; make_models
  SECONDS=0
  GH_TEST_HANG=1:2 run timeout 60 $MPIRUN -np 2 "$BIN/gmm-train" --device=cpu --num-iters=4 --block-frames=500 \
    --comm-timeout=2 "$T/g_full.0" scp:$T/f.scp $T/h.mdl
  echo "$output"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "$SECONDS" -lt 30 ]
  echo "$output" | grep "ERROR" | grep -q "did not finish within 2 s.*rank 0 of 2 on host .*shard 0 (utterances 1\.\."
  # the waiting rank names the one that hung (before: "a peer rank died or hangs")
  echo "$output" | grep "ERROR" | grep -q "rank 1 (host [^)]*) never reached it (died or hangs); ranks that arrived: 0 \["
  [ ! -e $T/h.mdl ]
  # three ranks, rank 2 hangs: both waiting ranks name it and say who arrived
  GH_TEST_HANG=2:2 run timeout 60 $MPIRUN -np 3 "$BIN/gmm-train" --device=cpu --num-iters=4 --block-frames=500 \
    --comm-timeout=2 "$T/g_full.0" scp:$T/f.scp $T/h.mdl
  echo "$output"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "$SECONDS" -lt 50 ]
  echo "$output" | grep "ERROR" | grep -q "rank 2 (host [^)]*) never reached it (died or hangs); ranks that arrived: 0, 1 \["
  [ ! -e $T/h.mdl ]
}

@test "gmm-train: bad data in one rank's shard: one error naming the key, the rank, its host and shard" {
  make_data; make_models
  # utterance u39 (last in key order: rank 1's shard) gets a NaN
  # the binary copy: the first float of u39's payload (header "\0BFM " + two sized int32) made NaN
  cp $T/f.ark $T/bad.ark
  sed "s|$T/f.ark|$T/bad.ark|" $T/f.scp > $T/bad.scp
  python3 -c "
import struct
off = int([l for l in open('$T/bad.scp') if l.startswith('u39 ')][0].rsplit(':', 1)[1])
with open('$T/bad.ark', 'r+b') as f:
    f.seek(off); assert f.read(5) == b'\\0BFM '; f.seek(off + 15); f.write(struct.pack('<f', float('nan')))"
  # the archive (read whole by every rank) and the scp (each rank reads its own)
  for src in ark:$T/bad.ark scp:$T/bad.scp; do
    run $MPIRUN -np 2 "$BIN/gmm-train" --device=cpu --num-iters=2 --block-frames=500 "$T/g_diag.0" $src $T/b.mdl
    echo "$output"
    [ "$status" -ne 0 ]
    [ "$(echo "$output" | grep -c ': ERROR: ')" -eq 1 ]
    echo "$output" | grep ': ERROR: ' | grep -q "key 'u39'.*rank 1 of 2 on host .*shard 1 (utterances"
  done
  [ ! -e $T/b.mdl ]
}

@test "gmm-train: ranks started with different models refuse to start together" {
  make_data; make_models
  gmm-init --num-gauss=4 --cov-type=full --num-iters=0 --seed=2 --device=cpu scp:$T/f.scp $T/other 2>/dev/null
  run $MPIRUN -np 1 "$BIN/gmm-train" --device=cpu "$T/g_full.0" scp:$T/f.scp $T/x.mdl : \
    -np 1 "$BIN/gmm-train" --device=cpu $T/other scp:$T/f.scp $T/x.mdl
  echo "$output"
  [ "$status" -ne 0 ]
  echo "$output" | grep ERROR | grep -q "ranks differ in the initial model.*rank 1"
  [ ! -e $T/x.mdl ]
}

# (before: --block-frames 500 and 3000 trained on 4,692 of the 5,051 frames
# with exit status 0; --num-iters 2 and 3 waited for the watchdog, which
# blamed a dead peer)
@test "gmm-train, hmm-train: ranks started with different options refuse at once, naming the option and both values" {
  make_data; make_models
  SECONDS=0
  local a b
  for pair in "--block-frames=500 --block-frames=3000" "--num-iters=2 --num-iters=3" "--mix-up=6 --mix-up=8" \
              "--min-variance=0.001 --min-variance=0.002" "--precision=fp32 --precision=tf32"; do
    read -r a b <<<"$pair"
    run timeout 60 $MPIRUN -np 1 "$BIN/gmm-train" --device=cpu $a "$T/g_diag.0" scp:$T/f.scp $T/x.mdl : \
      -np 1 "$BIN/gmm-train" --device=cpu $b "$T/g_diag.0" scp:$T/f.scp $T/x.mdl
    echo "$output"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    [ "$(echo "$output" | grep -c ': ERROR: ')" -eq 1 ]
    echo "$output" | grep ': ERROR: ' | \
      grep -q "ranks differ in option ${a%%=*}: rank 0 (host .*) has ${a#*=}, rank 1 (host .*) has ${b#*=}$"
    [ ! -e $T/x.mdl ]
  done
  # options that do not change the result may differ: the output file, the device memory limit
  $MPIRUN -np 1 "$BIN/gmm-train" --device=cpu --num-iters=2 --max-device-memory=1G "$T/g_diag.0" scp:$T/f.scp $T/y.mdl : \
    -np 1 "$BIN/gmm-train" --device=cpu --num-iters=2 "$T/g_diag.0" scp:$T/f.scp $T/y.mdl 2>/dev/null
  [ -s $T/y.mdl ]
  # hmm-train agrees before reading anything (these inputs do not exist)
  run timeout 60 $MPIRUN -np 1 "$BIN/hmm-train" --device=cpu --num-iters=2 $T/no.hmm $T/no.mdl scp:$T/no.scp \
    ark:$T/no.txt $T/o.hmm $T/o.mdl : -np 1 "$BIN/hmm-train" --device=cpu --num-iters=3 $T/no.hmm $T/no.mdl \
    scp:$T/no.scp ark:$T/no.txt $T/o.hmm $T/o.mdl
  echo "$output"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "$(echo "$output" | grep -c ': ERROR: ')" -eq 1 ]
  echo "$output" | grep ': ERROR: ' | grep -q "ranks differ in option --num-iters: rank 0 (host .*) has 2, rank 1 (host .*) has 3$"
  [ "$SECONDS" -lt 60 ]
}

@test "gmm-train: option errors and --comm=none under a launcher" {
  make_data; make_models
  run gmm-train --comm=bogus --device=cpu "$T/g_full.0" scp:$T/f.scp $T/x.mdl
  [ "$status" -ne 0 ]; echo "$output" | grep -q "comm must be auto, none, mpi or nccl"
  run gmm-train --block-frames=0 --device=cpu "$T/g_full.0" scp:$T/f.scp $T/x.mdl
  [ "$status" -ne 0 ]; echo "$output" | grep -q "block-frames must be >= 1"
  run $MPIRUN -np 2 "$BIN/gmm-train" --comm=none --device=cpu "$T/g_full.0" scp:$T/f.scp $T/x.mdl
  [ "$status" -ne 0 ]; echo "$output" | grep -q "comm=none, but the launcher started 2 ranks"
  [ ! -e $T/x.mdl ]
}

@test "steps/train_gmm.sh --ranks 2 (utils/run.sh, mpirun) equals --nj 1 per-iteration jobs; resumes with --stage" {
  make_data
  mkdir -p $T/data
  cp $T/f.scp $T/data/feats.scp
  awk '{ print $1, "spk1" }' $T/f.scp | sort > $T/data/utt2spk   # one speaker: shards anyway
  cd $T
  for cov in diag full; do
    "$EGS/steps/train_gmm.sh" --ranks 0 --nj 1 --device cpu --cov-type $cov --num-gauss 3 --init-iters 2 --num-iters 4 \
      data exp/j_$cov > /dev/null
    "$EGS/steps/train_gmm.sh" --ranks 2 --device cpu --cov-type $cov --num-gauss 3 --init-iters 2 --num-iters 4 \
      data exp/r_$cov > $T/out
    cat $T/out
    grep -q "2 ranks, 4 iterations" $T/out
    ls exp/r_$cov/1.mdl exp/r_$cov/4.mdl exp/r_$cov/final.mdl
    grep -q "mpirun -np 2" exp/r_$cov/log/train.0.log
    grep -q "rank 1 on host" exp/r_$cov/log/train.0.log
    "$EGS/utils/compare_gmms.sh" exp/j_$cov/final.mdl exp/r_$cov/final.mdl
  done
  # resume from iteration 2 with a fresh final model
  rm exp/r_full/final.mdl exp/r_full/3.mdl exp/r_full/4.mdl
  "$EGS/steps/train_gmm.sh" --ranks 2 --stage 2 --device cpu --cov-type full --num-gauss 3 --init-iters 2 \
    --num-iters 4 data exp/r_full > /dev/null
  grep -q "iteration 3:" exp/r_full/log/train.2.log
  "$EGS/utils/compare_gmms.sh" exp/j_full/final.mdl exp/r_full/final.mdl
}

@test "gmm-train on OpenCL (PoCL): the host reduction of the raw device accumulators, M-step on the device; 2 ranks equal 1 byte for byte" {
  D=$GH_SHARED/data
  gmm-score-gpu --device=opencl "$D/kaldi-fixtures/ami-diag16.gmm" "ark:$D/kaldi-ami-feats/feats.ark" ark:/dev/null \
    2>"$T/probe" || skip "no OpenCL device: $(tail -1 "$T/probe")"
  make_data; make_models
  for ct in diag full; do
    for R in 1 2; do
      $MPIRUN -np $R "$BIN/gmm-train" --device=opencl --num-iters=4 --block-frames=500 "$T/g_$ct.0" scp:$T/f.scp \
        "$T/o$R" 2>"$T/log$R" || { cat "$T/log$R"; false; }
    done
    cat "$T/log2"
    grep -q "using device opencl" "$T/log2"
    grep -q "reduce [0-9.]* s (host-raw), M-step [0-9.]* s (device)" "$T/log2"
    grep -q "combined in double-double on the device (acc_commit)" "$T/log2"
    cmp "$T/o1" "$T/o2"
    # accumulators (the dump makes the last iteration fetch them: host M-step there)
    for R in 1 2; do
      GH_TRAIN_DUMP_ACCS=$T/o$R.acc $MPIRUN -np $R "$BIN/gmm-train" --device=opencl --num-iters=2 --block-frames=500 \
        "$T/g_$ct.0" scp:$T/f.scp "$T/q$R" 2>/dev/null
    done
    cmp "$T/o1.acc" "$T/o2.acc"
    cmp "$T/q1" "$T/q2"
  done
}

@test "gmm-train --shrink=lw: the shrinkage statistics are summed over the ranks too; 2 ranks equal 1 byte for byte" {
  make_data; make_models
  for R in 1 2; do
    $MPIRUN -np $R "$BIN/gmm-train" --device=cpu --shrink=lw --num-iters=3 --block-frames=500 --binary=false \
      --write-accs=$T/s$R.acc --shrinkage-stats=true "$T/g_full.0" scp:$T/f.scp $T/s$R 2>"$T/log$R"
    [ "$(grep -c 'shrinkage lw: lambda mean' "$T/log$R")" -eq 3 ]
  done
  cmp $T/s1 $T/s2
  cmp $T/s1.acc $T/s2.acc
  # the written accumulators, shrinkage statistics included (text, 7+ digits)
  python3 -c "
import re
num = re.compile(r'^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$')
a = open('$T/s1.acc').read().split(); b = open('$T/s2.acc').read().split()
assert len(a) == len(b) and len(a) > 300, (len(a), len(b))
for x, y in zip(a, b):
    if num.match(x): assert abs(float(x) - float(y)) <= 1e-6 * max(1.0, abs(float(x))), (x, y)
    else: assert x == y, (x, y)
print(len(a), 'tokens')"
}

@test "gmm-train --max-device-memory (OpenCL/PoCL): streamed blocks give the resident run's model, bit for bit, at 1 and 2 ranks" {
  D=$GH_SHARED/data
  gmm-score-gpu --device=opencl "$D/kaldi-fixtures/ami-diag16.gmm" "ark:$D/kaldi-ami-feats/feats.ark" ark:/dev/null \
    2>"$T/probe" || skip "no OpenCL device: $(tail -1 "$T/probe")"
  make_data; make_models
  for R in 1 2; do
    $MPIRUN -np $R "$BIN/gmm-train" --device=opencl --num-iters=3 --block-frames=400 "$T/g_full.0" scp:$T/f.scp \
      $T/res$R 2>/dev/null
    # blocks of <= 400 frames x 5 dims: ~8 KB + 12 bytes a pair; 40 KB keeps one or two resident
    $MPIRUN -np $R "$BIN/gmm-train" --device=opencl --num-iters=3 --block-frames=400 --max-device-memory=40K \
      "$T/g_full.0" scp:$T/f.scp $T/str$R 2>"$T/log$R"
    grep "streamed from page-locked host memory" "$T/log$R"
    cmp $T/res$R $T/str$R
  done
  run gmm-train --device=opencl --max-device-memory=10K --block-frames=400 "$T/g_full.0" scp:$T/f.scp $T/x
  [ "$status" -ne 0 ]
  echo "$output" | grep -q "cannot hold two blocks"
  run gmm-train --device=opencl --max-device-memory=lots "$T/g_full.0" scp:$T/f.scp $T/x
  [ "$status" -ne 0 ]
  echo "$output" | grep -q "max-device-memory must be a positive size"
}
