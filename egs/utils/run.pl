#!/usr/bin/env bash
# utils/run.pl -- Kaldi's utils/run.pl, under its name and calling convention,
# as a thin wrapper of utils/run.sh (our own bash; the .pl name is what Kaldi's
# cmd.sh files and scripts call):
#
#   utils/run.pl [options] JOB=1:N <log-with-JOB> <command> [<args>...]
#   utils/run.pl [options] <log> <command> [<args>...]                 (one job)
#   e.g. utils/run.pl --max-jobs-run 4 JOB=1:8 exp/log/acc.JOB.log \
#          gmm-global-acc-stats 1.dubm "ark:feats.JOB.ark" 1.JOB.acc
#
# Options (Kaldi's, "--name value" or "--name=value"; see launcher_args.sh):
#   --max-jobs-run N | -tc N   at most N jobs at once (default: one per CPU,
#                              or one per visible GPU with --gpu)
#   --gpu N                    N > 0: the jobs are spread over the visible GPUs
#                              ($CUDA_VISIBLE_DEVICES, else nvidia-smi -L),
#                              job j on the ((j - first) mod #GPUs)-th, at most
#                              one job per GPU at a time (Kaldi's run.pl
#                              stacks them all on the default GPU)
#   --num-threads N            reported in the logs' "# Accounting:" line
#   --mem M, --time T, --config F, -V, -sync y, -pe smp N   accepted (no
#                              limits are enforced on one machine)
# Each log is Kaldi's: "# <command>", "# Started at <date>", the output,
# "# Accounting: time=<s> threads=<n>", "# Ended (code <rc>) at <date>,
# elapsed time <s> seconds".  Exit status 0 if every job exited 0, else 1
# with one line naming the failed jobs and their logs.
set -uo pipefail
me=run.pl
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=launcher_args.sh
. "$here/launcher_args.sh"
la_parse "$@" || exit 1
[ ${#la_extra[@]} -eq 0 ] || echo "$me: warning: ignoring options ${la_extra[*]} (they are for a queue)" >&2
args=()
[ -z "$la_max_jobs_run" ] || args+=(--max-jobs-run "$la_max_jobs_run")
[ "$la_gpu" = 0 ] || args+=(--gpu "$la_gpu")
[ -z "$la_num_threads" ] || args+=(--num-threads "$la_num_threads")
export GH_LAUNCHER_NAME=$me  # run.sh's messages name run.pl
if [ "${la_num_threads:-1}" = 1 ]; then
  exec "$here/run.sh" "${args[@]}" ${la_jobspec:+"$la_jobspec"} "${la_rest[@]}"
fi
# --num-threads N: run.sh's logs say "threads=1"; Kaldi's say threads=N.  Run
# run.sh as a child (passing on the signals that stop it, so that it stops
# its jobs), then put N into each job's "# Accounting:" line.
"$here/run.sh" "${args[@]}" ${la_jobspec:+"$la_jobspec"} "${la_rest[@]}" &
pid=$!
# (a background child ignores SIGINT: Ctrl-C is passed on as SIGTERM)
trap 'kill -TERM $pid 2>/dev/null' INT TERM
trap 'kill -HUP $pid 2>/dev/null' HUP
while :; do wait "$pid"; rc=$?; kill -0 "$pid" 2>/dev/null || break; done
log=${la_rest[0]}; jobname=${la_jobspec%%=*}; range=${la_jobspec#*=}
first=1; last=1; [ -z "$la_jobspec" ] || { first=${range%%:*}; last=${range#*:}; }
for ((j = first; j <= last; j++)); do
  jlog=$log; [ -z "$la_jobspec" ] || jlog=${log//$jobname/$j}
  [ -f "$jlog" ] && sed -i "s/^# Accounting: time=\([0-9]*\) threads=1\$/# Accounting: time=\1 threads=$la_num_threads/" "$jlog"
done
exit $rc
