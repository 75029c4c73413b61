#!/usr/bin/env bats
# Triphone models from trees: gmm-init-model, gmm-mixup, convert-ali to the triphone tree
# and compile-train-graphs with a triphone tree, against what real Kaldi wrote
# ($GH_SHARED/data/kaldi-fixtures/align/tri1, README and make.sh there).  References:
# Kaldi's tri1/subset10/1.mdl and 1.occs and tri1/1.mdl (after gmm-mixup --mix-up=500),
# byte for byte; Kaldi's pass-1 log-likelihood of train_deltas.sh (tri1/loglike.txt); an
# independent Python undoing of Kaldi's mix-up (test/python/mixup_unsplit.py) and check of
# the initialization from an old model (test/python/init_from_old.py); the graph checker
# of graphs.bats (test/python/graphs_ref.py); convert-ali (lib/hmm/hmm-utils.c, which
# computes pdfs from each phone's window with its own code) for the windows of the
# aligner's output; a float64 numpy implementation of Kaldi's MergeByCount
# (test/python/mixdown_ref.py) for --mix-down; alignments with their phones rewritten by
# hand (test/python/phone_map_ali.py) for --phone-map.

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
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > cmvn.scp
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" > feats.scp
  FEATS="ark,s,cs:apply-cmvn --utt2spk=ark:$D/utt2spk scp:cmvn.scp scp:feats.scp ark:- | add-deltas ark:- ark:- |"
}

# Kaldi's tree statistics of train_deltas.sh: one acc-tree-stats per job of the fixture's
# mono_ali (job j = the utterances of ali.j.gz), summed by sum-tree-stats.
full_treeacc() {
  for j in 1 2; do
    gunzip -c "$F/mono_ali/ali.$j.gz" | copy-int-vector ark:- ark,t:- 2> /dev/null | cut -d' ' -f1 > utts.$j
    awk 'NR == FNR { u[$1] = 1; next } $1 in u' utts.$j feats.scp > feats.$j.scp
    acc-tree-stats --ci-phones="$(cat "$F/lang/phones/context_indep.csl")" "$F/mono/final.mdl" \
      "ark,s,cs:apply-cmvn --utt2spk=ark:$D/utt2spk scp:cmvn.scp scp:feats.$j.scp ark:- | add-deltas ark:- ark:- |" \
      "ark:gunzip -c $F/mono_ali/ali.$j.gz|" $j.treeacc 2> acc.$j.log
  done
  sum-tree-stats treeacc 1.treeacc 2.treeacc 2> sum.log
}

@test "gmm-init-model: Kaldi's subset10 model, occupancies and warnings byte for byte" {
  S=$F/tri1/subset10
  run gmm-init-model --write-occs=1.occs "$S/tree" "gunzip -c $S/treeacc.gz|" "$F/lang/topo" 1.mdl
  [ "$status" -eq 0 ]
  cmp 1.mdl "$S/1.mdl"
  cmp 1.occs "$S/1.occs"
  # the same log lines as Kaldi's (6 pdfs without statistics, 25 with counts below 100)
  echo "$output" | sed 's/^gmm-init-model: [A-Z]*: //' > ours.log
  grep -v '^#\|^gmm-init-model ' "$S/init_model.log" | sed 's/^[A-Z]* ([^ ]*) //' > ref.log
  diff ours.log ref.log
  [ "$(grep -c 'with no stats' ours.log)" -eq 6 ]
  # text output reads back to the same model
  gmm-init-model --binary=false "$S/tree" "gunzip -c $S/treeacc.gz|" "$F/lang/topo" 1.txt 2> /dev/null
  gmm-copy 1.txt 1b.mdl 2> /dev/null
  cmp 1b.mdl "$S/1.mdl"
}

