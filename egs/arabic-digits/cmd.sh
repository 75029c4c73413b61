# shellcheck shell=bash
# cmd.sh -- how this recipe's parallel jobs are launched (Kaldi's cmd.sh): pass
# one to run.sh, e.g.  . ./path.sh; . ./cmd.sh; ./run.sh --cmd "$train_cmd"
# (path.sh puts run.pl, slurm.pl and queue.pl on PATH)
# On this machine (the default; --gpu 1 spreads the jobs over the visible GPUs):
export train_cmd="run.pl"
export decode_cmd="run.pl"
export cuda_cmd="run.pl --gpu 1"
# On a Slurm cluster:
#   export train_cmd="slurm.pl --mem 2G"; export decode_cmd="slurm.pl --mem 4G"; export cuda_cmd="slurm.pl --gpu 1"
# On a Grid Engine cluster (needs qsub; options mapped by conf/queue.conf if given with --config):
#   export train_cmd="queue.pl --mem 2G"; export decode_cmd="queue.pl --mem 4G"; export cuda_cmd="queue.pl --gpu 1"
