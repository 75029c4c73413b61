#!/usr/bin/env bats
# hmm-train (drivers/train/hmm-train.c): the resident HMM-GMM trainer against the
# per-iteration recipe loop it replaces (steps/train_word_hmm.sh and
# train_word_hmm_viterbi.sh with --ranks 0: gmm-score-gpu | hmm-bw /
# hmm-viterbi -> gmm-acc-stats-gpu / gmm-est-gpu -> sums -> hmm-est, gmm-est),
# on 8 speakers of the Arabic digits, CPU backend; and under Open MPI, 1, 2 and
# 3 ranks (byte-identical models and HMMs for any number of ranks: every sum
# over blocks and ranks in double-double, rounded once, lib/base/dd.h).
# Tolerances against the loop: models within utils/compare_gmms.sh's 1e-5 +
# 1e-4 x the largest entry of each vector or matrix (the recipes' job-split tolerance);
# per-iteration average log-likelihoods within 1e-6 relative; per-utterance
# HMM log-likelihoods (hmm-forward of each trainer's own models) within 1e-4
# relative; two runs with the same number of ranks byte-identical.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  EGS=$ROOT/egs
  export PATH="${GH_BIN:-$ROOT/bin}:$PATH"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  ARABIC=$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt
  [ -f "$ARABIC" ] || [ ! -f "$ARABIC.gz" ] || ARABIC=$ARABIC.gz   # plain or gzipped
}

arabic_subset() {  # arabic_subset <dir>: 8 training speakers (800 utterances)
  [ -f "$ARABIC" ] || skip "Arabic digits not found under $GH_SHARED/data"
  "$EGS/arabic-digits/local/prepare_data.sh" "$ARABIC" "$T/adata" 2>/dev/null
  awk 'NR <= 8 { print $1 }' "$T/adata/train/spk2utt" > "$T/spk8"
  "$EGS/utils/subset_data_dir.sh" --spk-list "$T/spk8" "$T/adata/train" "$1"
}

need_mpi() {
  command -v mpirun >/dev/null || skip "no mpirun (Open MPI: tools/install-deps.sh)"
  hmm-train --help 2>&1 | grep -q -- '--comm' || skip "hmm-train built without the communicator"
}

# per-utterance HMM log-likelihoods of a model pair (all words' HMMs)
scores() {  # scores <mdl> <hmm> <feats-scp> <out>
  gmm-score-gpu --device=cpu "$1" "scp:$3" ark:- 2>/dev/null | hmm-forward --device=cpu "$2" ark:- ark,t:"$4" 2>/dev/null
}

# max relative difference of two text archives of vectors, same keys and order
max_rel_diff() {
  paste -d' ' "$1" "$2" | awk '{ h = NF / 2
    if ($1 != $(h + 1)) { print "keys differ: " $1 " " $(h + 1) > "/dev/stderr"; m = 1e30 }
    for (i = 2; i <= h; i++) { a = $i; b = $(i + h); if (a == "[" || a == "]") continue
      d = a - b; if (d < 0) d = -d; s = a < 0 ? -a : a; if (s < 1) s = 1; if (d / s > m) m = d / s } }
    END { printf "%.3g\n", m }'
}

