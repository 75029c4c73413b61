#!/usr/bin/env bash
# utils/slurm.sh -- run a command as N jobs on a Slurm cluster, as one job
# array (Kaldi's utils/slurm.pl calling convention, our own bash):
#
#   utils/slurm.sh [options] JOB=1:N <log-with-JOB> <command> [<args>...]
#   utils/slurm.sh [options] <log> <command> [<args>...]          (one job)
#
# Submits  sbatch --wait --array=1-N[%max-jobs-run]  of a script written to
# <log-dir>/q/<name>.sh and waits for the whole array.  Task k runs the command
# with every "JOB" replaced by k, under bash with pipefail, in the current
# directory (sbatch --chdir; the cluster's nodes must see it), with the
# environment of the caller (sbatch's default --export=ALL, so PATH too).  The
# command line is built as utils/run.sh builds it (escaped \| for pipes; a
# single argument is a whole shell command line).  Each task writes its log
# where Kaldi puts it: the command line ("# ..."), the node and Slurm job id,
# the output, "# Ended (code N) ...".  Slurm's own output of task k goes to
# <log-dir>/q/<name>.k.out.
#
# Options:
#   --gpu N           --gres=gpu:N (each task gets N GPUs; Slurm sets
#                     CUDA_VISIBLE_DEVICES)
#   --mem M           --mem=M (e.g. 4G)
#   --time T          --time=T (e.g. 1:00:00)
#   --num-threads N   --cpus-per-task=N
#   --max-jobs-run N  at most N tasks at once (--array=1-N%max)
#   --ranks N         the command is ONE program started as N MPI ranks:
#                     sbatch --ntasks=N (an array of one task), and in it
#                     srun --kill-on-bad-exit=1 --mpi=$GH_SRUN_MPI <command>
#                     (GH_SRUN_MPI default pmix: Debian's Open MPI has no
#                     Slurm PMI-2 support); one job only.  With --gpu G each
#                     node gets G GPUs (--gres=gpu:G) and each rank takes the
#                     GPU of its local rank.
#   --config F        accepted and ignored (Kaldi's conf/slurm.conf)
# Other sbatch options (partition, account) come from the environment, e.g.
# SBATCH_PARTITION, SBATCH_ACCOUNT (see man sbatch).  Interrupting slurm.sh
# cancels the array (scancel).
# Exit status 0 if every task exited 0; otherwise 1, with one line on stderr
# naming the failed jobs and their logs (a task killed by Slurm, e.g. at its
# time limit, counts as failed: see its q/<name>.k.out).
set -uo pipefail
# the name in messages: slurm.sh, or the wrapper that runs it (utils/slurm.pl sets GH_LAUNCHER_NAME)
me=${GH_LAUNCHER_NAME:-slurm.sh}
unset GH_LAUNCHER_NAME
gpu=0; mem=; time_limit=; threads=; max_jobs_run=; ranks=
while [ $# -gt 0 ]; do
  case $1 in
    --gpu|--mem|--time|--num-threads|--max-jobs-run|--config|--ranks)
      [ $# -ge 2 ] || { echo "$me: option $1 needs a value" >&2; exit 1; }
      case $1 in --gpu) gpu=$2 ;; --mem) mem=$2 ;; --time) time_limit=$2 ;;
        --num-threads) threads=$2 ;; --max-jobs-run) max_jobs_run=$2 ;; --ranks) ranks=$2 ;; esac; shift 2 ;;
    --ranks=*) ranks=${1#*=}; shift ;;
    --gpu=*) gpu=${1#*=}; shift ;; --mem=*) mem=${1#*=}; shift ;; --time=*) time_limit=${1#*=}; shift ;;
    --num-threads=*) threads=${1#*=}; shift ;; --max-jobs-run=*) max_jobs_run=${1#*=}; shift ;;
    --config=*) shift ;;
    --*) echo "$me: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then sed -n '2,/^set -uo/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
jobname=; first=1; last=1
if [[ $1 =~ ^([A-Za-z][A-Za-z0-9_]*)=([0-9]+):([0-9]+)$ ]]; then
  jobname=${BASH_REMATCH[1]}; first=${BASH_REMATCH[2]}; last=${BASH_REMATCH[3]}; shift
  [ "$first" -le "$last" ] || { echo "$me: empty job range $jobname=$first:$last" >&2; exit 1; }
elif [[ $1 =~ ^[A-Za-z][A-Za-z0-9_]*=.*$ ]]; then
  echo "$me: bad job range '$1' (expected e.g. JOB=1:4)" >&2; exit 1
