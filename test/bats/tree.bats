#!/usr/bin/env bats
# Decision-tree building (acc-tree-stats, sum-tree-stats, cluster-phones,
# compile-questions, build-tree) against what real Kaldi wrote on the cathy
# corpus ($GH_SHARED/data/kaldi-fixtures/align/, README and make.sh there):
# bytes where Kaldi's files are shipped, Kaldi's logged counts and
# objective improvements where they are not (the full treeacc, 28.8 MB), and
# an independent numpy reader (test/python/tree_ref.py) for the sums; alignments
# with their phones rewritten by hand (test/python/phone_map_ali.py) for --phone-map.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  F=$GH_SHARED/data/kaldi-fixtures/align
  D=$GH_SHARED/data/cathy
  PY=$BATS_TEST_DIRNAME/../python
  TMP=$(mktemp -d "${BATS_TMPDIR:-/tmp}/tree.XXXXXX")
  PATH=$BIN:$PATH
  # as the fixture: apply-cmvn with the shipped stats (every utterance maps
  # to speaker "cathy"), then add-deltas; job 1 = arctic_a, job 2 = arctic_b
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > "$TMP/cmvn.scp"
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" > "$TMP/feats.scp"
  CI=$(cat "$F/lang/phones/context_indep.csl")
}

teardown() {
  rm -rf "$TMP"
}

# expect_error PATTERN OUTPUT_FILE CMD...: exit 1, one ERROR line matching
# PATTERN (a glob), OUTPUT_FILE absent.
expect_error() {
  local pat=$1 out=$2; shift 2
  run "$@"
  echo "status $status; output: $output"
  [ "$status" -eq 1 ]
  [ "$(grep -c ': ERROR: ' <<<"$output")" -eq 1 ]
  [[ "$(grep ': ERROR: ' <<<"$output")" == *$pat* ]]
  [ ! -e "$out" ]
}

feats() {  # feats <scp>: the fixture's feature pipeline as an rspecifier
  echo "ark:apply-cmvn --utt2spk=ark:$D/utt2spk scp:$TMP/cmvn.scp scp:$1 ark:- | add-deltas ark:- ark:- |"
}

acc_full() {  # $TMP/1.treeacc, $TMP/2.treeacc, $TMP/treeacc as make.sh does
  grep arctic_a "$TMP/feats.scp" > "$TMP/feats.1.scp"
  grep arctic_b "$TMP/feats.scp" > "$TMP/feats.2.scp"
  for j in 1 2; do
    "$BIN/acc-tree-stats" --ci-phones="$CI" "$F/mono/final.mdl" "$(feats "$TMP/feats.$j.scp")" \
      "ark:gunzip -c $F/mono_ali/ali.$j.gz|" "$TMP/$j.treeacc" 2> "$TMP/acc.$j.log"
  done
  "$BIN/sum-tree-stats" "$TMP/treeacc" "$TMP/1.treeacc" "$TMP/2.treeacc" 2> "$TMP/sum.log"
}

@test "acc-tree-stats: Kaldi's tri1/subset10/treeacc byte for byte (447 statistics)" {
  grep -F -w -f "$F/tri1/subset10/utts.txt" "$TMP/feats.scp" > "$TMP/feats10.scp"
  [ "$(wc -l < "$TMP/feats10.scp")" -eq 10 ]
  run "$BIN/acc-tree-stats" --ci-phones="$CI" "$F/mono/final.mdl" "$(feats "$TMP/feats10.scp")" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/treeacc"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Accumulated stats for 10 files, 0 failed due to no alignment, 0 failed for other reasons."* ]]
  [[ "$output" == *"Number of separate stats (context-dependent states) is 447"* ]]
  gunzip -c "$F/tri1/subset10/treeacc.gz" | cmp - "$TMP/treeacc"
  # text output reads back to the same binary file
  "$BIN/acc-tree-stats" --binary=false --ci-phones="$CI" "$F/mono/final.mdl" "$(feats "$TMP/feats10.scp")" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/treeacc.txt" 2>/dev/null
  head -c 4 "$TMP/treeacc.txt" | grep -q '^BTS '
  "$BIN/sum-tree-stats" "$TMP/back" "$TMP/treeacc.txt"
  cmp "$TMP/back" "$TMP/treeacc"
}

