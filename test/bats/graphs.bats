#!/usr/bin/env bats
# Training graphs (compile-train-graphs) and equal alignments (align-equal-compiled)
# on the cathy corpus with the lang, tree and models real Kaldi wrote
# ($GH_SHARED/data/kaldi-fixtures/align/, README and make.sh there).  References:
# OpenFst's fstinfo (libfst-tools, when installed) on an extracted entry; an independent
# Python checker (test/python/graphs_ref.py) of the path weights (-sum log p(tid) of the
# model plus the lexicon's silence costs), of the words on the paths and of the phones
# of each alignment against the dictionary's lexicon.txt; Kaldi's pass-0 likelihood
# (mono/loglike.txt) within 0.5%.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export PATH="$BIN:$PATH"
  F=$GH_SHARED/data/kaldi-fixtures/align
  D=$GH_SHARED/data/cathy
  PY=$ROOT/test/python
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  cd "$T"
  export LC_ALL=C
  OFST=""
  for d in /usr/bin /usr/local/bin; do
    if [ -x $d/fstinfo ] && [ "$d" != "$BIN" ]; then OFST=$d; break; fi
  done
  gunzip -c "$F/lang/L.fst.gz" > L.fst
  # transcripts as Kaldi's scripts make them (sym2int.pl --map-oov), in awk
  awk -v oov="$(cat "$F/lang/oov.int")" 'NR == FNR { id[$1] = $2; next }
    { printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", ($i in id) ? id[$i] : oov; print "" }' \
    "$F/lang/words.txt" "$D/text" > text.int
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > cmvn.scp
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" > feats.scp
  FEATS="ark:apply-cmvn --utt2spk=ark:$D/utt2spk scp:cmvn.scp scp:feats.scp ark:- | add-deltas ark:- ark:- |"
}

@test "compile-train-graphs: every cathy utterance, Kaldi's archive format, read back equal" {
  run compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/mono/tree" "$F/mono/0.mdl" \
    L.fst ark:text.int "ark:|gzip -c > fsts.1.gz"
  [ "$status" -eq 0 ]
  [[ "$output" == *"succeeded for 1582 graphs, failed for 0"* ]]
  # binary -> binary: the same bytes; binary -> text -> binary -> text: the same text
  # (text weights have Kaldi's 6 digits, so text -> binary is not the original bytes)
  fstcopy "ark:gunzip -c fsts.1.gz |" ark:g1.ark
  gunzip -c fsts.1.gz | cmp - g1.ark
  fstcopy "ark:gunzip -c fsts.1.gz |" ark,t:g.txt
  fstcopy ark:g.txt ark:g2.ark
  fstcopy ark:g2.ark ark,t:g2.txt
  cmp g.txt g2.txt
  [ "$(grep -c '^cathy-' g.txt)" -eq 1582 ]
  # one entry as a file: "key " then OpenFst's binary vector FST
  gunzip -c fsts.1.gz | python3 -c "
import sys; d = sys.stdin.buffer.read(); i = d.index(b' ') + 1; j = d.index(b'cathy-', i)
open('one.fst', 'wb').write(d[i:j])"
  if [ -n "$OFST" ]; then
    run "$OFST/fstinfo" one.fst
    [ "$status" -eq 0 ]
    n=$(echo "$output" | awk '/^# of states/ {print $NF}')
    [ "$n" -gt 100 ]
    [ "$(echo "$output" | awk '/^# of connected states/ {print $NF}')" -eq "$n" ]
    [ "$(echo "$output" | awk '/^# of input epsilons/ {print $NF}')" -eq 0 ]
    [ "$(echo "$output" | awk '/^fst type/ {print $NF}')" = vector ]
  else
    skip "OpenFst's fstinfo (libfst-tools) not installed"
  fi
}

@test "compile-train-graphs: paths cost -sum log p(tid) + silence costs and output the transcript (Python reference)" {
  head -n 60 text.int > t60.int
  compile-train-graphs --transition-scale=1.0 --self-loop-scale=1.0 "$F/mono/tree" "$F/mono/final.mdl" \
    L.fst ark:t60.int ark:g60
  fstcopy ark:g60 ark,t:g60.txt
  align-equal-compiled ark:g60 "$FEATS" ark,t:a60
  gmm-copy --binary=false "$F/mono/final.mdl" final.txt
  run python3 "$PY/graphs_ref.py" weights g60.txt a60 final.txt t60.int 0.5
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"checked 60 alignments"* ]]
  # the checker can fail: another silence probability gives other costs
  run python3 "$PY/graphs_ref.py" weights g60.txt a60 final.txt t60.int 0.4
  [ "$status" -eq 1 ]
  # Kaldi's default scales (0) leave the transition probabilities out: the lexicon's
  # costs only
  compile-train-graphs "$F/mono/tree" "$F/mono/final.mdl" L.fst ark:t60.int ark,t:g0.txt
  run python3 "$PY/graphs_ref.py" weights g0.txt a60 final.txt t60.int 0.5 0
  echo "$output"
  [ "$status" -eq 0 ]
  run python3 "$PY/graphs_ref.py" weights g0.txt a60 final.txt t60.int 0.5 1
  [ "$status" -eq 1 ]
}

