#!/usr/bin/env bats
# utils/slurm.sh on a real one-node Slurm cluster started for these tests:
# munged (own key and socket) + slurmctld + slurmd on localhost with a
# generated slurm.conf in a temporary directory (ProctrackType=proctrack/
# linuxproc, TaskPlugin=task/none, select/cons_tres), stopped afterwards.
# Needs root and Debian's slurm-wlm + munge (tools/install-deps.sh installs
# them); skipped, saying why, where the cluster cannot start.
# The recipe check: egs/arabic-digits/run.sh GMM training with --nj 4 --cmd
# utils/slurm.sh gives the --nj 1 model within 1e-5 + 1e-4 x the largest entry
# of each vector or matrix (utils/compare_gmms.sh).

start_cluster() {  # start_cluster <dir>: prints why not, returns 1, if it cannot
  local c=$1 host port i
  [ "$(id -u)" = 0 ] || { echo "not root (a one-node test cluster runs its daemons as root)"; return 1; }
  for b in munged slurmctld slurmd sbatch scancel sinfo; do
    command -v $b >/dev/null || [ -x /usr/sbin/$b ] ||
      { echo "$b not installed (tools/install-deps.sh installs slurm-wlm and munge)"; return 1; }
  done
  export PATH="$PATH:/usr/sbin"
  mkdir -p $c/state $c/spool; chmod 700 $c
  dd if=/dev/urandom of=$c/munge.key bs=1024 count=1 2>/dev/null; chmod 400 $c/munge.key
  munged --force --socket=$c/munge.sock --key-file=$c/munge.key --pid-file=$c/munged.pid \
    --log-file=$c/munged.log --seed-file=$c/munged.seed 2>$c/munged.err || { echo "munged did not start: $(cat $c/munged.err)"; return 1; }
  host=$(hostname -s)
  port=$(( 20000 + RANDOM % 20000 ))
  cat > $c/slurm.conf <<EOF
ClusterName=ghtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$c/munge.sock
StateSaveLocation=$c/state
SlurmdSpoolDir=$c/spool
SlurmctldPidFile=$c/slurmctld.pid
SlurmdPidFile=$c/slurmd.pid
SlurmctldLogFile=$c/slurmctld.log
SlurmdLogFile=$c/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=4
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$c/slurm.conf
  slurmctld -f $c/slurm.conf 2>$c/slurmctld.err || { echo "slurmctld did not start: $(tail -3 $c/slurmctld.log $c/slurmctld.err 2>/dev/null)"; return 1; }
  slurmd -f $c/slurm.conf 2>$c/slurmd.err || { echo "slurmd did not start: $(tail -3 $c/slurmd.log $c/slurmd.err 2>/dev/null)"; return 1; }
  for i in $(seq 1 60); do
    [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && return 0
    sleep 0.5
  done
  echo "the node did not become idle in 30 s: $(sinfo 2>&1 | tail -1); $(tail -2 $c/slurmd.log)"
  return 1
}

stop_cluster() {  # stop_cluster <dir>: stop every daemon start_cluster started
  local c=$1 p pid i
  for p in slurmd slurmctld munged; do
    pid=$(cat $c/$p.pid 2>/dev/null) || continue
    kill $pid 2>/dev/null || continue
    for i in $(seq 1 40); do kill -0 $pid 2>/dev/null || break; sleep 0.25; done
    kill -9 $pid 2>/dev/null || true
  done
}

setup_file() {
  export CLUSTER=$BATS_FILE_TMPDIR/cluster
  if ! start_cluster $CLUSTER > $BATS_FILE_TMPDIR/why 2>&1; then
    stop_cluster $CLUSTER
    touch $BATS_FILE_TMPDIR/no-cluster
  fi
}

teardown_file() {
  stop_cluster $CLUSTER
}

setup() {
  [ ! -f $BATS_FILE_TMPDIR/no-cluster ] || skip "no Slurm cluster: $(head -c 300 $BATS_FILE_TMPDIR/why)"
  export SLURM_CONF=$CLUSTER/slurm.conf PATH="$PATH:/usr/sbin"
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  EGS=$ROOT/egs
  export PATH="${GH_BIN:-$ROOT/bin}:$PATH"
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
}

@test "utils/slurm.sh: a job array of 4, JOB substituted, logs with command line and exit code" {
  cd "$T"
  run "$EGS/utils/slurm.sh" JOB=1:4 log/t.JOB.log echo job JOB on \$SLURM_ARRAY_TASK_ID \> out.JOB
  echo "$output"
  [ "$status" -eq 0 ]
  for j in 1 2 3 4; do
    [ "$(cat out.$j)" = "job $j on $j" ]
    head -1 log/t.$j.log | grep -qx "# echo job $j on \$SLURM_ARRAY_TASK_ID > out.$j "
    grep -q '^# Started at .* (Slurm job [0-9]*_'$j')$' log/t.$j.log
    tail -1 log/t.$j.log | grep -q '^# Ended (code 0) at '
  done
  [ -f log/q/t.sh ]
}

@test "utils/slurm.sh: a failing job makes it exit non-zero naming the job and its log" {
  cd "$T"
  run "$EGS/utils/slurm.sh" --mem 100M --time 5 JOB=1:3 log/f.JOB.log test JOB -ne 2
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"1 / 3 failed"*"jobs 2)"*"$T/log/f.2.log"* ]]
  tail -1 log/f.2.log | grep -q '^# Ended (code 1) at '
  run "$EGS/utils/slurm.sh" log/single.log false \| cat
  [ "$status" -ne 0 ]
  [[ "$output" == *"1 / 1 failed"*"$T/log/single.log"* ]]
}

