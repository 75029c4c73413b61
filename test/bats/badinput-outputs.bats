#!/usr/bin/env bats
# Output files (lib/base/gh-base.c gh_tmpfile_*): temp + rename only for regular
# files; devices, FIFOs and symlink targets are written as Kaldi writes them;
# nothing is left behind by a failing or killed tool (doc/reliability.md).

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  ARK=$GH_SHARED/data/kaldi-ami-feats/feats.ark
  TMP=$(mktemp -d)
}

teardown() {
  [ -n "${reader:-}" ] && kill "$reader" 2>/dev/null
  [ -n "${mounted:-}" ] && umount "$mounted"
  rm -rf "$TMP"
}

@test "outputs: a character device (mknod'ed null) is written in place, not replaced" {
  [ "$(id -u)" -eq 0 ] || skip "needs root to mknod a device node"
  mknod "$TMP/null" c 1 3 || skip "mknod not permitted here"
  "$BIN/copy-feats" "ark:$ARK" "ark:$TMP/null" 2>/dev/null
  [ -c "$TMP/null" ]
  [ "$(stat -c %t:%T "$TMP/null")" = "1:3" ]
  [ -z "$(ls "$TMP" | grep -v '^null$')" ]
  # A model writer (gh_ostream_open on a plain wxfilename) too.
  "$BIN/gmm-init" --num-gauss=2 --seed=1 "ark:$ARK" "$TMP/null" 2>/dev/null
  [ -c "$TMP/null" ]
}

@test "outputs: a FIFO is written to its reader, not replaced by a file" {
  mkfifo "$TMP/fifo"
  cat "$TMP/fifo" > "$TMP/got" &
  reader=$!
  timeout 20 "$BIN/copy-feats" "ark:$ARK" "ark:$TMP/fifo" 2>/dev/null
  timeout 20 tail --pid=$reader -f /dev/null
  reader=
  [ -p "$TMP/fifo" ]
  cmp "$TMP/got" "$ARK"
}

@test "outputs: through a relative symlink the target is written and the link stays a link" {
  mkdir "$TMP/d"
  echo old > "$TMP/real.ark"
  chmod 640 "$TMP/real.ark"
  ln -s ../real.ark "$TMP/d/link.ark"
  "$BIN/copy-feats" "ark:$ARK" "ark:$TMP/d/link.ark" 2>/dev/null
  [ -L "$TMP/d/link.ark" ]
  [ "$(readlink "$TMP/d/link.ark")" = "../real.ark" ]
  cmp "$TMP/real.ark" "$ARK"
  [ "$(stat -c %a "$TMP/real.ark")" = "640" ]   # the target's permissions are kept
  [ -z "$(find "$TMP" -name "*.tmp.*")" ]
}

@test "outputs: a dangling symlink creates the file it names" {
  ln -s "$TMP/new.ark" "$TMP/link.ark"
  "$BIN/copy-feats" "ark:$ARK" "ark:$TMP/link.ark" 2>/dev/null
  [ -L "$TMP/link.ark" ]
  cmp "$TMP/new.ark" "$ARK"
}

@test "outputs: a directory as output is one clear error" {
  mkdir "$TMP/dir"
  run "$BIN/copy-feats" "ark:$ARK" "ark:$TMP/dir"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "${lines[0]}" == *"ERROR: cannot open '$TMP/dir' for writing: it is a directory"* ]]
}

@test "outputs: SIGKILL while the output is open leaves no temporary file; old output intact" {
  cp "$ARK" "$TMP/out.ark"
  echo stale > "$TMP/out.ark"
  mkfifo "$TMP/in"
  "$BIN/copy-feats" "ark:$TMP/in" "ark:$TMP/out.ark" 2>/dev/null &
  pid=$!
  exec 7>"$TMP/in"
  cat "$ARK" "$ARK" "$ARK" "$ARK" >&7   # more than the reader's 128 KiB buffer; the input stays open
  for i in $(seq 50); do    # wait until the tool has its output open
    ls -l /proc/$pid/fd 2>/dev/null | grep "$TMP" | grep -vq "$TMP/in" && break
    sleep 0.1
  done
  ls -l /proc/$pid/fd | grep "$TMP" | grep -vq "$TMP/in"
  kill -9 $pid
  wait $pid || true
  exec 7>&-
  [ "$(cat "$TMP/out.ark")" = stale ]
  [ -z "$(find "$TMP" -name "*.tmp.*")" ]
}

