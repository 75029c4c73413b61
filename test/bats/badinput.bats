#!/usr/bin/env bats
# Bad input (doc/reliability.md): every case must end with exit
# status 1 (no signal, no hang: run under `timeout`, and under `ulimit -v` so
# an allocation sized by a corrupt header fails the test), exactly one ERROR
# line naming the file (and the key, for tables), and no output file left.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  FIX=$GH_SHARED/data/kaldi-fixtures
  MDL=$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl
  T=$(mktemp -d)
}

teardown() {
  rm -rf "$T"
}

# bounded CMD...: runs CMD with 60 s and (except in sanitizer builds, whose
# shadow memory needs a huge address space) 1.5 GB of address space.
bounded() {
  if [ -n "${GH_SANITIZED:-}" ]; then
    run timeout 60 "$@"
  else
    run timeout 60 bash -c 'ulimit -v 1500000; exec "$@"' _ "$@"
  fi
}

# expect_error PATTERN OUTPUT_FILE CMD...: exit 1, one ERROR line matching
# PATTERN (a glob), OUTPUT_FILE (if not "-") and its temporaries absent.
expect_error() {
  local pat=$1 out=$2; shift 2
  bounded "$@"
  echo "status $status; output: $output"
  [ "$status" -eq 1 ]
  [ "$(grep -c ': ERROR: ' <<<"$output")" -eq 1 ]
  [[ "$(grep ': ERROR: ' <<<"$output")" == *$pat* ]]
  if [ "$out" != - ]; then
    [ ! -e "$out" ]
    [ -z "$(find "$(dirname "$out")" -name "$(basename "$out").tmp.*")" ]
  fi
}

@test "badinput 1: a --config file that includes itself is one error, not a stack overflow" {
  echo "--config=$T/self.conf" > "$T/self.conf"
  expect_error "config file '$T/self.conf'*nested*" "$T/o.ark" \
    "$BIN/copy-feats" --config="$T/self.conf" "ark:$FIX/mfcc.ark" "ark:$T/o.ark"
}

@test "badinput 2: gmm-init --num-gauss=100000000 on 150 frames finishes (bounded by the frames)" {
  "$BIN/copy-feats" "ark:$FIX/mfcc.ark" ark,t:- 2>/dev/null | head -n 151 | sed '$ s/$/ ]/' > "$T/f.txt"
  [ "$(grep -c '^  ' "$T/f.txt")" -eq 150 ]
  # refused at once (10 frames per Gaussian, as Kaldi) ...
  bounded "$BIN/gmm-init" --num-iters=0 --num-gauss=100000000 "ark:$T/f.txt" "$T/m.mdl"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  [[ "$output" == *"--num-gauss=100000000 needs at least"* ]]
  [ ! -e "$T/m.mdl" ]
  # ... and, allowed, bounded by the frames
  bounded "$BIN/gmm-init" --num-iters=0 --min-frames-per-gauss=0 --num-gauss=100000000 "ark:$T/f.txt" "$T/m.mdl"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"only 150 frames"* ]]
  run "$BIN/gmm-info" "$T/m.mdl"
  [[ "$output" == *150* ]]
}

@test "badinput 2b: gmm-init with too few frames for its Gaussians: one message, the refusal with its remedy" {
  "$BIN/copy-feats" "ark:$FIX/mfcc.ark" ark,t:- 2>/dev/null | head -n 61 | sed '$ s/$/ ]/' > "$T/f.txt"
  # 60 frames, 100 Gaussians asked (more than frames), 10 per Gaussian needed
  bounded "$BIN/gmm-init" --num-iters=0 --num-gauss=100 "ark:$T/f.txt" "$T/m.mdl"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(grep -c -e ERROR -e WARNING <<<"$output")" -eq 1 ]
  [[ "$output" == *"ERROR: "*"--num-gauss=100 needs at least 1000 frames"*"got 60"*"lower --num-gauss to 6 "* ]]
  [ ! -e "$T/m.mdl" ]
  # 5 frames: not even one Gaussian's 10; the remedy is not --num-gauss=0
  head -n 6 "$T/f.txt" | sed '$ s/$/ ]/' > "$T/f5.txt"
  bounded "$BIN/gmm-init" --num-iters=0 --num-gauss=1 "ark:$T/f5.txt" "$T/m.mdl"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(grep -c -e ERROR -e WARNING <<<"$output")" -eq 1 ]
  [[ "$output" == *"needs at least 10 frames"*"got 5"* ]]
  [[ "$output" != *"--num-gauss to 0"* ]]
}

