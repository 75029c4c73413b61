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
  one_error_line "not a GMM model" "a GMM model is the first argument"
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

@test "full-covariance floor: a LOG line (Gaussians floored, worst condition number, --max-condition), no warning at Kaldi's defaults" {
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
  [[ "$line" == *": LOG: "* ]]
  [[ "$line" =~ floored\ in\ 2\ Gaussians:\ worst\ condition\ number\ ([0-9.e+]+) ]]
  # the worst condition number is that of the larger cluster's covariance, about (1000/1)^2
  awk -v c=${BASH_REMATCH[1]} 'BEGIN { exit !(c > 3e5 && c < 3e6) }'
  [[ "$line" == *"--max-condition=10000"* ]]
  [[ "$output" != *"WARNING"* ]]
  # Kaldi's sid recipe: fgmm-global-acc-stats + fgmm-global-est with Kaldi's own defaults: no warning
  "$BIN/gmm-init" --device=cpu --cov-type=full --num-gauss=2 --num-iters=0 --global-form ark:fc.ark fc.ubm 2>/dev/null
  "$BIN/fgmm-global-acc-stats" fc.ubm ark:fc.ark fc.acc 2>/dev/null
  run "$BIN/fgmm-global-est" fc.ubm fc.acc fc2.ubm
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"eigenvalues floored"* ]]
  [[ "$output" != *"WARNING"* ]]
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

@test "--help examples: every tool they name exists; no table specifier where a plain file goes" {
  # Each tool's examples ("e.g.:" up to a blank line or "Options:", "\"-continued lines joined) are
  # read as shell words.  (1) A word shaped like one of this toolkit's tool names (gmm-, fgmm-,
  # hmm-, ali-, copy-, compute-, feat-to-, ... with no '.' or '/'), anywhere, quoted pipes
  # included, must be a tool in bin/.  (2) A command of a tool in bin/ is aligned with its
  # "Usage:" line (the required arguments, or all of them; skipped with "..."); an argument
  # whose slot names no rspecifier/wspecifier (<model-out>, <stats-in>) must not be a table
  # specifier (ark:..., scp:..., ark,t:...).
  run python3 - "$BIN" <<'PY'
import os, re, shlex, subprocess, sys
bindir = sys.argv[1]
tools = sorted(os.listdir(bindir))
prefixes = ('gmm-', 'fgmm-', 'hmm-', 'ali-', 'copy-', 'compute-', 'apply-', 'add-', 'feat-to-',
            'select-', 'subset-', 'subsample-', 'splice-', 'paste-', 'transform-', 'matrix-', 'fc-')
table = re.compile(r'^(ark|scp)(,[a-z]+)*:')
problems, checked = [], 0
def usage_slots(text, tool):
    m = re.search(r'^\s*Usage:\s+' + re.escape(tool) + r'\s+(.*)$', text, re.M)
    if not m: return None
    u = m.group(1)
    # nested optional arguments, OpenFst's "[in.fst [out.fst]]": one slot each
    while re.search(r'\[[^\[\]]*\[[^\[\]]*\]\]', u):
        u = re.sub(r'\[([^\[\]]*)\[([^\[\]]*)\]\]', r'[\1] [\2]', u)
    # an optional group of several arguments, Kaldi's "[<old-tree> <old-model>]": one slot each
    while re.search(r'\[(<[^>]*>)\s+(<[^\]]*)\]', u):
        u = re.sub(r'\[(<[^>]*>)\s+(<[^\]]*)\]', r'[\1] [\2]', u)
    words = re.findall(r'\[[^\]]*\]|\([^)]*\)|<[^>]*>|\S+', u)
    slots = []
    for w in words:
        if w.startswith('[options') or w == '[options...]' or w.startswith('[--'): continue
        if '...' in w: return None
        slots.append((w.startswith('['), 'specifier' in w, w))
    return slots
for tool in tools:
    text = subprocess.run([os.path.join(bindir, tool), '--help'], capture_output=True, text=True).stdout
    text += subprocess.run([os.path.join(bindir, tool), '--help'], capture_output=True, text=True).stderr
    lines, block = text.split('\n'), []
    on = False
    for l in lines:
        if re.match(r'^\s*e\.g\.', l): on = True
        if on and (not l.strip() or l.startswith('Options:')): on = False
        if on: block.append(l)
    joined = re.sub(r'\\\n', ' ', '\n'.join(block))
    for l in joined.split('\n'):
        l = re.sub(r'^\s*(e\.g\.:?|or:)\s*', '', l)
        l = re.sub(r'\s#\s.*$', '', l)
        if not l.strip() or not re.match(r'^\s*[a-z]', l): continue  # prose ("--split-gaussians: ...")
        try:
            lex = shlex.shlex(l, posix=True, punctuation_chars='|;&<>')
            lex.whitespace_split = True
            words = list(lex)
        except ValueError:
            problems.append('%s: cannot parse example: %s' % (tool, l)); continue
        # (1) tool-shaped words, inside quoted strings too
        for w in words:
            for part in re.split(r'[\s:=|]+', w):
                if part.startswith(prefixes) and re.fullmatch(r'[a-z0-9]+(-[a-z0-9]+)+', part) and part not in tools:
                    problems.append('%s: example names %s, which is not a tool: %s' % (tool, part, l.strip()))
        # (2) each command segment of a tool in bin/
        seg = []
        for w in words + ['|']:
            if w in ('|', ';', '&&', '>', '<', '&'):
                while seg and seg[0] in ('mpirun', 'srun') or (seg and seg[0].startswith('-')) or (seg and seg[0].isdigit()):
                    seg.pop(0)
                if seg and seg[0] in tools:
                    slots = usage_slots(text if seg[0] == tool else '', seg[0]) if seg[0] == tool else None
                    pos = [a for a in seg[1:] if not a.startswith('--') or a == '-']
                    if slots:
                        req = [s for s in slots if not s[0]]
                        use = req if len(pos) == len(req) else slots if len(pos) == len(slots) else None
                        trailing = all(o for o, _, _ in slots[len(req):])  # optional slots all after the required
                        if use is None and trailing and len(req) < len(pos) < len(slots):
                            use = slots[:len(pos)]  # the first optional slots filled, in order
                        if use is None:
                            problems.append('%s: example has %d arguments, usage %d to %d: %s' % (tool, len(pos), len(req), len(slots), l.strip()))
                        else:
                            checked += 1
                            for (opt, spec, name), a in zip(use, pos):
                                if not spec and table.match(a):
                                    problems.append('%s: example passes table specifier %s as %s (a plain file): %s' % (tool, a, name, l.strip()))
                seg = []
            else:
                seg.append(w)
print('%d tools, %d example commands aligned with their usage' % (len(tools), checked))
for p in problems: print(p)
sys.exit(1 if problems else 0)
PY
  echo "$output"
  [ "$status" -eq 0 ]
}

