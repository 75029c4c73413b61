#!/usr/bin/env bats
# compute-wer (hand-made reference/hypothesis tables: identical, substitution,
# insertion, deletion, empty hypothesis, missing hypothesis under each --mode,
# integer input), hmm-make-loop, and a smoke test of egs/yesno/run.sh.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  printf 'u1 yes no yes no\nu2 no no\n' > "$T/ref.txt"
}

wer() { "$BIN/compute-wer" --text "$@" 2>"$T/err"; }

@test "compute-wer: identical transcripts give 0% WER and SER" {
  run wer "ark:$T/ref.txt" "ark:$T/ref.txt"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "%WER 0.00 [ 0 / 6, 0 ins, 0 del, 0 sub ]" ]
  [ "${lines[1]}" = "%SER 0.00 [ 0 / 2 ]" ]
  [ "${lines[2]}" = "Scored 2 sentences, 0 not present in hyp." ]
}

@test "compute-wer: one substitution" {
  printf 'u1 yes no no no\nu2 no no\n' > "$T/hyp.txt"
  run wer "ark:$T/ref.txt" "ark:$T/hyp.txt"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "%WER 16.67 [ 1 / 6, 0 ins, 0 del, 1 sub ]" ]
  [ "${lines[1]}" = "%SER 50.00 [ 1 / 2 ]" ]
}

@test "compute-wer: one insertion and one deletion" {
  printf 'u1 yes no yes no yes\nu2 no\n' > "$T/hyp.txt"
  run wer "ark:$T/ref.txt" "ark:$T/hyp.txt"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "%WER 33.33 [ 2 / 6, 1 ins, 1 del, 0 sub ]" ]
  [ "${lines[1]}" = "%SER 100.00 [ 2 / 2 ]" ]
}

@test "compute-wer: empty hypothesis is all deletions; per-utt and alignment stats outputs" {
  printf 'u1\nu2 no no\n' > "$T/hyp.txt"
  run wer --per-utt="$T/per_utt" "ark:$T/ref.txt" "ark:$T/hyp.txt" "$T/stats"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "%WER 66.67 [ 4 / 6, 0 ins, 4 del, 0 sub ]" ]
  grep -qx 'u1 #csid 0 0 0 4' "$T/per_utt"
  grep -qx 'u2 #csid 2 0 0 0' "$T/per_utt"
  grep -qx 'u1 hyp \*\*\* \*\*\* \*\*\* \*\*\*' "$T/per_utt"
  [ "$(grep -c '^deletion' "$T/stats")" -eq 4 ]
  [ "$(grep -c '^correct no' "$T/stats")" -eq 2 ]
}

@test "compute-wer: missing hypothesis key under --mode=strict, present, all" {
  printf 'u1 yes no yes no\n' > "$T/hyp.txt"
  run wer "ark:$T/ref.txt" "ark:$T/hyp.txt"
  [ "$status" -ne 0 ]
  grep -q "no hypothesis for key 'u2'" "$T/err"
  run wer --mode=present "ark:$T/ref.txt" "ark:$T/hyp.txt"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "%WER 0.00 [ 0 / 4, 0 ins, 0 del, 0 sub ] [PARTIAL]" ]
  [ "${lines[2]}" = "Scored 1 sentences, 1 not present in hyp." ]
  run wer --mode=all "ark:$T/ref.txt" "ark:$T/hyp.txt"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "%WER 33.33 [ 2 / 6, 0 ins, 2 del, 0 sub ] [PARTIAL]" ]
  [ "${lines[1]}" = "%SER 50.00 [ 1 / 2 ]" ]
  run wer --mode=bogus "ark:$T/ref.txt" "ark:$T/hyp.txt"
  [ "$status" -ne 0 ]
}

@test "compute-wer: integer input without --text" {
  printf 'a 1 2 3 4\n' > "$T/ref.int"
  printf 'a 1 3 4 5 6\n' > "$T/hyp.int"
  run "$BIN/compute-wer" "ark:$T/ref.int" "ark:$T/hyp.int"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "%WER 75.00 [ 3 / 4, 2 ins, 1 del, 0 sub ]" ]
}

@test "hmm-make-loop: rebuilds the loop from the word HMMs, with a word penalty" {
  printf 'yes\nno\n' > "$T/words.txt"
  "$BIN/hmm-init-topo" --binary=false --num-states=2 --silence=sil --word-loop=loop "$T/words.txt" "$T/a.hmm" 2>/dev/null
  "$BIN/hmm-make-loop" --binary=false --silence=sil "$T/a.hmm" "$T/b.hmm" 2>/dev/null
  cmp "$T/a.hmm" "$T/b.hmm"
  "$BIN/hmm-make-loop" --binary=false --silence=sil --word-penalty=1 "$T/a.hmm" "$T/c.hmm" 2>/dev/null
  ! cmp -s "$T/a.hmm" "$T/c.hmm"
  run "$BIN/hmm-make-loop" --silence=nosuch "$T/a.hmm" "$T/d.hmm"
  [ "$status" -ne 0 ]
}

@test "egs/yesno/run.sh runs end to end and prints a WER line" {
  ls "$GH_SHARED"/data/yesno/waves/*.wav >/dev/null 2>&1 || skip "yesno WAVs not found under $GH_SHARED/data/yesno/waves"
  local wav
  wav=$(ls "$GH_SHARED"/data/yesno/waves/*.wav | head -1)
  if ! echo "k $wav" | "$BIN/compute-mfcc-feats" --sample-frequency=8000 scp:- ark:/dev/null 2>"$T/err"; then
    grep -q 'without libsndfile' "$T/err" && skip "tools built without libsndfile"
    cat "$T/err"; false
  fi
  run env GH_SHARED="$GH_SHARED" "$BATS_TEST_DIRNAME/../../egs/yesno/run.sh" --device=cpu --iters=8 --gauss=2 \
    --work="$T/yesno"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"test (10 files): %WER "* ]]
}
