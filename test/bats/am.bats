#!/usr/bin/env bats
# Trees and the monophone acoustic-model tools (gmm-init-mono, tree-info,
# copy-tree, ali-to-phones, show-transitions, show-alignments,
# copy-transition-model, gmm-boost-silence, gmm-acc-stats-ali, gmm-sum-accs,
# gmm-est on a .mdl, convert-ali) against what real Kaldi wrote on the cathy
# corpus ($GH_SHARED/data/kaldi-fixtures/align/, README and make.sh there):
# bytes where Kaldi's arithmetic is reproduced (model and tree initialisation,
# CTM, phone lengths, copies), and an independent numpy float64 reference
# (test/python/am_ref.py) for one accumulate + estimate pass, within 1e-4
# relative.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  F=$GH_SHARED/data/kaldi-fixtures/align
  D=$GH_SHARED/data/cathy
  PY=$BATS_TEST_DIRNAME/../python
  TMP=$(mktemp -d "${BATS_TMPDIR:-/tmp}/am.XXXXXX")
  PATH=$BIN:$PATH
  # job 1 of the fixture: the arctic_a utterances, apply-cmvn with the shipped
  # stats (every utterance maps to speaker "cathy"), then add-deltas
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > "$TMP/cmvn.scp"
  grep arctic_a "$D/feats.scp" | sed "s| feats.ark:| $D/feats.ark:|" > "$TMP/feats1.scp"
  FEATS1="ark:apply-cmvn --utt2spk=ark:$D/utt2spk scp:$TMP/cmvn.scp scp:$TMP/feats1.scp ark:- | add-deltas ark:- ark:- |"
  ALI="ark:gunzip -c $F/mono_ali/ali.*.gz|"
}

teardown() {
  rm -rf "$TMP"
}

@test "gmm-init-mono: model and tree byte-identical to Kaldi's mono/0.mdl and mono/tree" {
  head -n 10 "$TMP/feats1.scp" > "$TMP/feats10.scp"
  run "$BIN/gmm-init-mono" --shared-phones="$F/lang/phones/sets.int" \
    "--train-feats=ark:apply-cmvn --utt2spk=ark:$D/utt2spk scp:$TMP/cmvn.scp scp:$TMP/feats10.scp ark:- | add-deltas ark:- ark:- | subset-feats --n=10 ark:- ark:- |" \
    "$F/lang/topo" 39 "$TMP/0.mdl" "$TMP/tree"
  [ "$status" -eq 0 ]
  cmp "$TMP/tree" "$F/mono/tree"
  cmp "$TMP/0.mdl" "$F/mono/0.mdl"
  # without the training features: means 1, variances 1, same tree
  "$BIN/gmm-init-mono" --shared-phones="$F/lang/phones/sets.int" "$F/lang/topo" 39 "$TMP/1.mdl" "$TMP/tree1"
  cmp "$TMP/tree1" "$F/mono/tree"
  ! cmp -s "$TMP/1.mdl" "$F/mono/0.mdl"
  # one pdf set per phone without --shared-phones: 346 phones, 3 or 5 pdf-classes
  "$BIN/gmm-init-mono" "$F/lang/topo" 39 "$TMP/2.mdl" "$TMP/tree2"
  run "$BIN/tree-info" "$TMP/tree2"
  [ "${lines[0]}" = "num-pdfs $(( 10 * 5 + 336 * 3 ))" ]
}

@test "tree-info and copy-tree: Kaldi's numbers, binary and text round trips byte for byte" {
  run "$BIN/tree-info" "$F/mono/tree"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf 'num-pdfs 127\ncontext-width 1\ncentral-position 0')" ]
  run "$BIN/tree-info" "$F/tri1/tree"
  [ "$output" = "$(printf 'num-pdfs 432\ncontext-width 3\ncentral-position 1')" ]
  for t in mono/tree tri1/tree tri1/subset10/tree; do
    "$BIN/copy-tree" "$F/$t" "$TMP/b"
    cmp "$TMP/b" "$F/$t"
    "$BIN/copy-tree" --binary=false "$F/$t" "$TMP/t"
    "$BIN/copy-tree" "$TMP/t" "$TMP/b2"
    cmp "$TMP/b2" "$F/$t"
    "$BIN/copy-tree" --binary=false "$TMP/t" "$TMP/t2"
    cmp "$TMP/t" "$TMP/t2"
  done
  # text form as Kaldi writes it (tokens, "[ ... ]" sets, newline after a table / split)
  "$BIN/copy-tree" --binary=false "$F/mono/tree" "$TMP/t"
  run head -c 40 "$TMP/t"
  [ "$output" = "ContextDependency 1 0 ToPdf SE 0 [ 1 2 3" ]
  grep -q '^TE -1 5 ( CE 5 CE 6 CE 7 CE 8 CE 9 ) $' "$TMP/t"
  grep -q '^{ TE -1 3 ( CE 10 CE 11 CE 12 ) $' "$TMP/t"
}