# the_error LINE: a failure whose only ERROR line is LINE (LOG lines may come before it)
the_error() {
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  [ "$(grep ERROR <<<"$output")" = "$1" ] || { echo "expected: $1"; return 1; }
}

@test "one wording per kind of error, the same in every tool: dimension, missing key, wrong object type" {
  feats                                  # f.ark (13 dimensions), m.mdl
  "$BIN/copy-feats" "ark:$FIX/mfcc-deltas.ark" ark:d.ark 2>/dev/null    # 39 dimensions
  "$BIN/gmm-init" --device=cpu --num-gauss=2 --num-iters=0 --global-form ark:f.ark g.ubm 2>/dev/null
  key=$(head -c 100 d.ark | cut -d' ' -f1)
  # a dimension: "<file>, key '<key>': features of dimension 39, expected 13 (<what fixes it>)"
  run "$BIN/gmm-score-gpu" --device=cpu m.mdl ark:d.ark ark:ll.ark
  the_error "gmm-score-gpu: ERROR: ark:d.ark, key '$key': features of dimension 39, expected 13 (the model)"
  run "$BIN/gmm-est-gpu" --device=cpu m.mdl ark:d.ark m2.mdl
  the_error "gmm-est-gpu: ERROR: ark:d.ark, key '$key': features of dimension 39, expected 13 (the model m.mdl)"
  run "$BIN/gmm-global-get-frame-likes" g.ubm ark:d.ark ark:l.ark
  the_error "gmm-global-get-frame-likes: ERROR: ark:d.ark, key '$key': features of dimension 39, expected 13 (the model)"
  # a missing key: "<table>: no <what> for key '<key>'; <what the tool does>"
  k1=$(head -c 100 f.ark | cut -d' ' -f1)
  "$BIN/gmm-gselect" --n=1 g.ubm ark:f.ark ark:gs.ark 2>/dev/null
  "$BIN/copy-int-vector" ark:/dev/null ark:empty.ark 2>/dev/null || : > empty.ark
  run "$BIN/gmm-global-get-frame-likes" --gselect=ark:empty.ark g.ubm ark:f.ark ark:l.ark
  [[ "$output" == *"gmm-global-get-frame-likes: WARNING: ark:empty.ark: no gselect information for key '$k1'; utterance skipped"* ]]
  run "$BIN/select-voiced-frames" ark:f.ark ark:empty.ark ark:o.ark
  [[ "$output" == *"select-voiced-frames: WARNING: ark:empty.ark: no VAD vector for key '$k1'; utterance skipped"* ]]
  # a wrong object type: "<file>, offset N: not <want>: expected <tokens>, got '<tok>' (that is <kind>)"
  "$BIN/gmm-acc-stats-gpu" --device=cpu m.mdl ark:f.ark m.acc 2>/dev/null
  run "$BIN/gmm-info" m.acc
  the_error "gmm-info: ERROR: m.acc, offset 2: not a GMM model: expected <TransitionModel>, <DIMENSION>, <DiagGMM> or <FullGMM>, got '<NUMPDFS>' (that is GMM accumulators)"
  run "$BIN/hmm-info" m.acc
  the_error "hmm-info: ERROR: m.acc, offset 2: not an HMM set or a Kaldi model: expected <HmmSet> or <TransitionModel>, got '<NUMPDFS>' (that is GMM accumulators)"
}
