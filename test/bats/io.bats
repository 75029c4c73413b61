#!/usr/bin/env bats
# Archive I/O tools against files written by real Kaldi: byte-identical
# copies through ark/scp/gzip/pipes, text layout, compressed decoding, int32
# vectors, posteriors, and one-line errors on bad input.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  AMI=$GH_SHARED/data/kaldi-ami-feats
  FIX=$GH_SHARED/data/kaldi-fixtures
  TMP=$(mktemp -d)
}

teardown() {
  rm -rf "$TMP"
}

@test "copy-feats ark -> ark is byte-identical" {
  "$BIN/copy-feats" "ark:$AMI/feats.ark" ark:- > "$TMP/o.ark"
  cmp "$TMP/o.ark" "$AMI/feats.ark"
}

@test "copy-feats scp (relative paths with offsets) -> ark is byte-identical" {
  cd "$AMI"
  "$BIN/copy-feats" scp:feats.scp ark:- > "$TMP/o.ark"
  cmp "$TMP/o.ark" "$AMI/feats.ark"
}

@test "copy-feats reads a gzip'd archive transparently" {
  gzip -c "$AMI/feats.ark" > "$TMP/f.ark.gz"
  "$BIN/copy-feats" "ark:$TMP/f.ark.gz" "ark:$TMP/o.ark"
  cmp "$TMP/o.ark" "$AMI/feats.ark"
}

@test "copy-feats through an input pipe and an output pipe" {
  "$BIN/copy-feats" "ark:gzip -c $AMI/feats.ark |" "ark:| gzip -c > $TMP/o.ark.gz"
  gunzip -c "$TMP/o.ark.gz" | cmp - "$AMI/feats.ark"
}

@test "copy-feats reads the archive from stdin" {
  "$BIN/copy-feats" ark:- ark:- < "$AMI/feats.ark" > "$TMP/o.ark"
  cmp "$TMP/o.ark" "$AMI/feats.ark"
}

@test "copy-feats to ark,t reproduces Kaldi's text archive byte for byte" {
  cd "$AMI"
  head -n 2 feats.scp | "$BIN/copy-feats" scp:- ark,t:- > "$TMP/o.txt"
  cmp "$TMP/o.txt" "$AMI/feats_ascii.ark"
}

@test "copy-feats --binary=false writes text; text -> text is byte-identical" {
  "$BIN/copy-feats" "ark:$AMI/feats_ascii.ark" ark,t:- > "$TMP/t1"
  cmp "$TMP/t1" "$AMI/feats_ascii.ark"
  "$BIN/copy-feats" --binary=false "ark:$AMI/feats_ascii.ark" ark:- > "$TMP/t2"
  cmp "$TMP/t2" "$AMI/feats_ascii.ark"
}

@test "binary -> text -> binary keeps values (7 significant digits) and text is stable" {
  "$BIN/copy-feats" "ark:$AMI/feats.ark" "ark,t:$TMP/t.ark"
  "$BIN/copy-feats" "ark:$TMP/t.ark" "ark:$TMP/b.ark"
  "$BIN/copy-feats" "ark:$TMP/b.ark" "ark,t:$TMP/t2.ark"
  cmp "$TMP/t.ark" "$TMP/t2.ark"
  [ "$("$BIN/feat-to-len" "ark:$TMP/b.ark")" = 2395 ]
}

@test "ark,scp writes an scp with Kaldi's byte offsets (binary and text)" {
  "$BIN/copy-feats" "ark:$AMI/feats.ark" "ark,scp:$TMP/a.ark,$TMP/a.scp"
  cmp "$TMP/a.ark" "$AMI/feats.ark"
  sed "s|$TMP/a.ark|feats.ark|" "$TMP/a.scp" | cmp - "$AMI/feats.scp"
  "$BIN/copy-feats" "scp:$TMP/a.scp" ark:- | cmp - "$AMI/feats.ark"
  "$BIN/copy-feats" "ark:$AMI/feats_ascii.ark" "ark,t,scp:$TMP/t.ark,$TMP/t.scp"
  sed "s|$TMP/t.ark|feats_ascii.ark|" "$TMP/t.scp" | cmp - "$AMI/feats_ascii.scp"
}