@test "ali-to-phones --ctm-output and --write-lengths: byte-identical to Kaldi's" {
  run "$BIN/ali-to-phones" --ctm-output --frame-shift=0.01 "$F/mono/final.mdl" "$ALI" "$TMP/ctm"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Done 1582 utterances."* ]]
  # the fixture's CTM went through int2sym.pl; map the names back to ids (README)
  gunzip -c "$F/mono_ctm/phones.ctm.gz" |
    awk 'NR==FNR{id[$1]=$2;next}{print $1,$2,$3,$4,id[$5]}' "$F/lang/phones.txt" - > "$TMP/ref.ctm"
  [ "$(wc -l < "$TMP/ref.ctm")" -eq 53932 ]
  cmp "$TMP/ctm" "$TMP/ref.ctm"
  "$BIN/ali-to-phones" --write-lengths "$F/mono/final.mdl" "$ALI" ark,t:"$TMP/len"
  gunzip -c "$F/mono_ctm/phones.lengths.txt.gz" | cmp - "$TMP/len"
  # --per-frame and the plain sequence agree with the lengths (expanded by awk)
  "$BIN/ali-to-phones" --per-frame "$F/mono/final.mdl" "$ALI" ark,t:"$TMP/pf"
  awk '{printf "%s ", $1; for (i = 2; i <= NF; i += 3) for (k = 0; k < $(i+1); k++) printf "%s ", $i; print ""}' \
    "$TMP/len" > "$TMP/pf.ref"
  cmp "$TMP/pf" "$TMP/pf.ref"
  "$BIN/ali-to-phones" "$F/mono/final.mdl" "$ALI" ark,t:"$TMP/seq"
  awk '{printf "%s ", $1; for (i = 2; i <= NF; i += 3) printf "%s ", $i; print ""}' "$TMP/len" > "$TMP/seq.ref"
  cmp "$TMP/seq" "$TMP/seq.ref"
}

@test "ali-to-pdf and ali-to-post work on the fixture's alignments" {
  "$BIN/ali-to-pdf" "$F/mono/final.mdl" "$ALI" ark,t:"$TMP/pdf"
  [ "$(wc -l < "$TMP/pdf")" -eq 1582 ]
  # every pdf id in [0, 127), and one per frame (475,973 frames, README)
  run awk '{n += NF - 1; for (i = 2; i <= NF; i++) if ($i < 0 || $i >= 127) bad++} END {print n, bad + 0}' "$TMP/pdf"
  [ "$output" = "475973 0" ]
  "$BIN/ali-to-post" "$ALI" ark,t:"$TMP/post"
  [ "$(wc -l < "$TMP/post")" -eq 1582 ]
}

@test "show-transitions prints Kaldi's TransitionModel::Print lines" {
  run "$BIN/show-transitions" "$F/lang/phones.txt" "$F/mono/final.mdl" "$F/mono/final.occs"
  [ "$status" -eq 0 ]
  # Kaldi's format strings: "Transition-state " << tstate << ": phone = " << name
  # << " hmm-state = " << s << " pdf = " << pdf; " Transition-id = " << tid << " p = " << p
  # << " count of pdf = " << occ, then " [self-loop]" or " [" << s << " -> " << next << "]"
  [ "${lines[0]}" = "Transition-state 1: phone = SIL hmm-state = 0 pdf = 0" ]
  [ "${lines[1]}" = " Transition-id = 1 p = 0.780079 count of pdf = 20689 [self-loop]" ]
  [ "${lines[2]}" = " Transition-id = 2 p = 0.01 count of pdf = 20689 [0 -> 1]" ]
  [ "${lines[4]}" = " Transition-id = 4 p = 0.199928 count of pdf = 20689 [0 -> 3]" ]
  # 1058 transition-states + 2196 transition-ids
  [ "${#lines[@]}" -eq 3254 ]
  # every probability is exp of the model's log-probability (Kaldi text, %g)
  "$BIN/gmm-copy" --binary=false "$F/mono/final.mdl" "$TMP/m.txt"
  "$BIN/show-transitions" "$F/lang/phones.txt" "$F/mono/final.mdl" > "$TMP/st"
  python3 - "$TMP/m.txt" "$TMP/st" <<'EOF'
import sys
import numpy as np
t = open(sys.argv[1]).read().split()
i = t.index('<LogProbs>') + 2
lp = [float(x) for x in t[i:t.index(']', i)]]
n = 0
for line in open(sys.argv[2]):
    if line.startswith(' Transition-id = '):
        f = line.split()
        tid, p = int(f[2]), f[5]
        # Kaldi: float Exp of the log-probability, printed by C++'s default (%g: 6 digits)
        e = float(np.exp(np.float32(lp[tid])))
        assert p == '%g' % float(p) and abs(float(p) - e) <= 5e-6 * e, (tid, p, lp[tid])
        n += 1
assert n == len(lp) - 1 == 2196, n
EOF
}

