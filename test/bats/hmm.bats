#!/usr/bin/env bats
# HMM tools: hmm-init-topo, hmm-forward, hmm-viterbi, hmm-bw, hmm-sum-accs, hmm-est
# (CPU device).  References: hmmlearn (test/python/hmm_hmmlearn.py: GaussianHMM,
# GMMHMM, CategoricalHMM with the same parameters), synthetic word sequences, the
# accumulate -> sum -> estimate equivalence, and a chain from gmm-score-gpu to
# gmm-est-gpu --label-type=post on Kaldi's yesno model.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  PY=$BATS_TEST_DIRNAME/../python
  FIX=$GH_SHARED/data/kaldi-fixtures
  MDL=$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  NOFLOOR="--transition-floor=0 --transition-min-count=0"
}

# Runs our three tools on DIR (from hmm_hmmlearn.py prep) and compares.
run_vs_hmmlearn() {
  local d=$1; shift
  "$BIN/hmm-forward" --device=cpu "$@" "$d/hmm.txt" "ark:$d/ll.ark" "ark,t:$d/fwd.txt" 2>/dev/null
  "$BIN/hmm-viterbi" --device=cpu --write-states --loglikes-wspecifier="ark,t:$d/vll.txt" \
    "$d/hmm.txt" "ark:$d/ll.ark" "ark,t:$d/ali.txt" 2>/dev/null
  "$BIN/hmm-bw" --device=cpu --binary=false $NOFLOOR "$d/hmm.txt" "ark:$d/ll.ark" "ark:$d/post.ark" \
    "$d/out.txt" 2>/dev/null
  python3 "$PY/hmm_hmmlearn.py" check "$d"
}

