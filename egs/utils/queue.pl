#!/usr/bin/env bash
# utils/queue.pl -- Kaldi's utils/queue.pl calling convention on a Grid Engine
# (SGE, Son of Grid Engine, OGE) cluster: the jobs are submitted with qsub as
# one array job and waited for (qsub -sync y).  Our own bash; the options are
# parsed by launcher_args.sh as for utils/run.pl and utils/slurm.pl.
#
#   utils/queue.pl [options] JOB=1:N <log-with-JOB> <command> [<args>...]
#   utils/queue.pl [options] <log> <command> [<args>...]               (one job)
#
# Without qsub on PATH this is an error that points to utils/slurm.pl (Slurm)
# and utils/run.pl (one machine).
#
# Options are turned into qsub options by Kaldi's queue.conf rules, from
# --config F (Kaldi's conf/queue.conf format) or, without it, Kaldi's default:
#   command qsub -v PATH -cwd -S /bin/bash -j y -l arch=*64*
#   option mem=* -l mem_free=$0,ram_free=$0
#   option mem=0
#   option num_threads=* -pe smp $0
#   option num_threads=1
#   option max_jobs_run=* -tc $0
#   option gpu=* -l gpu=$0 -q g.q
#   option gpu=0
# ("option name=value opts" for one value, "name=*" for any other with $0 the
# value; "default name=value" gives an option that the command line did not.)
# Other "-x value" options (e.g. -q all.q, -l hostname=b01) go to qsub as
# they are.  The array's task k runs the command with JOB replaced by k, with
# bash and pipefail, in the current directory, writing Kaldi's log header
# lines ("# <command>", "# Started at ...", "# Accounting: ...", "# Ended
# (code N) at ..."); Grid Engine's own output goes to <log-dir>/q/<name>.<k>.out.
# Exit status 0 if every task exited 0; otherwise 1 with one line naming the
# failed jobs and their logs.
set -uo pipefail
me=queue.pl
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=launcher_args.sh
. "$here/launcher_args.sh"
la_parse "$@" || exit 1
command -v qsub >/dev/null 2>&1 || {
  echo "$me: qsub not found: this machine has no Grid Engine client. On a Slurm cluster use utils/slurm.pl (the same options), on one machine utils/run.pl (e.g. in cmd.sh: export train_cmd=\"utils/slurm.pl --mem 2G\")" >&2
  exit 1
}

# --- queue.conf rules ---
qsub_cmd=; rules=(); defaults=()
read_config() {  # lines: command ... | option name=value|* ... | default name=value
  local line kw rest n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1)); line=${line%%#*}
    read -r kw rest <<< "$line"
    case $kw in
      '') ;;
      command) qsub_cmd=$rest ;;
      option) rules+=("$rest") ;;
      default) defaults+=("$rest") ;;
      *) echo "$me: $1, line $n: expected 'command', 'option' or 'default', got '$kw'" >&2; return 1 ;;
    esac
  done < "$1"
}
if [ -n "$la_config" ]; then
  [ -r "$la_config" ] || { echo "$me: cannot read --config $la_config" >&2; exit 1; }
  read_config "$la_config" || exit 1
else
  qsub_cmd='qsub -v PATH -cwd -S /bin/bash -j y -l arch=*64*'
  rules=('mem=* -l mem_free=$0,ram_free=$0' 'mem=0' 'num_threads=* -pe smp $0' 'num_threads=1'
         'max_jobs_run=* -tc $0' 'gpu=* -l gpu=$0 -q g.q' 'gpu=0')
fi
[ -n "$qsub_cmd" ] || { echo "$me: $la_config has no 'command' line (e.g. command qsub -v PATH -cwd -S /bin/bash -j y)" >&2; exit 1; }
declare -A given=()
[ -z "$la_mem" ] || given[mem]=$la_mem
[ -z "$la_num_threads" ] || given[num_threads]=$la_num_threads
[ -z "$la_max_jobs_run" ] || given[max_jobs_run]=$la_max_jobs_run
[ "$la_gpu" = 0 ] || given[gpu]=$la_gpu
[ -z "$la_time" ] || given[time]=$la_time
for d in "${defaults[@]}"; do
  d=${d%% *}; [ -n "${given[${d%%=*}]+x}" ] || given[${d%%=*}]=${d#*=}
done
qsub_opts=()
for name in "${!given[@]}"; do
  value=${given[$name]}; exact=; wild=; found=0
  for r in "${rules[@]}"; do
    key=${r%% *}; opts=; [[ $r == *" "* ]] && opts=${r#* }
    if [ "$key" = "$name=$value" ]; then exact=$opts; found=2; break; fi
    if [ "$key" = "$name=*" ]; then wild=$opts; found=1; fi
  done
  case $found in
    2) opts=$exact ;;
    1) opts=${wild//\$0/$value} ;;
    0) echo "$me: option --${name//_/-} $value is not described in ${la_config:-the default queue.conf} (add an 'option $name=* ...' line)" >&2; exit 1 ;;
  esac
  read -r -a words <<< "$opts"; qsub_opts+=("${words[@]}")