@test "hmm-train --mode=bw equals the per-iteration Baum-Welch loop (train_word_hmm.sh --ranks 0)" {
  arabic_subset "$T/tr"
  W="$T/adata/lang/words.txt"
  "$EGS/steps/train_word_hmm.sh" --ranks 0 --nj 2 --cmd "$EGS/utils/run.sh" --device cpu --states 4 --gauss 2 \
    --iters 4 "$T/tr" "$W" "$T/loop" > "$T/loop.out"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 4 --gauss 2 --iters 4 "$T/tr" "$W" "$T/res" > "$T/res.out"
  grep -q 'hmm-train: 1 rank' "$T/res.out"
  [ -f "$T/loop/log/acc.4.2.log" ]
  # the same average log-likelihood per frame at every iteration (1e-6 relative)
  paste <(grep -o 'frame [-0-9.]*' "$T/loop.out") <(grep -o 'frame [-0-9.]*' "$T/res.out") |
    awk '{ n++; d = $2 - $4; if (d < 0) d = -d; if (d > 1e-6 * -$2) { print "iteration " n ": " $0; bad = 1 } }
         END { exit (bad || n != 4) }'
  run "$EGS/utils/compare_gmms.sh" "$T/loop/final.mdl" "$T/res/final.mdl"
  echo "$output"
  [ "$status" -eq 0 ]
  # transitions: the HMM log-likelihoods of each trainer's models on the training data
  scores "$T/loop/final.mdl" "$T/loop/final.hmm" "$T/tr/feats.scp" "$T/s.loop"
  scores "$T/res/final.mdl" "$T/res/final.hmm" "$T/tr/feats.scp" "$T/s.res"
  [ "$(wc -l < "$T/s.res")" -eq 800 ]
  d=$(max_rel_diff "$T/s.loop" "$T/s.res"); echo "max relative difference of the scores: $d"
  awk -v d=$d 'BEGIN { exit !(d <= 1e-4) }'
  # ... and the comparison can fail: the models of one iteration fewer differ
  hmm-train --device=cpu --num-iters=3 --gauss=2 --mixup-end=2 --seed=1 "$T/res/0.hmm" "$T/res/0.mdl" \
    "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" "$T/it3.hmm" "$T/it3.mdl" 2>/dev/null
  ! "$EGS/utils/compare_gmms.sh" "$T/it3.mdl" "$T/res/final.mdl" 2>/dev/null
  scores "$T/it3.mdl" "$T/it3.hmm" "$T/tr/feats.scp" "$T/s.it3"
  d=$(max_rel_diff "$T/s.res" "$T/s.it3"); echo "one iteration fewer: $d"
  awk -v d=$d 'BEGIN { exit !(d > 1e-4) }'
  # the same classification of the training data
  for s in loop res; do
    "$EGS/steps/classify.sh" --nj 2 --cmd "$EGS/utils/run.sh" --device cpu --hmm true \
      "$T/tr" "$W" "$T/$s" "$T/$s/decode" > "$T/$s.acc"
  done
  cmp "$T/loop.acc" "$T/res.acc"
  grep -q 'accuracy: ' "$T/res.acc"
}

@test "hmm-train: an utterance without a complete path is logged once and counted as failed in every iteration" {
  arabic_subset "$T/tr"
  W="$T/adata/lang/words.txt"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 4 --gauss 2 --iters 0 "$T/tr" "$W" "$T/init" > /dev/null
  # a 1-frame copy of the first utterance (4 states: no path through the word's HMM)
  k=$(head -1 "$T/tr/feats.scp" | cut -d' ' -f1)
  copy-feats "scp:$T/tr/feats.scp" ark,t:- 2>/dev/null |
    awk -v k="$k" '$1 == k { print "short-" $0; getline; sub(/ *$/, " ]"); print; exit }' |
    copy-feats ark,t:- "ark,scp:$T/short.ark,$T/short.scp" 2>/dev/null
  [ "$(feat-to-len "scp:$T/short.scp" ark,t:- 2>/dev/null | awk '{ print $2 }')" = 1 ]
  cat "$T/tr/feats.scp" "$T/short.scp" > "$T/feats2.scp"
  { cat "$T/tr/text"; awk -v k="$k" '$1 == k { print "short-" $0 }' "$T/tr/text"; } > "$T/text2"
  hmm-train --device=cpu --num-iters=3 --gauss=2 --mixup-end=2 "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/feats2.scp" \
    "ark,t:$T/text2" "$T/o.hmm" "$T/o.mdl" 2> "$T/log"
  [ "$(grep -c "key 'short-$k': no complete path through the HMM (utterance of 1 frames); skipped" "$T/log")" -eq 1 ]
  [ "$(grep -c 'LOG: iteration [123]: .* over 800 utterances (1 failed)' "$T/log")" -eq 3 ]
}