@test "acc-tree-stats -> gmm-init-model -> gmm-mixup --mix-up=500: Kaldi's tri1/1.mdl and 1.occs byte for byte" {
  [ -x "$BIN/acc-tree-stats" ] && [ -x "$BIN/sum-tree-stats" ] || skip "acc-tree-stats/sum-tree-stats not built"
  full_treeacc
  run gmm-init-model --write-occs=1.occs "$F/tri1/tree" treeacc "$F/lang/topo" 1.mdl
  [ "$status" -eq 0 ]
  [[ "$output" == *"Number of separate statistics is 40736"* ]]
  [[ "$output" == *"Tree has pdf-id 1 with no stats; corresponding phone list: 6 7 8 9 10 "* ]]
  cmp 1.occs "$F/tri1/1.occs"
  run gmm-mixup --mix-up=500 1.mdl 1.occs 1.mdl
  [ "$status" -eq 0 ]
  [[ "$output" == *"Split 432 states with target = 500, power = 0.2, perturb_factor = 0.01 and min_count = 20, split #Gauss from 432 to 500"* ]]
  cmp 1.mdl "$F/tri1/1.mdl"
  # from an old model (Kaldi's InitAmGmmFromOld): each pdf a copy of the monophone pdf of
  # its (phone, HMM state) where they all agree on one (409 of the 432 pdfs), pdf 1 (no
  # statistics) the average
  run gmm-init-model "$F/tri1/tree" treeacc "$F/lang/topo" old.mdl "$F/mono/tree" "$F/mono/final.mdl"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Leaf 1 of new tree being initialized with globally averaged stats."* ]]
  gmm-copy --binary=false old.mdl old.txt 2> /dev/null
  gmm-copy --binary=false "$F/mono/final.mdl" mono.txt 2> /dev/null
  run python3 "$PY/init_from_old.py" old.txt mono.txt 1
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"checked 409 of 432 pdfs"* ]]
  # the checker can fail: the model initialized from the statistics is no such copy
  gmm-copy --binary=false "$F/tri1/1.mdl" new.txt 2> /dev/null
  run python3 "$PY/init_from_old.py" new.txt mono.txt 1
  [ "$status" -eq 1 ]
}

@test "gmm-mixup: Kaldi's random perturbation (Kaldi's tri1/1.mdl with its 68 splits undone, mixed up again)" {
  gmm-copy --binary=false "$F/tri1/1.mdl" mixed.txt 2> /dev/null
  run python3 "$PY/mixup_unsplit.py" mixed.txt pre.txt
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"undid 68 splits"* ]]
  run gmm-mixup --mix-up=500 pre.txt "$F/tri1/1.occs" again.mdl
  [ "$status" -eq 0 ]
  cmp again.mdl "$F/tri1/1.mdl"
  # the checker can fail: another perturbation factor draws the same numbers but moves
  # the means by other amounts
  run python3 "$PY/mixup_unsplit.py" mixed.txt pre2.txt 0.02
  [ "$status" -eq 1 ]
  # no mix-up: the model is copied
  gmm-mixup pre.txt "$F/tri1/1.occs" same.mdl 2> /dev/null
  gmm-copy pre.txt pre.mdl 2> /dev/null
  cmp same.mdl pre.mdl
}