@test "badinput 3: a topology naming phone 500000000 or 2147483647 is one error, no 2 GB table" {
  "$BIN/gmm-copy" --binary=false "$MDL" "$T/0.txt" 2>/dev/null
  for ph in 500000000 2147483647; do
    sed "5s/^11 /$ph /" "$T/0.txt" > "$T/big.mdl"
    expect_error "big.mdl*phone $ph*" "$T/o.mdl" "$BIN/gmm-copy" "$T/big.mdl" "$T/o.mdl"
  done
}

@test "badinput 4: sizes in headers are checked against the bytes in the file (every object type)" {
  # FM 1000000000 x 1000: 4 TB asked by 25 bytes.
  printf 'u1 \0BFM \004\000\312\232\073\004\350\003\000\000' > "$T/fm.ark"
  expect_error "fm.ark*key 'u1'*needs*bytes*" "$T/o.ark" "$BIN/copy-feats" "ark:$T/fm.ark" "ark:$T/o.ark"
  # The same through gzip (size unknown in advance: read ahead, still bounded).
  gzip -c "$T/fm.ark" > "$T/fm.ark.gz"
  expect_error "fm.ark.gz*key 'u1'*needs*bytes*" "$T/o.ark" "$BIN/copy-feats" "ark:$T/fm.ark.gz" "ark:$T/o.ark"
  # Double matrix, compressed matrix, int32 vector, posterior.
  printf 'u1 \0BDM \004\377\377\377\177\004\002\000\000\000' > "$T/dm.ark"
  expect_error "dm.ark*key 'u1'*needs*bytes*" "$T/o.ark" "$BIN/copy-feats" "ark:$T/dm.ark" "ark:$T/o.ark"
  printf 'u1 \0BCM2 \000\000\000\000\000\000\200\077\377\377\377\177\377\377\377\177' > "$T/cm.ark"
  expect_error "cm.ark*key 'u1'*needs*bytes*" "$T/o.ark" "$BIN/copy-feats" "ark:$T/cm.ark" "ark:$T/o.ark"
  printf 'u1 \0B\004\377\377\377\177' > "$T/iv.ark"
  expect_error "iv.ark*key 'u1'*needs*bytes*" "$T/o.ark" "$BIN/copy-int-vector" "ark:$T/iv.ark" "ark:$T/o.ark"
  printf 'u1 \0B\004\000\000\000\001\004\377\377\377\177' > "$T/post.ark"
  expect_error "post.ark*key 'u1'*needs*bytes*" "$T/o.ark" "$BIN/copy-post" "ark:$T/post.ark" "ark:$T/o.ark"
  # A full GMM of dimension 100000 (one mean row) would need 2e10 bytes of inverse covariances.
  python3 -c 'print("<FullGMM> <WEIGHTS> [ 1 ] <MEANS_INVCOVARS> [ " + "0 " * 100000 + "] <INV_COVARS> [ 1 ] </FullGMM>")' > "$T/bigd.fgmm"
  expect_error "bigd.fgmm*INV_COVARS*needs*bytes*" "$T/o.mdl" "$BIN/gmm-copy" "$T/bigd.fgmm" "$T/o.mdl"
  # <NUMPDFS> 100000000 in a 40-byte model.
  printf '\0B<DIMENSION> \004\002\000\000\000<NUMPDFS> \004\000\341\365\005' > "$T/np.mdl"
  expect_error "np.mdl*NUMPDFS*needs*bytes*" "$T/o.mdl" "$BIN/gmm-copy" "$T/np.mdl" "$T/o.mdl"
}

@test "badinput 4b: an HMM set with 1e9 arcs in a few bytes is one error" {
  printf '<HmmSet> <NumHmms> 1\n<Hmm> a <NumStates> 1\n<PdfIds> [ 0 ]\n<InitLogProbs> [ 0 ]\n<Arcs> 1000000000\n0 0 0\n' > "$T/arcs.hmm"
  printf 'u1  [\n  0 ]\n' > "$T/ll.txt"
  expect_error "arcs.hmm*Arcs*needs*bytes*" "$T/o.ark" \
    "$BIN/hmm-forward" --device=cpu "$T/arcs.hmm" "ark,t:$T/ll.txt" "ark,t:$T/o.ark"
}

