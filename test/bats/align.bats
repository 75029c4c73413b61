#!/usr/bin/env bats
# gmm-align-compiled (Kaldi's forced aligner) against what real Kaldi wrote on the cathy
# data ($GH_SHARED/data/kaldi-fixtures/align: mono/final.mdl, mono_ali/ali.{1,2}.gz made by
# align_si.sh with beam 10, retry beam 40, and align.log.txt's summary lines), on graphs from
# our compile-train-graphs and on graphs built independently by test/python/align_graphs.py
# from the transcripts and the lexicon; the per-frame acoustic log-likelihoods against
# gmm-score-gpu's matrix; the scores against the transition probabilities of
# show-transitions (Kaldi's AddTransitionProbs, re-derived in Python); failures and bad input;
# Kaldi's own steps/align_si.sh ($GH_SHARED/kaldi-scripts) on our tools with Kaldi's final.mdl.
# The whole-corpus checks take about a minute each on 2 cores.

setup_file() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export GH_SHARED ROOT BIN
  export W=$BATS_FILE_TMPDIR/w
  D=$GH_SHARED/data/cathy F=$GH_SHARED/data/kaldi-fixtures/align
  mkdir -p "$W" && cd "$W"
  export PATH=$BIN:$PATH LC_ALL=C
  # features as align_si.sh makes them: apply-cmvn with the shipped stats, add-deltas
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" > feats.scp
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > cmvn.scp
  "$BIN/apply-cmvn" --utt2spk=ark:"$D/utt2spk" scp:cmvn.scp scp:feats.scp ark:- 2>/dev/null |
    "$BIN/add-deltas" ark:- ark,scp:feats.ark,feats39.scp 2>/dev/null
  # JOB 1 = arctic_a, JOB 2 = arctic_b (the fixture's split), transcripts as word ids
  for j in 1 2; do
    [ $j = 1 ] && p=cathy-arctic_a || p=cathy-arctic_b
    grep "^$p" "$D/text" > text.$j
    awk 'NR == FNR {id[$1] = $2; next} {printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", id[$i]; print ""}' \
      "$F/lang/words.txt" text.$j > int.$j
    "$BIN/copy-int-vector" "ark:gunzip -c $F/mono_ali/ali.$j.gz|" ark,t:ref.$j 2>/dev/null
  done
  head -n 40 text.1 > text.40
  head -n 40 int.1 > int.40
  "$BIN/show-transitions" "$F/lang/phones.txt" "$F/mono/final.mdl" > transitions.txt 2>/dev/null
}

setup() {
  cd "$W"
  export PATH=$BIN:$PATH LC_ALL=C
  F=$GH_SHARED/data/kaldi-fixtures/align
  D=$GH_SHARED/data/cathy
  MDL=$F/mono/final.mdl
  SCALES="--transition-scale=1.0 --acoustic-scale=0.1 --self-loop-scale=0.1"
}

graphs() { # <int-text> <out.ark>: our compile-train-graphs as align_si.sh runs it
  compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/mono/tree" "$MDL" \
    "gunzip -c $F/lang/L.fst.gz|" ark:"$1" ark:"$2"
}

# identical utterances between two text alignment archives: prints "same total"
same_count() {
  awk 'NR == FNR {r[$1] = $0; next} {n++; if (r[$1] == $0) s++} END {print s + 0, n + 0}' "$1" "$2"
}

@test "gmm-align-compiled: usage with an e.g. line and --exact; wrong arguments exit 1" {
  run gmm-align-compiled
  [ "$status" -ne 0 ]
  [[ "$output" == *"Usage:"*"gmm-align-compiled"* ]]
  [[ "$output" == *"e.g."* ]]
  [[ "$output" == *"--exact"* ]]
  [[ "$output" == *"--retry-beam"* ]]
  run gmm-align-compiled a b c d e f
  [ "$status" -ne 0 ]
}

