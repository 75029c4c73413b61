#!/usr/bin/env bats
# For hmmlearn and Kaldi users: hmm-init-topo --topology=ergodic,
# hmm-info (our HMM sets and Kaldi transition models), hmm-copy, gmm-info's
# weights and occupancies (--print-weights, --accs, --occs from gmm-est
# --write-occs), gmm-copy --split-gaussians, and egs/hmmlearn-demo/run.sh
# against hmmlearn (same initial model; per-frame log-likelihood per
# iteration within 1e-4 nats, final parameters within 1e-4).

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export PATH="$BIN:$PATH"
  FIX=$GH_SHARED/data/kaldi-fixtures
  MDL=$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  cd "$T"
}

@test "hmm-init-topo --topology=ergodic: uniform start and transitions, ending anywhere" {
  printf 'a\nb\n' > w.txt
  hmm-init-topo --binary=false --topology=ergodic --num-states=3 w.txt e.hmm
  python3 - <<'EOF'
import math, re
t = open('e.hmm').read()
hmms = re.findall(r'<Hmm> (\w+) <NumStates> (\d+)\s*<PdfIds> \[([^]]*)\]\s*<InitLogProbs>\s*\[([^]]*)\]\s*<Arcs> (\d+)(.*?)<FinalLogProbs>\s*\[([^]]*)\]', t, re.S)
assert [h[0] for h in hmms] == ['a', 'b'], hmms
for k, (name, S, pdfs, init, A, arcs, final) in enumerate(hmms):
    assert int(S) == 3 and [int(p) for p in pdfs.split()] == [3 * k, 3 * k + 1, 3 * k + 2]
    assert all(abs(float(x) + math.log(3)) < 1e-6 for x in init.split())
    a = [l.split() for l in arcs.strip().splitlines()]
    assert int(A) == 9 and sorted((int(f), int(to)) for f, to, _ in a) == [(i, j) for i in range(3) for j in range(3)]
    assert all(abs(float(lp) + math.log(3)) < 1e-6 for _, _, lp in a)
    assert [float(x) for x in final.split()] == [0, 0, 0]
EOF
  run hmm-init-topo --topology=circle w.txt e2.hmm
  [ "$status" -ne 0 ] && [[ "$output" == *"--topology must be ltr or ergodic"* ]]
  [ ! -e e2.hmm ]
}

@test "hmm-info: our HMM sets (counts, one line per HMM) and Kaldi transition models (Kaldi's four lines)" {
  printf 'yes\nno\n' > w.txt
  hmm-init-topo --num-states=4 --silence=sil --silence-states=5 --silence-topology=ergodic --word-loop=loop w.txt s.hmm 2>/dev/null
  run hmm-info s.hmm
  [ "$status" -eq 0 ]
  [[ "$output" == *"number of hmms 4"* ]]
  [[ "$output" == *"number of pdfs 13"* ]]
  [[ "$output" == *"number of states 26"* ]]   # 4 + 4 + 5 + the loop's 13
  [[ "$output" == *"hmm yes states 4 arcs 7 initial-states 1 exit-states 1 word-labels 0 pdfs [ 0 1 2 3 ]"* ]]
  [[ "$output" == *"hmm loop states 13 "*"word-labels 2 "* ]]
  run hmm-info --print-transitions s.hmm
  [[ "$output" == *"  state 0 pdf 0 init 1 ->0 0.5 ->1 0.5"* ]]
  [[ "$output" == *"  state 3 pdf 3 ->3 0.5 exit 0.5"* ]]
  # Kaldi's hmm-info on the yes/no monophone model: 26 phones, 22 pdfs, 276 transition-ids, 98 states
  if [ -f "$MDL" ]; then
    run hmm-info "$MDL"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'number of phones 26\nnumber of pdfs 22\nnumber of transition-ids 276\nnumber of transition-states 98')" ]
  fi
  # neither: one error line
  copy-feats "ark:$FIX/mfcc.ark" ark:f.ark 2>/dev/null
  run hmm-info f.ark
  [ "$status" -ne 0 ] && [[ "$output" == *"not an HMM set or a Kaldi model"* ]]
}