done
qsub_opts+=("${la_extra[@]}")

# --- the job ---
set -- "${la_rest[@]}"
jobname=__GH_NO_JOB__; first=1; last=1
if [ -n "$la_jobspec" ]; then
  jobname=${la_jobspec%%=*}; range=${la_jobspec#*=}; first=${range%%:*}; last=${range#*:}
fi
log=$1; shift
if [ "$last" -gt "$first" ] && [[ $log != *"$jobname"* ]]; then
  echo "$me: the log name $log must contain $jobname when running several jobs" >&2; exit 1
fi
cmd=
[ $# -eq 1 ] && cmd=$1 || for a in "$@"; do
  if [[ $a =~ ^[^[:space:]]+$ ]]; then cmd+="$a "; else cmd+="'${a//\'/\'\\\'\'}' "; fi
done
logdir=$(dirname "$log"); mkdir -p "$logdir/q" || exit 1
logdir=$(cd "$logdir" && pwd); log=$logdir/$(basename "$log")
name=$(basename "$log" .log); name=${name//.$jobname/}; name=${name//$jobname/}; [ -n "$name" ] || name=job
qdir=$logdir/q; script=$qdir/$name.sh
rm -f "$qdir/$name".*.rc "$qdir/$name".*.out
threads=${la_num_threads:-1}
{
  echo '#!/bin/bash'
  echo "# $me: $cmd"
  echo "cmd=$(printf %q "$cmd")"
  echo "log=$(printf %q "$log")"
  echo "jobname=$(printf %q "$jobname")"
  echo "first=$first; threads=$threads"
  echo "rcbase=$(printf %q "$qdir/$name")"
  cat <<'EOS'
j=${SGE_TASK_ID:-undefined}; [[ $j =~ ^[0-9]+$ ]] || j=$first
cmd=${cmd//$jobname/$j}; log=${log//$jobname/$j}
start=$(date +%s)
{
  echo "# $cmd"
  echo "# Started at $(date) on $(hostname) (Grid Engine job ${JOB_ID:-?}.$j)"
} > "$log"
bash -o pipefail -c "$cmd" >> "$log" 2>&1 < /dev/null
rc=$?
el=$(( $(date +%s) - start ))
echo "# Accounting: time=$el threads=$threads" >> "$log"
echo "# Ended (code $rc) at $(date), elapsed time $el seconds" >> "$log"
echo $rc > "$rcbase.$j.rc"
exit $rc
EOS
} > "$script"
chmod +x "$script"

read -r -a qsub_words <<< "$qsub_cmd"
sub=("${qsub_words[@]}" "${qsub_opts[@]}" -N "$name" -o "$qdir/$name.\$TASK_ID.out" -sync y)
[ -z "$la_jobspec" ] || sub+=(-t "$first-$last")
"${sub[@]}" "$script" > "$qdir/$name.qsub.out" 2>&1 &
qsub_pid=$!
# shellcheck disable=SC2154  # id is set inside the trap
cancel() {  # cancel <signal number>: exits 128 + number (SIGINT 130, SIGTERM 143), as a shell does
  trap '' INT TERM
  kill $qsub_pid 2>/dev/null; id=$(grep -o "job[-array]* [0-9]*" "$qdir/$name.qsub.out" | head -1 | grep -o "[0-9]*$"); [ -z "$id" ] || qdel "$id" >/dev/null 2>&1; echo "$me: interrupted; deleted Grid Engine job ${id:-(not yet submitted)}" >&2; exit $(( 128 + $1 ))
}
trap 'cancel 2' INT
trap 'cancel 15' TERM
wait $qsub_pid; qsub_rc=$?
trap - INT TERM
failed=(); failed_logs=()
for ((j = first; j <= last; j++)); do
  rc=$(cat "$qdir/$name.$j.rc" 2>/dev/null || echo none)
  [ "$rc" = 0 ] || { failed+=("$j"); failed_logs+=("${log//$jobname/$j}"); }
done
if [ ${#failed[@]} -gt 0 ]; then
  n=$(( last - first + 1 )); more=; [ ${#failed[@]} -le 3 ] || more=", ..."
  logs=$(printf '%s, ' "${failed_logs[@]:0:3}")
  if [ ${#failed[@]} -eq $n ] && ! ls "$qdir/$name".*.rc >/dev/null 2>&1; then
    echo "$me: no task ran (qsub exited $qsub_rc: $(head -c 300 "$qdir/$name.qsub.out" | tr '\n' ' ')); script $script" >&2
  else
    echo "$me: ${#failed[@]} / $n failed (jobs ${failed[*]}), log is in ${logs%, }$more (Grid Engine's output: $qdir/$name.<job>.out)" >&2
  fi
  exit 1
fi
exit 0