@test "gmm-mixup --mix-down: Kaldi's MergeByCount against a float64 reference; merged then mixed up again" {
  M=$F/mono/final.mdl
  gmm-copy --binary=false "$M" orig.txt 2> /dev/null
  for t in 500 300 1; do
    run gmm-mixup --mix-down=$t "$M" "$F/mono/final.occs" d$t.mdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"Merged 127 states with target = $t, power = 0.2 and min_count = 20, merged from 998 to "* ]]
    gmm-copy --binary=false d$t.mdl d$t.txt 2> /dev/null
    # Gaussians per pdf exact; parameters within 1e-6 (measured: 1.1e-7 weights,
    # 2.1e-7 means, 3.2e-7 variances, each relative as mixdown_ref.py states)
    run python3 "$PY/mixdown_ref.py" orig.txt "$F/mono/final.occs" $t 0.2 20 d$t.txt
    echo "$t: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == "$( [ $t = 1 ] && echo 127 || echo $t) Gaussians in 127 pdfs as the reference"* ]]
  done
  # the reference can fail: other targets (--power), or a tolerance below float rounding
  run python3 "$PY/mixdown_ref.py" orig.txt "$F/mono/final.occs" 500 0.25 20 d500.txt
  [ "$status" -eq 1 ]
  run python3 "$PY/mixdown_ref.py" orig.txt "$F/mono/final.occs" 500 0.2 20 d500.txt 1e-9
  [ "$status" -eq 1 ]
  # merging loses likelihood (200 utterances of job 1, their mono_ali alignments), more
  # for fewer Gaussians; mixed up again to 998 the model scores as the merged one (the
  # copies move by 0.01 sd), and 3 EM passes take it past the merged model's 3 passes
  # (measured: 998 -96.653, 500 -98.148, 300 -99.385, 1 per pdf -102.18; after 3 passes 998 -95.830,
  # 500 -96.900)
  grep arctic_a feats.scp | head -n 200 > f200.scp
  apply-cmvn --utt2spk=ark:$D/utt2spk scp:cmvn.scp scp:f200.scp ark:- 2> /dev/null | add-deltas ark:- ark:f200.ark 2> /dev/null
  gunzip -c "$F/mono_ali/ali.1.gz" > ali.ark
  like() { gmm-acc-stats-ali "$1" ark:f200.ark ark:ali.ark "$1.acc" 2>&1 | awk '/Overall avg like per frame/ { print $(NF-3) }'; }
  gmm-mixup --mix-up=998 d500.mdl "$F/mono/final.occs" up.mdl 2> /dev/null
  l998=$(like "$M"); l500=$(like d500.mdl); l300=$(like d300.mdl); l1=$(like d1.mdl); lup=$(like up.mdl)
  echo "998 $l998, 500 $l500, 300 $l300, 1 per pdf $l1, 500 mixed up to 998 $lup"
  awk -v a=$l998 -v b=$l500 -v c=$l300 -v d=$l1 -v u=$lup 'BEGIN { exit !(a > b && b > c && c > d && u - b < 0.01 && b - u < 0.01) }'
  for m in up d500; do
    cp $m.mdl $m.0.mdl
    for i in 0 1 2; do
      gmm-acc-stats-ali $m.$i.mdl ark:f200.ark ark:ali.ark $m.acc 2> /dev/null
      gmm-est $m.$i.mdl $m.acc $m.$((i + 1)).mdl 2> /dev/null
    done
  done
  lu3=$(like up.3.mdl); ld3=$(like d500.3.mdl)
  echo "after 3 passes: mixed up $lu3, merged $ld3"
  awk -v u=$lu3 -v d=$ld3 'BEGIN { exit !(u > d + 0.5) }'
  # the round trip's Gaussians per pdf are the targets of 998 (the reference's targets)
  gmm-copy --binary=false up.mdl up.txt 2> /dev/null
  run python3 "$PY/mixdown_ref.py" targets "$F/mono/final.occs" 998 0.2 20 up.txt
  [ "$status" -eq 0 ]
  run python3 "$PY/mixdown_ref.py" targets "$F/mono/final.occs" 998 0.2 20 orig.txt
  [ "$status" -eq 1 ]  # the trained model's were set pass by pass: 28 pdfs differ
  # gmm-est --mix-down (Kaldi's gmm-est has both): gmm-est then gmm-mixup --mix-down with
  # gmm-est's occupancies, byte for byte; before --mix-up, as Kaldi
  gmm-acc-stats-ali "$M" ark:f200.ark ark:ali.ark m.acc 2> /dev/null
  run gmm-est --mix-down=500 --write-occs=o1 "$M" m.acc y.mdl
  [ "$status" -eq 0 ]
  [[ "$output" == *"Merged 127 states with target = 500"* ]]
  gmm-est --write-occs=o2 "$M" m.acc z.mdl 2> /dev/null
  gmm-mixup --mix-down=500 z.mdl o2 w.mdl 2> /dev/null
  cmp y.mdl w.mdl
  run gmm-est --mix-down=400 --mix-up=700 "$M" m.acc v.mdl
  [ "$status" -eq 0 ]
  [[ "$output" == *"merged from 950 to 399"*"split #Gauss from 399 to 700"* ]]
}

@test "convert-ali to the tri1 tree: Kaldi's pass-1 log-likelihood of train_deltas.sh exactly" {
  # per job, frame-weighted over the jobs' 6-digit log lines, as tri1/loglike.txt was made
  for j in 1 2; do
    convert-ali "$F/mono/final.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" "ark:gunzip -c $F/mono_ali/ali.$j.gz|" ark:ali.$j
    gmm-acc-stats-ali "$F/tri1/1.mdl" "$FEATS" ark:ali.$j $j.acc 2> acc.$j.log
  done
  ours=$(cat acc.1.log acc.2.log | awk '/Overall avg like per frame/ { s += $(NF-3) * $(NF-1); n += $(NF-1) } END { printf "%.6f %d", s / n, n }')
  ref=$(awk '$1 == 1 {print $2, $3}' "$F/tri1/loglike.txt")
  echo "ours $ours, Kaldi $ref"
  [ "$ours" = "$ref" ]
}