@test "CM, CM2 and CM3 decode exactly as Kaldi's copy-feats does" {
  "$BIN/copy-feats" "ark:$AMI/feats_compressed.ark" ark:- | cmp - "$AMI/feats.ark"
  "$BIN/copy-feats" "ark:$FIX/ami-cm2.ark" ark:- | cmp - "$FIX/ami-cm2.decoded.ark"
  "$BIN/copy-feats" "ark:$FIX/ami-cm3.ark" ark:- | cmp - "$FIX/ami-cm3.decoded.ark"
  cd "$AMI"
  "$BIN/copy-feats" scp:feats_compressed.scp ark:- | cmp - "$AMI/feats.ark"
}

@test "copy-feats reads a DM archive (CMVN stats) and writes FM" {
  run "$BIN/copy-feats" "ark:$GH_SHARED/data/kaldi-yesno-mono-model/cmvn_train.ark" ark,t:-
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "Speaker1  [" ]]
  [[ "${lines[1]}" == *" 30498 " ]]
}

@test "copy-feats non-table mode copies one matrix" {
  # a single matrix file: the first entry of feats.ark without its key
  "$BIN/copy-feats" "ark:head -c 14874 $AMI/feats.ark |" "ark:$TMP/one.ark"
  tail -c +40 "$TMP/one.ark" > "$TMP/one.mat"
  "$BIN/copy-feats" --binary=false "$TMP/one.mat" "$TMP/one.txt"
  [ "$(head -c 2 "$TMP/one.txt")" = " [" ]
  "$BIN/copy-feats" "$TMP/one.txt" "$TMP/one2.mat"
  "$BIN/copy-feats" --binary=false "$TMP/one2.mat" "$TMP/one3.txt"
  cmp "$TMP/one.txt" "$TMP/one3.txt"
  [ "$(wc -l < "$TMP/one3.txt")" -eq 286 ]
}

@test "feat-to-dim and feat-to-len" {
  cd "$AMI"
  [ "$("$BIN/feat-to-dim" scp:feats.scp -)" = 13 ]
  [ "$("$BIN/feat-to-len" scp:feats.scp)" = 2395 ]
  run "$BIN/feat-to-len" ark:feats.ark ark,t:-
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "AMI_ES2011a_H00_FEE041_0003427_0003714 285 " ]
  "$BIN/feat-to-dim" ark:feats_compressed.ark ark,t:- | awk '{ if ($2 != 13) exit 1; n++ } END { exit n != 10 }'
}

@test "copy-int-vector: text -> binary (Kaldi layout) -> text round trip" {
  printf 'utt1 1 2 3 258\nutt2 \nutt3 7\n' > "$TMP/ali.txt"
  "$BIN/copy-int-vector" "ark:$TMP/ali.txt" "ark:$TMP/ali.bin"
  # utt1: key, space, \0B, 0x04 n=4, then 0x04 + int32 per element
  [ "$(head -c 32 "$TMP/ali.bin" | od -An -tx1 | tr -d ' \n')" = "7574743120004204040000000401000000040200000004030000000402010000" ]
  "$BIN/copy-int-vector" "ark:$TMP/ali.bin" ark,t:- > "$TMP/ali2.txt"
  printf 'utt1 1 2 3 258 \nutt2 \nutt3 7 \n' | cmp - "$TMP/ali2.txt"
  "$BIN/copy-int-vector" --binary=false "ark:$TMP/ali.bin" ark:- | cmp - "$TMP/ali2.txt"
}