@test "acc-tree-stats + sum-tree-stats on both jobs: Kaldi's 40,736 statistics; sums exact in Kaldi's order" {
  acc_full
  grep -q "is 28349$" "$TMP/acc.1.log"
  grep -q "Wrote summed accs ( 40736 individual stats)" "$TMP/sum.log"
  grep -q "( 40736 individual stats)" "$F/tri1/sum_tree_acc.log"
  run python3 "$PY/tree_ref.py" info "$TMP/treeacc"
  [ "$output" = "40736 475973.0 39" ]
  run python3 "$PY/tree_ref.py" sum "$TMP/treeacc" "$TMP/1.treeacc" "$TMP/2.treeacc"
  [ "$status" -eq 0 ]
  # the reference must be able to fail: the sum against one input only
  run python3 "$PY/tree_ref.py" sum "$TMP/treeacc" "$TMP/1.treeacc"
  [ "$status" -ne 0 ]
  # --exact=false: the sums from the backends' E-step, within 1e-6 relative
  # (measured: sum x equal, sum x^2 within 6e-8: Kaldi squares in float)
  for dev in cpu opencl; do
    "$BIN/acc-tree-stats" --exact=false --device=$dev --ci-phones="$CI" "$F/mono/final.mdl" \
      "$(feats "$TMP/feats.1.scp")" "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/1.$dev.treeacc" 2>/dev/null
    run python3 "$PY/tree_ref.py" close "$TMP/1.$dev.treeacc" "$TMP/1.treeacc" 1e-6
    echo "$dev: $output"
    [ "$status" -eq 0 ]
  done
  run python3 "$PY/tree_ref.py" close "$TMP/1.cpu.treeacc" "$TMP/1.treeacc" 1e-9
  [ "$status" -ne 0 ]
}

@test "compile-questions: Kaldi's tri1/questions.qst and subset10/questions.qst byte for byte" {
  for d in tri1 tri1/subset10; do
    "$BIN/compile-questions" "$F/lang/topo" "$F/$d/questions.int" "$TMP/q.qst" 2> "$TMP/log"
    cmp "$TMP/q.qst" "$F/$d/questions.qst"
  done
  grep -q "Max # pdf classes is 5" "$TMP/log"
  # text form and back
  "$BIN/compile-questions" --binary=false "$F/lang/topo" "$F/tri1/questions.int" "$TMP/q.txt" 2>/dev/null
  head -c 60 "$TMP/q.txt" | grep -q '^<Questions> <Key> -1 <QuestionsForKey> 4 '
}

@test "build-tree on subset10: Kaldi's tree byte for byte, 71 leaves split, 65 after clustering, Kaldi's warnings" {
  run "$BIN/build-tree" --verbose=1 --max-leaves=100 --cluster-thresh=-1 "$F/tri1/subset10/treeacc.gz" \
    "$F/lang/phones/roots.int" "$F/tri1/subset10/questions.qst" "$F/lang/topo" "$TMP/tree"
  [ "$status" -eq 0 ]
  cmp "$TMP/tree" "$F/tri1/subset10/tree"
  [[ "$output" == *"split 30 times, #leaves now 71"* ]]
  [[ "$output" == *"WARNING: Did not get expected number of leaves: 71 - 3 - 3 != 64"* ]]
  [[ "$output" == *"WARNING: num-leaves-out != num-leaves-required: 65 != 64"* ]]
  [[ "$output" == *"like-impr = 4.01629 per frame over 3165 frames."* ]]
  [[ "$output" == *"Objf change due to clustering -0.554078 per frame."* ]]
  # the low-count lines are Kaldi's, pdf by pdf
  diff <(grep "low count" <<<"$output" | sed 's/.*For/For/') \
       <(grep "low count" "$F/tri1/subset10/build_tree.log" | sed 's/.*For/For/')
  run "$BIN/tree-info" "$TMP/tree"
  [[ "$output" == *"num-pdfs 65"* ]]
}

@test "cluster-phones on subset10: Kaldi's questions (Kaldi's rand() draws)" {
  "$BIN/cluster-phones" "$F/tri1/subset10/treeacc.gz" "$F/lang/phones/sets.int" "$TMP/q.int" 2>/dev/null
  cat "$TMP/q.int" "$F/lang/phones/extra_questions.int" | cmp - "$F/tri1/subset10/questions.int"
  # k-means mode: 4 classes covering every phone of sets.int once
  "$BIN/cluster-phones" --mode=k-means --num-classes=4 "$F/tri1/subset10/treeacc.gz" "$F/lang/phones/sets.int" \
    "$TMP/k.int" 2>/dev/null
  [ "$(wc -l < "$TMP/k.int")" -eq 4 ]
  diff <(tr ' ' '\n' < "$TMP/k.int" | sort -n) <(tr ' ' '\n' < "$F/lang/phones/sets.int" | sort -n)
}

