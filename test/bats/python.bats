#!/usr/bin/env bats
# The Python package gmmhmm (python/): test/python/test_gmmhmm.py under
# pytest on the CPU backend (against scikit-learn and hmmlearn from the same
# initial parameters, check_estimator, io round trips of our and Kaldi's
# files, bad input), pip install of the package, the README's example, and
# --tol / the one-HMM hmm-train of the tools themselves.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export GMMHMM_BIN=$BIN GH_SHARED
  export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  python3 -c 'import numpy, kaldiio, sklearn, hmmlearn, pytest' 2>/dev/null ||
    skip "needs python3 with numpy, kaldiio, scikit-learn, hmmlearn and pytest (tools/install-deps.sh)"
}

@test "gmmhmm (Python): scikit-learn and hmmlearn agreement, check_estimator, io, bad input (pytest)" {
  run python3 -m pytest -q -s -p no:cacheprovider "$ROOT/test/python/test_gmmhmm.py"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "gmmhmm (Python): pip install ./python into an empty folder, then the README's five-line example" {
  python3 -m pip install -q --no-deps --no-index --no-build-isolation --target "$T/site" "$ROOT/python" 2>"$T/pip.log" ||
    python3 -m pip install -q --no-deps --target "$T/site" "$ROOT/python" 2>>"$T/pip.log" ||
    { cat "$T/pip.log"; skip "pip cannot build the package here (no wheel/setuptools offline)"; }
  [ -f "$T/site/gmmhmm/__init__.py" ]
  # the five lines of the README's Python example, run from the installed copy (not the checkout)
  sed -n '/^<!-- python-example -->$/,/^<!-- \/python-example -->$/p' "$ROOT/README.md" | sed '1,2d;$d' | sed '$d' \
    > "$T/example.py"
  [ "$(wc -l < "$T/example.py")" -eq 5 ]
  echo 'print(gmmhmm.__file__)' >> "$T/example.py"
  cd "$T"
  PYTHONPATH=$T/site run python3 example.py
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"$T/site/gmmhmm/__init__.py"* ]]
}

@test "gmm-train / gmm-est-gpu --tol: the same stop for 1 and 2 ranks, the tools agree, the log says it" {
  python3 -c "
import sys; sys.path.insert(0, '$ROOT/python')
import numpy as np
from gmmhmm import _tools
rng = np.random.RandomState(0)
X = np.vstack([rng.randn(500, 3) + c for c in ([0, 0, 0], [4, 0, 0], [0, 4, 4])])
_tools.write_feats('$T/f.ark', X, [300, 600, 600])"
  "$BIN/gmm-init" --device=cpu --num-gauss=3 --num-iters=0 ark:$T/f.ark $T/0.mdl 2>/dev/null
  "$BIN/gmm-train" --device=cpu --num-iters=100 --tol=1e-4 --block-frames=400 $T/0.mdl ark:$T/f.ark $T/a.mdl 2>$T/a.log
  "$BIN/gmm-est-gpu" --device=cpu --num-iters=100 --tol=1e-4 --block-frames=400 $T/0.mdl ark:$T/f.ark $T/b.mdl 2>$T/b.log
  grep 'converged after' $T/a.log
  n=$(grep -c '^gmm-train: LOG: iteration [0-9]*: avg' $T/a.log)
  [ "$n" -gt 1 ] && [ "$n" -lt 100 ]
  grep -q "LOG: converged after $n iterations" $T/a.log
  grep -q "LOG: converged after $n iterations" $T/b.log
  cmp $T/a.mdl $T/b.mdl
  # stopping rule: the last change below tol, every earlier one at or above it
  grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.]*' $T/a.log | awk '{ print $7 }' |
    awk -v tol=1e-4 'NR > 1 { d = $1 - p; if (d < tol) nb++; last = d } { p = $1 } END { exit !(nb == 1 && last < tol) }'
  # --num-iters is the maximum: not converged, said so
  "$BIN/gmm-train" --device=cpu --num-iters=2 --tol=1e-12 $T/0.mdl ark:$T/f.ark $T/c.mdl 2>$T/c.log
  grep -q 'not converged after 2 iterations' $T/c.log
  if command -v mpirun >/dev/null && [ -z "${GH_SANITIZED:-}" ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
    mpirun --oversubscribe -np 2 "$BIN/gmm-train" --device=cpu --num-iters=100 --tol=1e-4 \
      --block-frames=400 $T/0.mdl ark:$T/f.ark $T/m.mdl 2>$T/m.log || { cat $T/m.log; false; }
    grep -q "LOG: converged after $n iterations" $T/m.log
    cmp $T/a.mdl $T/m.mdl
  fi
}

@test "hmm-train: one HMM without transcripts = the same run with a transcript per utterance; --tol stops it" {
  python3 -c "
import sys; sys.path.insert(0, '$ROOT/python')
import numpy as np
from gmmhmm import _tools
rng = np.random.RandomState(1)
X = np.vstack([rng.randn(100, 2) + c for c in ([0, 0], [3, 3], [0, 4])] * 4)
keys = _tools.write_feats('$T/f.ark', X, [150] * 8)
open('$T/text', 'w').write(''.join(k + ' m\n' for k in keys))"
  echo m > $T/names
  "$BIN/hmm-init-topo" --topology=ergodic --num-states=3 $T/names $T/0.hmm 2>/dev/null
  "$BIN/gmm-init" --device=cpu --num-gauss=3 --num-iters=0 ark:$T/f.ark $T/km.mdl 2>/dev/null
  "$BIN/gmm-copy" --split-gaussians $T/km.mdl $T/0.mdl 2>/dev/null
  "$BIN/hmm-train" --device=cpu --num-iters=5 $T/0.hmm $T/0.mdl ark:$T/f.ark $T/a.hmm $T/a.mdl 2>$T/a.log
  "$BIN/hmm-train" --device=cpu --num-iters=5 $T/0.hmm $T/0.mdl ark:$T/f.ark ark,t:$T/text $T/b.hmm $T/b.mdl 2>$T/b.log
  cmp $T/a.hmm $T/b.hmm
  cmp $T/a.mdl $T/b.mdl
  grep -q 'not converged after 5 iterations (no --tol' $T/a.log
  "$BIN/hmm-train" --device=cpu --num-iters=200 --tol=1e-6 $T/0.hmm $T/0.mdl ark:$T/f.ark $T/c.hmm $T/c.mdl 2>$T/c.log
  grep 'converged after' $T/c.log
  grep -q 'LOG: converged after' $T/c.log
  n=$(grep -c 'HMM total log-likelihood per frame' $T/c.log)
  [ "$n" -lt 200 ]
  # two HMMs and no transcripts: one clear error
  printf 'm\nn\n' > $T/names2
  "$BIN/hmm-init-topo" --topology=ergodic --num-states=3 $T/names2 $T/2.hmm 2>/dev/null
  run "$BIN/hmm-train" --device=cpu $T/2.hmm $T/0.mdl ark:$T/f.ark $T/d.hmm $T/d.mdl
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"has 2 HMMs: without a transcripts table it must have exactly one"* ]]
  [ ! -e $T/d.hmm ] && [ ! -e $T/d.mdl ]
}