@test "copy-post: text -> binary -> text round trip, --scale" {
  printf 'u1 [ 3 1 ] [ 4 0.5 5 0.5 ] \nu2 [ ] [ 7 0.25 ] \n' > "$TMP/p.txt"
  "$BIN/copy-post" "ark:$TMP/p.txt" "ark:$TMP/p.bin"
  "$BIN/copy-post" "ark:$TMP/p.bin" ark,t:- | cmp - "$TMP/p.txt"
  [ "$(head -c 14 "$TMP/p.bin" | od -An -tx1 | tr -d ' \n')" = "7531200042040200000004010000" ]
  run "$BIN/copy-post" --scale=2 "ark:$TMP/p.bin" ark,t:-
  [ "${lines[0]}" = "u1 [ 3 2 ] [ 4 1 5 1 ] " ]
}

@test "truncated archive: one-line error naming file and key, no output left" {
  head -c 50000 "$AMI/feats.ark" > "$TMP/trunc.ark"
  run "$BIN/copy-feats" "ark:$TMP/trunc.ark" "ark:$TMP/out.ark"
  [ "$status" -ne 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == *"ERROR"*"trunc.ark"*"AMI_ES2011a_H00_FEE041_0004332_0004439"*"end of file"* ]]
  [ ! -e "$TMP/out.ark" ]
  [ -z "$(ls "$TMP" | grep out)" ]
}

@test "NaN in a text archive is rejected with file, key, row and column" {
  printf 'u1  [\n  1 2 3 \n  4 nan 6 ]\n' > "$TMP/nan.ark"
  run "$BIN/copy-feats" "ark:$TMP/nan.ark" "ark:$TMP/out.ark"
  [ "$status" -ne 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == *"nan.ark"*"'u1'"*"NaN at row 1, col 1"* ]]
  [ ! -e "$TMP/out.ark" ]
}

@test "scp with a missing file or an offset past the end: error names scp and key" {
  cd "$AMI"
  { head -n 1 feats.scp; echo "bad1 nothere.ark:39"; } > "$TMP/bad.scp"
  run "$BIN/copy-feats" "scp:$TMP/bad.scp" "ark:$TMP/out.ark"
  [ "$status" -ne 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == *"bad.scp"*"'bad1'"*"nothere.ark"* ]]
  [ ! -e "$TMP/out.ark" ]
  echo "bad2 feats.ark:9999999" > "$TMP/bad2.scp"
  run "$BIN/copy-feats" "scp:$TMP/bad2.scp" "ark:$TMP/out.ark"
  [ "$status" -ne 0 ]
  [[ "$output" == *"bad2.scp"*"'bad2'"*"past the end"* ]]
  [ ! -e "$TMP/out.ark" ]
}

@test "wrong token and bad specifiers fail with one line" {
  printf 'u1 \0BXM \4\1\0\0\0' > "$TMP/tok.ark"
  run "$BIN/copy-feats" "ark:$TMP/tok.ark" ark:/dev/null
  [ "$status" -ne 0 ]
  [[ "$output" == *"tok.ark"*"'u1'"*"XM"* ]]
  run "$BIN/copy-feats" "ark:$TMP/does-not-exist.ark" ark:-
  [ "$status" -ne 0 ]
  [[ "$output" == *"does-not-exist.ark"* ]]
  run "$BIN/copy-feats" "ark:$AMI/feats.ark" "$TMP/plain"
  [ "$status" -ne 0 ]
  run "$BIN/copy-feats" "ark:$AMI/feats.ark"
  [ "$status" -ne 0 ]
}

@test "empty input: copy-feats exits non-zero" {
  : > "$TMP/empty.ark"
  run "$BIN/copy-feats" "ark:$TMP/empty.ark" "ark:$TMP/out.ark"
  [ "$status" -ne 0 ]
}