@test "hmm-train --mode=viterbi equals the per-iteration Viterbi loop (train_word_hmm_viterbi.sh --ranks=0)" {
  arabic_subset "$T/tr"
  for r in 0 1; do
    "$EGS/steps/train_word_hmm_viterbi.sh" --ranks=$r --device=cpu --states=4 --gauss=2 --iters=5 \
      --realign-iters="1 2 4" "scp:$T/tr/feats.scp" "$T/tr/text" 10 "$T/v_$r" > "$T/v_$r.out"
  done
  cmp "$T/v_0.out" "$T/v_1.out"
  [ "$(grep -c 'avg loglike per frame' "$T/v_1.out")" -eq 5 ]
  run "$EGS/utils/compare_gmms.sh" "$T/v_0/final.mdl" "$T/v_1/final.mdl"
  echo "$output"
  [ "$status" -eq 0 ]
  cmp "$T/v_0/final.hmm" "$T/v_1/final.hmm"
  # iterations 3 and 5 kept the alignment of 2 and 4
  grep -q 'iteration 3: .*alignment kept' "$T/v_1/train.log"
  grep -q 'iteration 4: .*realigned' "$T/v_1/train.log"
}

@test "hmm-train under Open MPI: 1, 2 and 3 ranks give byte-identical models (BW and Viterbi)" {
  [ -z "${GH_SANITIZED:-}" ] || skip "Open MPI's own allocations at MPI_Init/Finalize are reported by LeakSanitizer"
  need_mpi
  arabic_subset "$T/tr"
  W="$T/adata/lang/words.txt"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 4 --gauss 2 --iters 0 "$T/tr" "$W" "$T/init" >/dev/null
  for mode in bw viterbi; do
    for run in 1 2 3 3b 2b; do
      R=${run%b}
      GH_TRAIN_DUMP_ACCS=$T/$mode$run.acc \
      mpirun --oversubscribe -np $R hmm-train --device=cpu --mode=$mode --block-frames=600 --num-iters=3 --gauss=2 \
        --mixup-end=1 --seed=1 "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" \
        "$T/$mode$run.hmm" "$T/$mode$run.mdl" 2> "$T/$mode$run.log"
      [ "$(grep -c '^hmm-train: LOG: rank [0-9] of '$R':' "$T/$mode$run.log")" -eq $R ]
    done
    grep -q 'rank 2 of 3: [1-9][0-9]* utterances' "$T/${mode}3.log"
    for R in 2 3; do
      # byte-identical to 1 rank (sums in double-double, rounded once: lib/base/dd.h)
      echo "$mode, $R ranks: $("$EGS/utils/compare_gmms.sh" "$T/${mode}1.mdl" "$T/$mode$R.mdl" 2>&1 | tail -1)"
      cmp "$T/${mode}1.acc" "$T/$mode$R.acc"  # the last iteration's reduced sums
      cmp "$T/${mode}1.mdl" "$T/$mode$R.mdl"
      cmp "$T/${mode}1.hmm" "$T/$mode$R.hmm"
      cmp "$T/$mode$R.mdl" "$T/$mode${R}b.mdl"
      cmp "$T/$mode$R.hmm" "$T/$mode${R}b.hmm"
    done
  done
  # the 1-rank MPI run is the plain process' run
  hmm-train --device=cpu --mode=bw --block-frames=600 --num-iters=3 --gauss=2 --mixup-end=1 --seed=1 \
    "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" "$T/p.hmm" "$T/p.mdl" 2>/dev/null
  cmp "$T/p.mdl" "$T/bw1.mdl"
  # the recipe's --ranks: 2 ranks through --mpirun, the 1-rank recipe's model
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 4 --gauss 2 --iters 3 "$T/tr" "$W" "$T/r1" >/dev/null
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 4 --gauss 2 --iters 3 --ranks 2 --cmd "$EGS/utils/run.sh" \
    "$T/tr" "$W" "$T/r2" > "$T/r2.out"
  grep -q 'hmm-train: 2 rank' "$T/r2.out"
  cmp "$T/r1/final.mdl" "$T/r2/final.mdl"
}