@test "hmm-forward/viterbi/bw agree with hmmlearn GaussianHMM (score, decode, one Baum-Welch update)" {
  python3 -c 'import hmmlearn' 2>/dev/null || skip "hmmlearn not installed (make deps)"
  mkdir -p "$T/g"
  python3 "$PY/hmm_hmmlearn.py" prep "$T/g" --kind gaussian
  run run_vs_hmmlearn "$T/g"
  echo "$output"
  [ "$status" -eq 0 ]
  run run_vs_hmmlearn "$T/g" --scaled
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "hmm tools agree with hmmlearn GMMHMM, ergodic and left-to-right" {
  python3 -c 'import hmmlearn' 2>/dev/null || skip "hmmlearn not installed (make deps)"
  for lr in "" --left-right; do
    mkdir -p "$T/m$lr"
    python3 "$PY/hmm_hmmlearn.py" prep "$T/m$lr" --kind gmm $lr
    run run_vs_hmmlearn "$T/m$lr"
    echo "$output"
    [ "$status" -eq 0 ]
  done
}

@test "discrete emissions (--discrete-emissions) agree with hmmlearn CategoricalHMM" {
  python3 -c 'import hmmlearn' 2>/dev/null || skip "hmmlearn not installed (make deps)"
  d=$T/d; mkdir -p "$d"
  python3 "$PY/hmm_hmmlearn.py" prep-discrete "$d"
  "$BIN/hmm-forward" --device=cpu --discrete-emissions="$d/B.txt" "$d/hmm.txt" "ark,t:$d/sym.txt" "ark,t:$d/fwd.txt" 2>/dev/null
  "$BIN/hmm-viterbi" --device=cpu --discrete-emissions="$d/B.txt" --write-states \
    --loglikes-wspecifier="ark,t:$d/vll.txt" "$d/hmm.txt" "ark,t:$d/sym.txt" "ark,t:$d/ali.txt" 2>/dev/null
  run python3 "$PY/hmm_hmmlearn.py" check "$d"
  echo "$output"
  [ "$status" -eq 0 ]
}

# Word models one/two/three (3 states each, pdfs 0-8) + sil (pdfs 9-11) + loop.
make_words() {
  printf 'one\ntwo\nthree\n' > "$T/words.txt"
  "$BIN/hmm-init-topo" --silence=sil --word-loop=loop --self-loop-prob=0.6 --binary=false \
    "$T/words.txt" "$T/w.hmm" 2>/dev/null
  # Loglikes for known word sequences: the intended pdf 0, others -8, with
  # durations of 2-4 frames per state.
  python3 - "$T" <<'EOF'
import sys, numpy as np
d = sys.argv[1]; r = np.random.RandomState(1)
pd = {'one': [0, 1, 2], 'two': [3, 4, 5], 'three': [6, 7, 8], 'sil': [9, 10, 11]}
utts = {'a': 'sil one two sil', 'b': 'three three one', 'c': 'sil two', 'd': 'one'}
with open(d + '/syn.txt', 'w') as f, open(d + '/text', 'w') as t, open(d + '/ref_words', 'w') as w:
    for k, seq in utts.items():
        rows = []
        for word in seq.split():
            for p in pd[word]:
                for _ in range(r.randint(2, 5)):
                    v = np.full(12, -8.0) + r.rand(12); v[p] = -r.rand(); rows.append(v)
        f.write(k + '  [\n' + '\n'.join('  ' + ' '.join('%.4f' % x for x in v) for v in rows) + ' ]\n')
        words = [x for x in seq.split() if x != 'sil']
        t.write('%s %s\n' % (k, ' '.join(words)))
        w.write('%s %s \n' % (k, ' '.join(words)))
EOF
}

@test "hmm-init-topo: word HMMs, silence, word loop; text and binary give the same results" {
  make_words
  grep -q '<HmmSet> <NumHmms> 5' "$T/w.hmm"
  grep -q '<Hmm> loop <NumStates> 12' "$T/w.hmm"
  grep -q '<Words> one <eps> <eps> two <eps> <eps> three <eps> <eps> <eps> <eps> <eps>' "$T/w.hmm"
  "$BIN/hmm-init-topo" --silence=sil --word-loop=loop --self-loop-prob=0.6 "$T/words.txt" "$T/w.bin" 2>/dev/null
  head -c 2 "$T/w.bin" | od -c | grep -q '\\0   B'
  "$BIN/hmm-forward" --device=cpu "$T/w.hmm" "ark,t:$T/syn.txt" "ark,t:$T/f1" 2>/dev/null
  "$BIN/hmm-forward" --device=cpu "$T/w.bin" "ark,t:$T/syn.txt" "ark,t:$T/f2" 2>/dev/null
  cmp "$T/f1" "$T/f2"
  # skip arcs and a pdf map
  printf 'x 5 6 7 8\ny 1 1\n' > "$T/map.txt"
  "$BIN/hmm-init-topo" --skip-prob=0.2 --binary=false "$T/map.txt" "$T/m.hmm" 2>/dev/null
  grep -q '<PdfIds> \[ 5 6 7 8 \]' "$T/m.hmm"
  grep -q '^0 2 ' "$T/m.hmm"
}

@test "hmm-viterbi: word loop recovers the word sequences; --transcripts with optional silence aligns" {
  make_words
  run "$BIN/hmm-viterbi" --device=cpu --hmm=loop --words-wspecifier="ark,t:$T/hyp" "$T/w.hmm" \
    "ark,t:$T/syn.txt" "ark,t:$T/ali"
  [ "$status" -eq 0 ]
  diff "$T/ref_words" "$T/hyp"
  # forced alignment: pdfs along the path are the intended ones (argmax of each row)
  "$BIN/hmm-viterbi" --device=cpu --transcripts="ark,t:$T/text" --optional-silence=sil \
    --words-wspecifier="ark,t:$T/hyp2" "$T/w.hmm" "ark,t:$T/syn.txt" "ark,t:$T/ali2" 2>/dev/null
  diff "$T/ref_words" "$T/hyp2"
  python3 - "$T" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
ali = {l.split()[0]: list(map(int, l.split()[1:])) for l in open(d + '/ali2')}
key, rows = None, {}
for l in open(d + '/syn.txt'):
    p = l.split()
    if '[' in p: key = p[0]; rows[key] = []; continue
    rows[key].append([float(x) for x in p if x != ']'])
for k, a in ali.items():
    assert list(np.argmax(rows[k], 1)) == a, (k, a)
EOF
  # isolated words: without --hmm, the best HMM wins
  echo 'd' > "$T/dkey"
  "$BIN/hmm-viterbi" --device=cpu --words-wspecifier="ark,t:$T/hyp3" "$T/w.hmm" "ark,t:$T/syn.txt" ark:/dev/null 2>/dev/null
  grep -q '^d one $' "$T/hyp3"
}

@test "hmm-bw: transcripts tie word models; accs -> hmm-sum-accs -> hmm-est equals direct update" {
  make_words
  "$BIN/hmm-bw" --device=cpu --transcripts="ark,t:$T/text" --optional-silence=sil --transition-min-count=1 \
    --write-accs="$T/a.acc" "$T/w.hmm" "ark,t:$T/syn.txt" "ark,t:$T/post" "$T/w1.hmm" 2>/dev/null
  # split the data in two jobs, sum, estimate
  head -c 0 /dev/null
  python3 - "$T" <<'EOF'
import sys
d = sys.argv[1]; txt = open(d + '/syn.txt').read().split(']\n')
ents = [e + ']\n' for e in txt if e.strip()]
open(d + '/s1.txt', 'w').write(''.join(ents[:2])); open(d + '/s2.txt', 'w').write(''.join(ents[2:]))
EOF
  for j in 1 2; do
    "$BIN/hmm-bw" --device=cpu --transcripts="ark,t:$T/text" --optional-silence=sil --write-accs="$T/a$j.acc" \
      "$T/w.hmm" "ark,t:$T/s$j.txt" ark:/dev/null 2>/dev/null
  done
  "$BIN/hmm-sum-accs" "$T/sum.acc" "$T/a1.acc" "$T/a2.acc" 2>/dev/null
  "$BIN/hmm-est" --transition-min-count=1 "$T/w.hmm" "$T/sum.acc" "$T/w2.hmm" 2>/dev/null
  "$BIN/hmm-est" --transition-min-count=1 "$T/w.hmm" "$T/a.acc" "$T/w3.hmm" 2>/dev/null
  cmp "$T/w2.hmm" "$T/w3.hmm"
  if cmp -s "$T/w1.hmm" "$T/w.hmm"; then false; fi
  cmp <("$BIN/hmm-forward" --device=cpu "$T/w1.hmm" "ark,t:$T/syn.txt" ark,t:- 2>/dev/null) \
      <("$BIN/hmm-forward" --device=cpu "$T/w3.hmm" "ark,t:$T/syn.txt" ark,t:- 2>/dev/null)
  # the shared word 'one' was entered 3 times (a, b, d) + 'three' twice: init counts
  "$BIN/hmm-sum-accs" --binary=false "$T/t.acc" "$T/a.acc" 2>/dev/null
  grep -A1 '<Hmm> one ' "$T/t.acc" | grep -Eq '<InitCounts>  \[ 3(\.0*[0-9]*)? 0 0 \]|<InitCounts>  \[ 2\.99999'
  # posteriors sum to 1 per frame (min-post 0 keeps all)
  "$BIN/hmm-bw" --device=cpu --min-post=0 --transcripts="ark,t:$T/text" --optional-silence=sil \
    "$T/w.hmm" "ark,t:$T/syn.txt" "ark,t:$T/post0" 2>/dev/null
  python3 - "$T/post0" <<'EOF'
import sys, re
for line in open(sys.argv[1]):
    for fr in re.findall(r'\[([^\]]*)\]', line):
        v = fr.split(); s = sum(float(x) for x in v[1::2])
        assert abs(s - 1) < 1e-4, (line[:20], s)
EOF
}

@test "chain: gmm-score-gpu | hmm-viterbi / hmm-bw | gmm-est-gpu --label-type=post (yesno model)" {
  # the model has 22 pdfs: the HMMs use them all (more loglike columns than
  # the HMMs' pdfs is the wrong model, an error)
  printf 'yes 0 1 2 3 4 5 6\nno 7 8 9 10 11 12 13\nsil 14 15 16 17 18 19 20 21\n' > "$T/yn.txt"
  "$BIN/hmm-init-topo" --silence=sil --word-loop=loop "$T/yn.txt" "$T/yn.hmm" 2>/dev/null
  "$BIN/gmm-score-gpu" --device=cpu "$MDL" "ark:$FIX/mfcc-deltas.ark" ark:- 2>/dev/null | \
    "$BIN/hmm-viterbi" --device=cpu --hmm=loop --words-wspecifier="ark,t:$T/words" "$T/yn.hmm" ark:- "ark:$T/ali.ark" 2>/dev/null
  [ "$("$BIN/copy-int-vector" "ark:$T/ali.ark" ark,t:- 2>/dev/null | wc -l)" -eq "$("$BIN/feat-to-len" "ark:$FIX/mfcc-deltas.ark" ark,t:- 2>/dev/null | wc -l)" ]
  "$BIN/gmm-score-gpu" --device=cpu "$MDL" "ark:$FIX/mfcc-deltas.ark" ark:- 2>/dev/null | \
    "$BIN/hmm-bw" --device=cpu --hmm=loop "$T/yn.hmm" ark:- "ark:$T/post.ark" 2>/dev/null
  run "$BIN/gmm-est-gpu" --device=cpu --label-type=post "$MDL" "ark:$FIX/mfcc-deltas.ark" "ark:$T/post.ark" "$T/1.mdl"
  echo "$output"
  [ "$status" -eq 0 ]
}

# bad input: one ERROR line naming the file and key, exit != 0, no output left
expect_fail() {
  local pattern=$1; shift
  run "$@"
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$(grep -c 'ERROR' <<<"$output")" -eq 1 ]
  grep 'ERROR' <<<"$output" | grep -q -- "$pattern"
  [ ! -e "$T/out.ark" ]
  ! ls "$T"/out.ark.tmp.* >/dev/null 2>&1
}

@test "bad input: wrong pdf count, empty utterance, dead-end HMM, garbage HMM file, bad --precision" {
  make_words
  printf 'u1  [\n  0 1 \n  1 2 ]\n' > "$T/narrow.txt"
  expect_fail "ark,t:$T/narrow.txt, key 'u1': loglikes of dimension 2, expected " \
    "$BIN/hmm-forward" --device=cpu "$T/w.hmm" "ark,t:$T/narrow.txt" "ark:$T/out.ark"
  python3 -c "print('ok  [\n' + ' '.join(['0'] * 12) + ' ]\nu2  [ ]')" > "$T/empty.txt"
  expect_fail "key 'u2': empty utterance" \
    "$BIN/hmm-viterbi" --device=cpu --hmm=loop "$T/w.hmm" "ark,t:$T/empty.txt" "ark:$T/out.ark"
  cat > "$T/dead.hmm" <<'EOF'
<HmmSet> <NumHmms> 1
<Hmm> bad <NumStates> 3
<PdfIds> [ 0 1 2 ]
<InitLogProbs> [ 0 -inf -inf ]
<Arcs> 4
0 0 -0.7
0 1 -1.4
0 2 -1.4
1 1 0
<FinalLogProbs> [ -inf -inf -0.5 ]
</Hmm>
</HmmSet>
EOF
  expect_fail "dead.hmm.*HMM 'bad': state 1 cannot reach the end" \
    "$BIN/hmm-bw" --device=cpu "$T/dead.hmm" "ark,t:$T/syn.txt" "ark:$T/out.ark"
  head -c 300 /dev/urandom > "$T/garbage.hmm"
  expect_fail "garbage.hmm" "$BIN/hmm-forward" --device=cpu "$T/garbage.hmm" "ark,t:$T/syn.txt" "ark:$T/out.ark"
  printf '<HmmSet> <NumHmms> 1\n<Hmm> x <NumStates> 2\n<PdfIds> [ 0 1 ]\n<InitLogProbs> [ 0 ' > "$T/trunc.hmm"
  expect_fail "trunc.hmm.*offset" "$BIN/hmm-forward" --device=cpu "$T/trunc.hmm" "ark,t:$T/syn.txt" "ark:$T/out.ark"
  expect_fail "precision must be auto, fp32, tf32x3 or tf32 (got 'fp16')" \
    "$BIN/hmm-forward" --device=cpu --scaled --precision=fp16 "$T/w.hmm" "ark,t:$T/syn.txt" "ark:$T/out.ark"
  # a transcript word that is not an HMM
  echo 'a one four' > "$T/badtext"
  expect_fail "key 'a': transcript word 'four'" \
    "$BIN/hmm-bw" --device=cpu --transcripts="ark,t:$T/badtext" "$T/w.hmm" "ark,t:$T/syn.txt" "ark:$T/out.ark"
}

@test "--acoustic-scale: scaling the loglikes by s equals --acoustic-scale=s (forward, viterbi)" {
  python3 -c 'import hmmlearn' 2>/dev/null || skip "hmmlearn not installed (make deps)"
  mkdir -p "$T/as"
  python3 "$PY/hmm_hmmlearn.py" prep "$T/as" --kind gaussian
  d=$T/as
  # Scale every loglike by 0.25 through the text form (numbers only; brackets and keys kept).
  "$BIN/copy-feats" --binary=false "ark:$d/ll.ark" ark,t:- 2>/dev/null |
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ && !(i == 1 && NF > 1 && $2 == "[")) $i = sprintf("%.9g", $i * 0.25); print }' |
    "$BIN/copy-feats" ark,t:- "ark:$d/ll4.ark" 2>/dev/null
  "$BIN/hmm-forward" --device=cpu --acoustic-scale=0.25 "$d/hmm.txt" "ark:$d/ll.ark" ark,t:"$d/a.txt" 2>/dev/null
  "$BIN/hmm-forward" --device=cpu "$d/hmm.txt" "ark:$d/ll4.ark" ark,t:"$d/b.txt" 2>/dev/null
  "$BIN/hmm-forward" --device=cpu "$d/hmm.txt" "ark:$d/ll.ark" ark,t:"$d/c.txt" 2>/dev/null
  python3 - "$d" <<'PY'