@test "convert-ali --phone-map: the conversion of the alignments with their phones rewritten by hand" {
  # stressed variants mapped to their base phones (test/python/phone_map_ali.py writes the map
  # and rewrites job 1's monophone alignments with it), converted to the tri1 tree and 1.mdl
  show-transitions "$F/lang/phones.txt" "$F/mono/final.mdl" > trans.txt 2> /dev/null
  gunzip -c "$F/mono_ali/ali.1.gz" | copy-int-vector ark:- ark,t:ali.txt 2> /dev/null
  python3 "$PY/phone_map_ali.py" "$F/lang/phones.txt" trans.txt ali.txt ali.map.txt map.txt
  run convert-ali --phone-map=map.txt "$F/mono/final.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark:mapped.ark
  [ "$status" -eq 0 ]
  [[ "$output" == *"Succeeded converting alignments for 893 files, failed for 0"* ]]
  convert-ali "$F/mono/final.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" ark,t:ali.map.txt ark:by-hand.ark 2> /dev/null
  cmp mapped.ark by-hand.ark
  convert-ali "$F/mono/final.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark:plain.ark \
    2> /dev/null
  ! cmp -s mapped.ark plain.ark
  # a phone the map lacks: Kaldi's error, one line naming the map, no output
  sed '15d' map.txt > miss.map
  run convert-ali --phone-map=miss.map "$F/mono/final.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark:x.ark
  [ "$status" -ne 0 ]
  [ "$(grep -c ERROR <<< "$output")" -eq 1 ]
  [[ "$output" == *"ERROR: miss.map: the phone map has no entry for phone 15 (in the alignment of cathy-arctic_a0237-1"* ]]
  [ ! -e x.ark ]
}

