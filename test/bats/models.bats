#!/usr/bin/env bats
# Tool tests for gmm-info, gmm-copy, gmm-sum-accs on files written by real
# Kaldi (see $GH_SHARED/data/kaldi-fixtures/README.md and
# $GH_SHARED/data/kaldi-yesno-mono-model/README.md), and their behaviour on
# garbage input (one-line error naming the file, exit != 0, no output left).

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  FIX=$GH_SHARED/data/kaldi-fixtures
  MDL=$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl
  TMP=$(mktemp -d "${BATS_TMPDIR:-/tmp}/models.XXXXXX")
}

teardown() {
  rm -rf "$TMP"
}

# "$output" must be exactly one line: "<tool>: ERROR: ..." mentioning $1.
one_error_line() {
  [ "$status" -ne 0 ]
  [ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
  [[ "$output" == *"ERROR:"* ]]
  [[ "$output" == *"$1"* ]]
}

@test "gmm-info on 0.mdl prints phones, pdfs, transition-ids, dim, gaussians" {
  run "$BIN/gmm-info" "$MDL"
  [ "$status" -eq 0 ]
  [[ "$output" == *"number of phones 26"* ]]
  [[ "$output" == *"number of pdfs 22"* ]]
  [[ "$output" == *"number of transition-ids 276"* ]]
  [[ "$output" == *"number of transition-states 98"* ]]
  [[ "$output" == *"feature dimension 39"* ]]
  [[ "$output" == *"number of gaussians 22"* ]]
  [[ "$output" == *"covariance type diag"* ]]
}

@test "gmm-info on global diag and full GMMs (binary and text)" {
  for f in ami-diag16.gmm ami-diag16.gmm.txt; do
    run "$BIN/gmm-info" "$FIX/$f"
    [ "$status" -eq 0 ]
    [[ "$output" == *"number of pdfs 1"* ]]
    [[ "$output" == *"feature dimension 13"* ]]
    [[ "$output" == *"number of gaussians 16"* ]]
    [[ "$output" == *"covariance type diag"* ]]
  done
  for f in ami-full16.fgmm ami-full16.fgmm.txt; do
    run "$BIN/gmm-info" "$FIX/$f"
    [ "$status" -eq 0 ]
    [[ "$output" == *"number of gaussians 16"* ]]
    [[ "$output" == *"covariance type full"* ]]
  done
}

@test "gmm-copy of 0.mdl is byte-identical, also through text and pipes" {
  "$BIN/gmm-copy" "$MDL" "$TMP/a.mdl"
  cmp "$MDL" "$TMP/a.mdl"
  "$BIN/gmm-copy" --binary=false "$MDL" - | "$BIN/gmm-copy" - "$TMP/b.mdl"
  cmp "$MDL" "$TMP/b.mdl"
  "$BIN/gmm-copy" --binary=false "$MDL" "$TMP/t.mdl"
  head -c 17 "$TMP/t.mdl" | grep -q '^<TransitionModel>'
  grep -q '^<Triples> 98' "$TMP/t.mdl"
  grep -q '^<DIMENSION> 39 <NUMPDFS> 22 <DiagGMM>' "$TMP/t.mdl"
  "$BIN/gmm-copy" "$TMP/t.mdl" "$TMP/c.mdl"
  cmp "$MDL" "$TMP/c.mdl"
}

@test "gmm-copy of Kaldi global diag/full GMMs is byte-identical (binary, and binary->text->binary)" {
  for f in ami-diag16.gmm ami-full16.fgmm; do
    "$BIN/gmm-copy" "$FIX/$f" "$TMP/$f"
    cmp "$FIX/$f" "$TMP/$f"
    "$BIN/gmm-copy" --binary=false "$FIX/$f" "$TMP/$f.txt"
    "$BIN/gmm-copy" "$TMP/$f.txt" "$TMP/$f.back"
    cmp "$FIX/$f" "$TMP/$f.back"
  done
}

@test "gmm-copy reads Kaldi's text GMMs and writes the same tokens" {
  "$BIN/gmm-copy" --binary=false "$FIX/ami-full16.fgmm.txt" "$TMP/f.txt"
  diff <(tr -s ' \n' '\n\n' < "$FIX/ami-full16.fgmm.txt" | grep -c '^<') <(tr -s ' \n' '\n\n' < "$TMP/f.txt" | grep -c '^<')
  head -1 "$TMP/f.txt" | grep -q '^<FullGMM> $'
  "$BIN/gmm-copy" "$FIX/ami-diag16.gmm.txt" "$TMP/d.gmm"
  # same size as Kaldi's binary (values may differ in the 8th digit)
  [ "$(wc -c < "$TMP/d.gmm")" -eq "$(wc -c < "$FIX/ami-diag16.gmm")" ]
}

@test "gmm-copy --copy-tm=false writes the GMM set only" {
  "$BIN/gmm-copy" --copy-tm=false "$MDL" "$TMP/am.gmm"
  run "$BIN/gmm-info" "$TMP/am.gmm"
  [ "$status" -eq 0 ]
  [[ "$output" == *"number of pdfs 22"* ]]
  [[ "$output" != *"transition-ids"* ]]
  # the set is the tail of 0.mdl from <DIMENSION> on (after "\0B")
  off=$(grep -abo '<DIMENSION>' "$MDL" | cut -d: -f1)
  cmp <(tail -c +$((off + 1)) "$MDL") <(tail -c +3 "$TMP/am.gmm")
}

@test "gmm-sum-accs of one Kaldi (float) acc: written in double, the same values (diag exactly, full 1e-9)" {
  for f in ami-diag16.acc ami-full16.acc; do
    "$BIN/gmm-sum-accs" "$TMP/$f" "$FIX/$f"
    grep -qa '<MEANACCS> DM' "$TMP/$f"
    "$BIN/gmm-sum-accs" --binary=false "$TMP/$f.ours.txt" "$TMP/$f"
    "$BIN/gmm-sum-accs" --binary=false "$TMP/$f.kaldi.txt" "$FIX/$f"
  done
  cmp "$TMP/ami-diag16.acc.ours.txt" "$TMP/ami-diag16.acc.kaldi.txt"
  python3 - "$TMP/ami-full16.acc.ours.txt" "$TMP/ami-full16.acc.kaldi.txt" <<'PY'
import re, sys
def vals(p): return [float(x) for x in re.sub(r'<[^>]*>|[][]', ' ', open(p).read()).split()]
a, b = vals(sys.argv[1]), vals(sys.argv[2]); m = max(abs(y) for y in b)
assert len(a) == len(b) > 1000 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-9 * m
PY
}

@test "gmm-sum-accs of two accs doubles the statistics" {
  "$BIN/gmm-sum-accs" --binary=false "$TMP/one.txt" "$FIX/ami-diag16.acc"
  run "$BIN/gmm-sum-accs" --binary=false "$TMP/two.txt" "$FIX/ami-diag16.acc" "$FIX/ami-diag16.acc"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Summed 2 stats"* ]]
  # compare every number: two = 2 * one (relative 1e-6)
  paste <(tr -s ' \n' '\n\n' < "$TMP/one.txt" | grep -E '^-?[0-9]') \
        <(tr -s ' \n' '\n\n' < "$TMP/two.txt" | grep -E '^-?[0-9]') |
    awk 'NR > 3 { d = $2 - 2 * $1; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1; if (d > 1e-6 * 2 * a + 1e-30) bad++ }
         END { exit bad > 0 || NR < 400 }'
  grep -q '^<GMMACCS> <VECSIZE> 13 <NUMCOMPONENTS> 16 <FLAGS> 7 <OCCUPANCY>' "$TMP/two.txt"
}

@test "gmm-sum-accs on full accs, text output reads back" {
  "$BIN/gmm-sum-accs" --binary=false "$TMP/f.txt" "$FIX/ami-full16.acc" "$FIX/ami-full16.acc"
  grep -q '<FULLVARACCS>' "$TMP/f.txt"
  "$BIN/gmm-sum-accs" "$TMP/f.bin" "$TMP/f.txt"
  "$BIN/gmm-sum-accs" --binary=false "$TMP/f2.txt" "$TMP/f.bin"
  cmp "$TMP/f.txt" "$TMP/f2.txt"
}

@test "gmm-sum-accs refuses to mix diagonal and full accs" {
  run "$BIN/gmm-sum-accs" "$TMP/o.acc" "$FIX/ami-diag16.acc" "$FIX/ami-full16.acc"
  one_error_line "ami-full16.acc"
  [ ! -e "$TMP/o.acc" ]
}

@test "garbage model: random bytes -> one-line error naming the file" {
  awk 'BEGIN { srand(7); for (i = 0; i < 3000; i++) printf "%c", int(rand() * 256) }' > "$TMP/rand.mdl"
  run "$BIN/gmm-copy" "$TMP/rand.mdl" "$TMP/out.mdl"
  one_error_line "rand.mdl"
  [ ! -e "$TMP/out.mdl" ]
  { printf '\0B'; cat "$TMP/rand.mdl"; } > "$TMP/rand2.mdl"
  run "$BIN/gmm-info" "$TMP/rand2.mdl"
  one_error_line "rand2.mdl"
}

@test "garbage model: truncated files -> one-line error, no output left" {
  for n in 5 1000 3300 12000; do
    head -c $n "$MDL" > "$TMP/trunc.mdl"
    run "$BIN/gmm-copy" "$TMP/trunc.mdl" "$TMP/out.mdl"
    one_error_line "trunc.mdl"
    [ ! -e "$TMP/out.mdl" ]
    [ -z "$(ls "$TMP" | grep out.mdl)" ]
  done
  head -c 5000 "$FIX/ami-full16.fgmm" > "$TMP/t.fgmm"
  run "$BIN/gmm-info" "$TMP/t.fgmm"
  one_error_line "t.fgmm"
  [[ "$output" == *"end of file"* ]]
  : > "$TMP/empty.mdl"
  run "$BIN/gmm-info" "$TMP/empty.mdl"
  one_error_line "empty.mdl"
}

@test "garbage model: wrong or missing tokens, bad values" {
  sed 's/<WEIGHTS>/<WEIGHTX>/' "$FIX/ami-diag16.gmm.txt" > "$TMP/w.txt"
  run "$BIN/gmm-info" "$TMP/w.txt"
  one_error_line "w.txt"
  [[ "$output" == *"<WEIGHTX>"* ]]
  sed 's/<INV_COVARS>/<INV_VARS>/' "$FIX/ami-full16.fgmm.txt" > "$TMP/f.txt"
  run "$BIN/gmm-info" "$TMP/f.txt"
  one_error_line "f.txt"
  "$BIN/gmm-copy" --binary=false "$MDL" "$TMP/t.mdl"
  sed 's/^<Triples> 98/<Triplets> 98/' "$TMP/t.mdl" > "$TMP/t2.mdl"
  run "$BIN/gmm-info" "$TMP/t2.mdl"
  one_error_line "t2.mdl"
  [[ "$output" == *"<Triples> or <Tuples>"* ]]
  # a negative inverse variance
  awk '/<INV_VARS>/ { f = 1 } f && /^  [0-9]/ && !done { sub(/^  /, "  -"); done = 1 } { print }' \
    "$FIX/ami-diag16.gmm.txt" > "$TMP/neg.txt"
  run "$BIN/gmm-info" "$TMP/neg.txt"
  one_error_line "neg.txt"
  [[ "$output" == *"not positive"* ]]
  run "$BIN/gmm-info" "$TMP/does-not-exist.mdl"
  one_error_line "does-not-exist.mdl"
}

@test "garbage accs: truncated, wrong file type -> one-line error" {
  head -c 3000 "$FIX/ami-full16.acc" > "$TMP/t.acc"
  run "$BIN/gmm-sum-accs" "$TMP/o.acc" "$FIX/ami-full16.acc" "$TMP/t.acc"
  one_error_line "t.acc"
  [ ! -e "$TMP/o.acc" ]
  run "$BIN/gmm-sum-accs" "$TMP/o.acc" "$FIX/ami-diag16.gmm"
  one_error_line "ami-diag16.gmm"
}

@test "wrong number of arguments prints the usage and fails" {
  run "$BIN/gmm-info"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Usage:"* ]]
  run "$BIN/gmm-copy" "$MDL"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Usage:"* ]]
  run "$BIN/gmm-sum-accs" "$TMP/o.acc"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Usage:"* ]]
}