@test "hmm-copy: binary/text round trip is exact; --hmms keeps a subset; errors leave no output" {
  printf 'yes\nno\n' > w.txt
  hmm-init-topo --num-states=3 --silence=sil w.txt s.hmm 2>/dev/null
  hmm-copy --binary=false s.hmm s.txt 2>/dev/null
  hmm-copy s.txt s2.hmm 2>/dev/null
  cmp s.hmm s2.hmm
  hmm-copy --hmms=sil,yes s.hmm sub.hmm 2>/dev/null
  run hmm-info sub.hmm
  [[ "$output" == *"number of hmms 2"* ]]
  [ "$(grep '^hmm ' <<<"$output" | cut -d' ' -f2 | tr '\n' ' ')" = "sil yes " ]
  run hmm-copy --hmms=yes,maybe s.hmm bad.hmm
  [ "$status" -ne 0 ] && [[ "$output" == *"no HMM 'maybe'"* ]] && [ ! -e bad.hmm ]
}

@test "gmm-init: a flat start (one Gaussian per pdf, no EM iterations) never starts the device; a mistyped --device still fails" {
  copy-feats "ark:$FIX/mfcc.ark" ark,scp:f.ark,f.scp 2>/dev/null
  feat-to-len scp:f.scp ark,t:- 2>/dev/null | awk '{ print $1, NR % 3 }' > utt.txt
  gmm-init --device=cpu-ref --num-gauss=1 --num-pdfs=3 --num-iters=0 --label-type=utt --labels=ark,t:utt.txt scp:f.scp ref.mdl 2>/dev/null
  # cuda with no GPU here (CI) or a GPU: the same bytes, and no device log line
  run gmm-init --device=cuda --num-gauss=1 --num-pdfs=3 --num-iters=0 --label-type=utt --labels=ark,t:utt.txt scp:f.scp cu.mdl
  echo "$output"
  [ "$status" -eq 0 ] && [[ "$output" == *"computed on the host (--device=cuda not started)"* ]]
  [[ "$output" != *"using device"* ]]
  cmp ref.mdl cu.mdl
  # ... and it equals the 10 EM iterations' fixed point on the CPU (hard labels, one Gaussian)
  gmm-init --device=cpu --num-gauss=1 --num-pdfs=3 --num-iters=10 --label-type=utt --labels=ark,t:utt.txt scp:f.scp it10.mdl 2>/dev/null
  "$ROOT/egs/utils/compare_gmms.sh" ref.mdl it10.mdl
  for d in cdua cuda:x; do
    run gmm-init --device=$d --num-gauss=1 --num-iters=0 scp:f.scp bad.mdl
    [ "$status" -ne 0 ] && [[ "$output" == *"--device=$d"* ]] && [ ! -e bad.mdl ]
  done
}

