#!/usr/bin/env bats
# gmm-train-tri (drivers/train/am-train.h, the triphone stage) against our run
# of Kaldi's own steps/train_deltas.sh ($GH_SHARED/kaldi-scripts, unchanged,
# our bin/ first on PATH) with the same options on the same inputs: 200
# utterances of cathy (the first 100 of each of the fixture's speaker ids),
# Kaldi's monophone alignments of them (kaldi-fixtures/align/mono_ali, one
# job) and mono/final.mdl, `200 1000` leaves/Gaussians, a shortened schedule
# (--num-iters 12 --max-iter-inc 8 --realign-iters "4 8").
#   - tree and questions.qst byte-identical to the script's;
#   - every pass's average log-likelihood per frame (the script's acc.x.1.log)
#     within 1e-5 relative (measured: equal to the 6 digits printed);
#   - final.mdl byte-identical (measured); phone sequences of the final
#     alignments identical on >= 99% (measured: 200 of 200);
#   - R = 1 and 2 MPI ranks with blocks of 20000 frames (3 blocks): tree,
#     final.mdl, final.occs byte-identical, and the 3-block run's model
#     byte-identical to the one-block run's on this data; the same for
#     --mono=true (both stages' final.mdl);
#   - --mono=true (both stages in one process) against gmm-train-mono then
#     gmm-train-tri: the monophone and triphone final.mdl byte-identical;
#   - all of cathy (1,582 utterances) with Kaldi's mono_ali, `500 5000` and the
#     script's default schedule, against Kaldi's own train_deltas.sh run
#     (kaldi-fixtures/align/tri1): tree, questions.qst and 1.mdl byte-identical,
#     passes 1-9 within 1e-6 relative of tri1/loglike.txt (measured 2.2e-7:
#     the E-step's sums in another order), every pass within 0.5% (the
#     issue's bound; measured 9.0e-5);
#   - bad input: --num-leaves below the number of roots, a missing alignment
#     directory: one error line, no model.
# Time on the shared 2-core machine: 2m12s to 2m39s (the full cathy run 77-114 s).

load kaldi-setup

setup_file() {
  kaldi_workdir
  cathy_data_dir data/sub 100
  cathy_lang
  mkdir -p exp/mono_ali
  gunzip -c "$F"/mono_ali/ali.*.gz | copy-int-vector ark:- ark,t:- 2>/dev/null |
    awk 'NR == FNR {k[$1] = 1; next} ($1 in k)' data/sub/text - | gzip -c > exp/mono_ali/ali.1.gz
  cp "$F/mono/final.mdl" exp/mono_ali/
  echo 1 > exp/mono_ali/num_jobs
  # all of cathy with Kaldi's mono_ali (2 jobs), as test/bats/kaldi-tri.bats
  cathy_data_dir data/cathy
  mkdir -p exp/kmono_ali
  cp "$F"/mono_ali/ali.*.gz exp/kmono_ali/
  cp "$F/mono/final.mdl" exp/kmono_ali/
  echo 2 > exp/kmono_ali/num_jobs
}

setup() {
  cd "$W"
  export PATH=$BIN:$W/utils:$PATH LC_ALL=C
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
}

phones_of() { ali-to-phones "$1/final.mdl" "ark:gunzip -c $1/ali.*.gz|" ark,t:- 2>/dev/null | sort; }

@test "gmm-train-tri: the script's tree, per-pass log-likelihoods, model and alignments" {
  SECONDS=0
  run steps/train_deltas.sh --cmd utils/run.pl --num-iters 12 --max-iter-inc 8 --realign-iters "4 8" \
    200 1000 data/sub data/lang exp/mono_ali exp/script
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  t_script=$SECONDS
  SECONDS=0
  run gmm-train-tri --device=cpu --num-iters=12 --max-iter-inc=8 --realign-iters="4 8" \
    200 1000 data/sub data/lang exp/mono_ali exp/r1
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  echo "train_deltas.sh $t_script s, gmm-train-tri $SECONDS s" >&3
  cmp exp/r1/tree exp/script/tree
  cmp exp/r1/questions.qst exp/script/questions.qst
  for x in $(seq 1 11); do
    ref=$(grep -h "Overall avg like per frame" exp/script/log/acc.$x.*.log | awk '{print $(NF-3)}')
    got=$(awk -v x=$x '$1 == x {print $2}' exp/r1/log/train.log)
    awk -v a="$got" -v b="$ref" -v x=$x 'BEGIN { d = (a - b) / b; if (d < 0) d = -d;
      if (d > 1e-5) { print "pass " x ": " a " against " b; exit 1 } }'
  done
  cmp exp/r1/final.mdl exp/script/final.mdl
  n=$(phones_of exp/script | wc -l)
  same=$(comm -12 <(phones_of exp/script) <(phones_of exp/r1) | wc -l)
  echo "phone sequences identical: $same of $n" >&3
  [ "$n" -eq 200 ] && [ $((100 * same)) -ge $((99 * n)) ]
}