@test "show-alignments and copy-transition-model" {
  run "$BIN/show-alignments" "$F/lang/phones.txt" "$F/mono/final.mdl" "ark:gunzip -c $F/mono_ali/ali.1.gz|"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "cathy-arctic_a0001-1  [ 4 16 18 17 17 17 ] [ 518 517 "* ]]
  [[ "${lines[1]}" == "cathy-arctic_a0001-1  SIL                  AO1_B "* ]]
  # binary: the TransitionModel part of the .mdl, byte for byte; text round trip
  "$BIN/copy-transition-model" "$F/mono/final.mdl" "$TMP/tm"
  cmp -n "$(stat -c %s "$TMP/tm")" "$TMP/tm" "$F/mono/final.mdl"
  "$BIN/copy-transition-model" --binary=false "$F/mono/final.mdl" "$TMP/tm.txt"
  "$BIN/copy-transition-model" "$TMP/tm.txt" "$TMP/tm2"
  cmp "$TMP/tm" "$TMP/tm2"
}

@test "gmm-boost-silence: --boost=1 gives Kaldi's model back; --boost=2 doubles only silence weights" {
  "$BIN/gmm-boost-silence" --boost=1.0 "$(cat "$F/lang/phones/optional_silence.csl")" "$F/mono/final.mdl" "$TMP/b1.mdl"
  cmp "$TMP/b1.mdl" "$F/mono/final.mdl"
  run "$BIN/gmm-boost-silence" --boost=2 1:2:3:4:5 "$F/mono/final.mdl" "$TMP/b2.mdl"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Boosted weights for 5 pdfs, by factor of 2"* ]]
  # weights of pdfs 0-4 (SIL) double, the others do not change
  "$BIN/gmm-info" --print-weights "$F/mono/final.mdl" | grep '^pdf ' > "$TMP/w1"
  "$BIN/gmm-info" --print-weights "$TMP/b2.mdl" | grep '^pdf ' > "$TMP/w2"
  python3 - "$TMP/w1" "$TMP/w2" <<'EOF'
import sys
a = [l.split()[4:-1] for l in open(sys.argv[1])]
b = [l.split()[4:-1] for l in open(sys.argv[2])]
assert len(a) == len(b) == 127 and all(len(x) == len(y) > 0 for x, y in zip(a, b))
for p, (x, y) in enumerate(zip(a, b)):
    f = 2.0 if p < 5 else 1.0
    for u, v in zip(x, y):
        assert abs(float(v) - f * float(u)) <= 1e-5 * f * float(u), (p, u, v)
EOF
}