@test "hmm-train bad input: unknown word, wrong dimension, no transcripts -> one error line, no output" {
  arabic_subset "$T/tr"
  W="$T/adata/lang/words.txt"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 3 --gauss 1 --iters 0 "$T/tr" "$W" "$T/init" >/dev/null
  sed '5s/ [0-9]*$/ eleven/' "$T/tr/text" > "$T/bad.text"
  key=$(sed -n 5p "$T/tr/text" | cut -d' ' -f1)
  run hmm-train --device=cpu --num-iters=2 "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/bad.text" \
    "$T/o.hmm" "$T/o.mdl"
  [ "$status" -ne 0 ]
  echo "$output" | grep -q "ERROR.*bad.text.*$key.*eleven"
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  [ ! -e "$T/o.hmm" ] && [ ! -e "$T/o.mdl" ]
  add-deltas --delta-order=1 "scp:$T/tr/feats.scp" ark:"$T/d.ark" 2>/dev/null
  run hmm-train --device=cpu "$T/init/0.hmm" "$T/init/0.mdl" "ark:$T/d.ark" "ark,t:$T/tr/text" "$T/o.hmm" "$T/o.mdl"
  [ "$status" -ne 0 ]
  echo "$output" | grep -q "ERROR.*d.ark.*dimension"
  [ ! -e "$T/o.mdl" ]
  : > "$T/empty.text"
  run hmm-train --device=cpu "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/empty.text" "$T/o.hmm" "$T/o.mdl"
  [ "$status" -ne 0 ]
  echo "$output" | grep -q "ERROR.*no utterances to train on"
  [ ! -e "$T/o.mdl" ]
  # the transcripts are read on a thread of their own beside the feature index: its errors are
  # still one line (a missing file, a duplicate key, a failing pipe)
  run hmm-train --device=cpu "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/nothere.text" "$T/o.hmm" "$T/o.mdl"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  echo "$output" | grep -q "ERROR.*nothere.text"
  { cat "$T/tr/text"; sed -n 3p "$T/tr/text"; } > "$T/dup.text"
  key=$(sed -n 3p "$T/tr/text" | cut -d' ' -f1)
  run hmm-train --device=cpu "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/dup.text" "$T/o.hmm" "$T/o.mdl"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  echo "$output" | grep -q "ERROR.*dup.text.*duplicate key '$key'"
  run hmm-train --device=cpu "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:head -3 $T/tr/text; exit 3 |" \
    "$T/o.hmm" "$T/o.mdl"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  echo "$output" | grep -q "ERROR.*exit 3.*status 3"
  [ ! -e "$T/o.hmm" ] && [ ! -e "$T/o.mdl" ]
}

@test "hmm-train under Open MPI: bad data in one rank's shard -> one error naming the key, the rank, its host and shard" {
  [ -z "${GH_SANITIZED:-}" ] || skip "Open MPI's own allocations at MPI_Init/Finalize are reported by LeakSanitizer"
  need_mpi
  arabic_subset "$T/tr"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 3 --gauss 1 --iters 0 "$T/tr" "$T/adata/lang/words.txt" "$T/init" >/dev/null
  # the last utterance in key order (rank 1's shard of 2) gets a NaN in its own copy of the archive
  key=$(cut -d' ' -f1 "$T/tr/feats.scp" | LC_ALL=C sort | tail -1)
  python3 - "$T/tr/feats.scp" "$key" "$T/bad" <<'PY'
import struct, sys, shutil
scp, key, out = sys.argv[1:]
lines = open(scp).read().splitlines()
path, off = [l for l in lines if l.split()[0] == key][0].split(None, 1)[1].rsplit(':', 1)
shutil.copy(path, out + '.ark')
with open(out + '.ark', 'r+b') as f:
    f.seek(int(off)); assert f.read(5) == b'\0BFM '; f.seek(int(off) + 15); f.write(struct.pack('<f', float('nan')))
with open(out + '.scp', 'w') as f:
    for l in lines:
        k, rx = l.split(None, 1); p, o = rx.rsplit(':', 1)
        f.write('%s %s:%s\n' % (k, out + '.ark' if p == path else p, o))
PY
  run mpirun --oversubscribe -np 2 hmm-train --device=cpu --block-frames=3000 --num-iters=2 "$T/init/0.hmm" \
    "$T/init/0.mdl" "scp:$T/bad.scp" "ark,t:$T/tr/text" "$T/o.hmm" "$T/o.mdl"
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ': ERROR: ')" -eq 1 ]
  echo "$output" | grep ': ERROR: ' | grep -q "key '$key'.*rank 1 of 2 on host .*shard 1 (utterances"
  [ ! -e "$T/o.mdl" ] && [ ! -e "$T/o.hmm" ]
}

