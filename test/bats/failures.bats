#!/usr/bin/env bats
# Failure semantics (doc/reliability.md "Failure semantics"): a
# failed input (pipe, gzip, read error) is an error; the file outputs of a
# tool commit together at success or not at all; stdout and close errors are
# errors; closed standard descriptors are detected; duplicate keys in
# random-access tables are errors; signals mid-write leave nothing behind;
# utils/run.sh's jobs die with it.  Every failing case checks: non-zero
# exit, exactly one ERROR line naming the file or key and the cause, and no
# output file left behind.
#
# The tests run as root (CI and here), for whom chmod does not make a
# directory read-only: unwritable outputs are made with a path under a
# regular file ("$TMP/afile/o.mdl": ENOTDIR) and, where mount is permitted,
# a read-only bind mount; a full disk is a 64 KB tmpfs where mount is
# permitted, else (and also) /dev/full.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  FIX=$GH_SHARED/data/kaldi-fixtures
  FEATS=$GH_SHARED/data/kaldi-ami-feats/feats.ark
  MDL=$FIX/ami-diag16.gmm
  TMP=$(mktemp -d)
  touch "$TMP/afile"
}

teardown() {
  [ -z "${mnt:-}" ] || umount "$mnt" 2>/dev/null || true
  [ -z "${launcher:-}" ] || kill -KILL "$launcher" 2>/dev/null || true
  rm -rf "$TMP"
}

# one_error <substring>...: exactly one ERROR line, holding every substring
one_error() {
  echo "$output"
  [ "$(grep -c 'ERROR' <<<"$output")" -eq 1 ]
  local line; line=$(grep 'ERROR' <<<"$output")
  for s in "$@"; do [[ "$line" == *"$s"* ]] || { echo "missing '$s' in: $line"; return 1; }; done
}

