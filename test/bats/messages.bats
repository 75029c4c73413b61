#!/usr/bin/env bats
# Messages a new user meets first: an unknown option is one error
# line naming the nearest option; per-utterance labels read as an alignment,
# swapped arguments and ark:/scp: mix-ups get a hint; the covariance floor
# warning says how many Gaussians, the worst condition number and the option.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  FIX=$GH_SHARED/data/kaldi-fixtures
  T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/messages.XXXXXX")
  cd "$T"
}

teardown() {
  cd /; rm -rf "$T"
}

# "$output" is one line "<tool>: ERROR: ..." containing every argument.
one_error_line() {
  [ "$status" -ne 0 ]
  [ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ]
  [[ "$output" == *"ERROR:"* ]]
  for s in "$@"; do [[ "$output" == *"$s"* ]] || { echo "missing: $s in: $output"; return 1; }; done
}

feats() {  # f.ark, f.scp, m.mdl (2 Gaussians) from Kaldi's MFCC fixture
  "$BIN/copy-feats" "ark:$FIX/mfcc.ark" ark,scp:f.ark,f.scp 2>/dev/null
  "$BIN/gmm-init" --device=cpu --num-gauss=2 scp:f.scp m.mdl 2>/dev/null
}

@test "unknown option: one error line, nearest option named, no usage dump" {
  run "$BIN/gmm-est-gpu" --num-iter=3 a b c
  one_error_line "unknown option '--num-iter'" "did you mean --num-iters?"
  run "$BIN/gmm-init" --cov=full a b
  one_error_line "unknown option '--cov'" "did you mean --cov-type?"
  run "$BIN/gmm-init" --num_gaus=3 a b
  one_error_line "did you mean --num-gauss?"
  # nothing near: no suggestion, still one line
  run "$BIN/gmm-init" --zzzzzz=1 a b
  one_error_line "unknown option '--zzzzzz'" "--help lists the options"
  [[ "$output" != *"did you mean"* ]]
}

@test "per-utterance labels with --label-type=ali: hint to --label-type=utt" {
  feats
  "$BIN/feat-to-len" scp:f.scp ark,t:- 2>/dev/null | awk '{ print $1, NR % 2 }' > utt.txt
  run "$BIN/gmm-init" --device=cpu --num-gauss=1 --num-pdfs=2 --labels=ark,t:utt.txt scp:f.scp m2.mdl
  one_error_line "alignment has 1 frames" "use --label-type=utt"
  [ ! -e m2.mdl ]
  "$BIN/gmm-init" --device=cpu --num-gauss=1 --num-pdfs=2 --labels=ark,t:utt.txt --label-type=utt scp:f.scp m2.mdl 2>/dev/null
  [ -s m2.mdl ]
}

@test "swapped arguments: a table rspecifier or an archive where the model goes" {
  feats
  run "$BIN/gmm-score-gpu" --device=cpu scp:f.scp m.mdl ark:ll.ark
  one_error_line "cannot open 'scp:f.scp'" "arguments swapped" "model comes first"
  run "$BIN/gmm-score-gpu" --device=cpu f.ark m.mdl ark:ll.ark
  one_error_line "not a GMM model" "the model file is the first argument"
  run "$BIN/hmm-forward" ark:f.ark x y
  one_error_line "arguments swapped"
  [ ! -e ll.ark ]
}

@test "ark:/scp: mix-ups and bare file names get a hint" {
  feats
  run "$BIN/feat-to-len" ark:f.scp ark,t:-
  one_error_line "did you mean scp:f.scp?"
  run "$BIN/feat-to-len" scp:f.ark ark,t:-
  one_error_line "did you mean ark:f.ark?"
  run "$BIN/feat-to-len" f.scp ark,t:-
  one_error_line "invalid rspecifier 'f.scp'" "did you mean scp:f.scp?"
  run "$BIN/gmm-score-gpu" --device=cpu m.mdl scp:f.scp out.ark
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: invalid wspecifier 'out.ark' (did you mean ark:out.ark?)"* ]]
  [ ! -e out.ark ]
  run "$BIN/gmm-score-gpu" --device=cpu m.mdl ark:f.scp ark:ll.ark
  [ "$status" -ne 0 ]
  [[ "$output" == *"did you mean scp:f.scp?"* ]]
}