@test "align-equal-compiled: pass-0 likelihood of Kaldi's train_mono.sh within 0.5%, lexicon phones, equal spacing" {
  compile-train-graphs "$F/mono/tree" "$F/mono/0.mdl" L.fst ark:text.int "ark:|gzip -c > fsts.gz"
  run align-equal-compiled "ark:gunzip -c fsts.gz|" "$FEATS" ark:ali.0
  [ "$status" -eq 0 ]
  [[ "$output" == *"Success: done 1582 utterances."* ]]
  # deterministic (Kaldi's srand(StringHasher(key)) + rand())
  align-equal-compiled "ark:gunzip -c fsts.gz|" "$FEATS" ark:ali.0b
  cmp ali.0 ali.0b
  run gmm-acc-stats-ali "$F/mono/0.mdl" "$FEATS" ark:ali.0 0.acc
  [ "$status" -eq 0 ]
  line=$(echo "$output" | grep 'Overall avg like per frame')
  like=$(echo "$line" | awk '{print $(NF-3)}')
  frames=$(echo "$line" | awk '{print $(NF-1)}')
  ref=$(awk '$1 == 0 {print $2, $3}' "$F/mono/loglike.txt")
  [ "$frames" -eq "$(echo $ref | cut -d' ' -f2)" ]
  # tolerance 0.5% relative.  (0.mdl's pdfs are all the same Gaussian, so this value
  # checks that every frame was aligned; the phone and spacing checks below check the path.)
  awk -v a="$like" -v b="$(echo $ref | cut -d' ' -f1)" 'BEGIN { d = (a - b) / b; exit !(d < 0.005 && d > -0.005) }'
  # the phones are the transcript's words' pronunciations with optional SIL between words
  ali-to-phones "$F/mono/0.mdl" ark:ali.0 ark,t:phones.0
  run python3 "$PY/graphs_ref.py" phones "$F/lang/phones.txt" "$D/dict/lexicon.txt" "$F/lang/words.txt" \
    text.int phones.0 SIL
  echo "$output"
  [ "$status" -eq 0 ]
  # equal spacing: every state on the path repeats its self-loop m or m + 1 times, so the
  # lengths of the 3-state non-silence phones of an utterance differ by at most 3 frames
  ali-to-phones --write-lengths "$F/mono/0.mdl" ark:ali.0 ark,t:lens.0
  run awk '{ mn = 1e9; mx = 0; for (i = 2; i < NF; i += 3) if ($i > 10) { if ($(i+1) < mn) mn = $(i+1); if ($(i+1) > mx) mx = $(i+1) }
             if (mx - mn > 3) { print $1, mn, mx; bad++ } } END { exit bad > 0 }' lens.0
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "compile-train-graphs: unknown word ids and empty transcripts are skipped with a warning naming the key" {
  head -n 2 text.int > t.int
  echo "bad-word 162 999999" >> t.int
  echo "empty" >> t.int
  run compile-train-graphs "$F/mono/tree" "$F/mono/0.mdl" L.fst ark:t.int ark,t:g.txt
  [ "$status" -eq 0 ]
  [[ "$output" == *"bad-word"*"word id 999999 (word 2 of 2) is not an output label"* ]]
  [[ "$output" == *"empty"*"empty transcript"* ]]
  [[ "$output" == *"succeeded for 2 graphs, failed for 2"* ]]
  [ "$(grep -c '^cathy-' g.txt)" -eq 2 ]
  # none compiled: exit 1 as Kaldi
  tail -n 2 t.int > t2.int
  run compile-train-graphs "$F/mono/tree" "$F/mono/0.mdl" L.fst ark:t2.int ark,t:g2.txt
  [ "$status" -eq 1 ]
  # a tree of another model is refused, one line
  run compile-train-graphs "$F/tri1/tree" "$F/mono/0.mdl" L.fst ark:t.int ark,t:g3.txt
  [ "$status" -ne 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == *"the tree $F/tri1/tree has 432 pdfs but the model $F/mono/0.mdl uses 127"* ]]
  [ ! -e g3.txt ]
  # missing features and too few frames: warnings naming the key
  echo "nofeat 162" > t3.int
  compile-train-graphs "$F/mono/tree" "$F/mono/0.mdl" L.fst ark:t3.int ark:g3
  run align-equal-compiled ark:g3 "$FEATS" ark,t:a3
  [ "$status" -eq 1 ]
  [[ "$output" == *"No features for utterance nofeat"* ]]
}