@test "full chain on mono_ali: cluster-phones, compile-questions, build-tree give Kaldi's tri1 files byte for byte" {
  acc_full
  "$BIN/cluster-phones" "$TMP/treeacc" "$F/lang/phones/sets.int" "$TMP/questions.int" 2>/dev/null
  cat "$F/lang/phones/extra_questions.int" >> "$TMP/questions.int"
  cmp "$TMP/questions.int" "$F/tri1/questions.int"
  "$BIN/compile-questions" "$F/lang/topo" "$TMP/questions.int" "$TMP/questions.qst" 2>/dev/null
  cmp "$TMP/questions.qst" "$F/tri1/questions.qst"
  run "$BIN/build-tree" --verbose=1 --max-leaves=500 --cluster-thresh=-1 "$TMP/treeacc" "$F/lang/phones/roots.int" \
    "$TMP/questions.qst" "$F/lang/topo" "$TMP/tree"
  [ "$status" -eq 0 ]
  cmp "$TMP/tree" "$F/tri1/tree"
  [[ "$output" == *"like-impr = 5.47977 per frame over 475973 frames."* ]]
  [[ "$output" == *"Objf change due to clustering -0.132697 per frame."* ]]
  [[ "$output" == *"Num-leaves is now 432"* ]]
}

@test "acc-tree-stats --phone-map: the statistics of the alignments with their phones rewritten by hand; bad maps" {
  grep arctic_a "$TMP/feats.scp" > "$TMP/feats.1.scp"
  # every stressed variant (AA0_B, AA1_B, AA2_B) mapped to its base phone (AA_B);
  # test/python/phone_map_ali.py writes the map and rewrites job 1's alignments with it
  "$BIN/show-transitions" "$F/lang/phones.txt" "$F/mono/final.mdl" > "$TMP/trans.txt" 2>/dev/null
  gunzip -c "$F/mono_ali/ali.1.gz" | "$BIN/copy-int-vector" ark:- ark,t:"$TMP/ali.txt" 2>/dev/null
  run python3 "$PY/phone_map_ali.py" "$F/lang/phones.txt" "$TMP/trans.txt" "$TMP/ali.txt" "$TMP/ali.map.txt" \
    "$TMP/map.txt"
  [ "$output" = "180 94881" ]  # 180 phones mapped, 94,881 frames rewritten
  run "$BIN/acc-tree-stats" --ci-phones="$CI" --phone-map="$TMP/map.txt" "$F/mono/final.mdl" \
    "$(feats "$TMP/feats.1.scp")" "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/mapped.acc"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Number of separate stats (context-dependent states) is 25682"* ]]
  "$BIN/acc-tree-stats" --ci-phones="$CI" "$F/mono/final.mdl" "$(feats "$TMP/feats.1.scp")" \
    "ark,t:$TMP/ali.map.txt" "$TMP/by-hand.acc" 2>/dev/null
  cmp "$TMP/mapped.acc" "$TMP/by-hand.acc"
  # the check can fail: without the map, job 1 has 28,349 statistics
  "$BIN/acc-tree-stats" --ci-phones="$CI" "$F/mono/final.mdl" "$(feats "$TMP/feats.1.scp")" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/plain.acc" 2>/dev/null
  ! cmp -s "$TMP/mapped.acc" "$TMP/plain.acc"
  run python3 "$PY/tree_ref.py" info "$TMP/mapped.acc"
  [ "$output" = "25682 265828.0 39" ]
  # --exact=false maps the same way
  "$BIN/acc-tree-stats" --exact=false --device=cpu --ci-phones="$CI" --phone-map="$TMP/map.txt" "$F/mono/final.mdl" \
    "$(feats "$TMP/feats.1.scp")" "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/mapped.cpu.acc" 2>/dev/null
  run python3 "$PY/tree_ref.py" close "$TMP/mapped.cpu.acc" "$TMP/mapped.acc" 1e-6
  [ "$status" -eq 0 ]
  # bad maps: one line naming the file and the line, or the phone the map lacks
  sed '15d' "$TMP/map.txt" > "$TMP/miss.map"
  sed '3s/.*/3 x/' "$TMP/map.txt" > "$TMP/bad.map"
  { cat "$TMP/map.txt"; echo "15 11"; } > "$TMP/dup.map"
  : > "$TMP/empty.map"
  acc() { "$BIN/acc-tree-stats" --phone-map="$1" "$F/mono/final.mdl" "$(feats "$TMP/feats.1.scp")" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/e.acc"; }
  expect_error "miss.map: the phone map has no entry for phone 15 (in the alignment of cathy-arctic_a0237-1 in " \
    "$TMP/e.acc" acc "$TMP/miss.map"
  expect_error "Error reading phone map from $TMP/bad.map: line 3 is not \"old-phone new-phone\" (two positive integers): '3 x'" \
    "$TMP/e.acc" acc "$TMP/bad.map"
  expect_error "Error reading phone map from $TMP/dup.map: line 347 maps phone 15 a second time" "$TMP/e.acc" \
    acc "$TMP/dup.map"
  expect_error "Read empty phone map from $TMP/empty.map" "$TMP/e.acc" acc "$TMP/empty.map"
}

@test "quinphones (--context-width=5 --central-position=2): statistics, questions, tree; graphs refused" {
  grep arctic_a "$TMP/feats.scp" > "$TMP/feats.1.scp"
  for n in 3 5; do
    run "$BIN/acc-tree-stats" --context-width=$n --central-position=$(( n / 2 )) --ci-phones="$CI" \
      "$F/mono/final.mdl" "$(feats "$TMP/feats.1.scp")" "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/$n.acc"
    [ "$status" -eq 0 ]
  done
  [[ "$output" == *"Number of separate stats (context-dependent states) is 52253"* ]]
  # every frame once; the quinphone events with the outer phones dropped (the
  # triphone window is positions 1..3 of the quinphone one) and summed in float64 are
  # the triphone statistics: the same 28,349 events and counts, sums within 1e-12
  run python3 "$PY/tree_ref.py" info "$TMP/5.acc"
  [ "$output" = "52253 265828.0 39" ]
  run python3 "$PY/tree_ref.py" narrow "$TMP/5.acc" "$TMP/3.acc" 1 3 1e-12
  echo "$output"
  [ "$status" -eq 0 ]
  run python3 "$PY/tree_ref.py" narrow "$TMP/5.acc" "$TMP/3.acc" 0 3 1e-12  # the wrong window fails
  [ "$status" -ne 0 ]
  # questions and tree for N=5
  q="--context-width=5 --central-position=2"
  "$BIN/cluster-phones" $q "$TMP/5.acc" "$F/lang/phones/sets.int" "$TMP/q.int" 2>/dev/null
  cat "$F/lang/phones/extra_questions.int" >> "$TMP/q.int"
  "$BIN/compile-questions" $q "$F/lang/topo" "$TMP/q.int" "$TMP/q.qst" 2>/dev/null
  run "$BIN/build-tree" $q --max-leaves=500 "$TMP/5.acc" "$F/lang/phones/roots.int" "$TMP/q.qst" \
    "$F/lang/topo" "$TMP/tree"
  [ "$status" -eq 0 ]
  [[ "$output" == *"DoDecisionTreeSplit: split 459 times, #leaves now 500"* ]]
  run "$BIN/tree-info" "$TMP/tree"
  [ "$output" = "$(printf 'num-pdfs 432\ncontext-width 5\ncentral-position 2')" ]
  # a model from it, and the monophone alignments converted to it
  "$BIN/gmm-init-model" "$TMP/tree" "$TMP/5.acc" "$F/lang/topo" "$TMP/5.mdl" 2>/dev/null
  run "$BIN/convert-ali" "$F/mono/final.mdl" "$TMP/5.mdl" "$TMP/tree" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    "ark:$TMP/5.ali"
  [[ "$output" == *"Succeeded converting alignments for 893 files, failed for 0"* ]]
  # the graph compilers take at most one phone of context on each side: one error naming the tree
  echo "u1 162" > "$TMP/t.int"
  gunzip -c "$F/lang/L.fst.gz" > "$TMP/L.fst"
  expect_error "the tree $TMP/tree has context width 5 (central position 2): compile-train-graphs supports context width at most 3 with at most one phone on each side" \
    "$TMP/g.ark" "$BIN/compile-train-graphs" "$TMP/tree" "$TMP/5.mdl" "$TMP/L.fst" "ark:$TMP/t.int" "ark:$TMP/g.ark"
  expect_error "--context-width=5 --central-position=2: gmm-train-tri's training graphs support context width at most 3" \
    "$TMP/tri" "$BIN/gmm-train-tri" $q 500 5000 "$TMP/data" "$F/lang" "$TMP/ali" "$TMP/tri"
}

@test "bad input: tree statistics of another dimension, unknown phones, --max-leaves below the roots, another lang" {
  grep -F -w -f "$F/tri1/subset10/utts.txt" "$TMP/feats.scp" > "$TMP/feats10.scp"
  # 13-dimensional statistics (no deltas) summed with the 39-dimensional ones
  "$BIN/acc-tree-stats" --ci-phones="$CI" "$F/mono/final.mdl" \
    "ark:apply-cmvn --utt2spk=ark:$D/utt2spk scp:$TMP/cmvn.scp scp:$TMP/feats10.scp ark:- |" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/13.treeacc" 2>/dev/null
  expect_error "13.treeacc: tree statistics of dimension 13, expected 39 (the statistics of *treeacc.gz)" "$TMP/sum" \
    "$BIN/sum-tree-stats" "$TMP/sum" "$F/tri1/subset10/treeacc.gz" "$TMP/13.treeacc"
  # questions naming a phone the topology lacks
  { cat "$F/tri1/subset10/questions.int"; echo "5 999"; } > "$TMP/bad.int"
  expect_error "bad.int: phone 999 is asked about in the questions but is not in the topology" "$TMP/q.qst" \
    "$BIN/compile-questions" "$F/lang/topo" "$TMP/bad.int" "$TMP/q.qst"
  # --max-leaves below the 41 leaves of the roots
  expect_error "--max-leaves=20 is below the number of leaves of the roots (41)" "$TMP/tree" \
    "$BIN/build-tree" --max-leaves=20 "$F/tri1/subset10/treeacc.gz" "$F/lang/phones/roots.int" \
    "$F/tri1/subset10/questions.qst" "$F/lang/topo" "$TMP/tree"
  # statistics of the position-dependent lang with the roots and topology of lang_nopos
  expect_error "treeacc.gz: phone * appears in the statistics but is not listed in the roots file" "$TMP/tree" \
    "$BIN/build-tree" --max-leaves=100 "$F/tri1/subset10/treeacc.gz" "$F/lang_nopos/phones/roots.int" \
    "$F/tri1/subset10/questions.qst" "$F/lang_nopos/topo" "$TMP/tree"
  # a context-independent phone the model does not have
  expect_error "--ci-phones=1:2:400: phone 400 is not in the model" "$TMP/t.acc" \
    "$BIN/acc-tree-stats" --ci-phones=1:2:400 "$F/mono/final.mdl" "$(feats "$TMP/feats10.scp")" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" "$TMP/t.acc"
  # a roots file with a word where a phone goes; a truncated statistics file
  echo "shared split 1 x 3" > "$TMP/bad.roots"
  expect_error "bad.roots, line 1: 'x' is not a phone id" "$TMP/tree" \
    "$BIN/build-tree" --max-leaves=100 "$F/tri1/subset10/treeacc.gz" "$TMP/bad.roots" \
    "$F/tri1/subset10/questions.qst" "$F/lang/topo" "$TMP/tree"
  gunzip -c "$F/tri1/subset10/treeacc.gz" | head -c 100000 > "$TMP/trunc.acc"
  expect_error "trunc.acc, offset 99923: unexpected end of file" "$TMP/tree" \
    "$BIN/build-tree" --max-leaves=100 "$TMP/trunc.acc" "$F/lang/phones/roots.int" \
    "$F/tri1/subset10/questions.qst" "$F/lang/topo" "$TMP/tree"
  # a file that is not tree statistics
  expect_error "not tree statistics" "$TMP/tree" \
    "$BIN/build-tree" --max-leaves=100 "$F/tri1/subset10/questions.qst" "$F/lang/phones/roots.int" \
    "$F/tri1/subset10/questions.qst" "$F/lang/topo" "$TMP/tree"
}

@test "lib/tree/cluster.c's std::nth_element and std::priority_queue orders are libstdc++'s, equal keys included" {
  command -v g++ > /dev/null || skip "no g++ for the libstdc++ reference"
  S=$BATS_TEST_DIRNAME/../..
  [ -e "$S/build/libgmmhmm.a" ] || skip "no build/libgmmhmm.a"
  LIBS=$(make -s -C "$S" print-ldlibs 2>/dev/null || echo "-llapacke -llapack -lblas -lz -lm -lfftw3")
  gcc -std=c11 -D_GNU_SOURCE -O2 -fopenmp -I"$S/lib" -o "$TMP/order" "$BATS_TEST_DIRNAME/../order/order.c" \
    "$S/build/libgmmhmm.a" $LIBS
  g++ -O1 -o "$TMP/order_ref" "$BATS_TEST_DIRNAME/../order/order.cc"
  "$TMP/order" > "$TMP/ours"
  "$TMP/order_ref" > "$TMP/ref"
  [ "$(wc -l < "$TMP/ref")" -gt 80000 ]
  cmp "$TMP/ours" "$TMP/ref"
}