@test "gmm-info: weights, occupancies from accumulators and from gmm-est --write-occs" {
  copy-feats "ark:$FIX/mfcc.ark" ark,scp:f.ark,f.scp 2>/dev/null
  # two pdfs: per-utterance labels 0/1
  feat-to-len scp:f.scp ark,t:- 2>/dev/null | awk '{ print $1, NR % 2 }' > utt.txt
  gmm-init --device=cpu --num-gauss=3 --num-pdfs=2 --label-type=utt --labels=ark,t:utt.txt scp:f.scp m.mdl 2>/dev/null
  gmm-acc-stats-gpu --device=cpu --label-type=utt m.mdl scp:f.scp ark,t:utt.txt m.acc 2>/dev/null
  gmm-est --write-occs=m.occs m.mdl m.acc m2.mdl 2>/dev/null
  run gmm-info --print-weights --accs=m.acc m.mdl
  [ "$status" -eq 0 ]
  echo "$output"
  # weights as gmm-copy's text form has them, summing to 1
  gmm-copy --binary=false m.mdl m.txt 2>/dev/null
  python3 - "$output" <<'EOF'
import re, sys
out = sys.argv[1]
w_info = [[float(x) for x in m.split()] for m in re.findall(r'^pdf \d+ weights \[([^]]*)\]', out, re.M)]
w_txt = [[float(x) for x in m.split()] for m in re.findall(r'<WEIGHTS>\s*\[([^]]*)\]', open('m.txt').read())]
assert len(w_info) == 2 and all(abs(a - b) <= 1e-6 * max(1, abs(b)) for r, s in zip(w_info, w_txt) for a, b in zip(r, s)), (w_info, w_txt)
assert all(abs(sum(r) - 1) < 1e-5 for r in w_info)
m = re.search(r'^smallest gaussian weight (\S+) \(pdf (\d+), gaussian (\d+)\)', out, re.M)
assert abs(float(m.group(1)) - min(min(r) for r in w_info)) < 1e-6
# occupancy: the per-Gaussian values add up to the pdf's, the pdfs' to the total
occ = [(float(o), [float(x) for x in g.split()]) for o, g in re.findall(r'^pdf \d+ occupancy (\S+) gaussian-occupancies \[([^]]*)\]', out, re.M)]
assert len(occ) == 2 and all(abs(o - sum(g)) < 1e-3 for o, g in occ)
tot = float(re.search(r'^total occupancy (\S+)', out, re.M).group(1))
assert abs(tot - sum(o for o, _ in occ)) < 1e-3
open('occ.txt', 'w').write(' '.join('%.6f' % o for o, _ in occ) + '\n')
EOF
  # per-utterance labels: each pdf's occupancy is its utterances' frame count (independent: feat-to-len)
  frames=$(feat-to-len scp:f.scp ark,t:- 2>/dev/null | awk '{ n[NR % 2] += $2 } END { printf "%d %d", n[0], n[1] }')
  read -r o0 o1 < <(cat occ.txt)
  awk -v a="$o0" -v b="$o1" -v f="$frames" 'BEGIN { split(f, n, " "); exit !(a - n[1] < 1e-2 && n[1] - a < 1e-2 && b - n[2] < 1e-2 && n[2] - b < 1e-2) }'
  run gmm-info --occs=m.occs m2.mdl
  [ "$status" -eq 0 ]
  # the same occupancies within 1e-3 (two sums of float posteriors: 774.0000305 and 773.99997 are both right)
  awk -v a="$o0" -v b="$o1" '/^pdf 0 occupancy / { x = $4 } /^pdf 1 occupancy / { y = $4 }
    END { exit !(x != "" && y != "" && x - a < 1e-3 && a - x < 1e-3 && y - b < 1e-3 && b - y < 1e-3) }' <<<"$output"
  # accumulators of another model: one clear error
  gmm-init --device=cpu --num-gauss=2 scp:f.scp g.mdl 2>/dev/null
  run gmm-info --accs=m.acc g.mdl
  [ "$status" -ne 0 ] && [[ "$output" == *"m.acc has 2 pdfs but g.mdl has 1"* ]]
}

@test "gmm-copy --split-gaussians: pdf g = Gaussian g of a one-pdf model, weight 1" {
  copy-feats "ark:$FIX/mfcc.ark" ark:f.ark 2>/dev/null
  gmm-init --device=cpu --num-gauss=4 --num-iters=0 ark:f.ark k.mdl 2>/dev/null
  gmm-copy --split-gaussians k.mdl s.mdl 2>/dev/null
  gmm-copy --binary=false k.mdl k.txt 2>/dev/null; gmm-copy --binary=false s.mdl s.txt 2>/dev/null
  python3 - <<'EOF'
import re
import numpy as np
def blocks(f):
    out = []
    for b in re.findall(r'<DiagGMM>(.*?)</DiagGMM>', open(f).read(), re.S):
        get = lambda tag: np.array([float(x) for x in re.search(tag + r'\s*\[(.*?)\]', b, re.S).group(1).split()])
        out.append((get('<WEIGHTS>'), get('<MEANS_INVVARS>'), get('<INV_VARS>')))
    return out
(w, mi, iv), = blocks('k.txt')
G = len(w); D = len(mi) // G
s = blocks('s.txt')
assert len(s) == G
for g, (w1, mi1, iv1) in enumerate(s):
    assert list(w1) == [1.0]
    assert np.allclose(iv1, iv[g * D:(g + 1) * D], rtol=1e-6) and np.allclose(mi1, mi[g * D:(g + 1) * D], rtol=1e-5, atol=1e-6)
EOF
  run gmm-copy --split-gaussians s.mdl x.mdl
  [ "$status" -ne 0 ] && [[ "$output" == *"needs a model of one pdf"* ]] && [ ! -e x.mdl ]
}

