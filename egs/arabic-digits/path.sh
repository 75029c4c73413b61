# shellcheck shell=bash
# path.sh -- Kaldi's path.sh for this recipe: gmmhmm's tools (bin/, or $GH_BIN)
# and the launchers (egs/utils: run.pl, slurm.pl, queue.pl) first on PATH.
# Source it from the recipe's directory or anywhere:  . egs/<recipe>/path.sh
gh_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PATH="${GH_BIN:-$gh_root/bin}:$gh_root/egs/utils:$PATH"
export LC_ALL=C