@test "outputs: stale '<out>.tmp.<pid>' files of dead processes are removed on the next write" {
  sh -c 'echo $$' > "$TMP/deadpid"   # a pid that has exited
  dead=$(cat "$TMP/deadpid")
  touch "$TMP/out.ark.tmp.$dead" "$TMP/out.ark.tmp.1" "$TMP/other.ark.tmp.$dead"
  "$BIN/copy-feats" "ark:$ARK" "ark:$TMP/out.ark" 2>/dev/null
  cmp "$TMP/out.ark" "$ARK"
  [ ! -e "$TMP/out.ark.tmp.$dead" ]
  [ -e "$TMP/out.ark.tmp.1" ]            # pid 1 is alive: kept
  [ -e "$TMP/other.ark.tmp.$dead" ]      # another output's file: kept
}

@test "outputs: a tool failing half-way leaves the old output intact and no temporary file" {
  echo old > "$TMP/out.ark"
  { cat "$ARK"; printf 'bad \0BFM \4'; } > "$TMP/in.ark"
  run "$BIN/copy-feats" "ark:$TMP/in.ark" "ark:$TMP/out.ark"
  [ "$status" -eq 1 ]
  [ "$(cat "$TMP/out.ark")" = old ]
  [ -z "$(find "$TMP" -name "*.tmp.*")" ]
}

# A 1,000-Gaussian x 200-dim diagonal model (1.6 MB binary) and 3,000 frames to re-estimate it with.
big_model() {
  python3 - "$TMP/feats.ark" <<'PY'
import struct, sys
import numpy as np
x = np.random.default_rng(0).standard_normal((3000, 200)).astype('<f4')
with open(sys.argv[1], 'wb') as f:
    f.write(b'u0 \0BFM \x04' + struct.pack('<i', 3000) + b'\x04' + struct.pack('<i', 200) + x.tobytes())
PY
  "$BIN/gmm-init" --num-gauss=1000 --num-iters=0 --min-frames-per-gauss=1 --kmeans-iters=1 --device=cpu \
    "ark:$TMP/feats.ark" "$TMP/model.0" 2>/dev/null
}

# One ERROR line naming the file and the cause (and no other ERROR line), exit 1.
one_write_error() { # <file> <cause>
  [ "$status" -eq 1 ]
  [ "$(printf '%s\n' "${lines[@]}" | grep -c 'ERROR')" -eq 1 ]
  [[ "$output" == *"ERROR: error writing '$1': $2"* ]]
}

@test "outputs: a disk that fills while a model is written: one error, the old model intact (tmpfs)" {
  [ "$(id -u)" -eq 0 ] || skip "mounting a 2 MB tmpfs needs root"
  mkdir "$TMP/small"
  mount -t tmpfs -o size=2m tmpfs "$TMP/small" 2>/dev/null || skip "mounting a tmpfs is not permitted here"
  mounted=$TMP/small
  big_model
  head -c 400000 /dev/zero > "$TMP/small/filler"
  cp "$TMP/model.0" "$TMP/small/model"
  for dev in cpu cpu-ref; do
    run "$BIN/gmm-est-gpu" --device=$dev --remove-low-count-gaussians=false "$TMP/model.0" "ark:$TMP/feats.ark" "$TMP/small/model"
    one_write_error "$TMP/small/model" "No space left on device"
    cmp "$TMP/small/model" "$TMP/model.0"
  done
  run "$BIN/gmm-copy" "$TMP/model.0" "$TMP/small/model"
  one_write_error "$TMP/small/model" "No space left on device"
  cmp "$TMP/small/model" "$TMP/model.0"
  [ -z "$(ls "$TMP/small" | grep -v -e '^filler$' -e '^model$')" ]
}

@test "outputs: a write refused part-way (file size limit) is one error, the old model intact" {
  big_model
  echo old > "$TMP/out.mdl"
  # ulimit -f counts 1024-byte blocks; SIGXFSZ ignored, so write(2) fails with EFBIG as on a full disk
  run bash -c "trap '' XFSZ; ulimit -f 256; \"\$@\"" _ "$BIN/gmm-copy" "$TMP/model.0" "$TMP/out.mdl"
  one_write_error "$TMP/out.mdl" "File too large"
  run bash -c "trap '' XFSZ; ulimit -f 256; \"\$@\"" _ "$BIN/gmm-est-gpu" --device=cpu --remove-low-count-gaussians=false \
    "$TMP/model.0" "ark:$TMP/feats.ark" "$TMP/out.mdl"
  one_write_error "$TMP/out.mdl" "File too large"
  [ "$(cat "$TMP/out.mdl")" = old ]
  [ -z "$(find "$TMP" -name "*.tmp.*")" ]
}
