#!/usr/bin/env bash
# utils/run.sh -- run a command as N parallel jobs on this machine (Kaldi's
# utils/run.pl calling convention, our own bash):
#
#   utils/run.sh [options] JOB=1:N <log-with-JOB> <command> [<args>...]
#   utils/run.sh [options] <log> <command> [<args>...]          (one job)
#
# Every "JOB" in the log name and in the command becomes the job number.  The
# command is run by bash with pipefail, so a pipeline is written with an
# escaped bar:  utils/run.sh JOB=1:4 exp/log/acc.JOB.log a JOB.in \| b JOB.out
# (arguments with spaces are quoted, others are passed as they are); a single
# argument after the log is run as a shell command line: ... log.JOB 'a | b'.  Each log
# starts with the command line ("# ...") and ends with "# Ended (code N) at
# <date>, elapsed time S seconds", as Kaldi's logs do.
#
# Options:
#   --max-jobs-run N  at most N jobs at once (default: one per core, or one per
#                     GPU with --gpu 1)
#   --gpu 0|1         1: each job gets its own GPU through CUDA_VISIBLE_DEVICES
#                     (GPUs from $CUDA_VISIBLE_DEVICES if set, else nvidia-smi -L;
#                     job slot k always uses the k-th GPU)
#   --ranks N         the command is ONE program started as N MPI ranks:
#                     mpirun -np N --bind-to none --oversubscribe <command>
#                     (gmm-train: one rank per GPU, each rank takes the GPU of
#                     its local rank, so every GPU stays visible); one job only.
#                     As root, OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1 are set.
#   --mem M, --time T, --num-threads N   accepted for compatibility with
#                     utils/slurm.sh; ignored here
# Exit status 0 if every job exited 0; otherwise non-zero, with one line on
# stderr naming the failed jobs and their logs; 128 + N when stopped by
# signal N (SIGINT 130, SIGTERM 143, SIGHUP 129), every job stopped with it.
# The jobs run in the launcher's process group and die with it, even when it
# is SIGKILLed (a watcher process stops them within about a second).
set -uo pipefail
# the name in messages: run.sh, or the wrapper that runs it (utils/run.pl sets GH_LAUNCHER_NAME)
me=${GH_LAUNCHER_NAME:-run.sh}
unset GH_LAUNCHER_NAME
max_jobs_run=; gpu=0; ranks=
while [ $# -gt 0 ]; do
  case $1 in
    --max-jobs-run|--gpu|--mem|--time|--num-threads|--config|--ranks)
      [ $# -ge 2 ] || { echo "$me: option $1 needs a value" >&2; exit 1; }
      case $1 in --max-jobs-run) max_jobs_run=$2 ;; --gpu) gpu=$2 ;; --ranks) ranks=$2 ;; esac; shift 2 ;;
    --max-jobs-run=*) max_jobs_run=${1#*=}; shift ;;
    --gpu=*) gpu=${1#*=}; shift ;;
    --ranks=*) ranks=${1#*=}; shift ;;
    --mem=*|--time=*|--num-threads=*|--config=*) shift ;;
    --*) echo "$me: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  sed -n '2,/^set -uo/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1
