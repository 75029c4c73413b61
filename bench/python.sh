#!/usr/bin/env bash
# bench/python.sh -- the Python package's rows of bench/RESULTS.md (P1-P3):
# gmmhmm.GaussianMixture(n_components=64|512, covariance_type='full'|'diag').fit
# on 50k x 20 and 1M x 40 against scikit-learn's, gmmhmm.GaussianHMM(8).fit on
# 1,000 sequences of 200-2,000 frames against hmmlearn's (all cores), same
# run, same initial parameters, fixed iterations; and the Python layer's
# overhead against the tool (gmm-train / hmm-train) called directly on the same
# files.  Details: bench/python_bench.py.  `make bench` runs it (PYTHON=0 skips).
# Usage (repository root, tools built):
#   DEVICE=cuda bench/python.sh                   # the full sizes on one GPU
#   DEVICE=cpu SIZES=20000x20 COMPS=64 SEQS=40 ITERS=5 bench/python.sh   # small, CPU
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GMMHMM_BIN=${GH_BIN:-$root/bin}
python3 -c 'import numpy, kaldiio, sklearn, hmmlearn' 2>/dev/null ||
  { echo "python: skipped (needs numpy, kaldiio, scikit-learn, hmmlearn: tools/install-deps.sh)"; exit 0; }
exec python3 "$root/bench/python_bench.py" --device "${DEVICE:-cuda}" --sizes "${SIZES:-50000x20,1000000x40}" \
  --comps "${COMPS:-64,512}" --types "${TYPES:-full,diag}" --iters "${ITERS:-10}" --states "${STATES:-8}" \
  --seqs "${SEQS:-1000}" --min-len "${MIN_LEN:-200}" --max-len "${MAX_LEN:-2000}"