@test "gmm-train-tri: the model does not depend on the number of MPI ranks" {
  command -v mpirun > /dev/null || skip "no mpirun"
  [ -z "${GH_SANITIZED:-}" ] || skip "Open MPI's own allocations at MPI_Init are reported by LeakSanitizer"
  for R in 1 2; do
    run mpirun -np $R gmm-train-tri --device=cpu --block-frames=20000 --num-iters=12 --max-iter-inc=8 \
      --realign-iters="4 8" 200 1000 data/sub data/lang exp/mono_ali exp/b$R
    [ "$status" -eq 0 ] || { echo "$output"; false; }
  done
  cmp exp/b1/tree exp/b2/tree
  cmp exp/b1/final.mdl exp/b2/final.mdl
  cmp exp/b1/final.occs exp/b2/final.occs
  [ -f exp/b2/ali.2.gz ]
  [ ! -e exp/b2/.treeacc.0 ]
  cmp <(phones_of exp/b1) <(phones_of exp/b2)
  [ -f exp/r1/final.mdl ] && cmp exp/b1/final.mdl exp/r1/final.mdl
  # both stages in one process, 1 and 2 ranks
  for R in 1 2; do
    run mpirun -np $R gmm-train-tri --device=cpu --block-frames=20000 --mono=true --mono-num-iters=10 \
      --mono-max-iter-inc=6 --mono-totgauss=300 --mono-realign-iters="1 2 3 5 8" --num-iters=12 --max-iter-inc=8 \
      --realign-iters="4 8" 200 1000 data/sub data/lang exp/mm$R exp/mt$R
    [ "$status" -eq 0 ] || { echo "$output"; false; }
  done
  cmp exp/mm1/final.mdl exp/mm2/final.mdl
  cmp exp/mt1/final.mdl exp/mt2/final.mdl
  [ -f exp/mm2/ali.2.gz ]
}

@test "gmm-train-tri --mono=true: both stages in one process, the two programs' models" {
  run gmm-train-mono --device=cpu --num-iters=10 --max-iter-inc=6 --totgauss=300 --realign-iters="1 2 3 5 8" \
    data/sub data/lang exp/m2
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  run gmm-train-tri --device=cpu --num-iters=12 --max-iter-inc=8 --realign-iters="4 8" \
    200 1000 data/sub data/lang exp/m2 exp/t2
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  run gmm-train-tri --device=cpu --mono=true --mono-num-iters=10 --mono-max-iter-inc=6 --mono-totgauss=300 \
    --mono-realign-iters="1 2 3 5 8" --num-iters=12 --max-iter-inc=8 --realign-iters="4 8" \
    200 1000 data/sub data/lang exp/m3 exp/t3
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  cmp exp/m2/final.mdl exp/m3/final.mdl
  cmp exp/m2/tree exp/m3/tree
  cmp exp/t2/tree exp/t3/tree
  cmp exp/t2/final.mdl exp/t3/final.mdl
  cmp <(phones_of exp/t2) <(phones_of exp/t3)
}

@test "gmm-train-tri 500 5000 on all of cathy: Kaldi's tree and 1.mdl, every pass within 0.5% of Kaldi's" {
  F=$GH_SHARED/data/kaldi-fixtures/align
  SECONDS=0
  run gmm-train-tri --device=cpu 500 5000 data/cathy data/lang exp/kmono_ali exp/tri1
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  echo "gmm-train-tri 500 5000 on cathy: $SECONDS s" >&3
  cmp exp/tri1/tree "$F/tri1/tree"
  cmp exp/tri1/questions.qst "$F/tri1/questions.qst"
  cmp exp/tri1/1.mdl "$F/tri1/1.mdl"
  run python3 - exp/tri1/log/train.log "$F/tri1/loglike.txt" <<'PY'
import sys
ours = {int(l.split()[0]): (float(l.split()[1]), int(l.split()[2])) for l in open(sys.argv[1]) if not l.startswith('#')}
ref = {int(l.split()[0]): (float(l.split()[1]), int(l.split()[2])) for l in open(sys.argv[2]) if not l.startswith('#')}
assert sorted(ours) == sorted(ref), (sorted(ours), sorted(ref))
rel = {x: abs(ours[x][0] - ref[x][0]) / abs(ref[x][0]) for x in ref}
assert all(ours[x][1] == ref[x][1] for x in ref), 'frame counts differ'
early, worst = max(rel[x] for x in ref if x < 10), max(rel.values())
print(f'passes 1-9 within {early:.2g}, all {len(ref)} passes within {worst:.2g} relative of Kaldi')
sys.exit(0 if early < 1e-6 and worst < 0.005 else 1)
PY
  echo "$output" >&3
  [ "$status" -eq 0 ]
}

@test "gmm-train-tri: bad input gives one error line and no model" {
  run gmm-train-tri --device=cpu 1 100 data/sub data/lang exp/mono_ali exp/bad1
  [ "$status" -ne 0 ]
  [[ "$output" == *"below the number of roots"* ]]
  [ ! -e exp/bad1/final.mdl ]
  run gmm-train-tri --device=cpu 200 1000 data/sub data/lang exp/nothing exp/bad2
  [ "$status" -ne 0 ]
  [[ "$output" == *"exp/nothing/final.mdl"* ]]
  [ ! -e exp/bad2/final.mdl ]
  run gmm-train-tri --device=cpu 200 100 data/sub data/lang exp/mono_ali exp/bad3
  [ "$status" -ne 0 ]
  [[ "$output" == *"<tot-gauss>"* ]]
}
