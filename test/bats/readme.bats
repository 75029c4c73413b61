#!/usr/bin/env bats
# The README's first-screen example: "your own features with
# kaldiio", run exactly as written (the lines between the kaldiio-example
# markers), and its output checked: one frames x 1 matrix per utterance, whose
# mean equals the average log-likelihood per frame gmm-est-gpu reports for the
# same model (two tools, two code paths: within 1e-4 nats).

setup() {
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  export PATH="${GH_BIN:-$ROOT/bin}:$PATH"
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  cd "$T"
}

@test "README: the kaldiio example runs as written" {
  python3 -c 'import kaldiio' 2>/dev/null || skip "kaldiio not installed"
  sed -n '/^<!-- kaldiio-example -->$/,/^<!-- \/kaldiio-example -->$/p' "$ROOT/README.md" | sed '1,2d;$d' | sed '$d' > example.sh
  [ "$(wc -l < example.sh)" -eq 4 ]
  run bash -e example.sh
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"{'utt0': (300, 1), 'utt1': (300, 1), 'utt2': (300, 1), 'utt3': (300, 1)}"* ]]
  ours=$(gmm-est-gpu --num-iters=1 final.mdl scp:feats.scp /dev/null 2>&1 | grep -o 'avg loglike per frame [-0-9.]*' | head -1 | awk '{ print $NF }')
  python3 - "$ours" <<'PY'
import sys, numpy as np, kaldiio
m = np.mean(np.concatenate([v[:, 0] for _, v in kaldiio.load_ark('loglikes.ark')]))
assert np.isfinite(m) and abs(m - float(sys.argv[1])) < 1e-4, (m, sys.argv[1])
PY
}
