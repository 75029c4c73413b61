# shellcheck shell=bash disable=SC2034,SC2154  # sets la_*; $me is the sourcing launcher's
# utils/launcher_args.sh -- sourced by utils/run.pl, utils/slurm.pl and
# utils/queue.pl: parses Kaldi's launcher command line (our own bash, after
# the conventions of Kaldi's egs/wsj/s5/utils/run.pl and queue.pl):
#
#   <launcher> [options] [JOB=1:N | JOB=N] <log-file> <command> [<args>...]
#
# Options come as "--name value" (Kaldi's form) or "--name=value", and may
# also come after the JOB range (Kaldi parses twice):
#   --max-jobs-run N | -tc N   at most N jobs at once
#   --gpu N                    GPUs per job (0: none)
#   --num-threads N            threads per job (SGE: -pe smp N; Slurm: --cpus-per-task)
#   --mem M                    memory per job (e.g. 4G)
#   --time T                   time limit (Slurm)
#   --config F                 Kaldi's conf/queue.conf (queue.pl reads it)
#   -pe smp N                  Grid Engine's form of --num-threads
#   -V, -sync y                accepted and ignored
#   any other "-x value"       kept in la_extra (queue.pl passes them to qsub;
#                              run.pl and slurm.pl ignore them with a warning)
# Sets la_max_jobs_run, la_gpu, la_num_threads, la_mem, la_time, la_config,
# la_extra (array), la_jobspec ("JOB=a:b" or empty) and la_rest (array: the
# log file, the command and its arguments).  Returns 1 after one error line
# on stderr (prefixed with $me) on a bad option or job range.
la_parse() {
  la_max_jobs_run=; la_gpu=0; la_num_threads=; la_mem=; la_time=; la_config=; la_jobspec=; la_extra=()
  local pass sw val
  for pass in 1 2; do  # twice: options may follow the JOB range (as Kaldi's parser)
    while [ $# -ge 2 ] && [[ $1 == -* ]]; do
      sw=$1; shift
      if [[ $sw == --*=* ]]; then val=${sw#*=}; sw=${sw%%=*}
      elif [ "$sw" = -V ]; then continue
      else val=$1; shift
      fi
      [[ $val != --* ]] || echo "$me: warning: suspicious argument '$val' to $sw; starts with '--'" >&2
      case $sw in
        --max-jobs-run|-tc)
          [[ $val =~ ^[1-9][0-9]*$ ]] || { echo "$me: invalid option $sw $val (a positive number of jobs)" >&2; return 1; }
          la_max_jobs_run=$val ;;
        --gpu)
          [[ $val =~ ^[0-9]+$ ]] || { echo "$me: invalid option --gpu $val (a number of GPUs per job)" >&2; return 1; }
          la_gpu=$val ;;
        --num-threads)
          [[ $val =~ ^[1-9][0-9]*$ ]] || { echo "$me: invalid option --num-threads $val" >&2; return 1; }
          la_num_threads=$val ;;
        --mem) la_mem=$val ;;
        --time) la_time=$val ;;
        --config) la_config=$val ;;
        -sync) ;;
        -pe)  # -pe <env> <slots>
          [ $# -ge 1 ] || { echo "$me: option -pe needs two values (e.g. -pe smp 4)" >&2; return 1; }
          [[ $1 =~ ^[1-9][0-9]*$ ]] || { echo "$me: invalid option -pe $val $1" >&2; return 1; }
          la_num_threads=$1; shift ;;
        --*) echo "$me: unknown option $sw (options: --max-jobs-run --gpu --num-threads --mem --time --config)" >&2
             return 1 ;;
        *) la_extra+=("$sw" "$val") ;;
      esac
    done
    if [[ ${1:-} =~ ^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+):([0-9]+)$ ]]; then
      if [ "${BASH_REMATCH[2]}" -gt "${BASH_REMATCH[3]}" ]; then echo "$me: invalid job range $1" >&2; return 1; fi
      if [ "${BASH_REMATCH[2]}" -le 0 ]; then
        echo "$me: invalid job range $1, start must be strictly positive (as Kaldi requires, for GridEngine)" >&2; return 1
      fi
      la_jobspec=$1; shift
    elif [[ ${1:-} =~ ^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+)$ ]]; then
      [ "${BASH_REMATCH[2]}" -gt 0 ] || { echo "$me: invalid job index $1 (must be >= 1)" >&2; return 1; }
      la_jobspec=${BASH_REMATCH[1]}=${BASH_REMATCH[2]}:${BASH_REMATCH[2]}; shift
    elif [[ ${1:-} =~ .+=.*:.* ]]; then
      echo "$me: warning: suspicious first argument $1 (a job range is e.g. JOB=1:4)" >&2
    fi
  done
  la_rest=("$@")
  if [ ${#la_rest[@]} -lt 2 ]; then
    echo "$me: usage: $me [options] [JOB=1:N] <log-file> <command> [<args>...]  (e.g. $me JOB=1:4 exp/log/acc.JOB.log gmm-acc-stats-gpu ...)" >&2
    return 1
  fi
  return 0
}