@test "full-covariance floor warning: Gaussians floored, worst condition number, --max-condition" {
  # two clusters, per-dimension standard deviations 1000, 1, 3: condition ~1e6
  python3 - <<'EOF'
import numpy as np, kaldiio
rng = np.random.default_rng(0)
d = {}
for u in range(4):
    x = rng.normal(size=(500, 3)) * np.array([1000., 1., 3.])
    x[:250] += np.array([5000, 10, 10])
    d['u%d' % u] = x.astype(np.float32)
kaldiio.save_ark('fc.ark', d)
EOF
  run "$BIN/gmm-init" --device=cpu --cov-type=full --num-gauss=2 --num-iters=2 ark:fc.ark fc.mdl
  [ "$status" -eq 0 ]
  line=$(grep "eigenvalues floored" <<<"$output" | tail -1)
  [[ "$line" =~ floored\ in\ 2\ Gaussians:\ worst\ condition\ number\ ([0-9.e+]+) ]]
  # the worst condition number is that of the larger cluster's covariance, about (1000/1)^2
  awk -v c=${BASH_REMATCH[1]} 'BEGIN { exit !(c > 3e5 && c < 3e6) }'
  [[ "$line" == *"--max-condition=10000"* ]]
  run "$BIN/gmm-est-gpu" --device=cpu --max-condition=1e6 --num-iters=1 fc.mdl ark:fc.ark fc2.mdl
  [ "$status" -eq 0 ]
  [[ "$output" != *"floored"* ]]
}

@test "full covariances: --max-condition=1e6 --min-variance=1e-6 matches scikit-learn (doc/gmm-init.md); the defaults floor" {
  python3 -c 'import sklearn, kaldiio' 2>/dev/null || skip "scikit-learn/kaldiio not installed"
  # two well-separated 4-D clusters, axis-aligned covariances with standard deviations 700 .. 1
  # (condition numbers 2.2e5 and 4.8e5), means -3000 and 3000 in the first dimension
  python3 - <<'EOF2'
import warnings
import numpy as np, kaldiio
from sklearn.mixture import GaussianMixture
rng = np.random.default_rng(0)
sd = np.array([700., 30., 5., 1.])
mu = np.array([3000., 0, 0, 0])
X = np.concatenate([rng.normal(size=(3000, 4)) * sd - mu, rng.normal(size=(3000, 4)) * sd * [1, 0.5, 2, 1.5] + mu])
X = X.astype(np.float32)
kaldiio.save_ark('sk.ark', {'u%d' % i: X[i * 1000:(i + 1) * 1000] for i in range(6)})
X = X.astype(np.float64)
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    g = GaussianMixture(2, covariance_type='full', reg_covar=1e-6, random_state=0, max_iter=1000, tol=1e-10).fit(X)
open('sk.txt', 'w').write('%.6f\n' % g.score(X))
EOF2
  sk=$(cat sk.txt)
  ours() {  # the average log-likelihood per frame of the model after gmm-init's 20 EM iterations
    "$BIN/gmm-init" --device=cpu --cov-type=full --num-gauss=2 --num-iters=20 "$@" ark:sk.ark m.mdl 2>/dev/null
    "$BIN/gmm-est-gpu" --device=cpu --num-iters=1 "$@" m.mdl ark:sk.ark m2.mdl 2>&1 |
      grep -o 'avg loglike per frame [-0-9.]*' | tail -1 | awk '{ print $NF }'
  }
  matched=$(ours --max-condition=1e6 --min-variance=1e-6)
  dflt=$(ours)
  echo "scikit-learn $sk, ours matched $matched, defaults $dflt"
  awk -v a="$matched" -v b="$sk" 'BEGIN { d = a - b; exit !(d < 0.001 && d > -0.001) }'
  awk -v a="$dflt" -v b="$sk" 'BEGIN { exit !(b - a > 1) }'
}