# The alignments that differ are utterances where beam 10 prunes the best path in one of the
# two graphs and not in the other (ours are not Kaldi's determinized and minimized graphs, so
# other states are active and the cutoffs differ at the margin): 3 to 6 of 1,582 here.
@test "gmm-align-compiled: whole corpus as align_si.sh: Kaldi's alignments on >= 99.5%, its log lines" {
  for j in 1 2; do
    graphs int.$j graphs.$j.ark 2>/dev/null
    SECONDS=0
    run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 --careful=false "$MDL" ark:graphs.$j.ark \
      scp:feats39.scp ark,t:ali.$j
    echo "$output" | grep -v "Log-like per frame for"
    echo "job $j: $SECONDS s" >&3
    [ "$status" -eq 0 ]
    n=$(wc -l < text.$j)
    [ "$(echo "$output" | grep -c "Log-like per frame for utterance cathy-arctic_.* is -[0-9.]* over [0-9]* frames\.")" -eq "$n" ]
    echo "$output" | grep -q "Done $n, errors on 0"
    echo "$output" | grep "Overall log-likelihood per frame is" > overall.$j
    echo "$output" | grep "Retried [0-9]* out of $n utterances." > retried.$j
  done
  # Kaldi: -96.7592 over 265828 frames, -96.5528 over 210145 frames, b0048-1 retried
  grep -q "over 265828 frames\.$" overall.1
  grep -q "over 210145 frames\.$" overall.2
  awk '{v = $(NF-3); d = (v + 96.7592) / 96.7592; exit !(d < 1e-4 && d > -1e-4)}' overall.1
  awk '{v = $(NF-3); d = (v + 96.5528) / 96.5528; exit !(d < 1e-4 && d > -1e-4)}' overall.2
  cat retried.1 retried.2 | awk '{m += $(NF-4)} END {exit !(m <= 2)}'
  read s1 n1 < <(same_count ref.1 ali.1)
  read s2 n2 < <(same_count ref.2 ali.2)
  echo "identical to Kaldi's: $s1 of $n1, $s2 of $n2" >&3
  [ "$n1" -eq 893 ] && [ "$n2" -eq 689 ]
  [ $(( (s1 + s2) * 1000 )) -ge $(( 995 * (n1 + n2) )) ]
}

@test "gmm-align-compiled: graphs built independently in Python give Kaldi's alignments" {
  python3 "$ROOT/test/python/align_graphs.py" "$F/lang/phones.txt" "$F/lang/words.txt" "$D/dict/lexicon.txt" \
    transitions.txt text.40 > py.ark
  run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 "$MDL" ark:py.ark scp:feats39.scp ark,t:ali.py
  [ "$status" -eq 0 ]
  head -n 40 ref.1 > ref.40
  read s n < <(same_count ref.40 ali.py)
  echo "$s of $n identical"
  [ "$n" -eq 40 ] && [ "$s" -eq 40 ]
}

@test "gmm-align-compiled --exact and --careful: no worse than the beam; the same alignments here" {
  graphs int.40 g40.ark 2>/dev/null
  gmm-align-compiled $SCALES --beam=10 --retry-beam=40 "$MDL" ark:g40.ark scp:feats39.scp ark,t:beam.ali \
    2> beam.log
  run gmm-align-compiled $SCALES --exact "$MDL" ark:g40.ark scp:feats39.scp ark,t:exact.ali
  [ "$status" -eq 0 ]
  echo "$output" > exact.log
  run gmm-align-compiled $SCALES --beam=0 "$MDL" ark:g40.ark scp:feats39.scp ark,t:beam0.ali
  [ "$status" -eq 0 ]
  cmp exact.ali beam0.ali
  run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 --careful=true "$MDL" ark:g40.ark scp:feats39.scp \
    ark,t:careful.ali
  [ "$status" -eq 0 ]
  cmp beam.ali careful.ali
  # Kaldi's beam 10 missed the best path of a0015-3 (the exact one scores higher); the rest agree
  head -n 40 ref.1 > ref.40
  read s n < <(same_count ref.40 exact.ali)
  [ "$s" -eq 39 ]
  [ "$(grep -vxFf ref.40 exact.ali | cut -d' ' -f1)" = cathy-arctic_a0015-3 ]
  # per utterance, exact >= beam (a larger search space; 1e-6 relative for float sums)
  paste <(grep "Log-like per frame for" beam.log) <(grep "Log-like per frame for" exact.log) |
    awk -F'\t' '{nb = split($1, b, " "); ne = split($2, e, " "); if (b[nb-5] != e[ne-5]) bad++
                  if (e[ne-3] < b[nb-3] - 1e-6 * (b[nb-3] < 0 ? -b[nb-3] : b[nb-3])) bad++} END {exit bad + 0}'
}

