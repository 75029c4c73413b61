#!/usr/bin/env bats
# Decision-tree building (acc-tree-stats, sum-tree-stats, cluster-phones,
# compile-questions, build-tree) against what real Kaldi wrote on the cathy
# corpus ($GH_SHARED/data/kaldi-fixtures/align/, README and make.sh there):
# bytes where Kaldi's files are shipped, Kaldi's logged counts and
# objective improvements where they are not (the full treeacc, 28.8 MB), and
# an independent numpy reader (test/python/tree_ref.py) for the sums.

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
}
