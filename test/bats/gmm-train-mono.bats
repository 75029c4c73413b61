#!/usr/bin/env bats
# gmm-train-mono (drivers/train/am-train.h) against our run of Kaldi's own
# steps/train_mono.sh ($GH_SHARED/kaldi-scripts, unchanged, our bin/ first on
# PATH) with the same options on the same data: 200 utterances of cathy (the
# first 100 of each of the fixture's two speaker ids, so --nj 2 splits them),
# a shortened schedule (--num-iters 10 --max-iter-inc 6 --totgauss 300
# --realign-iters "1 2 3 5 8"; Kaldi's script takes these options).
#   - every pass's average log-likelihood per frame (the script: acc.x.*.log,
#     frame-weighted over the 2 jobs) within 1e-4 relative, the frames equal:
#     the job-split tolerance (the script accumulates each job's frames in one
#     call and adds the jobs in double, the trainer adds fixed blocks in
#     double-double; measured: at most 3.6e-6);
#   - final.mdl within utils/compare_gmms.sh --rel-tol 1e-5 --abs-tol 1e-6
#     (measured: the text forms equal, largest difference 0);
#   - final alignments' phone sequences identical on >= 95% of the utterances
#     (measured: 200 of 200);
#   - 0.mdl and tree byte-identical to the script's; steps/align_si.sh runs on
#     the trainer's directory;
#   - R = 1, 2, 3 MPI ranks (blocks of 3000 frames): final.mdl and final.occs
#     byte-identical, the alignments and per-pass log-likelihoods identical;
#     the GMMs scored per utterance (GH_AM_SCORE=utt) and decoded on one
#     thread: final.mdl byte-identical;
#   - --exact (the batched exact aligner of drivers/align, align_batch of the CPU backend) against
#     --exact --batch-size=0 (lib/decoder's decoder, infinite beam): final.mdl, final.occs,
#     alignments and per-pass log-likelihoods byte-identical; R = 2 ranks the same as R = 1; on PoCL
#     (align_batch of the OpenCL backend) the CPU --exact run's figures within the tolerances below
#     (measured: 200 of 200 phone sequences);
#   - --device=opencl (PoCL) against the CPU run: log-likelihoods within 1e-6,
#     phone sequences >= 99% identical, models within compare_gmms --rel-tol 1e-3;
#   - bad input: a lang file missing, features of two dimensions: one error
#     line naming the file (and the key), no model written.
# Time on the shared 2-core machine: 57 s to 2 minutes (load average 11-17).

load kaldi-setup

setup_file() {
  kaldi_workdir
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  cathy_data_dir data/sub 100
  cathy_lang
}

setup() {
  cd "$W"
  export PATH=$BIN:$W/utils:$PATH LC_ALL=C
  OPTS=(--num-iters 10 --max-iter-inc 6 --totgauss 300 --realign-iters "1 2 3 5 8")
}

# ark,t phone sequences of dir's ali.*.gz
phones_of() { ali-to-phones "$1/final.mdl" "ark:gunzip -c $1/ali.*.gz|" ark,t:- 2>/dev/null | sort; }