@test "gmm-acc-stats-ali + gmm-est on a .mdl: avg like and re-estimated model match a numpy reference" {
  "$BIN/copy-feats" "$FEATS1" ark:"$TMP/f1.ark"
  gunzip -c "$F/mono_ali/ali.1.gz" > "$TMP/ali1.ark"
  run "$BIN/gmm-acc-stats-ali" --device=cpu "$F/mono/final.mdl" ark:"$TMP/f1.ark" ark:"$TMP/ali1.ark" "$TMP/1.acc"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Done 893 files, 0 with errors."* ]]
  line=$(grep "Overall avg like per frame (Gaussian only) = " <<< "$output")
  [[ "$line" == *" over 265828 frames." ]]
  avg=$(sed 's/.*= \([^ ]*\) over.*/\1/' <<< "$line")
  run "$BIN/gmm-est" --min-gaussian-occupancy=3 --write-occs="$TMP/1.occs" "$F/mono/final.mdl" "$TMP/1.acc" "$TMP/1.mdl"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Transition model update: Overall "*" log-like improvement per frame over 265828 frames."* ]]
  [[ "$output" == *"GMM update: Overall avg like per frame = $avg over 265828 frames."* ]]
  # occupancies as Kaldi writes them: a text vector of 127 values
  run awk '{print $1, NF}' "$TMP/1.occs"
  [ "$output" = "[ 129" ]
  "$BIN/gmm-copy" --binary=false "$F/mono/final.mdl" "$TMP/old.txt"
  "$BIN/gmm-copy" --binary=false "$TMP/1.mdl" "$TMP/new.txt"
  run python3 "$PY/am_ref.py" --min-gaussian-occupancy=3 "$TMP/old.txt" "$TMP/f1.ark" "$TMP/ali1.ark" "$avg" "$TMP/new.txt"
  echo "$output"
  [ "$status" -eq 0 ]
  # the reference can fail: the un-updated model is not its M-step
  run python3 "$PY/am_ref.py" --min-gaussian-occupancy=3 "$TMP/old.txt" "$TMP/f1.ark" "$TMP/ali1.ark" "$avg" "$TMP/old.txt"
  [ "$status" -ne 0 ]
  # gmm-sum-accs of two halves gives the same update (checked against the same reference)
  n=$(wc -l < "$TMP/feats1.scp")
  "$BIN/copy-feats" ark:"$TMP/f1.ark" ark,scp:"$TMP/f1b.ark,$TMP/f1b.scp"
  head -n $((n / 2)) "$TMP/f1b.scp" > "$TMP/h1.scp"
  tail -n +$((n / 2 + 1)) "$TMP/f1b.scp" > "$TMP/h2.scp"
  "$BIN/gmm-acc-stats-ali" --device=cpu "$F/mono/final.mdl" scp:"$TMP/h1.scp" ark:"$TMP/ali1.ark" "$TMP/h1.acc"
  "$BIN/gmm-acc-stats-ali" --device=cpu "$F/mono/final.mdl" scp:"$TMP/h2.scp" ark:"$TMP/ali1.ark" "$TMP/h2.acc"
  "$BIN/gmm-sum-accs" "$TMP/sum.acc" "$TMP/h1.acc" "$TMP/h2.acc"
  "$BIN/gmm-est" --min-gaussian-occupancy=3 "$F/mono/final.mdl" "$TMP/sum.acc" "$TMP/2.mdl"
  "$BIN/gmm-copy" --binary=false "$TMP/2.mdl" "$TMP/new2.txt"
  run python3 "$PY/am_ref.py" --min-gaussian-occupancy=3 "$TMP/old.txt" "$TMP/f1.ark" "$TMP/ali1.ark" "$avg" "$TMP/new2.txt"
  [ "$status" -eq 0 ]
}