# gmm-score-gpu's parallel reader (--io-threads, gh_ark_scan) against its
# sequential reader (--io-threads=0): same bytes out, same error lines.
score_both() { # SPEC OUT-PREFIX [OPTIONS...]: runs both readers; $s0/$s3 statuses, $e0/$e3 stderr
  local spec=$1 out=$2; shift 2
  s0=0; s3=0
  "$BIN/gmm-score-gpu" --device=cpu --io-threads=0 "$@" "$FIX/ami-diag16.gmm" "$spec" "ark:$out.0" 2> "$out.e0" || s0=$?
  "$BIN/gmm-score-gpu" --device=cpu --io-threads=3 --verbose=1 "$@" "$FIX/ami-diag16.gmm" "$spec" "ark:$out.3" 2> "$out.e3" || s3=$?
  e0=$(grep -v 'LOG' "$out.e0" || true); e3=$(grep -v 'LOG' "$out.e3" || true)
}

@test "gmm-score-gpu: the parallel archive reader writes the sequential reader's bytes" {
  printf 'empty  [ ]\n' | "$BIN/copy-feats" ark:- "ark:$TMP/empty.ark"
  cat "$AMI/feats.ark" "$TMP/empty.ark" "$FIX/ami-cm2.ark" "$AMI/feats.ark" "$TMP/empty.ark" > "$TMP/mix.ark"
  for b in 1 300 100000; do
    score_both "ark:$TMP/mix.ark" "$TMP/o$b" --batch-frames=$b
    [ "$s0" -eq 0 ] && [ "$s3" -eq 0 ]
    grep -q 'parallel archive reader, 3 copy threads' "$TMP/o$b.e3"
    cmp "$TMP/o$b.0" "$TMP/o$b.3"
  done
  score_both "ark,s,cs:$AMI/feats.ark" "$TMP/s"
  [ "$s3" -eq 0 ] && cmp "$TMP/s.0" "$TMP/s.3"
  # not a plain file: the sequential reader
  "$BIN/gmm-score-gpu" --device=cpu --verbose=1 "$FIX/ami-diag16.gmm" "ark:cat $AMI/feats.ark |" "ark:$TMP/p" 2> "$TMP/p.e"
  grep -q 'input: the sequential reader' "$TMP/p.e"
  cmp "$TMP/p" "$TMP/s.0"
}

@test "gmm-score-gpu: NaN or a truncated payload, the parallel reader gives the sequential reader's error line" {
  key=$(head -c 100 "$AMI/feats.ark" | cut -d' ' -f1)
  cp "$AMI/feats.ark" "$TMP/nan.ark"
  # the first utterance's payload starts after "key \0BFM " and two size-prefixed int32s (13 columns)
  printf '\x00\x00\xc0\x7f' | dd of="$TMP/nan.ark" bs=1 seek=$(( ${#key} + 16 + 4 * (2 * 13 + 3) )) conv=notrunc 2>/dev/null
  score_both "ark:$TMP/nan.ark" "$TMP/n" --batch-frames=100
  [ "$s0" -ne 0 ] && [ "$s3" -ne 0 ]
  [ "$(grep -c ERROR "$TMP/n.e0")" -eq 1 ] && [ "$(grep -vc LOG "$TMP/n.e0")" -eq 1 ]
  [[ "$e0" == *"nan.ark"*"'$key'"*"NaN at row 2, col 3"* ]]
  [ "$e0" = "$e3" ]
  [ ! -e "$TMP/n.0" ] && [ ! -e "$TMP/n.3" ]
  # the NaN first, a bad text entry later in the same batch: still the NaN's line
  { cat "$TMP/nan.ark"; printf 'bad  [\n 1 2 x ]\n'; } > "$TMP/nb.ark"
  score_both "ark:$TMP/nb.ark" "$TMP/nb"
  [ "$s3" -ne 0 ] && [[ "$e3" == *"NaN at row 2, col 3"* ]] && [ "$e0" = "$e3" ]
  head -c -10 "$AMI/feats.ark" > "$TMP/trunc.ark"
  score_both "ark:$TMP/trunc.ark" "$TMP/t"
  [ "$s0" -ne 0 ] && [ "$s3" -ne 0 ]
  [ "$(grep -vc LOG "$TMP/t.e0")" -eq 1 ]
  [[ "$e0" == *"ERROR"*"trunc.ark"*"key '"*"end of file"* ]]
  [ "$e0" = "$e3" ]
}