@test "utils/slurm.pl: Kaldi's slurm.pl convention and options on the cluster, through slurm.sh" {
  cd "$T"
  run "$EGS/utils/slurm.pl" --mem 100M --num-threads 1 --max-jobs-run 2 JOB=1:3 log/k.JOB.log echo kaldi JOB
  echo "$output"
  [ "$status" -eq 0 ]
  for j in 1 2 3; do
    grep -qx "kaldi $j" log/k.$j.log
    grep -q '^# Started at .* (Slurm job [0-9]*_'$j')$' log/k.$j.log
    tail -2 log/k.$j.log | head -1 | grep -q '^# Accounting: time=[0-9]* threads=1$'
    tail -1 log/k.$j.log | grep -q '^# Ended (code 0) at '
  done
  run "$EGS/utils/slurm.pl" JOB=1:2 log/e.JOB.log 'exit $(( JOB - 1 ))'
  [ "$status" -eq 1 ]
  [[ "$output" == *"1 / 2 failed"*"jobs 2)"* ]]
}

@test "recipe on Slurm: arabic-digits GMM training with --ranks 0 --nj 4 --cmd utils/slurm.sh equals --nj 1" {
  [ -f "$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt" ] || [ -f "$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt.gz" ] || skip "Arabic digits not found under $GH_SHARED/data"
  opts="--device cpu --configs diag:2 --seed 1 --iters 2 --sklearn false --hmm false --ranks 0"
  run "$EGS/arabic-digits/run.sh" --work "$T/w4" --nj 4 --cmd utils/slurm.sh $opts
  echo "$output"
  [ "$status" -eq 0 ]
  # every accumulation ran as a task of a Slurm array
  grep -q '^# Started at .* (Slurm job [0-9]*_4)$' "$T/w4/exp/diag2_s1/log/acc.1.4.log"
  "$EGS/arabic-digits/run.sh" --work "$T/w1" --nj 1 --cmd utils/run.sh $opts > /dev/null
  run "$EGS/utils/compare_gmms.sh" "$T/w1/exp/diag2_s1/final.mdl" "$T/w4/exp/diag2_s1/final.mdl"
  echo "$output"
  [ "$status" -eq 0 ]
  diff <(sed 1d "$T/w1/results.txt") <(sed 1d "$T/w4/results.txt")
}

@test "gmm-train on Slurm: 2 MPI ranks through srun --mpi=pmix (steps/train_gmm.sh --ranks 2 --cmd utils/slurm.sh) equal one process" {
  [ -z "${GH_SANITIZED:-}" ] || skip "Open MPI's own allocations at MPI_Init/Finalize are reported by LeakSanitizer"
  command -v mpirun >/dev/null || skip "no Open MPI (tools/install-deps.sh)"
  srun --mpi=list 2>&1 | grep -q pmix || skip "this Slurm has no PMIx plugin (srun --mpi=list)"
  python3 - "$T" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]; r = np.random.RandomState(4)
with open(d + '/f.txt', 'w') as f:
    for k in range(30):
        n = r.randint(30, 150)
        X = np.vstack([r.randn(n // 2, 4), 3 + r.randn(n - n // 2, 4)])
        f.write('utt%02d  [\n' % k + '\n'.join(' '.join('%.5f' % v for v in x) for x in X) + ' ]\n')
PYEOF
  mkdir -p $T/data
  copy-feats ark:$T/f.txt ark,scp:$T/f.ark,$T/data/feats.scp 2>/dev/null
  awk '{ print $1, "spk1" }' $T/data/feats.scp > $T/data/utt2spk
  cd $T
  run "$EGS/steps/train_gmm.sh" --ranks 2 --cmd "$EGS/utils/slurm.sh" --device cpu --cov-type full \
    --num-gauss 3 --init-iters 1 --num-iters 3 data exp/s
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q "srun --kill-on-bad-exit=1 --mpi=pmix" exp/s/log/train.0.log
  grep -q "rank 1 on host" exp/s/log/train.0.log
  grep -q "communicator mpi" exp/s/log/train.0.log
  gmm-train --device=cpu --num-iters=3 exp/s/0.mdl scp:data/feats.scp $T/plain.mdl 2>/dev/null
  "$EGS/utils/compare_gmms.sh" $T/plain.mdl exp/s/final.mdl
  # a failing rank ends the step (--kill-on-bad-exit) and the job non-zero
  GH_TEST_KILL=1:2 run "$EGS/utils/slurm.sh" --ranks 2 log/k.log gmm-train --device=cpu --num-iters=3 \
    exp/s/0.mdl scp:data/feats.scp $T/k.mdl
  echo "$output"
  [ "$status" -ne 0 ]
  [ ! -e $T/k.mdl ]
}