@test "gmm-est on a .mdl, 50 utterances: pdfs without data end as Kaldi's (last Gaussian, weight 1)" {
  head -n 50 "$TMP/feats1.scp" > "$TMP/f50.scp"
  "$BIN/copy-feats" "ark:apply-cmvn --utt2spk=ark:$D/utt2spk scp:$TMP/cmvn.scp scp:$TMP/f50.scp ark:- | add-deltas ark:- ark:- |" \
    ark:"$TMP/f50.ark"
  gunzip -c "$F/mono_ali/ali.1.gz" > "$TMP/ali1.ark"
  run "$BIN/gmm-acc-stats-ali" --device=cpu "$F/mono/final.mdl" ark:"$TMP/f50.ark" ark:"$TMP/ali1.ark" "$TMP/50.acc"
  [ "$status" -eq 0 ]
  avg=$(grep "Overall avg like per frame" <<< "$output" | sed 's/.*= \([^ ]*\) over.*/\1/')
  run "$BIN/gmm-est" --min-gaussian-occupancy=3 "$F/mono/final.mdl" "$TMP/50.acc" "$TMP/50.mdl"
  [ "$status" -eq 0 ]
  [[ "$output" == *"8 pdfs without data reduced to their last Gaussian"* ]]
  "$BIN/gmm-copy" --binary=false "$F/mono/final.mdl" "$TMP/old.txt"
  "$BIN/gmm-copy" --binary=false "$TMP/50.mdl" "$TMP/new.txt"
  run python3 "$PY/am_ref.py" --min-gaussian-occupancy=3 "$TMP/old.txt" "$TMP/f50.ark" "$TMP/ali1.ark" "$avg" "$TMP/new.txt"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "convert-ali: identity with the same tree; converts to the tri1 tree" {
  "$BIN/convert-ali" "$F/mono/final.mdl" "$F/mono/final.mdl" "$F/mono/tree" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    ark,t:"$TMP/c1"
  gunzip -c "$F/mono_ali/ali.1.gz" | cmp - "$TMP/c1"
  "$BIN/convert-ali" "$F/mono/final.mdl" "$F/mono/0.mdl" "$F/mono/tree" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    ark,t:"$TMP/c0"
  gunzip -c "$F/mono_ali/ali.1.gz" | cmp - "$TMP/c0"
  # to the triphone model: same phones, same lengths, pdfs from the tri1 tree
  "$BIN/convert-ali" "$F/mono/final.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    ark,t:"$TMP/ct"
  "$BIN/ali-to-phones" --write-lengths "$F/tri1/1.mdl" ark:"$TMP/ct" ark,t:"$TMP/lt"
  "$BIN/ali-to-phones" --write-lengths "$F/mono/final.mdl" "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark,t:"$TMP/lm"
  cmp "$TMP/lt" "$TMP/lm"
  "$BIN/ali-to-pdf" "$F/tri1/1.mdl" ark:"$TMP/ct" ark,t:"$TMP/pt"
  run awk '{for (i = 2; i <= NF; i++) if ($i >= 127) n++} END {print (n > 0)}' "$TMP/pt"
  [ "$output" = 1 ]
}

@test "bad input: a tree of another model, a model of another lang, transition-ids out of range" {
  # a tree that does not match the model
  run "$BIN/convert-ali" "$F/mono/final.mdl" "$F/mono/final.mdl" "$F/tri1/tree" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    ark:"$TMP/x"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: the tree $F/tri1/tree has 432 pdfs but the model $F/mono/final.mdl uses 127"* ]]
  [ ! -e "$TMP/x" ]
  # a .mdl of another lang (phone ids beyond its phones.txt)
  run "$BIN/show-transitions" "$F/lang_nopos/phones.txt" "$F/mono/final.mdl"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: $F/lang_nopos/phones.txt: phone 92 of the model $F/mono/final.mdl is not in the symbol table"* ]]
  [ "${#lines[@]}" -eq 1 ]
  run "$BIN/show-alignments" "$F/lang_nopos/phones.txt" "$F/mono/final.mdl" "ark:gunzip -c $F/mono_ali/ali.1.gz|"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: $F/lang_nopos/phones.txt: phone 92 of the model $F/mono/final.mdl is not in the symbol table"* ]]
  # alignments with transition-ids out of range (2196 transition-ids in the model)
  printf 'utt1 4 16 18 17\nutt2 4 16 9999 17\n' > "$TMP/bad.ali"
  for tool in ali-to-phones ali-to-pdf; do
    run "$BIN/$tool" "$F/mono/final.mdl" ark:"$TMP/bad.ali" ark,t:"$TMP/out"
    [ "$status" -ne 0 ]
    [[ "$output" == *"ark:$TMP/bad.ali, key 'utt2': transition-id 9999 at frame 2 is out of range [1, 2196]"* ]]
    [ ! -e "$TMP/out" ]
  done
  awk 'BEGIN {for (u = 1; u <= 2; u++) {printf "utt%d [\n", u; for (t = 0; t < 4; t++) {for (d = 0; d < 39; d++) printf " %d", t + d; print (t == 3 ? " ]" : "")}}}' > "$TMP/f.txt"
  "$BIN/copy-feats" ark,t:"$TMP/f.txt" ark:"$TMP/f3.ark"
  run "$BIN/gmm-acc-stats-ali" --device=cpu "$F/mono/final.mdl" ark:"$TMP/f3.ark" ark:"$TMP/bad.ali" "$TMP/acc"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: ark:$TMP/bad.ali, key 'utt2': transition-id 9999 at frame 2 is out of range [1, 2196] for the model $F/mono/final.mdl"* ]]
  [ ! -e "$TMP/acc" ]
  # a tree file that is not a tree
  run "$BIN/tree-info" "$F/mono/final.mdl"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$F/mono/final.mdl"*"ContextDependency"* ]]
  [ "${#lines[@]}" -eq 1 ]
}
