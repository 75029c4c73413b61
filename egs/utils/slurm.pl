#!/usr/bin/env bash
# utils/slurm.pl -- Kaldi's utils/slurm.pl calling convention as a thin
# wrapper of utils/slurm.sh (our own bash): the jobs run as one Slurm job
# array submitted with sbatch and waited for.
#
#   utils/slurm.pl [options] JOB=1:N <log-with-JOB> <command> [<args>...]
#   utils/slurm.pl [options] <log> <command> [<args>...]               (one job)
#
# Options (Kaldi's, "--name value" or "--name=value"; see launcher_args.sh):
#   --max-jobs-run N | -tc N   at most N array tasks at once (--array=a-b%N)
#   --gpu N                    --gres=gpu:N (Slurm sets CUDA_VISIBLE_DEVICES)
#   --num-threads N | -pe smp N   --cpus-per-task=N
#   --mem M                    --mem=M
#   --time T                   --time=T
#   --config F, -V, -sync y    accepted and ignored (partition, account: set
#                              SBATCH_PARTITION, SBATCH_ACCOUNT)
# Logs carry Kaldi's header lines; see utils/slurm.sh for the details.
set -uo pipefail
me=slurm.pl
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=launcher_args.sh
. "$here/launcher_args.sh"
la_parse "$@" || exit 1
[ ${#la_extra[@]} -eq 0 ] || echo "$me: warning: ignoring options ${la_extra[*]} (Grid Engine options; set SBATCH_* variables for sbatch)" >&2
args=()
[ -z "$la_max_jobs_run" ] || args+=(--max-jobs-run "$la_max_jobs_run")
[ "$la_gpu" = 0 ] || args+=(--gpu "$la_gpu")
[ -z "$la_num_threads" ] || args+=(--num-threads "$la_num_threads")
[ -z "$la_mem" ] || args+=(--mem "$la_mem")
[ -z "$la_time" ] || args+=(--time "$la_time")
export GH_LAUNCHER_NAME=$me  # slurm.sh's messages name slurm.pl
exec "$here/slurm.sh" "${args[@]}" ${la_jobspec:+"$la_jobspec"} "${la_rest[@]}"