@test "gmm-align-compiled: per-frame acoustic log-likelihoods = gmm-score-gpu's for the aligned pdfs" {
  graphs int.40 g40.ark 2>/dev/null
  head -n 5 feats39.scp > f5.scp
  run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 --write-per-frame-acoustic-loglikes=ark,t:pf.txt \
    "$MDL" ark:g40.ark scp:f5.scp ark,t:ali5.txt ark,t:scores.txt
  [ "$status" -eq 0 ]
  ali-to-pdf "$MDL" ark,t:ali5.txt ark,t:pdf5.txt 2>/dev/null
  gmm-score-gpu --device=cpu-ref "$MDL" scp:f5.scp ark,t:ll5.txt 2>/dev/null
  python3 - pf.txt pdf5.txt ll5.txt scores.txt <<'EOF'
import sys
pf = {l.split()[0]: [float(x) for x in l.split()[2:-1]] for l in open(sys.argv[1])}
pdf = {l.split()[0]: [int(x) for x in l.split()[1:]] for l in open(sys.argv[2])}
mats, key, rows = {}, None, []
for l in open(sys.argv[3]):
    f = l.split()
    if f[-1] == '[': key, rows = f[0], []; continue
    rows.append([float(x) for x in f if x != ']'])
    if f[-1] == ']': mats[key] = rows
scores = {l.split()[0]: float(l.split()[1]) for l in open(sys.argv[4])}
assert len(pf) == 5 and set(pf) == set(pdf) == set(mats)
for k in pf:
    assert len(pf[k]) == len(pdf[k]) == len(mats[k]), k
    for t, (v, p) in enumerate(zip(pf[k], pdf[k])):
        ref = mats[k][t][p]
        assert abs(v - ref) <= 2e-3 * max(1.0, abs(ref)), (k, t, v, ref)
    # the score is -(graph + acoustic cost): acoustics 0.1 * sum, the rest graph costs <= 0
    ac = 0.1 * sum(pf[k])
    assert scores[k] < ac + 1e-3 and scores[k] > ac - 0.1 * 200 * len(pf[k]), (k, scores[k], ac)
print('ok')
EOF
}

@test "gmm-align-compiled: transition probabilities added as Kaldi's AddTransitionProbs" {
  graphs int.40 g40.ark 2>/dev/null
  head -n 5 feats39.scp > f5.scp
  head -n 5 text.1 > text5
  for sc in "1.0 1.0" "0 0" "1.0 0.1" "0.5 0.3"; do
    set -- $sc
    run gmm-align-compiled --transition-scale=$1 --self-loop-scale=$2 --acoustic-scale=0.1 --beam=40 \
      --write-per-frame-acoustic-loglikes=ark,t:pf.$1.$2 "$MDL" ark:g40.ark scp:f5.scp ark,t:ali.$1.$2 \
      ark,t:sc.$1.$2
    [ "$status" -eq 0 ]
    # score = 0.1 * acoustic + sum of scaled transition log-probs + lexicon: (words + 1) x log 0.5
    python3 - transitions.txt ali.$1.$2 pf.$1.$2 sc.$1.$2 text5 $1 $2 <<'EOF'
import math, sys
tr, ali, pf, sc, text, ts, ss = sys.argv[1:6] + [float(x) for x in sys.argv[6:8]]
p, sl, state_of, tstate = {}, {}, {}, None
for l in open(tr):
    f = l.split()
    if l.startswith('Transition-state'):
        tstate = int(f[1].rstrip(':'))
    elif l.startswith(' Transition-id'):
        t = int(f[2]); p[t] = float(f[5]); state_of[t] = tstate
        if '[self-loop]' in l: sl[tstate] = t
def scaled(t):
    lp = math.log(p[t])
    if ts == ss: return lp * ts
    if sl.get(state_of[t]) == t: return ss * lp
    n = math.log(1 - p[sl[state_of[t]]]) if state_of[t] in sl else 0.0
    return ss * n + ts * (lp - n)
nw = {l.split()[0]: len(l.split()) - 1 for l in open(text)}
pfs = {l.split()[0]: sum(float(x) for x in l.split()[2:-1]) for l in open(pf)}
for l in open(ali):
    f = l.split(); k = f[0]
    want = 0.1 * pfs[k] + sum(scaled(int(t)) for t in f[1:]) + (nw[k] + 1) * math.log(0.5)
    got = float(next(x for x in open(sc) if x.split()[0] == k).split()[1])
    assert abs(got - want) <= 2e-3 + 2e-5 * abs(want), (k, got, want)
print('ok')
EOF
  done
  # scale 0 for both: the alignment may change, the transition part of the score is gone
  ! cmp -s sc.1.0.1.0 sc.0.0
}

