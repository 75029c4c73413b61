#!/usr/bin/env bash
# Fuzzing driver (doc/reliability.md).
#   test/fuzz/run.sh replay            replay test/fuzz/regress/<harness>/* (found inputs)
#   test/fuzz/run.sh run SECONDS [H]   seed corpora, then run each harness (or H) for SECONDS
#                                      (FUZZ_SEED=N: libFuzzer -seed=N, as make test does)
# Harnesses are built by `make fuzz-build` into build-fuzz/fuzz/.  Seed corpora
# are made at run time into build-fuzz/corpus/<harness>/ from $GH_SHARED data
# and small inputs written by the tools (nothing is copied into the repo); the
# corpus persists between runs.  A crash input is copied into
# test/fuzz/regress/<harness>/ and the run fails.  Execution counts are
# appended to build-fuzz/exec-counts.txt ("<date> <harness> <runs> <seconds>").
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
export GH_SHARED="${GH_SHARED:-$(cd .. && pwd)/shared}"
BIN=${GH_BIN:-$ROOT/bin}
FB=$ROOT/build-fuzz/fuzz
HARNESSES="fuzz_archive fuzz_models fuzz_wav fuzz_spec fuzz_numerics"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mode=${1:-replay}

seed_corpora() {
  local C=$ROOT/build-fuzz/corpus t d
  mkdir -p "$C"/{fuzz_archive,fuzz_models,fuzz_wav,fuzz_spec,fuzz_numerics}
  printf "\x07\x03\x01\x03\x01ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" > "$C/fuzz_numerics/full"
  printf "\x05\x02\x00\x02\x01zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA9876543210" > "$C/fuzz_numerics/diag"
  [ -n "$(ls "$C/fuzz_archive")" ] && return 0   # persisted from an earlier run
  t=$(mktemp -d)
  printf 'u1  [\n  1 2 3 \n  4 5 6 ]\nu2  [\n  -1e-3 7 8.5 ]\n' > "$t/m.txt"
  "$BIN/copy-feats" "ark:$t/m.txt" "ark:$t/m.ark" 2>/dev/null
  printf 'u1 1 2 3\nu2 4\n' > "$t/i.txt"; "$BIN/copy-int-vector" "ark:$t/i.txt" "ark:$t/i.ark" 2>/dev/null
  printf 'u1 [ 0 1 ] [ 1 0.5 2 0.5 ]\n' > "$t/p.txt"; "$BIN/copy-post" "ark:$t/p.txt" "ark:$t/p.ark" 2>/dev/null
  for ty in 0 1 2 3 4 5 6 7; do
    for mo in 0 1 2 3; do
      b=$(printf '\\x%02x' $((ty + 8 * mo)))
      for f in m.txt m.ark i.txt i.ark p.txt p.ark; do
        [ -f "$t/$f" ] && { printf "$b"; cat "$t/$f"; } > "$C/fuzz_archive/s$ty$mo$f"
      done
    done
  done
  for f in ami-cm2.ark ami-cm3.ark mfcc.ark cmvn.ark; do
    [ -f "$GH_SHARED/data/kaldi-fixtures/$f" ] && { printf '\x00'; head -c 12000 "$GH_SHARED/data/kaldi-fixtures/$f"; } > "$C/fuzz_archive/k$f"
  done
  # Models: byte 0 = reader (0 GMM set / .mdl / global, 1 accs, 2 HMM set, 3 HMM accs, 4 discrete).
  for f in kaldi-fixtures/ami-diag16.gmm kaldi-fixtures/ami-full16.fgmm kaldi-fixtures/ami-diag16.gmm.txt \
           kaldi-yesno-mono-model/0.mdl; do
    [ -f "$GH_SHARED/data/$f" ] && { printf '\x00'; cat "$GH_SHARED/data/$f"; } > "$C/fuzz_models/m$(basename "$f")"
  done
  for f in kaldi-fixtures/ami-diag16.acc kaldi-fixtures/ami-full16.acc; do
    [ -f "$GH_SHARED/data/$f" ] && { printf '\x01'; cat "$GH_SHARED/data/$f"; } > "$C/fuzz_models/a$(basename "$f")"
  done
  printf 'one 0 1\ntwo 2\n' > "$t/words"
  "$BIN/hmm-init-topo" --binary=false "$t/words" "$t/h.txt" 2>/dev/null && { printf '\x02'; cat "$t/h.txt"; } > "$C/fuzz_models/h.txt"
  "$BIN/hmm-init-topo" "$t/words" "$t/h.bin" 2>/dev/null && { printf '\x02'; cat "$t/h.bin"; } > "$C/fuzz_models/h.bin"
  printf '\x04[ 0.5 0.5 \n 0.1 0.9 ]\n' > "$C/fuzz_models/d.txt"
  f=$GH_SHARED/data/kaldi-fixtures/ami-diag16.gmm   # a table of two models (gmm-adapt-map --spk2utt's layout)
  [ -f "$f" ] && { printf '\x05A '; cat "$f"; printf 'B '; cat "$f"; } > "$C/fuzz_models/table"
  # WAV: a few short FSDD recordings.
  for f in $(ls "$GH_SHARED/data/fsdd/recordings" 2>/dev/null | head -4); do
    cp "$GH_SHARED/data/fsdd/recordings/$f" "$C/fuzz_wav/$f"
  done
  # Specifiers + scp text (the harness provides a.ark, a.scp, w.wav).
  printf 'scp:list.scp\nu0 a.ark:3\nu1 a.ark\n' > "$C/fuzz_spec/s1"
  printf 'ark:a.ark\n' > "$C/fuzz_spec/s2"
  printf 'scp,p:list.scp\nx w.wav\ny nothere\n' > "$C/fuzz_spec/s3"
  printf 'ark,s,cs:a.ark\n' > "$C/fuzz_spec/s4"
  printf 'scp:a.scp\n' > "$C/fuzz_spec/s5"
  rm -rf "$t"
}