@test "hmm-train --iter-models writes (and commits) every iteration; resuming with --first-iter gives the same models, byte for byte" {
  arabic_subset "$T/tr"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 3 --gauss 1 --iters 0 "$T/tr" "$T/adata/lang/words.txt" "$T/init" >/dev/null
  mkdir -p "$T/it"
  opts="--device=cpu --block-frames=3000 --gauss=2 --mixup-start=2 --mixup-end=3 --seed=3"
  hmm-train $opts --num-iters=4 --iter-models="$T/it" "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" \
    "ark,t:$T/tr/text" "$T/a.hmm" "$T/a.mdl" 2>/dev/null
  for n in 1 2 3 4; do [ -s "$T/it/$n.mdl" ] && [ -s "$T/it/$n.hmm" ]; done
  cmp "$T/it/4.mdl" "$T/a.mdl"
  ! cmp -s "$T/it/2.mdl" "$T/it/3.mdl"
  # a job killed during iteration 3 left the models of iteration 2: resume there
  hmm-train $opts --num-iters=4 --first-iter=3 "$T/it/2.hmm" "$T/it/2.mdl" "scp:$T/tr/feats.scp" \
    "ark,t:$T/tr/text" "$T/b.hmm" "$T/b.mdl" 2>/dev/null
  cmp "$T/a.mdl" "$T/b.mdl"
  cmp "$T/a.hmm" "$T/b.hmm"
  # the checkpoints are committed as they are written (gh_commit_outputs), the final models
  # only at exit status 0: final outputs that cannot be written leave every checkpoint and
  # no final model
  mkdir -p "$T/it2"; : > "$T/notadir"
  run hmm-train $opts --num-iters=4 --iter-models="$T/it2" "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" \
    "ark,t:$T/tr/text" "$T/notadir/c.hmm" "$T/c.mdl"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ': ERROR: ')" -eq 1 ]
  for n in 1 2 3 4; do [ -s "$T/it2/$n.mdl" ] && [ -s "$T/it2/$n.hmm" ]; done
  cmp "$T/it/4.mdl" "$T/it2/4.mdl"
  [ ! -e "$T/c.mdl" ]
}