@test "gmm-train-mono: the script's per-pass log-likelihoods, model and alignments" {
  SECONDS=0
  run steps/train_mono.sh --nj 2 --cmd utils/run.pl "${OPTS[@]}" data/sub data/lang exp/script
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  t_script=$SECONDS
  SECONDS=0
  opts=()
  for ((i = 0; i < ${#OPTS[@]}; i += 2)); do opts+=("${OPTS[i]}=${OPTS[i + 1]}"); done
  run gmm-train-mono --device=cpu "${opts[@]}" data/sub data/lang exp/r1
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  echo "train_mono.sh $t_script s, gmm-train-mono $SECONDS s" >&3
  cmp exp/r1/0.mdl exp/script/0.mdl
  cmp exp/r1/tree exp/script/tree
  worst=0
  for x in $(seq 0 9); do
    if [ "$x" -eq 0 ]; then logs=exp/script/log/align.0.*.log; else logs=exp/script/log/acc.$x.*.log; fi
    ref=$(cat $logs | awk '/Overall avg like per frame/ { s += $(NF-3) * $(NF-1); n += $(NF-1) } END { printf "%.6f %d", s / n, n }')
    ours=$(awk -v x=$x '$1 == x {print $2, $3}' exp/r1/log/train.log)
    echo "pass $x: ours $ours, script $ref"
    [ "${ours#* }" -eq "${ref#* }" ]
    awk -v a="${ours% *}" -v b="${ref% *}" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; exit !(d < 1e-4) }'
    worst=$(awk -v w=$worst -v a="${ours% *}" -v b="${ref% *}" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; print (d > w ? d : w) }')
  done
  echo "per-pass log-likelihood: largest relative difference $worst" >&3
  run utils/compare_gmms.sh --rel-tol 1e-5 --abs-tol 1e-6 exp/r1/final.mdl exp/script/final.mdl
  echo "final.mdl: $output" >&3
  [ "$status" -eq 0 ]
  phones_of exp/r1 > r1.phones
  phones_of exp/script > script.phones
  n=$(wc -l < script.phones)
  same=$(comm -12 r1.phones script.phones | wc -l)
  echo "phone sequences identical on $same of $n utterances" >&3
  [ "$(wc -l < r1.phones)" -eq "$n" ]
  [ $((100 * same)) -ge $((95 * n)) ]
  # the next step of a recipe takes the trainer's directory as the script's
  run steps/align_si.sh --nj 2 --cmd utils/run.pl data/sub data/lang exp/r1 exp/r1_ali
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(gunzip -c exp/r1_ali/ali.*.gz | wc -l)" -eq "$n" ]
}

@test "gmm-train-mono: the model does not depend on the number of MPI ranks, on how the GMMs are scored or on the threads" {
  command -v mpirun >/dev/null || skip "no mpirun (Open MPI: tools/install-deps.sh)"
  opts=()
  for ((i = 0; i < ${#OPTS[@]}; i += 2)); do opts+=("${OPTS[i]}=${OPTS[i + 1]}"); done
  # Open MPI's own allocations at MPI_Init are reported by LeakSanitizer (make test-asan): no ranks there
  ranks="2 3"; [ -z "${GH_SANITIZED:-}" ] || ranks=
  for R in $ranks; do
    run mpirun --oversubscribe -np $R gmm-train-mono --device=cpu --block-frames=3000 "${opts[@]}" data/sub data/lang exp/r$R
    [ "$status" -eq 0 ] || { echo "$output"; false; }
  done
  run gmm-train-mono --device=cpu --block-frames=3000 "${opts[@]}" data/sub data/lang exp/b1
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  # the GMMs scored per utterance (gmm-align-compiled's calls) instead of per run of a block's utterances,
  # decoded on one thread instead of all
  GH_AM_SCORE=utt OMP_NUM_THREADS=1 run gmm-train-mono --device=cpu --block-frames=3000 "${opts[@]}" data/sub data/lang exp/u1
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  cmp exp/b1/final.mdl exp/u1/final.mdl
  for R in $ranks; do
    cmp exp/b1/final.mdl exp/r$R/final.mdl
    cmp exp/b1/final.occs exp/r$R/final.occs
    [ "$(cat exp/r$R/num_jobs)" -eq $R ]
    diff <(gunzip -c exp/b1/ali.*.gz | sort) <(gunzip -c exp/r$R/ali.*.gz | sort)
    grep -v '^#' exp/b1/log/train.log | cut -d' ' -f1-4 > b1.like
    grep -v '^#' exp/r$R/log/train.log | cut -d' ' -f1-4 > r$R.like
    diff b1.like r$R.like
  done
}

@test "gmm-train-mono --exact: the batched exact aligner gives lib/decoder's exact decoder's model; R = 1, 2" {
  opts=()
  for ((i = 0; i < ${#OPTS[@]}; i += 2)); do opts+=("${OPTS[i]}=${OPTS[i + 1]}"); done
  # the batched aligner (drivers/align, the CPU backend's align_batch) against lib/decoder's one-utterance
  # decoder with an infinite beam (--batch-size=0)
  run gmm-train-mono --device=cpu --exact --block-frames=3000 "${opts[@]}" data/sub data/lang exp/x1
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  run gmm-train-mono --device=cpu --exact --batch-size=0 --block-frames=3000 "${opts[@]}" data/sub data/lang exp/x0
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  cmp exp/x1/final.mdl exp/x0/final.mdl
  cmp exp/x1/final.occs exp/x0/final.occs
  diff <(gunzip -c exp/x1/ali.*.gz) <(gunzip -c exp/x0/ali.*.gz)
  diff <(grep -v '^#' exp/x1/log/train.log | cut -d' ' -f1-4) <(grep -v '^#' exp/x0/log/train.log | cut -d' ' -f1-4)
  # every utterance aligned on every realignment pass (no beam to fail for)
  [ "$(gunzip -c exp/x1/ali.*.gz | wc -l)" -eq "$(wc -l < data/sub/text)" ]
  command -v mpirun >/dev/null || skip "no mpirun (Open MPI: tools/install-deps.sh)"
  [ -z "${GH_SANITIZED:-}" ] || skip "Open MPI's own allocations at MPI_Init are reported by LeakSanitizer"
  run mpirun --oversubscribe -np 2 gmm-train-mono --device=cpu --exact --block-frames=3000 "${opts[@]}" data/sub \
    data/lang exp/x2
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  cmp exp/x1/final.mdl exp/x2/final.mdl
  cmp exp/x1/final.occs exp/x2/final.occs
  diff <(gunzip -c exp/x1/ali.*.gz | sort) <(gunzip -c exp/x2/ali.*.gz | sort)
}

@test "gmm-train-mono: a missing lang file, features of two dimensions" {
  mkdir -p bad && cp -r data/lang bad/lang && rm bad/lang/L.fst
  run gmm-train-mono --device=cpu --num-iters=2 data/sub bad/lang exp/bad1
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  echo "$output" | grep -q "bad/lang/L.fst: cannot read the lexicon FST"
  [ ! -e exp/bad1/final.mdl ]
  # the second utterance with 10 of its 13 MFCCs
  k=$(sed -n 2p data/sub/feats.scp | cut -d' ' -f1)
  select-feats 0-9 "scp:sed -n 2p data/sub/feats.scp |" ark,scp:bad/f10.ark,bad/f10.scp 2>/dev/null
  mkdir -p bad/data && cp data/sub/{text,utt2spk,spk2utt,cmvn.scp} bad/data/
  { sed -n 1p data/sub/feats.scp; cat bad/f10.scp; sed -n '3,$p' data/sub/feats.scp; } > bad/data/feats.scp
  run gmm-train-mono --device=cpu --num-iters=2 --feats="ark:copy-feats scp:bad/data/feats.scp ark:- |" data/sub \
    data/lang exp/bad2
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  echo "$output" | grep -q "utterance $k has features of dimension 10"
  [ ! -e exp/bad2/final.mdl ]
}

@test "gmm-train-mono --device=opencl (PoCL): the CPU run's log-likelihoods, alignments and model" {
  [ -f exp/r1/final.mdl ] || skip "needs the first test's exp/r1"
  gmm-score-gpu --device=opencl exp/r1/final.mdl "ark:copy-feats scp:data/sub/feats.scp ark:- | add-deltas ark:- ark:- |" \
    ark:/dev/null 2>probe.log || skip "no OpenCL device: $(tail -1 probe.log)"
  opts=()
  for ((i = 0; i < ${#OPTS[@]}; i += 2)); do opts+=("${OPTS[i]}=${OPTS[i + 1]}"); done
  run gmm-train-mono --device=opencl "${opts[@]}" data/sub data/lang exp/ocl
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  # measured: log-likelihoods within 3.7e-8, 200 of 200 phone sequences, models within 2.2e-4
  paste <(grep -v '^#' exp/r1/log/train.log | cut -d' ' -f2,3) <(grep -v '^#' exp/ocl/log/train.log | cut -d' ' -f2,3) |
    awk '{ d = ($1 - $3) / $1; if (d < 0) d = -d; if (d > 1e-6 || $2 != $4) bad = 1 } END { exit bad }'
  phones_of exp/ocl > ocl.phones
  [ -s r1.phones ] || phones_of exp/r1 > r1.phones
  n=$(wc -l < r1.phones)
  same=$(comm -12 r1.phones ocl.phones | wc -l)
  echo "OpenCL: phone sequences identical on $same of $n utterances" >&3
  [ $((100 * same)) -ge $((99 * n)) ]
  utils/compare_gmms.sh --rel-tol 1e-3 exp/r1/final.mdl exp/ocl/final.mdl
}

@test "gmm-train-mono --exact --device=opencl (PoCL): the batched aligner on the device, the CPU run's model" {
  [ -f exp/x1/final.mdl ] || skip "needs the --exact test's exp/x1"
  gmm-score-gpu --device=opencl exp/x1/final.mdl "ark:copy-feats scp:data/sub/feats.scp ark:- | add-deltas ark:- ark:- |" \
    ark:/dev/null 2>probe.log || skip "no OpenCL device: $(tail -1 probe.log)"
  opts=()
  for ((i = 0; i < ${#OPTS[@]}; i += 2)); do opts+=("${OPTS[i]}=${OPTS[i + 1]}"); done
  run gmm-train-mono --device=opencl --exact --block-frames=3000 "${opts[@]}" data/sub data/lang exp/xocl
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  # the GMM scores differ from the CPU's in float rounding only: the tolerances of the beam test above
  paste <(grep -v '^#' exp/x1/log/train.log | cut -d' ' -f2,3) <(grep -v '^#' exp/xocl/log/train.log | cut -d' ' -f2,3) |
    awk '{ d = ($1 - $3) / $1; if (d < 0) d = -d; if (d > 1e-6 || $2 != $4) bad = 1 } END { exit bad }'
  phones_of exp/x1 > x1.phones
  phones_of exp/xocl > xocl.phones
  n=$(wc -l < x1.phones)
  same=$(comm -12 x1.phones xocl.phones | wc -l)
  echo "OpenCL --exact: phone sequences identical on $same of $n utterances" >&3
  [ $((100 * same)) -ge $((99 * n)) ]
  utils/compare_gmms.sh --rel-tol 1e-3 exp/x1/final.mdl exp/xocl/final.mdl
}