@test "badinput 5: a full covariance that is not positive definite is rejected on read" {
  printf '<FullGMM>\n<WEIGHTS> [ 1 ]\n<MEANS_INVCOVARS> [\n  0 0 ]\n<INV_COVARS> [\n1 \n2 1 ]\n</FullGMM>\n' > "$T/npd.fgmm"
  expect_error "npd.fgmm*Gaussian 0 is not positive definite*" "$T/o.mdl" "$BIN/gmm-copy" "$T/npd.fgmm" "$T/o.mdl"
  printf 'u1  [\n  0 0 ]\n' > "$T/f.txt"
  expect_error "npd.fgmm*not positive definite*" "$T/o.ark" \
    "$BIN/gmm-score-gpu" --device=cpu "$T/npd.fgmm" "ark,t:$T/f.txt" "ark:$T/o.ark"
}

@test "badinput 6: an HMM state whose arcs + exit sum to 1.4 is rejected" {
  printf '<HmmSet> <NumHmms> 1\n<Hmm> a <NumStates> 1\n<PdfIds> [ 0 ]\n<InitLogProbs> [ 0 ]\n<Arcs> 1\n0 0 -0.356675\n<FinalLogProbs> [ -0.356675 ]\n</Hmm>\n</HmmSet>\n' > "$T/s.hmm"
  printf 'u1  [\n  0 \n  0 ]\n' > "$T/ll.txt"
  expect_error "s.hmm*state 0*sum to 1.4*" "$T/o.ark" \
    "$BIN/hmm-forward" --device=cpu "$T/s.hmm" "ark,t:$T/ll.txt" "ark,t:$T/o.ark"
}

@test "badinput 7: gmm-init never writes a model its own reader rejects (features ~1e23)" {
  python3 -c '
import random
random.seed(1)
print("u1  [")
for t in range(40): print("  " + " ".join("%g" % (random.gauss(0, 1) * 3e23) for d in range(3)))
print("  ]")' > "$T/huge.txt"
  bounded "$BIN/gmm-init" --num-gauss=2 "ark,t:$T/huge.txt" "$T/m.mdl"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(grep -c ': ERROR: ' <<<"$output")" -eq 1 ]
  [[ "$output" == *"float range"* ]]
  [ ! -e "$T/m.mdl" ]
}

@test "badinput 8: non-finite float options (nan, inf) are rejected" {
  for v in nan inf -inf 1e999; do
    expect_error "option --min-variance*" "$T/m.mdl" \
      "$BIN/gmm-init" --min-variance=$v "ark:$FIX/mfcc.ark" "$T/m.mdl"
  done
}

@test "badinput 9: 0-row and 0x0 binary matrices round-trip (no memcpy(NULL) under UBSan)" {
  printf 'u1 \0BFM \004\000\000\000\000\004\003\000\000\000u2 \0BFM \004\000\000\000\000\004\000\000\000\000' > "$T/z.ark"
  run "$BIN/copy-feats" "ark:$T/z.ark" "ark:$T/o.ark"
  [ "$status" -eq 0 ]
  cmp "$T/z.ark" "$T/o.ark"
}

@test "badinput 12: a key with a NUL byte is one error on read; a truncated WAV warns" {
  printf 'u\0x \0BFM \004\001\000\000\000\004\001\000\000\000\000\000\200\077' > "$T/nul.ark"
  expect_error "nul.ark*NUL byte*" "$T/o.ark" "$BIN/copy-feats" "ark:$T/nul.ark" "ark:$T/o.ark"
  if grep -qa "built without libsndfile" "$BIN/compute-mfcc-feats"; then skip "built without libsndfile"; fi
  w=$GH_SHARED/data/fsdd/recordings/0_george_0.wav
  if [ ! -f "$w" ] && [ -f "${w%.wav}.flac" ]; then   # shipped as FLAC only: a WAV copy to cut
    command -v flac > /dev/null || skip "FSDD is FLAC and flac is not installed"
    flac -s -d -o "$T/full.wav" "${w%.wav}.flac"; w=$T/full.wav
  fi
  head -c $(( $(stat -c %s "$w") / 2 )) "$w" > "$T/half.wav"
  echo "a $T/half.wav" > "$T/wav.scp"
  run "$BIN/compute-mfcc-feats" --sample-frequency=8000 "scp:$T/wav.scp" "ark:$T/o.ark"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"half.wav"*"truncated"* ]]
}

@test "build: make CFLAGS=... adds to the flags the build needs (include paths kept)" {
  run make -s -n -C "$BATS_TEST_DIRNAME/../.." B="$T/b" CFLAGS=-O0 "$T/b/lib/gmm/gmm.o"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"-O0"*"-Ilib"* ]]
}