@test "hmm-train --max-device-memory (OpenCL/PoCL): streamed blocks give the resident run's models bit for bit (BW and Viterbi, 1 and 2 ranks); too little memory is one error" {
  D=$GH_SHARED/data
  gmm-score-gpu --device=opencl "$D/kaldi-fixtures/ami-diag16.gmm" "ark:$D/kaldi-ami-feats/feats.ark" ark:/dev/null \
    2>"$T/probe" || skip "no OpenCL device: $(tail -1 "$T/probe")"
  arabic_subset "$T/tr"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 4 --gauss 2 --iters 0 "$T/tr" "$T/adata/lang/words.txt" "$T/init" >/dev/null
  ranks=1
  if command -v mpirun >/dev/null && [ -z "${GH_SANITIZED:-}" ] && hmm-train --help 2>&1 | grep -q -- '--comm'; then ranks="1 2"; fi
  for mode in bw viterbi; do
    for R in $ranks; do
      launch=; [ $R -eq 1 ] || launch="mpirun --oversubscribe -np $R"
      # Viterbi realigns in iteration 1 only: iterations 2-3 keep the alignment's pairs in the (evicted) blocks
      ri=; [ $mode = bw ] || ri=--realign-iters=1
      for mm in "" 200K; do  # blocks of ~600 frames x 13 dims: ~45 KB; 200 KB keeps two resident
        $launch hmm-train --device=opencl --mode=$mode $ri --block-frames=600 --num-iters=3 --gauss=2 --mixup-end=1 \
          --seed=1 ${mm:+--max-device-memory=$mm} "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" \
          "ark,t:$T/tr/text" "$T/$mode$R${mm}.hmm" "$T/$mode$R${mm}.mdl" 2> "$T/$mode$R$mm.log"
      done
      grep -E "blocks resident \(.*\), [1-9][0-9]* streamed" "$T/${mode}${R}200K.log"
      cmp "$T/$mode$R.mdl" "$T/${mode}${R}200K.mdl"
      cmp "$T/$mode$R.hmm" "$T/${mode}${R}200K.hmm"
    done
  done
  run hmm-train --device=opencl --block-frames=600 --max-device-memory=40K "$T/init/0.hmm" "$T/init/0.mdl" \
    "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" "$T/x.hmm" "$T/x.mdl"
  [ "$status" -ne 0 ]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  echo "$output" | grep -q "cannot hold two blocks"
  [ ! -e "$T/x.mdl" ]
  run hmm-train --device=opencl --max-device-memory=lots "$T/init/0.hmm" "$T/init/0.mdl" \
    "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" "$T/x.hmm" "$T/x.mdl"
  [ "$status" -ne 0 ]
  echo "$output" | grep -q "max-device-memory must be a positive size"
}

