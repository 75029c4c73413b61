#!/usr/bin/env bats
# The --device / --precision registrar (drivers/train/device-opts.h) seen from
# the tools: every tool in bin/ that offers --device shows the same help
# line, accepts every spelling that line documents and rejects a bad one
# with one error line before reading any input; likewise --precision.
# And the diagonal / full-covariance twins (and compute-mfcc-feats /
# compute-fbank-feats): each lists only the options of its own type.
# References: the help text's own list of spellings; the tools' outputs on
# the CPU reference (cpu-ref) for the real runs.

setup_file() {
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  H=$BATS_FILE_TMPDIR/help
  mkdir -p "$H"
  for t in "$BIN"/*; do
    [ -x "$t" ] || continue
    "$t" --help >/dev/null 2>"$H/$(basename "$t")" || echo "$(basename "$t")" >>"$H/.failed"
  done
}

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  H=$BATS_FILE_TMPDIR/help
  FIX=$GH_SHARED/data/kaldi-fixtures
  AMI=$GH_SHARED/data/kaldi-ami-feats/feats.ark
}

# the tools whose --help lists option $1
tools_with() { grep -l -- "^  --$1 " "$H"/* | xargs -n1 basename | sort; }
# the option names (without --) of tool $1's --help
opts_of() { sed -n 's/^  --\([a-z0-9-]*\) .*/\1/p' "$H/$1" | sort; }

@test "every tool prints --help with exit status 0" {
  [ ! -e "$H/.failed" ] || { cat "$H/.failed"; false; }
  [ "$(ls "$H" | wc -l)" -ge 60 ]
}

@test "--device: one help line, the same in every tool that has it, naming every spelling and what auto picks" {
  run tools_with device
  [ "${#lines[@]}" -ge 20 ]
  for t in gmm-adapt-map gmm-est-fmllr gmm-train hmm-train gmm-score-gpu gmm-global-acc-stats fgmm-global-acc-stats \
           gmm-init hmm-bw hmm-forward hmm-viterbi; do
    [[ " ${lines[*]} " == *" $t "* ]] || { echo "no --device in $t"; false; }
  done
  [ "$(grep -h -- "^  --device " "$H"/* | sort -u | wc -l)" -eq 1 ]
  line=$(grep -h -- "^  --device " "$H"/* | sort -u)
  for w in "auto (" "cpu (BLAS" "cpu-ref (" "cuda (" "cuda:N (" "opencl (" "opencl:P:D ("; do
    [[ "$line" == *"$w"* ]] || { echo "missing '$w': $line"; false; }
  done
}

# the tools with the registrar's --precision: those that also take --device
# (ali-to-word-ctm's --precision is Kaldi's nbest-to-ctm's decimal places)
device_precision_tools() { comm -12 <(tools_with device) <(tools_with precision); }

@test "--precision: one help line, the same in every tool that has it" {
  run device_precision_tools
  [ "${#lines[@]}" -ge 6 ]
  [ "$(device_precision_tools | sed "s|^|$H/|" | xargs grep -h -- "^  --precision " | sort -u | wc -l)" -eq 1 ]
  line=$(device_precision_tools | sed "s|^|$H/|" | xargs grep -h -- "^  --precision " | sort -u)
  for w in auto fp32 tf32x3 tf32; do [[ "$line" == *"$w"* ]]; done
}

# Accepted spellings pass option parsing (the tool then stops at its
# missing arguments with the usage); bad ones end it with one error line
# naming the value, before any input is read.
@test "--device: every documented spelling is accepted by every tool, a bad one rejected with one line" {
  for t in $(tools_with device); do
    for d in auto cpu cpu-ref cuda cuda:0 cuda:7 opencl opencl:0:0 opencl:1:2; do
      run "$BIN/$t" --device=$d
      [ "$status" -eq 1 ] || { echo "$t --device=$d: status $status"; false; }
      [[ "$output" == *"Usage"* ]] || { echo "$t --device=$d: $output"; false; }
      [[ "$output" != *"ERROR"* ]] || { echo "$t --device=$d: $output"; false; }
    done
    for d in gpu cuda:x cuda: cuda:-1 cuda:99999 opencl:1 opencl:0:x opencl:: CPU; do
      run "$BIN/$t" --device=$d a b c d e f
      [ "$status" -ne 0 ] || { echo "$t --device=$d: status 0"; false; }
      [ "${#lines[@]}" -eq 1 ] || { echo "$t --device=$d: $output"; false; }
      [[ "$output" == *"ERROR: "*"--device=$d"*"expected "* ]] || { echo "$t --device=$d: $output"; false; }
    done
  done
}

@test "--precision: auto, fp32, tf32x3, tf32 accepted by every tool that has it, a bad one rejected with one line" {
  for t in $(device_precision_tools); do
    for p in auto fp32 tf32x3 tf32; do
      run "$BIN/$t" --precision=$p
      [ "$status" -eq 1 ] && [[ "$output" == *"Usage"* ]] && [[ "$output" != *"ERROR"* ]] ||
        { echo "$t --precision=$p: $output"; false; }
    done
    run "$BIN/$t" --precision=fp16 a b c d e f
    [ "$status" -ne 0 ] && [ "${#lines[@]}" -eq 1 ] && [[ "$output" == *"--precision must be auto, fp32, tf32x3 or tf32 (got 'fp16')"* ]] ||
      { echo "$t --precision=fp16: $output"; false; }
  done
}

# A real run on every spelling this machine has: the backend each names
# (auto: a CUDA GPU, else an OpenCL GPU, else cpu), the same likelihoods as
# cpu-ref (1e-4 relative); cuda spellings without a CUDA GPU: one line.
@test "--device: each spelling runs gmm-global-get-frame-likes on the backend it names, or says in one line why not" {
  "$BIN/gmm-global-get-frame-likes" --device=cpu-ref --average=true "$FIX/ami-diag16.gmm" "ark:$AMI" \
    "ark,t:$BATS_TEST_TMPDIR/ref.txt" 2>/dev/null
  [ "$(wc -l <"$BATS_TEST_TMPDIR/ref.txt")" -ge 5 ]
  devs="auto cpu cpu-ref"
  if [ -z "${GH_NO_OPENCL:-}" ] && "$BIN/gmm-global-get-frame-likes" --device=opencl "$FIX/ami-diag16.gmm" "ark:$AMI" \
       ark:/dev/null >/dev/null 2>&1; then devs="$devs opencl opencl:0:0"; fi
  for d in $devs; do
    run "$BIN/gmm-global-get-frame-likes" --device=$d --average=true "$FIX/ami-diag16.gmm" "ark:$AMI" \
      "ark,t:$BATS_TEST_TMPDIR/$d.txt"
    [ "$status" -eq 0 ] || { echo "$d: $output"; false; }
    case $d in
      cpu) [[ "$output" == *"using device cpu (BLAS"* ]] ;;
      cpu-ref) [[ "$output" == *"using device cpu-ref"* ]] ;;
      opencl*) [[ "$output" == *"using device opencl ("* ]] ;;
      auto) [[ "$output" == *"using device "* ]] ;;
    esac
    awk 'NR == FNR { r[$1] = $2; next }
         { d = $2 - r[$1]; if (d < 0) d = -d; a = r[$1] < 0 ? -r[$1] : r[$1];
           if (!($1 in r) || d > 1e-4 * (1 + a)) { print "differs: " $0; bad = 1 } }
         END { exit bad }' "$BATS_TEST_TMPDIR/ref.txt" "$BATS_TEST_TMPDIR/$d.txt"
  done
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    for d in cuda cuda:0; do
      run "$BIN/gmm-global-get-frame-likes" --device=$d "$FIX/ami-diag16.gmm" "ark:$AMI" ark:/dev/null
      [ "$status" -ne 0 ] && [ "${#lines[@]}" -eq 1 ] && [[ "$output" == *"ERROR: --device=$d: no usable CUDA device"* ]] ||
        { echo "$d: $output"; false; }
    done
  fi
}

# Options that apply to one covariance type only (lib/gmm/gmm-est.h
# gh_est_opts_register_cov): --rel-variance-floor (diagonal), --variance-floor
# and --max-condition (full).
@test "diagonal / full twins: each --help lists only its type's options, the twins otherwise the same" {
  diag_only="rel-variance-floor"
  full_only="variance-floor max-condition"
  for x in acc-stats copy est get-frame-likes gselect-to-post sum-accs; do
    d=gmm-global-$x f=fgmm-global-$x
    [ -s "$H/$d" ] && [ -s "$H/$f" ]
    for o in $full_only; do ! grep -q -- "^  --$o " "$H/$d" || { echo "$d has --$o"; false; }; done
    for o in $diag_only; do ! grep -q -- "^  --$o " "$H/$f" || { echo "$f has --$o"; false; }; done
    diff <(opts_of "$d" | grep -vxF -e "$diag_only") <(opts_of "$f" | grep -vxF -e variance-floor -e max-condition)
  done
  for t in gmm-global-init-from-feats gmm-global-to-fgmm; do
    for o in $full_only; do ! grep -q -- "^  --$o " "$H/$t" || { echo "$t has --$o"; false; }; done
  done
  ! grep -q -- "^  --rel-variance-floor " "$H/fgmm-global-to-gmm" || false
  # tools that take either type keep all of them
  for t in gmm-est gmm-est-gpu gmm-train gmm-init; do
    for o in $diag_only $full_only; do grep -q -- "^  --$o " "$H/$t" || { echo "$t lacks --$o"; false; }; done
  done
  # the estimation twins offer what they use
  grep -q -- "^  --rel-variance-floor " "$H/gmm-global-est"
  grep -q -- "^  --max-condition " "$H/fgmm-global-est"
  grep -q -- "^  --variance-floor " "$H/fgmm-global-est"
}

@test "compute-mfcc-feats / compute-fbank-feats: each lists only its own feature's options" {
  for o in num-ceps cepstral-lifter; do
    grep -q -- "^  --$o " "$H/compute-mfcc-feats"
    ! grep -q -- "^  --$o " "$H/compute-fbank-feats" || false
  done
  for o in use-log-fbank use-power; do
    grep -q -- "^  --$o " "$H/compute-fbank-feats"
    ! grep -q -- "^  --$o " "$H/compute-mfcc-feats" || false
  done
  diff <(opts_of compute-mfcc-feats | grep -vxF -e num-ceps -e cepstral-lifter) \
       <(opts_of compute-fbank-feats | grep -vxF -e use-log-fbank -e use-power)
}

@test "the twins' mains are short Kaldi-style mains: usage with an e.g. line, no main in the libraries" {
  src=$BATS_TEST_DIRNAME/../../tools
  for x in acc-stats copy est get-frame-likes gselect-to-post sum-accs; do
    for t in gmm-global-$x fgmm-global-$x; do
      grep -q '"e.g.' "$src/$t.c" || { echo "$t: no e.g. line"; false; }
      ! grep -q '#include "[a-z-]*\.c"' "$src/$t.c" || { echo "$t includes a .c file"; false; }
      [ "$(wc -l <"$src/$t.c")" -le 60 ] || { echo "$t.c is long"; false; }
    done
  done
  # no main, usage parsing or option parser outside tools/ (lib/, drivers/ where present)
  root=$BATS_TEST_DIRNAME/../..
  dirs=
  for x in lib drivers; do [ ! -d "$root/$x" ] || dirs="$dirs $root/$x"; done
  [ -n "$dirs" ]
  ! grep -rn "int main(\|_main(int argc\|gh_opts_new\|gh_opts_parse(" $dirs --include=*.c | grep -v "/base/opts.c:" || false
}

# The trainers' rank policy (gh_device_opts_bind_rank) and NCCL decision
# (gh_comm_use_nccl) under mpirun: 2 ranks on this host share its cores
# (each rank's BLAS backend gets cores / 2 threads, at least 1); a backend
# without the NCCL capability sums through MPI, and --comm=nccl with it is
# one error line on every rank.
@test "gmm-train under mpirun -np 2: cores split among the ranks, no NCCL without the capability" {
  command -v mpirun >/dev/null || skip "no mpirun"
  [ -z "${GH_SANITIZED:-}" ] || skip "Open MPI's own allocations at MPI_Init are reported by LeakSanitizer"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_mpi_yield_when_idle=1
  n=$(( $(getconf _NPROCESSORS_ONLN) / 2 )); [ "$n" -ge 1 ] || n=1
  run mpirun --oversubscribe -np 2 "$BIN/gmm-train" --device=cpu --num-iters=1 "$FIX/ami-diag16.gmm" "ark:$AMI" \
    "$BATS_TEST_TMPDIR/m.mdl"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [[ "$output" == *"using device cpu (BLAS, $n thread"* ]] || { echo "$output"; false; }
  [[ "$output" == *"communicator mpi"* ]]
  run mpirun --oversubscribe -np 2 "$BIN/gmm-train" --comm=nccl --device=cpu --num-iters=1 "$FIX/ami-diag16.gmm" \
    "ark:$AMI" "$BATS_TEST_TMPDIR/n.mdl"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: --comm=nccl needs the CUDA backend (--device=cuda; this run uses cpu"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/n.mdl" ]
}

@test "GH_ACCOUNTING: each tool appends one line with its wall, CPU and device start-up seconds" {
  acct=$BATS_TEST_TMPDIR/acct.txt
  GH_ACCOUNTING=$acct run "$BIN/gmm-score-gpu" --device=cpu-ref "$FIX/ami-diag16.gmm" "ark:$AMI" ark:/dev/null
  [ "$status" -eq 0 ]
  GH_ACCOUNTING=$acct run "$BIN/gmm-score-gpu" --device=cpu-ref "$FIX/ami-diag16.gmm" ark:/nonexistent ark:/dev/null
  [ "$status" -ne 0 ]
  run cat "$acct"
  [ "${#lines[@]}" -eq 2 ]
  [[ "${lines[0]}" =~ ^gmm-score-gpu\ status=0\ wall=[0-9.]+\ user=[0-9.]+\ sys=[0-9.]+\ .*device_start=[0-9.]+ ]]
  [[ "${lines[0]}" == *" device="* ]]
  [[ "${lines[1]}" =~ ^gmm-score-gpu\ status=1\  ]]
  # an unwritable file never fails the tool
  GH_ACCOUNTING=/nonexistent/dir/acct run "$BIN/gmm-score-gpu" --device=cpu-ref "$FIX/ami-diag16.gmm" "ark:$AMI" ark:/dev/null
  [ "$status" -eq 0 ]
}

@test "--device=auto takes the CPU for small work (one LOG line); an explicit --device is kept" {
  # ami-diag16.gmm: 16 diagonal Gaussians of D = 13, gh_cpu_rate_gmm's estimate 1.8e6 frames/s on
  # one core: more than the 1e6 frames/s from which auto takes the CPU on any host
  run "$BIN/gmm-score-gpu" "$FIX/ami-diag16.gmm" "ark:$GH_SHARED/data/kaldi-ami-feats/feats.ark" ark:/dev/null
  [ "$status" -eq 0 ]
  [[ "$output" == *"--device=auto: scoring this model is small work"*"using the CPU"* ]]
  [[ "$output" == *"using device cpu (BLAS"* ]]
  run "$BIN/gmm-score-gpu" --device=cpu-ref "$FIX/ami-diag16.gmm" "ark:$GH_SHARED/data/kaldi-ami-feats/feats.ark" ark:/dev/null
  [ "$status" -eq 0 ]
  [[ "$output" != *"small work"* ]]
  [[ "$output" == *"using device cpu-ref"* ]]
  # hmm-forward: the word HMMs of hmm.bats's size (2 x 3 states) are small work too
  printf 'a\nb\n' > "$BATS_TEST_TMPDIR/words.txt"
  "$BIN/hmm-init-topo" --num-states=3 "$BATS_TEST_TMPDIR/words.txt" "$BATS_TEST_TMPDIR/set.hmm" 2>/dev/null
  printf 'u1  [\n  0 -1 -2 -3 -4 -5\n  -1 0 -2 -3 -4 -5\n  -1 -2 0 -3 -4 -5 ]\n' > "$BATS_TEST_TMPDIR/ll.txt"
  run "$BIN/hmm-forward" "$BATS_TEST_TMPDIR/set.hmm" "ark,t:$BATS_TEST_TMPDIR/ll.txt" ark,t:-
  [ "$status" -eq 0 ]
  [[ "$output" == *"--device=auto: the forward pass over these HMMs is small work"* ]]
}