@test "gmm-align-compiled: an utterance too short for its graph fails with Kaldi's lines, at every beam" {
  graphs int.40 g40.ark 2>/dev/null
  head -n 2 feats39.scp > f2.scp
  subsample-feats --n=50 scp:f2.scp ark:short.ark 2>/dev/null
  run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 "$MDL" ark:g40.ark ark:short.ark ark,t:short.ali
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"WARNING: Retrying utterance cathy-arctic_a0001-1 with beam 40"* ]]
  [[ "$output" == *"WARNING: Did not successfully decode file cathy-arctic_a0001-1, len = 7"* ]]
  [[ "$output" == *"Retried 2 out of 40 utterances."* ]]
  [[ "$output" == *"Done 0, errors on 40"* ]]
  [[ "$output" == *"WARNING: No features for utterance cathy-arctic_a0002-1"* ]]
  run gmm-align-compiled $SCALES --exact "$MDL" ark:g40.ark ark:short.ark ark,t:short.ali
  [ "$status" -eq 1 ]
  [[ "$output" == *"Did not successfully decode file cathy-arctic_a0001-2, len = "* ]]
  [[ "$output" != *"Retrying"* ]]
}

@test "gmm-align-compiled: bad input: one error line, nothing written" {
  graphs int.40 g40.ark 2>/dev/null
  head -n 2 feats39.scp > f2.scp
  run gmm-align-compiled --beam=10 --retry-beam=5 "$MDL" ark:g40.ark scp:f2.scp ark,t:x.ali
  [ "$status" -ne 0 ]
  [[ "$output" == *"Beams do not make sense: beam 10, retry-beam 5"* ]]
  [ ! -e x.ali ]
  # a transition-id beyond the model's
  printf 'cathy-arctic_a0001-1 \n0\t1\t99999\t0\n1\n\n' > bad.ark
  run gmm-align-compiled "$MDL" ark:bad.ark scp:f2.scp ark,t:x.ali
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  [[ "$output" == *"bad.ark"*"cathy-arctic_a0001-1"*"99999"* ]]
  [ ! -e x.ali ]
  # features of another dimension
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" | head -n 1 > f13.scp
  run gmm-align-compiled "$MDL" ark:g40.ark scp:f13.scp ark,t:x.ali
  [ "$status" -ne 0 ]
  [[ "$output" == *"dimension 13"*"39"* ]]
  [ ! -e x.ali ]
  # not a .mdl
  run gmm-align-compiled "$F/mono/tree" ark:g40.ark scp:f2.scp ark,t:x.ali
  [ "$status" -ne 0 ]
  [ ! -e x.ali ]
}

@test "Kaldi's steps/align_si.sh on our tools with Kaldi's final.mdl: Kaldi's alignments" {
  KS=$GH_SHARED/kaldi-scripts
  [ -d "$KS/steps" ] || skip "no Kaldi scripts in $KS"
  mkdir -p si && cd si
  ln -sfn "$KS/steps" steps
  mkdir -p utils
  for f in "$KS"/utils/*; do ln -sfn "$f" utils/; done
  for f in "$ROOT"/egs/utils/*; do ln -sfn "$f" utils/; done
  export PATH=$BIN:$PWD/utils:$PATH
  # the fixture's data dir set-up (make.sh): two speaker ids with the shipped CMVN stats
  mkdir -p data/cathy data/local exp/mono
  cp "$D/text" data/cathy/text
  awk '{print $1, "cathy-" substr($1, 7, 8)}' "$D/utt2spk" > data/cathy/utt2spk
  utils/utt2spk_to_spk2utt.pl data/cathy/utt2spk > data/cathy/spk2utt
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" > data/cathy/feats.scp
  off=$(awk '$1 == "cathy" {sub(/^cmvn.ark:/, "", $2); print $2}' "$D/cmvn.scp")
  for s in cathy-arctic_a cathy-arctic_b; do echo "$s $D/cmvn.ark:$off"; done > data/cathy/cmvn.scp
  cp -r "$D/dict" data/local/dict
  utils/prepare_lang.sh data/local/dict "<UNK>" data/local/lang_tmp data/lang > prepare_lang.log 2>&1
  cp "$MDL" "$F/mono/tree" exp/mono/
  run steps/align_si.sh --nj 2 --cmd utils/run.pl data/cathy data/lang exp/mono exp/mono_ali
  echo "$output"
  [ "$status" -eq 0 ]
  grep -h "Overall log-likelihood per frame" exp/mono_ali/log/align.*.log
  for j in 1 2; do copy-int-vector "ark:gunzip -c exp/mono_ali/ali.$j.gz|" ark,t:si.$j 2>/dev/null; done
  read s1 n1 < <(same_count ../ref.1 si.1)
  read s2 n2 < <(same_count ../ref.2 si.2)
  echo "identical to Kaldi's: $s1 of $n1, $s2 of $n2"
  [ "$n1" -eq 893 ] && [ "$n2" -eq 689 ]
  [ $(( (s1 + s2) * 1000 )) -ge $(( 995 * (n1 + n2) )) ]
  grep -q "Retried 1 out of 689 utterances" exp/mono_ali/log/align.2.log
}