import sys
d = sys.argv[1]
def vals(p): return [float(t) for t in open(p).read().split() if t not in '[]' and not t[0].isalpha() and not t.startswith('utt')]
a, b, c = vals(d + '/a.txt'), vals(d + '/b.txt'), vals(d + '/c.txt')
assert len(a) == len(b) > 0
assert max(abs(x - y) / (1 + abs(y)) for x, y in zip(a, b)) < 1e-5, (a[:3], b[:3])
assert max(abs(x - y) for x, y in zip(a, c)) > 1e-2   # the option does change the result
PY
  "$BIN/hmm-viterbi" --device=cpu --acoustic-scale=0.25 "$d/hmm.txt" "ark:$d/ll.ark" ark,t:"$d/va.txt" 2>/dev/null
  "$BIN/hmm-viterbi" --device=cpu "$d/hmm.txt" "ark:$d/ll4.ark" ark,t:"$d/vb.txt" 2>/dev/null
  cmp "$d/va.txt" "$d/vb.txt"
}

@test "--gmm: hmm-forward, hmm-viterbi and hmm-bw score the GMMs themselves, the pipe's numbers (cpu, PoCL); bad input" {
  printf 'yes 0 1 2 3 4 5 6\nno 7 8 9 10 11 12 13\nsil 14 15 16 17 18 19 20 21\n' > "$T/yn.txt"
  "$BIN/hmm-init-topo" --silence=sil --word-loop=loop "$T/yn.txt" "$T/yn.hmm" 2>/dev/null
  for dev in cpu opencl; do
    "$BIN/gmm-score-gpu" --device=$dev "$MDL" "ark:$FIX/mfcc-deltas.ark" ark:- 2>/dev/null |
      "$BIN/hmm-forward" --device=$dev --acoustic-scale=0.5 "$T/yn.hmm" ark:- "ark,t:$T/f.pipe" 2>/dev/null
    "$BIN/hmm-forward" --device=$dev --acoustic-scale=0.5 --gmm="$MDL" "$T/yn.hmm" "ark:$FIX/mfcc-deltas.ark" \
      "ark,t:$T/f.gmm" 2>/dev/null
    cmp "$T/f.pipe" "$T/f.gmm"
    "$BIN/gmm-score-gpu" --device=$dev "$MDL" "ark:$FIX/mfcc-deltas.ark" ark:- 2>/dev/null |
      "$BIN/hmm-viterbi" --device=$dev --hmm=loop --words-wspecifier="ark,t:$T/w.pipe" "$T/yn.hmm" ark:- "ark,t:$T/a.pipe" 2>/dev/null
    "$BIN/hmm-viterbi" --device=$dev --hmm=loop --gmm="$MDL" --words-wspecifier="ark,t:$T/w.gmm" "$T/yn.hmm" \
      "ark:$FIX/mfcc-deltas.ark" "ark,t:$T/a.gmm" 2>/dev/null
    cmp "$T/a.pipe" "$T/a.gmm"
    cmp "$T/w.pipe" "$T/w.gmm"
    "$BIN/gmm-score-gpu" --device=$dev "$MDL" "ark:$FIX/mfcc-deltas.ark" ark:- 2>/dev/null |
      "$BIN/hmm-bw" --device=$dev --hmm=loop --binary=false "$T/yn.hmm" ark:- "ark,t:$T/p.pipe" "$T/h.pipe" 2>/dev/null
    "$BIN/hmm-bw" --device=$dev --hmm=loop --gmm="$MDL" --binary=false "$T/yn.hmm" "ark:$FIX/mfcc-deltas.ark" \
      "ark,t:$T/p.gmm" "$T/h.gmm" 2>/dev/null
    cmp "$T/p.pipe" "$T/p.gmm"
    cmp "$T/h.pipe" "$T/h.gmm"
    [ -s "$T/f.gmm" ] && [ -s "$T/a.gmm" ]
  done
  # features of another dimension, a GMM set with fewer pdfs than the HMMs use, both emission kinds
  expect_fail "features of dimension 13, expected 39" \
    "$BIN/hmm-forward" --gmm="$MDL" "$T/yn.hmm" "ark:$GH_SHARED/data/kaldi-ami-feats/feats.ark" "ark:$T/out.ark"
  expect_fail "has 1 pdfs but the HMMs use pdf ids up to 21" \
    "$BIN/hmm-viterbi" --gmm="$FIX/ami-diag16.gmm" --hmm=loop "$T/yn.hmm" "ark:$FIX/mfcc-deltas.ark" "ark:$T/out.ark"
  printf '[ 1 ]\n' > "$T/B.txt"
  expect_fail "give --gmm or --discrete-emissions, not both" \
    "$BIN/hmm-forward" --gmm="$MDL" --discrete-emissions="$T/B.txt" "$T/yn.hmm" "ark:$FIX/mfcc-deltas.ark" "ark:$T/out.ark"
}