fi
[ $# -ge 2 ] || { echo "$me: no command given after the log file $1" >&2; exit 1; }
log=$1; shift
if [ -n "$jobname" ] && [ "$last" -gt "$first" ] && [[ $log != *"$jobname"* ]]; then
  echo "$me: the log name $log must contain $jobname when running several jobs" >&2; exit 1
fi
command -v sbatch >/dev/null || { echo "$me: sbatch not found (no Slurm client here; run locally with utils/run.sh)" >&2; exit 1; }
cmd=
[ $# -eq 1 ] && cmd=$1 || for a in "$@"; do
  if [[ $a =~ ^[^[:space:]]+$ ]]; then cmd+="$a "; else cmd+="'${a//\'/\'\\\'\'}' "; fi
done
if [ -n "$ranks" ]; then
  [[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "$me: bad --ranks '$ranks'" >&2; exit 1; }
  [ "$first" -eq "$last" ] || { echo "$me: --ranks runs one job (got $jobname=$first:$last)" >&2; exit 1; }
  cmd="srun --kill-on-bad-exit=1 --mpi=${GH_SRUN_MPI:-pmix} $cmd"
fi
[ -n "$jobname" ] || jobname=__GH_NO_JOB__   # one job (task 1): nothing to replace

logdir=$(dirname "$log"); mkdir -p "$logdir/q" || exit 1
logdir=$(cd "$logdir" && pwd); log=$logdir/$(basename "$log")
name=$(basename "$log" .log); name=${name//.$jobname/}; name=${name//$jobname/}; [ -n "$name" ] || name=job
qdir=$logdir/q
script=$qdir/$name.sh
rm -f "$qdir/$name".*.rc "$qdir/$name".*.out "$qdir/$name.jobid"
# The task script: the command and log name as quoted literals, JOB replaced
# by the array index at run time.
{
  echo '#!/usr/bin/env bash'
  echo "# $me: $cmd"
  echo "cmd=$(printf %q "$cmd")"
  echo "log=$(printf %q "$log")"
  echo "jobname=$(printf %q "$jobname")"
  echo "rcfile=$(printf %q "$qdir/$name").\$SLURM_ARRAY_TASK_ID.rc"
  cat <<'EOF'
j=$SLURM_ARRAY_TASK_ID
cmd=${cmd//$jobname/$j}; log=${log//$jobname/$j}
start=$(date +%s.%N)
{
  echo "# $cmd"
  echo "# Started at $(date) on $(hostname) (Slurm job ${SLURM_ARRAY_JOB_ID}_$j)"
} > "$log"
bash -o pipefail -c "$cmd" >> "$log" 2>&1 < /dev/null
rc=$?
el=$(awk -v a=$start -v b=$(date +%s.%N) 'BEGIN { printf "%.3f", b - a }')
echo "# Accounting: time=${el%.*} threads=${SLURM_CPUS_PER_TASK:-1}" >> "$log"
echo "# Ended (code $rc) at $(date), elapsed time $el seconds" >> "$log"
echo $rc > "$rcfile"
exit $rc
EOF
} > "$script"
chmod +x "$script"

opts=(--wait --parsable --job-name="$name" --chdir="$PWD" --output="$qdir/$name.%a.out")
array=$first-$last; [ -z "$max_jobs_run" ] || array+="%$max_jobs_run"
opts+=(--array="$array")
[ -z "$ranks" ] || opts+=(--ntasks="$ranks")
[ "$gpu" = 0 ] || opts+=(--gres=gpu:$gpu)
[ -z "$mem" ] || opts+=(--mem="$mem")
[ -z "$time_limit" ] || opts+=(--time="$time_limit")
[ -z "$threads" ] || opts+=(--cpus-per-task="$threads")

sbatch "${opts[@]}" "$script" > "$qdir/$name.jobid" 2> "$qdir/$name.sbatch.err" &
sbatch_pid=$!
cancel() {  # cancel <signal name> <number>: exits 128 + number (SIGINT 130, SIGTERM 143), as a shell does
  trap '' INT TERM HUP
  local id; id=$(head -1 "$qdir/$name.jobid" 2>/dev/null | cut -d';' -f1)
  [ -z "$id" ] || scancel "$id" 2>/dev/null
  kill "$sbatch_pid" 2>/dev/null
  echo "$me: interrupted by SIG$1; cancelled Slurm job ${id:-(not yet submitted)}" >&2
  exit $(( 128 + $2 ))
}
trap 'cancel INT 2' INT
trap 'cancel TERM 15' TERM
trap 'cancel HUP 1' HUP
wait $sbatch_pid
sbatch_rc=$?
trap - INT TERM HUP
jobid=$(head -1 "$qdir/$name.jobid" 2>/dev/null | cut -d';' -f1)
if [ -z "$jobid" ]; then
  echo "$me: sbatch failed: $(head -c 300 "$qdir/$name.sbatch.err" | tr '\n' ' ')(script $script)" >&2
  exit 1
fi

failed=(); failed_logs=()
for ((j = first; j <= last; j++)); do
  rc=$(cat "$qdir/$name.$j.rc" 2>/dev/null || echo none)
  if [ "$rc" != 0 ]; then
    failed+=($j); failed_logs+=("${log//$jobname/$j}")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  n=$(( last - first + 1 ))
  more=; [ ${#failed[@]} -le 3 ] || more=", ..."
  logs=$(printf '%s, ' "${failed_logs[@]:0:3}")
  echo "$me: ${#failed[@]} / $n failed (Slurm job $jobid, jobs ${failed[*]}), log is in ${logs%, }$more (Slurm's output: $qdir/$name.<job>.out)" >&2
  exit 1
fi
[ $sbatch_rc -eq 0 ] || echo "$me: warning: sbatch --wait exited with $sbatch_rc though every task reported 0" >&2
exit 0