fi
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
# The command line as one string for bash -c: words without white space as
# they are (so \| and \> act in the job's shell), others single-quoted.
# A single argument after the log is taken as a whole shell command line.
cmd=
[ $# -eq 1 ] && cmd=$1 || for a in "$@"; do
  if [[ $a =~ ^[^[:space:]]+$ ]]; then cmd+="$a "; else cmd+="'${a//\'/\'\\\'\'}' "; fi
done

if [ -n "$ranks" ]; then
  [[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "$me: bad --ranks '$ranks'" >&2; exit 1; }
  [ "$first" -eq "$last" ] || { echo "$me: --ranks runs one job (got $jobname=$first:$last)" >&2; exit 1; }
  command -v mpirun >/dev/null || { echo "$me: --ranks $ranks: mpirun not found (Open MPI: openmpi-bin)" >&2; exit 1; }
  cmd="mpirun -np $ranks --bind-to none --oversubscribe $cmd"
  if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  gpu=0  # the ranks see every GPU and pick theirs by local rank
fi
gpus=()
if [ "$gpu" != 0 ]; then
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -r -a gpus <<< "$CUDA_VISIBLE_DEVICES"
  elif command -v nvidia-smi >/dev/null 2>&1; then
    mapfile -t gpus < <(nvidia-smi -L 2>/dev/null | awk '/^GPU [0-9]+:/ { sub(":", "", $2); print $2 }')
  fi
  [ ${#gpus[@]} -gt 0 ] || echo "$me: --gpu $gpu but no GPU found; the jobs run without one" >&2
fi
if [ -z "$max_jobs_run" ]; then
  if [ ${#gpus[@]} -gt 0 ]; then max_jobs_run=${#gpus[@]}; else max_jobs_run=$(nproc 2>/dev/null || echo 1); fi
fi
[[ $max_jobs_run =~ ^[1-9][0-9]*$ ]] || { echo "$me: bad --max-jobs-run '$max_jobs_run'" >&2; exit 1; }
[ ${#gpus[@]} -eq 0 ] || [ "$max_jobs_run" -le ${#gpus[@]} ] || max_jobs_run=${#gpus[@]}

status_dir=$(mktemp -d "${TMPDIR:-/tmp}/run.sh.XXXXXX") || exit 1
# The jobs stay in this launcher's process group (no setsid): a signal to
# the group (Ctrl-C, kill -- -PGID, a batch system's SIGKILL) reaches every
# job's processes too.  When the launcher alone is stopped:
#  - by SIGINT/SIGTERM/SIGHUP: the trap stops every job with all its
#    processes and exits 128 + the signal (130, 143, 129), as a shell does;
#  - by SIGKILL, which no trap sees: a watcher process, started first, sees
#    the launcher gone (it is no longer the watcher's parent) within a second
#    and stops the slots and every job with all its processes.
kill_tree() {  # kill_tree <signal> <pid>: the process, then all its descendants (listed
  # before it is signalled: a job's shell must not go on to its next command)
  local c kids
  kids=$(ps -o pid= --ppid "$2" 2>/dev/null)
  kill -"$1" "$2" 2>/dev/null
  for c in $kids; do kill_tree "$1" "$c"; done
}
stop_jobs() {
  local f
  for f in "$status_dir"/slot.*; do [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done
  for f in "$status_dir"/pid.*; do [ -f "$f" ] && kill_tree TERM "$(cat "$f")"; done
}
launcher=$$
(
  trap '' INT TERM HUP   # the launcher's trap or its end stops the watcher (SIGKILL below)
  self=$BASHPID
  while [ "$(ps -o ppid= -p "$self" 2>/dev/null | tr -d ' ')" = "$launcher" ]; do sleep 1; done
  stop_jobs
  sleep 2; for f in "$status_dir"/pid.*; do [ -f "$f" ] && kill_tree KILL "$(cat "$f")"; done
  rm -rf "$status_dir"
) < /dev/null > /dev/null 2>&1 &
watcher=$!
disown $watcher   # no "Killed" notice when it is stopped at the end
on_exit() { kill -KILL "$watcher" 2>/dev/null; stop_jobs; rm -rf "$status_dir"; }
trap on_exit EXIT
on_signal() { trap '' INT TERM HUP; echo "$me: interrupted by SIG$1; stopping the jobs" >&2; exit $(( 128 + $2 )); }
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM
trap 'on_signal HUP 1' HUP

run_one() {  # run_one <job-id> <slot>
  local j=$1 slot=$2 jlog=$log jcmd=$cmd
  if [ -n "$jobname" ]; then jlog=${log//$jobname/$j}; jcmd=${cmd//$jobname/$j}; fi
  local start=$(date +%s.%N) rc err
  if ! err=$( {
    echo "# $jcmd"
    echo "# Started at $(date)"
    if [ ${#gpus[@]} -gt 0 ]; then echo "# CUDA_VISIBLE_DEVICES=${gpus[$slot]}"; fi
  } 2>&1 > "$jlog"); then
    echo "$me: job $j not run: cannot write its log $jlog: ${err##*: }" >&2
    echo nolog > "$status_dir/$j"; return
  fi
  local jp
  if [ ${#gpus[@]} -gt 0 ]; then
    CUDA_VISIBLE_DEVICES=${gpus[$slot]} bash -o pipefail -c "$jcmd" >> "$jlog" 2>&1 < /dev/null &
  else
    bash -o pipefail -c "$jcmd" >> "$jlog" 2>&1 < /dev/null &
  fi
  jp=$!; echo $jp > "$status_dir/pid.$j"
  wait $jp; rc=$?
  rm -f "$status_dir/pid.$j"
    local el; el=$(awk -v a="$start" -v b=$(date +%s.%N) 'BEGIN { printf "%.3f", b - a }')
  echo "# Accounting: time=${el%.*} threads=1" >> "$jlog"
  echo "# Ended (code $rc) at $(date), elapsed time $el seconds" >> "$jlog"
  echo $rc > "$status_dir/$j"
}

# The log directories, before any job runs: one that cannot be made is one
# line naming it and the cause, and nothing runs.
prev=
for ((j = first; j <= last; j++)); do
  jlog=$log; [ -z "$jobname" ] || jlog=${log//$jobname/$j}
  d=.; [[ $jlog != */* ]] || d=${jlog%/*}; [ -n "$d" ] || d=/
  [ "$d" != "$prev" ] || continue
  prev=$d
  [ -d "$d" ] && continue
  if [ -e "$d" ]; then echo "$me: cannot create the log directory $d: a file of that name exists" >&2; exit 1; fi
  if ! err=$(mkdir -p -- "$d" 2>&1); then
    echo "$me: cannot create the log directory $d: ${err##*: }" >&2
    exit 1
  fi
done

# Slot k runs jobs first+k, first+k+S, ... (S = number of slots), one at a time.
nslots=$(( last - first + 1 )); [ $nslots -le "$max_jobs_run" ] || nslots=$max_jobs_run
slots=()
for ((k = 0; k < nslots; k++)); do
  ( trap - EXIT INT TERM HUP; echo $BASHPID > "$status_dir/slot.$k"
    for ((j = first + k; j <= last; j += nslots)); do run_one $j $k; done
    rm -f "$status_dir/slot.$k" ) &
  slots+=($!)
done
wait "${slots[@]}"

failed=(); failed_logs=()
for ((j = first; j <= last; j++)); do
  rc=$(cat "$status_dir/$j" 2>/dev/null || echo killed)
  if [ "$rc" != 0 ]; then
    failed+=($j)
    [ "$rc" = nolog ] && continue  # said above; no log to point to
    if [ -n "$jobname" ]; then failed_logs+=("${log//$jobname/$j}"); else failed_logs+=("$log"); fi
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  n=$(( last - first + 1 ))
  if [ ${#failed_logs[@]} -eq 0 ]; then
    [ $n -eq 1 ] || echo "$me: ${#failed[@]} / $n failed (jobs ${failed[*]}), their logs could not be written (above)" >&2
  elif [ $n -eq 1 ]; then
    echo "$me: job failed, log is in ${failed_logs[0]}" >&2
  else
    # Kaldi's run.pl: "run.pl: 2 / 8 failed, log is in ..."; here with the jobs and (at most 3 of) their logs
    more=; [ ${#failed[@]} -le 3 ] || more=", ..."
    logs=$(printf '%s, ' "${failed_logs[@]:0:3}")
    echo "$me: ${#failed[@]} / $n failed (jobs ${failed[*]}), log is in ${logs%, }$more" >&2
  fi
  exit 1
fi
exit 0