@test "compile-train-graphs with the tri1 tree: tree-consistent windows, both contexts at optional silence, lexicon phones, path costs" {
  gunzip -c "$F/lang/L.fst.gz" > L.fst
  awk -v oov="$(cat "$F/lang/oov.int")" 'NR == FNR { id[$1] = $2; next }
    { printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", ($i in id) ? id[$i] : oov; print "" }' \
    "$F/lang/words.txt" "$D/text" | head -n 100 > t.int
  run compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/tri1/tree" "$F/tri1/1.mdl" \
    L.fst ark:t.int ark:g.ark
  [ "$status" -eq 0 ]
  [[ "$output" == *"succeeded for 100 graphs, failed for 0"* ]]
  run gmm-align-compiled --transition-scale=1.0 --acoustic-scale=0.1 --self-loop-scale=0.1 --beam=10 \
    --retry-beam=40 "$F/tri1/1.mdl" ark:g.ark "$FEATS" ark,t:ali.txt
  [ "$status" -eq 0 ]
  [[ "$output" == *"Done 100, errors on 0"* ]]
  # every frame's pdf is the tree's pdf of its phone's window (left, phone, right) and
  # pdf-class: convert-ali recomputes them from the phone sequence
  convert-ali "$F/tri1/1.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" ark:ali.txt ark,t:conv.txt
  cmp ali.txt conv.txt
  # the phones are the transcript's pronunciations with optional SIL between words
  ali-to-phones "$F/tri1/1.mdl" ark:ali.txt ark,t:phones.txt
  run python3 "$PY/graphs_ref.py" phones "$F/lang/phones.txt" "$D/dict/lexicon.txt" "$F/lang/words.txt" \
    t.int phones.txt SIL
  echo "$output"
  [ "$status" -eq 0 ]
  # word-final phones followed by SIL and by the next word's first phone both occur (the
  # right context at an optional silence is the alignment's choice)
  run awk 'NR == FNR { name[$2] = $1; next }
    { for (i = 2; i < NF; i++) if (name[$i] ~ /_[ES]$/) { if (name[$(i+1)] == "SIL") s++; else w++ } }
    END { print s + 0, w + 0; exit !(s > 50 && w > 500) }' "$F/lang/phones.txt" phones.txt
  echo "word ends before SIL, before a word: $output"
  [ "$status" -eq 0 ]
  # path costs with both scales 1: -sum log p(tid) plus the lexicon's silence costs
  compile-train-graphs --transition-scale=1.0 --self-loop-scale=1.0 "$F/tri1/tree" "$F/tri1/1.mdl" \
    L.fst "ark:head -n 30 t.int |" ark,t:g30.txt
  head -n 30 t.int > t30.int
  grep -F -w -f <(cut -d' ' -f1 t30.int) ali.txt > a30.txt
  gmm-copy --binary=false "$F/tri1/1.mdl" m.txt 2> /dev/null
  run python3 "$PY/graphs_ref.py" weights g30.txt a30.txt m.txt t30.int 0.5
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"checked 30 alignments"* ]]
  # a monophone alignment converted to the triphone tree is also a path of these graphs
  # (same check through another route): equal-alignment graphs accept it
  convert-ali "$F/mono/final.mdl" "$F/tri1/1.mdl" "$F/tri1/tree" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    ark,t:- | grep -F -w -f <(cut -d' ' -f1 t30.int) > m30.txt
  run python3 "$PY/graphs_ref.py" weights g30.txt m30.txt m.txt t30.int 0.5
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "bad input: a tree of another lang, statistics of another context width or dimension, occupancies of another model" {
  S=$F/tri1/subset10
  gunzip -c "$S/treeacc.gz" > treeacc
  # the tri1 tree with the position-independent lang's topology
  run gmm-init-model "$F/tri1/tree" treeacc "$F/lang_nopos/topo" x.mdl
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: 365 of the 432 pdfs of the tree $F/tri1/tree (the first: pdf 7) belong to no phone of the topology $F/lang_nopos/topo: the tree is of another lang"* ]]
  [ ! -e x.mdl ]
  # triphone statistics with the monophone tree
  run gmm-init-model --write-occs=x.occs "$F/mono/tree" treeacc "$F/lang/topo" x.mdl
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: treeacc: statistic 0 has context position 1, but the tree has context width 1 (statistics of another --context-width?)"* ]]
  [ ! -e x.mdl ] && [ ! -e x.occs ]
  # an old model whose tree is wider than the new one
  run gmm-init-model "$F/mono/tree" treeacc "$F/lang/topo" x.mdl "$F/tri1/tree" "$F/tri1/1.mdl"
  [ "$status" -ne 0 ]
  [ ! -e x.mdl ]
  # statistics of another feature dimension (no deltas) than the old model
  head -n 10 feats.scp > f10.scp
  acc-tree-stats --ci-phones="$(cat "$F/lang/phones/context_indep.csl")" "$F/mono/final.mdl" \
    "ark:apply-cmvn --utt2spk=ark:$D/utt2spk scp:cmvn.scp scp:f10.scp ark:- |" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    t13.acc 2> /dev/null
  run gmm-init-model "$S/tree" t13.acc "$F/lang/topo" x.mdl "$F/mono/tree" "$F/mono/final.mdl"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: t13.acc has statistics of dimension 13 but the old model has dimension 39"* ]]
  [ ! -e x.mdl ]
  # occupancies of another model
  run gmm-mixup --mix-up=200 "$S/1.mdl" "$F/tri1/1.occs" x.mdl
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: Dimension of state occupancies 432 ($F/tri1/1.occs) does not match num-pdfs 65 ($S/1.mdl)"* ]]
  [ ! -e x.mdl ]
  run gmm-mixup --mix-down=-10 "$S/1.mdl" "$S/1.occs" x.mdl
  [ "$status" -ne 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == *"ERROR: --mix-down=-10: must not be negative"* ]]
  [ ! -e x.mdl ]
  # graphs: a tree of another model
  echo "u1 162" > t.int
  gunzip -c "$F/lang/L.fst.gz" > L.fst
  run compile-train-graphs "$F/tri1/tree" "$S/1.mdl" L.fst ark:t.int ark:g.ark
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: the tree $F/tri1/tree has 432 pdfs but the model $S/1.mdl uses 65"* ]]
  [ ! -e g.ark ]
}