# nothing_left: no file in $TMP but the inputs named (and no temporary files)
nothing_left() {
  local left
  left=$(cd "$TMP" && ls -A | grep -vxF -f <(printf '%s\n' afile "$@") || true)
  [ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

corrupt_gz() {  # $TMP/bad.gz: the archive gzip'd, one byte of its CRC flipped
  gzip -c "$FEATS" > "$TMP/good.gz"
  python3 -c "
import sys; d = bytearray(open(sys.argv[1], 'rb').read()); d[-6] ^= 0xff
open(sys.argv[2], 'wb').write(d); open(sys.argv[3], 'wb').write(d[:len(d) // 2])" \
    "$TMP/good.gz" "$TMP/bad.gz" "$TMP/trunc.gz"
  rm "$TMP/good.gz"
}

# alive <pid>: the process exists and is not a zombie (killed processes whose
# parent died wait for the container's init to reap them)
alive() {
  local st; st=$(ps -o stat= -p "$1" 2>/dev/null || true)
  [ -n "$st" ] && [[ $st != Z* ]]
}

# ---- failing inputs ----

@test "failures: gunzip of a corrupt .gz in an input pipe is an error with its exit code; no model written" {
  corrupt_gz
  run "$BIN/gmm-est-gpu" --device=cpu --num-iters=1 "$MDL" "ark:gunzip -c $TMP/bad.gz|" "$TMP/o.mdl"
  [ "$status" -ne 0 ]
  one_error "gunzip -c $TMP/bad.gz|" "the input command exited with status 1"
  nothing_left bad.gz trunc.gz
  run "$BIN/copy-feats" "ark:gunzip -c $TMP/bad.gz|" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "exited with status 1"
  nothing_left bad.gz trunc.gz
}

@test "failures: a corrupt or truncated .gz read directly names the cause" {
  corrupt_gz
  run "$BIN/copy-feats" "ark:$TMP/bad.gz" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "ark:$TMP/bad.gz" "corrupt gzip data" "incorrect data check"
  run "$BIN/copy-feats" "ark:$TMP/trunc.gz" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "ark:$TMP/trunc.gz" "truncated gzip data"
  nothing_left bad.gz trunc.gz
}

@test "failures: a pipe that ends early and exits 3 is reported as status 3 (not 768), before the truncation" {
  run "$BIN/gmm-score-gpu" --device=cpu "$MDL" "ark:head -c 9414 $FEATS; exit 3|" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "head -c 9414" "the input command exited with status 3"
  [[ "$output" != *768* ]]
  nothing_left
  # the whole archive, then exit 3: still an error (the data looked complete)
  run "$BIN/copy-feats" "ark:cat $FEATS; exit 3|" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "exited with status 3"
  nothing_left
}

@test "failures: a pipe command killed by a signal names the signal" {
  run "$BIN/copy-feats" "ark:cat $FEATS; kill -9 \$\$|" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "was killed by signal 9"
  nothing_left
}

@test "failures: an input pipe command that does not exist is one ERROR line" {
  run "$BIN/copy-feats" "ark:no-such-command-xyz $FEATS|" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "no-such-command-xyz" "status 127 (command not found)"
  nothing_left
}

@test "failures: Kaldi's permissive 'p' option keeps a failed input pipe a warning" {
  run "$BIN/copy-feats" "ark,p:cat $FEATS; exit 3|" "ark:$TMP/o.ark"
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING"*"exited with status 3"*"permissive"* ]]
  cmp "$TMP/o.ark" "$FEATS"
}

@test "failures: a reader that stops early (random access) does not blame the pipe it stopped" {
  # apply-cmvn reads one cmvn entry per utterance from a random-access table
  # fed by a pipe that goes on forever (entries z1, z2, ... after the real
  # ones): stopping it (SIGPIPE) is not an error
  "$BIN/compute-cmvn-stats" "ark:$FEATS" "ark:$TMP/cmvn.ark" 2>/dev/null
  run timeout 60 "$BIN/apply-cmvn" "ark:cat $TMP/cmvn.ark; yes | awk '{ print \"z\" NR \"  [ 0 0 ]\" }'|" \
    "ark:$FEATS" "ark:$TMP/o.ark"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -s "$TMP/o.ark" ]
}

# ---- outputs commit together ----

@test "failures: a failed output leaves none of the tool's outputs (gmm-est-gpu --write-accs, hmm-bw posteriors)" {
  run "$BIN/gmm-est-gpu" --device=cpu --num-iters=1 --write-accs="$TMP/a.acc" "$MDL" "ark:$FEATS" "$TMP/afile/o.mdl"
  [ "$status" -ne 0 ]
  one_error "$TMP/afile/o.mdl" "Not a directory"
  nothing_left
  printf 'a 0 0\nb 0 0 0\n' > "$TMP/words"
  "$BIN/hmm-init-topo" "$TMP/words" "$TMP/h.hmm" 2>/dev/null
  # the global GMM has one pdf: one loglike column, pdf 0 of both HMMs
  "$BIN/gmm-score-gpu" --device=cpu "$MDL" "ark:$FEATS" "ark:$TMP/ll.txt" 2>/dev/null
  run "$BIN/hmm-bw" --device=cpu --hmm=a "$TMP/h.hmm" "ark:$TMP/ll.txt" "ark:$TMP/p.post" "$TMP/afile/o.hmm"
  [ "$status" -ne 0 ]
  one_error "$TMP/afile/o.hmm"
  nothing_left words h.hmm ll.txt
  # the same run with a writable output commits both
  run "$BIN/hmm-bw" --device=cpu --hmm=a "$TMP/h.hmm" "ark:$TMP/ll.txt" "ark:$TMP/p.post" "$TMP/o.hmm"
  [ "$status" -eq 0 ]
  [ -s "$TMP/p.post" ] && [ -s "$TMP/o.hmm" ]
}

@test "failures: a read-only directory (bind mount) is one ERROR line and no output" {
  mkdir "$TMP/ro"
  mount --bind -o ro "$TMP/ro" "$TMP/ro" 2>/dev/null || mount -o remount,bind,ro "$TMP/ro" 2>/dev/null ||
    skip "bind mounts not permitted here (the ENOTDIR case above covers an unwritable output)"
  mnt=$TMP/ro
  touch "$TMP/ro/x" 2>/dev/null && skip "the bind mount is not read-only here"
  run "$BIN/gmm-est-gpu" --device=cpu --num-iters=1 --write-accs="$TMP/a.acc" "$MDL" "ark:$FEATS" "$TMP/ro/o.mdl"
  [ "$status" -ne 0 ]
  one_error "$TMP/ro/o.mdl" "Read-only file system"
  [ ! -e "$TMP/a.acc" ]
}

@test "failures: a full disk names the file and 'No space left on device', and leaves nothing" {
  run "$BIN/copy-feats" "ark:$FEATS" "ark:/dev/full"
  [ "$status" -ne 0 ]
  one_error "ark:/dev/full, key '" "error writing '/dev/full': No space left on device"
  mkdir "$TMP/small"
  mount -t tmpfs -o size=64k tmpfs "$TMP/small" 2>/dev/null || skip "tmpfs mount not permitted here (/dev/full above)"
  mnt=$TMP/small
  run "$BIN/copy-feats" "ark:$FEATS" "ark:$TMP/small/o.ark"
  [ "$status" -ne 0 ]
  one_error "$TMP/small/o.ark" "No space left on device"
  [ -z "$(ls -A "$TMP/small")" ]
  # two outputs, the second does not fit: neither is written
  run "$BIN/copy-feats" "ark:$FEATS" "ark,scp:$TMP/o.ark,$TMP/small/o.scp"
  [ "$status" -eq 0 ]   # the scp fits
  head -c 60000 /dev/zero > "$TMP/small/fill"
  run "$BIN/copy-feats" "ark:$FEATS" "ark,scp:$TMP/small/o2.ark,$TMP/o2.scp"
  [ "$status" -ne 0 ]
  one_error "$TMP/small/o2.ark" "No space left on device"
  [ ! -e "$TMP/o2.scp" ] && [ ! -e "$TMP/small/o2.ark" ]
}

@test "failures: output files commit together at success (ark,scp and --write-accs)" {
  run "$BIN/gmm-est-gpu" --device=cpu --num-iters=1 --write-accs="$TMP/a.acc" "$MDL" "ark:$FEATS" "$TMP/o.mdl"
  [ "$status" -eq 0 ]
  [ -s "$TMP/a.acc" ] && [ -s "$TMP/o.mdl" ]
  "$BIN/copy-feats" "ark:$FEATS" "ark,scp:$TMP/c.ark,$TMP/c.scp" 2>/dev/null
  [ "$(wc -l < "$TMP/c.scp")" -eq 10 ]
  cmp "$TMP/c.ark" "$FEATS"
  [ -z "$(find "$TMP" -name '*.tmp.*')" ]
}

@test "failures: a failed output pipe names the command's exit code" {
  run "$BIN/copy-feats" "ark:$FEATS" "ark:| cat > /dev/null; exit 3"
  [ "$status" -ne 0 ]
  one_error "the command exited with status 3"
}

@test "failures: gmm-score-gpu on empty input is one ERROR line and leaves no 0-byte output" {
  run "$BIN/gmm-score-gpu" --device=cpu "$MDL" ark:- "ark:$TMP/o" < /dev/null
  [ "$status" -ne 0 ]
  one_error "ark:-" "no utterances"
  nothing_left
}

# ---- standard output and closed descriptors ----

@test "failures: stdout write errors are errors (gmm-info, feat-to-len > /dev/full)" {
  run bash -c "'$BIN/gmm-info' '$MDL' > /dev/full"
  [ "$status" -ne 0 ]
  one_error "standard output" "No space left on device"
  run bash -c "'$BIN/feat-to-len' 'ark:$FEATS' > /dev/full"
  [ "$status" -ne 0 ]
  one_error "standard output" "No space left on device"
  run bash -c "'$BIN/feat-to-len' 'ark:$FEATS' ark,t:- > /dev/full"
  [ "$status" -ne 0 ]
  one_error "standard output" "No space left on device"
}

@test "failures: closed standard descriptors are detected (stdin read, stdout written)" {
  run bash -c "'$BIN/copy-feats' ark:- 'ark:$TMP/o.ark' <&-"
  [ "$status" -ne 0 ]
  one_error "ark:-" "standard input is closed"
  nothing_left
  run bash -c "'$BIN/compute-wer' --text ark:- 'ark:$TMP/afile' <&-"
  [ "$status" -ne 0 ]
  one_error "standard input is closed"
  # a file opened after start does not become "standard input"
  run bash -c "'$BIN/apply-cmvn' 'ark:$FIX/cmvn.ark' ark:- 'ark:$TMP/o.ark' <&-"
  [ "$status" -ne 0 ]
  one_error "standard input is closed"
  nothing_left
  run bash -c "'$BIN/gmm-info' '$MDL' >&-"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR"*"standard output"*"closed"* ]]
  run bash -c "'$BIN/copy-feats' 'ark:$FEATS' ark:- >&-"
  [ "$status" -ne 0 ]
  one_error "cannot write to standard output: it is closed"
}

# ---- duplicate keys ----

@test "failures: a duplicate key in a random-access table is an error naming the key and the table" {
  "$BIN/compute-cmvn-stats" "ark:$FEATS" "ark,t:$TMP/cmvn.txt" 2>/dev/null
  first=$(head -1 "$TMP/cmvn.txt" | cut -d' ' -f1)
  { head -3 "$TMP/cmvn.txt"; cat "$TMP/cmvn.txt"; } > "$TMP/dup.txt"
  [ "$(grep -c "^$first " "$TMP/dup.txt")" -eq 2 ]
  run "$BIN/apply-cmvn" "ark:$TMP/dup.txt" "ark:$FEATS" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "ark:$TMP/dup.txt" "duplicate key '$first'"
  nothing_left cmvn.txt dup.txt
  # in a script file too
  printf 'u1 %s\nu1 %s\n' "$TMP/cmvn.txt" "$TMP/cmvn.txt" > "$TMP/dup.scp"
  run "$BIN/apply-cmvn" "scp:$TMP/dup.scp" "ark:$FEATS" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "scp:$TMP/dup.scp" "duplicate key 'u1'"
}

@test "failures: a duplicate key after every key looked up is an error too (the table is read to its end)" {
  # labels: u0 again as the last line, after u1 and u2 (the lookups never read past u2)
  python3 - "$TMP/f.txt" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    for u, k in (('u0', 1), ('u1', 2), ('u2', 3)):
        f.write(u + '  [\n' + '\n'.join('%d.5 %d.25 -%d' % (k * i, i, k + i) for i in range(20)) + ' ]\n')
PY
  printf 'u0 0\nu1 1\nu2 0\nu0 1\n' > "$TMP/lab.utt"
  run "$BIN/gmm-init" --labels="ark,t:$TMP/lab.utt" --label-type=utt --num-iters=0 "ark:$TMP/f.txt" "$TMP/m1"
  [ "$status" -eq 1 ]
  one_error "ark,t:$TMP/lab.utt" "duplicate key 'u0'"
  [ ! -e "$TMP/m1" ]
  # a VAD table with u0 twice, all of it used by select-voiced-frames
  for u in u0 u1 u2 u0; do echo "$u [ $(printf '1 %.0s' $(seq 20))]"; done > "$TMP/vad.txt"
  run "$BIN/select-voiced-frames" "ark:$TMP/f.txt" "ark:$TMP/vad.txt" "ark:$TMP/o.ark"
  [ "$status" -eq 1 ]
  one_error "ark:$TMP/vad.txt" "duplicate key 'u0'"
  [ ! -e "$TMP/o.ark" ]
  # the labels through an scp list naming u0 twice
  echo 0 > "$TMP/l0"; echo 1 > "$TMP/l1"
  printf 'u0 %s\nu1 %s\nu2 %s\nu0 %s\n' "$TMP/l0" "$TMP/l1" "$TMP/l0" "$TMP/l1" > "$TMP/lab.scp"
  run "$BIN/gmm-init" --labels="scp:$TMP/lab.scp" --label-type=utt --num-iters=0 "ark:$TMP/f.txt" "$TMP/m1"
  [ "$status" -eq 1 ]
  one_error "scp:$TMP/lab.scp" "duplicate key 'u0'"
}

# ---- model/input mismatches ----

@test "failures: hmm-forward refuses loglikes with more columns than the HMMs' pdfs, naming the key" {
  printf 'a 0 0\nb 0 0 0\n' > "$TMP/words"
  "$BIN/hmm-init-topo" "$TMP/words" "$TMP/h.hmm" 2>/dev/null
  # a Kaldi model of 22 pdfs: 22 columns for HMMs that use 1 pdf
  "$BIN/gmm-score-gpu" --device=cpu "$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl" "ark:$FIX/mfcc-deltas.ark" \
    "ark:$TMP/ll.ark" 2>/dev/null
  key=$(head -c 100 "$FIX/mfcc-deltas.ark" | cut -d' ' -f1)
  run "$BIN/hmm-forward" --device=cpu "$TMP/h.hmm" "ark:$TMP/ll.ark" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  one_error "key '$key'" "loglikes of dimension 22, expected 1" "pdfs 0..0"
  nothing_left words h.hmm ll.ark
}

@test "failures: a loglikes writer that dies mid-object upstream of hmm-forward ark:- is a truncation, not a mismatch" {
  printf 'a 0 1 2\nb 3 4 5\n' > "$TMP/words"
  "$BIN/hmm-init-topo" "$TMP/words" "$TMP/h.hmm" 2>/dev/null
  python3 - "$TMP/ll.ark" <<'PY'
import struct, sys
import numpy as np
x = -np.arange(300, dtype='<f4').reshape(50, 6) / 7
with open(sys.argv[1], 'wb') as f:
    for u in range(3):
        f.write(b'u%d \0BFM \x04' % u + struct.pack('<i', 50) + b'\x04' + struct.pack('<i', 6) + x.tobytes())
PY
  "$BIN/copy-matrix" "ark:$TMP/ll.ark" "ark,t:$TMP/ll.txt" 2>/dev/null
  # every byte of u1's key and header, then some of its payload (binary); u1's first rows (text)
  for f in ll.ark ll.txt; do
    start=$(grep -abo 'u1 ' "$TMP/$f" | head -1 | cut -d: -f1)
    if [ $f = ll.ark ]; then cuts="$(seq $((start + 1)) $((start + 22))) $((start + 100))"
    else cuts=$(seq $((start + 1)) 3 $((start + 120))); fi
    for cut in $cuts; do
      run bash -c "head -c $cut '$TMP/$f' | '$BIN/hmm-forward' --device=cpu '$TMP/h.hmm' ark:- ark:/dev/null"
      echo "cut $cut of $f"
      [ "$status" -eq 1 ]
      one_error "ark:-, key 'u" "unexpected end of file"
    done
  done
}

@test "failures: hmm-init-topo refuses a word loop with no words" {
  printf 'sil 0 1 2\n' > "$TMP/words"
  run "$BIN/hmm-init-topo" --silence=sil --word-loop=loop "$TMP/words" "$TMP/h.hmm"
  [ "$status" -ne 0 ]
  one_error "--word-loop=loop" "no words"
  nothing_left words
}

# ---- signals mid-write ----

@test "failures: SIGTERM or SIGKILL mid-write leaves no output and no temporary file" {
  for sig in TERM KILL; do
    in=$TMP/in.$sig
    ( cat "$FEATS"; sleep 30 ) > "$in" &
    writer=$!
    # an input that never ends: the tool has written part of its archive when the signal comes
    "$BIN/copy-feats" "ark:tail -c +1 -f $in|" "ark:$TMP/o.ark" 2> "$TMP/err.$sig" &
    pid=$!
    for i in $(seq 1 50); do [ -s "$in" ] && break; sleep 0.1; done
    sleep 1
    cat "$TMP/err.$sig"
    alive $pid
    kill -$sig $pid
    rc=0; wait $pid || rc=$?
    kill $writer 2>/dev/null || true; wait $writer 2>/dev/null || true
    echo "$sig: status $rc"
    [ $rc -eq $(( 128 + $(kill -l $sig) )) ]
    [ ! -e "$TMP/o.ark" ]
    [ -z "$(find "$TMP" -name '*.tmp.*')" ]
  done
}

# ---- launchers ----

@test "failures: utils/run.sh: SIGKILL to the launcher alone stops its jobs (within ~2 s)" {
  cd "$TMP"
  "$ROOT/egs/utils/run.sh" JOB=1:2 log/s.JOB.log 'echo $$ > pid.JOB; sleep 60 | cat; echo finished' &
  launcher=$!
  for i in $(seq 1 50); do [ -s pid.1 ] && [ -s pid.2 ] && break; sleep 0.1; done
  [ -s pid.1 ] && [ -s pid.2 ]
  kill -KILL $launcher
  wait $launcher || true
  launcher=
  for i in $(seq 1 40); do
    alive "$(cat pid.1)" || alive "$(cat pid.2)" || break
    sleep 0.1
  done
  for j in 1 2; do
    ! alive "$(cat pid.$j)"
    ! grep -qx finished log/s.$j.log
  done
}

@test "failures: utils/run.sh: SIGKILL to its process group stops the jobs at once (no setsid)" {
  cd "$TMP"
  setsid "$ROOT/egs/utils/run.sh" JOB=1:2 log/s.JOB.log 'echo $$ > pid.JOB; sleep 60 | cat; echo finished' &
  for i in $(seq 1 50); do [ -s pid.1 ] && [ -s pid.2 ] && break; sleep 0.1; done
  pgid=$(ps -o pgid= -p "$(cat pid.1)" | tr -d ' ')
  [ -n "$pgid" ]
  kill -KILL -- -"$pgid"
  sleep 0.3
  for j in 1 2; do ! alive "$(cat pid.$j)"; done
}

@test "failures: utils/run.sh exits 128 + signal (SIGTERM 143, SIGHUP 129)" {
  # (SIGINT cannot be tested this way: a background job of a non-interactive
  # shell starts with SIGINT ignored, and bash cannot trap it then)
  cd "$TMP"
  for sig in TERM HUP; do
    rm -f pid.*
    # env --default-signal: a shell cannot trap a signal that was ignored when it
    # started, and CI runners (nohup) start the suite with SIGHUP ignored
    env --default-signal=TERM,HUP "$ROOT/egs/utils/run.sh" JOB=1:2 log/s.JOB.log 'echo $$ > pid.JOB; sleep 60' &
    launcher=$!
    for i in $(seq 1 50); do [ -s pid.1 ] && [ -s pid.2 ] && break; sleep 0.1; done
    kill -$sig $launcher
    rc=0; wait $launcher || rc=$?
    launcher=
    [ $rc -eq $(( 128 + $(kill -l $sig) )) ]
    sleep 0.3
    for j in 1 2; do ! alive "$(cat pid.$j)"; done
  done
}

@test "failures: recipe steps run with spaces in the paths (make_mfcc, make_deltas_cmvn, train_gmm)" {
  W="$TMP/my dir"
  mkdir -p "$W/data/train"
  ls "$GH_SHARED"/data/yesno/waves/*.wav >/dev/null 2>&1 || skip "yesno WAVs not found under $GH_SHARED/data"
  for f in $(ls "$GH_SHARED"/data/yesno/waves/*.wav | head -4); do
    k=$(basename "$f" .wav); echo "$k $f"
  done > "$W/data/train/wav.scp"
  awk '{ print $1, $1 }' "$W/data/train/wav.scp" > "$W/data/train/utt2spk"
  cp "$W/data/train/utt2spk" "$W/data/train/spk2utt"
  cd "$W"
  ln -s "$ROOT/egs/steps" steps; ln -s "$ROOT/egs/utils" utils
  export PATH="$BIN:$PATH"
  run steps/make_mfcc.sh --nj 2 --mfcc-config "$ROOT/egs/yesno/conf/mfcc.conf" data/train
  echo "$output"; [ "$status" -eq 0 ]
  grep -q "$W/data/train/data/raw_mfcc_train" data/train/feats.scp
  run steps/make_deltas_cmvn.sh --nj 2 --cmvn speaker data/train data/train_feats
  echo "$output"; [ "$status" -eq 0 ]
  run steps/train_gmm.sh --nj 3 --num-iters 2 --sum-fan-in 2 --num-gauss 2 data/train_feats "$W/exp/gmm"
  echo "$output"; [ "$status" -eq 0 ]
  [ -s "$W/exp/gmm/final.mdl" ]
}