@test "egs/hmmlearn-demo: ergodic Gaussian HMM by Baum-Welch equals hmmlearn from the same start; loglike.png" {
  python3 -c 'import hmmlearn, kaldiio, matplotlib' 2>/dev/null || skip "hmmlearn/kaldiio/matplotlib not installed"
  run "$ROOT/egs/hmmlearn-demo/run.sh" --work "$T/w" --device cpu --iters 6 --seqs 12
  echo "$output"
  [ "$status" -eq 0 ]
  r=$T/w/results.txt
  [ "$(grep -c '^iteration [0-9]*: average log-likelihood per frame ours ' "$r")" -eq 6 ]
  # per iteration: |ours - hmmlearn| below 1e-4 per frame (ours is printed with 4 decimals)
  grep '^iteration' "$r" | sed 's/.*(difference \(.*\))$/\1/' |
    awk '{ if ($1 + 0 > 1e-4 || $1 + 0 < -1e-4) bad = 1; n++ } END { exit bad || n != 6 }'
  line=$(grep '^final parameters' "$r")
  python3 -c '
import re, sys
v = [float(x) for x in re.findall(r"(?:means|covars|transmat|startprob) (\S+)", sys.argv[1])]
assert len(v) == 4 and max(v) < 1e-4, v' "$line"
  [[ "$(grep '^state accuracy' "$r")" =~ ours\ ([0-9.]+)%\ hmmlearn\ ([0-9.]+)% ]]
  awk -v a=${BASH_REMATCH[1]} -v b=${BASH_REMATCH[2]} 'BEGIN { exit !(a > 80 && a - b < 0.5 && b - a < 0.5) }'
  python3 -c 'import sys, matplotlib.image as m; a = m.imread(sys.argv[1]); assert a.shape[0] > 100' "$T/w/loglike.png"
}

@test "hmm-make-loop --silence-prob: a word's exit goes to the silence with P, to each word and the end with (1-P)/3" {
  printf 'yes\nno\n' > w.txt
  hmm-init-topo --num-states=2 --silence=sil --silence-states=3 w.txt s.hmm 2>/dev/null
  hmm-make-loop --silence=sil --silence-prob=0.8 s.hmm l.hmm 2>/dev/null
  run hmm-info --print-transitions l.hmm
  echo "$output"
  # exit state of "yes" (loop state 1): self-loop 0.5, the other 0.5 split 0.8 / 0.2/3 / 0.2/3 / 0.2/3
  [[ "$output" == *"  state 1 pdf 1 ->1 0.5 ->0 0.0333333 ->2 0.0333333 ->4 0.4 exit 0.0333333"* ]]
  # the silence's exit keeps the equal shares (1/4 of its 0.5)
  [[ "$output" == *"  state 6 pdf 6 ->6 0.5 ->0 0.125 ->2 0.125 ->4 0.125 exit 0.125"* ]]
  # P = 1: no word directly after a word
  hmm-make-loop --silence=sil --silence-prob=1 s.hmm l1.hmm 2>/dev/null
  run hmm-info --print-transitions l1.hmm
  [[ "$output" == *"  state 1 pdf 1 ->1 0.5 ->4 0.5"$'\n'* ]]
  run hmm-make-loop --silence=sil --silence-prob=1.5 s.hmm bad.hmm
  [ "$status" -ne 0 ] && [[ "$output" == *"--silence-prob must be at most 1"* ]] && [ ! -e bad.hmm ]
}