@test "hmm-train on OpenCL (PoCL): the GMM M-step on the device in every iteration (mix-up included), the host's models within the GPU tolerances (GH_MSTEP=host), 2 ranks = 1 byte for byte; the block E-step on the device = its host path bit for bit (Baum-Welch and Viterbi)" {
  D=$GH_SHARED/data
  gmm-score-gpu --device=opencl "$D/kaldi-fixtures/ami-diag16.gmm" "ark:$D/kaldi-ami-feats/feats.ark" ark:/dev/null \
    2>"$T/probe" || skip "no OpenCL device: $(tail -1 "$T/probe")"
  arabic_subset "$T/tr"
  "$EGS/steps/train_word_hmm.sh" --device cpu --states 4 --gauss 2 --iters 0 "$T/tr" "$T/adata/lang/words.txt" "$T/init" >/dev/null
  args="--device=opencl --block-frames=3000 --num-iters=4 --gauss=2 --mixup-end=2 --seed=1"
  for m in device host; do
    GH_MSTEP=$([ $m = host ] && echo host) hmm-train $args "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" \
      "ark,t:$T/tr/text" "$T/$m.hmm" "$T/$m.mdl" 2> "$T/$m.log"
  done
  # every iteration's GMM M-step on the device, iterations 1-2 mixing up after it (the occupancies fetched)
  [ "$(grep -c 'GMM M-step .* on the device)' "$T/device.log")" -eq 4 ]
  [ "$(grep -c 'GMM M-step .* on the device)' "$T/host.log")" -eq 0 ]
  gauss() { grep -o "iteration $2:.*Gaussians" "$1" | grep -o '[0-9]* Gaussians' | cut -d' ' -f1; }
  [ "$(gauss "$T/device.log" 1)" -lt "$(gauss "$T/device.log" 2)" ] # mixed up in iteration 2
  [ "$(gauss "$T/device.log" 2)" -eq "$(gauss "$T/host.log" 2)" ]
  [ "$(gauss "$T/device.log" 4)" -eq "$(gauss "$T/host.log" 4)" ]
  [ "$(grep -c 'GMM M-step .* on the host)' "$T/host.log")" -eq 4 ]
  gmm-copy --binary=false "$T/device.mdl" "$T/device.txt" 2>/dev/null
  gmm-copy --binary=false "$T/host.mdl" "$T/host.txt" 2>/dev/null
  python3 "$ROOT/test/python/compare_models.py" "$T/device.txt" "$T/host.txt" --rtol 1e-4 --cov-rtol 1e-3
  # the block E-step (scoring, forward-backward, the posteriors sorted into the E-step data) on the device
  # (hmm_estep_pairs; --verbose=1: no pairs sent to the device) against its host path (GH_HMM_ESTEP=host)
  hmm-train --verbose=1 $args "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" "$T/ed.hmm" \
    "$T/ed.mdl" 2> "$T/ed.log"
  GH_HMM_ESTEP=host hmm-train --verbose=1 $args "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" \
    "$T/eh.hmm" "$T/eh.mdl" 2> "$T/eh.log"
  [ "$(grep -c 'pairs to the device 0 s' "$T/ed.log")" -eq 4 ]
  [ "$(grep -c 'pairs to the device 0 s' "$T/eh.log")" -eq 0 ]
  cmp "$T/ed.mdl" "$T/eh.mdl"
  cmp "$T/ed.hmm" "$T/eh.hmm"
  cmp "$T/ed.mdl" "$T/device.mdl"
  # Viterbi training's alignment on the device (op GH_HMM_ESTEP_VITERBI: the path never reaches the host) against
  # its host path: iterations 1 and 3 realign; the host path sends their pairs, the device path none
  for m in vd vh; do
    GH_HMM_ESTEP=$([ $m = vh ] && echo host) hmm-train --verbose=1 $args --mode=viterbi --realign-iters='1 3' "$T/init/0.hmm" \
      "$T/init/0.mdl" "scp:$T/tr/feats.scp" "ark,t:$T/tr/text" "$T/$m.hmm" "$T/$m.mdl" 2> "$T/$m.log"
  done
  [ "$(grep -c 'realigned' "$T/vd.log")" -eq 2 ]
  [ "$(grep -c 'pairs to the device 0 s' "$T/vd.log")" -eq 4 ]
  [ "$(grep -c 'pairs to the device 0 s' "$T/vh.log")" -eq 2 ]
  cmp "$T/vd.mdl" "$T/vh.mdl"
  cmp "$T/vd.hmm" "$T/vh.hmm"
  diff <(grep -o 'best-path log-likelihood per frame [^ ]* over [0-9]* utterances' "$T/vd.log") \
    <(grep -o 'best-path log-likelihood per frame [^ ]* over [0-9]* utterances' "$T/vh.log")
  if command -v mpirun >/dev/null && [ -z "${GH_SANITIZED:-}" ] && hmm-train --help 2>&1 | grep -q -- '--comm'; then
    mpirun --oversubscribe -np 2 hmm-train $args "$T/init/0.hmm" "$T/init/0.mdl" "scp:$T/tr/feats.scp" \
      "ark,t:$T/tr/text" "$T/d2.hmm" "$T/d2.mdl" 2> "$T/d2.log"
    grep -q 'iteration 4:.*on the device)' "$T/d2.log"
    cmp "$T/device.mdl" "$T/d2.mdl"
    cmp "$T/device.hmm" "$T/d2.hmm"
  fi
}

@test "hmm-train --help: the final outputs are written once, at the end; --iter-models checkpoints every iteration" {
  # (before, the help promised every output "written (atomically) after every iteration";
  # the --iter-models test above shows what happens)
  run hmm-train --help
  [[ "$output" == *"written once, after the last iteration"* ]]
  [[ "$output" == *"--iter-models"*"also writes every iteration's models"* ]]
  [[ "$output" != *"written (atomically) after every iteration"* ]]
}