# The harnesses to replay or run, "NAME" or "NAME@CORE" (run with OPENBLAS_CORETYPE=CORE):
# fuzz_numerics a second time on OpenBLAS's Haswell (FMA) kernels where the CPU has AVX2 and FMA.
# The BLAS picks its kernel by CPU, and an FMA kernel overflows differently (+inf, not NaN:
# test/fuzz/regress/fuzz_numerics/fma-overflow-plus-inf, found only on the CI machine's kernels);
# OPENBLAS_CORETYPE is ignored by a BLAS without run-time kernel choice.
harness_runs() {
  echo $HARNESSES
  grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && echo fuzz_numerics@Haswell
}

fail=0
case "$mode" in
  replay)
    for hc in $(harness_runs); do
      h=${hc%@*}; core=; [ "$hc" != "$h" ] && core=${hc#*@}
      d=test/fuzz/regress/$h
      [ -d "$d" ] && [ -n "$(ls "$d")" ] || continue
      if ! ${core:+env OPENBLAS_CORETYPE=$core} "$FB/$h" "$ROOT/$d"/* > "build-fuzz/replay-$h${core:+-$core}.log" 2>&1; then
        echo "not ok - fuzz regression inputs of $h${core:+ (OPENBLAS_CORETYPE=$core)} crash (build-fuzz/replay-$h${core:+-$core}.log)"; fail=1
      else echo "ok - fuzz regression inputs of $h${core:+ (OPENBLAS_CORETYPE=$core)} ($(ls "$d" | wc -l) inputs)"; fi
    done ;;
  run)
    secs=${2:-60}
    only=${3:-}
    seed_corpora
    for hc in $(harness_runs); do
      h=${hc%@*}; core=; [ "$hc" != "$h" ] && core=${hc#*@}
      [ -n "$only" ] && [ "$h" != "$only" ] && continue
      log=$ROOT/build-fuzz/run-$h${core:+-$core}.$$.log
      art=$ROOT/build-fuzz/artifacts-$h/
      mkdir -p "$art"
      # FUZZ_SEED (make test sets 1): the same mutation sequence on every run,
      # so CI's short runs are reproducible (a longer `make fuzz` explores at random).
      ${core:+env OPENBLAS_CORETYPE=$core} "$FB/$h" ${FUZZ_SEED:+-seed=$FUZZ_SEED} -max_total_time="$secs" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
        -artifact_prefix="$art" -print_final_stats=1 "$ROOT/build-fuzz/corpus/$h" > "$log" 2>&1
      rc=$?
      nruns=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
      echo "$(date -u +%FT%TZ) $h ${nruns:-0} $secs" >> "$ROOT/build-fuzz/exec-counts.txt"
      if [ $rc -ne 0 ]; then
        mkdir -p "test/fuzz/regress/$h"
        for c in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
          [ -f "$c" ] && cp "$c" "test/fuzz/regress/$h/"
        done
        echo "not ok - $h${core:+ (OPENBLAS_CORETYPE=$core)}: fuzzer found a failing input after ${nruns:-?} runs (see $log; input copied to test/fuzz/regress/$h/)"
        grep -m3 -E 'ERROR|SUMMARY' "$log"
        fail=1
      else
        echo "ok - $h${core:+ (OPENBLAS_CORETYPE=$core)}: ${nruns:-?} runs in ${secs}s, no crash"
      fi
    done ;;
  *) echo "usage: $0 replay | run SECONDS [harness]" >&2; exit 2 ;;
esac
exit $fail
