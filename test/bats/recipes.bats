#!/usr/bin/env bats
# Recipe machinery (egs/utils, egs/steps, egs/*/run.sh): the job launcher
# utils/run.sh, data directories (split_data.sh, validate_data_dir.sh,
# fix_data_dir.sh, subset_data_dir.sh), --nj N training equal to --nj 1 within
# the stated tolerance (|a - b| <= 1e-5 + 1e-4 x the largest entry of the vector or
# matrix, utils/compare_gmms.sh),
# failing and killed jobs, and a recipe run with --work on its own and on
# user-given data directories.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  EGS=$ROOT/egs
  export PATH="${GH_BIN:-$ROOT/bin}:$PATH"
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  ARABIC=$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt
  [ -f "$ARABIC" ] || [ ! -f "$ARABIC.gz" ] || ARABIC=$ARABIC.gz   # plain or gzipped
}

# A data dir of K speakers with 1..6 utterances each (keys not in speaker order
# for some speakers: utt2spk sorted by utterance).
make_fake_data() {  # make_fake_data <dir> <num-speakers> <seed>
  mkdir -p "$1"
  awk -v K=$2 -v seed=$3 'BEGIN { srand(seed)
    for (s = 1; s <= K; s++) { n = 1 + int(rand() * 6)
      for (i = 1; i <= n; i++) printf "%s%d-u%02d spk%03d\n", (rand() < 0.2 ? "x" int(rand() * 100) "-" : "s"), s, i, s } }' |
    LC_ALL=C sort -u -k1,1 > "$1/utt2spk"
  "$EGS/utils/utt2spk_to_spk2utt.sh" "$1/utt2spk" > "$1/spk2utt"
  awk '{ print $1, "/data/" $1 ".wav" }' "$1/utt2spk" > "$1/wav.scp"
  awk '{ print $1, "/data/feats.ark:" NR * 100 }' "$1/utt2spk" > "$1/feats.scp"
  awk '{ print $1, (NR % 2 ? "yes" : "no") }' "$1/utt2spk" > "$1/text"
  awk '{ print $1, "/data/cmvn.ark:" NR * 10 }' "$1/spk2utt" > "$1/cmvn.scp"
}

arabic_subset() {  # arabic_subset <dir>: 8 training speakers (800 utterances)
  [ -f "$ARABIC" ] || skip "Arabic digits not found under $GH_SHARED/data"
  "$EGS/arabic-digits/local/prepare_data.sh" "$ARABIC" "$T/adata" 2>/dev/null
  awk 'NR <= 8 { print $1 }' "$T/adata/train/spk2utt" > "$T/spk8"
  "$EGS/utils/subset_data_dir.sh" --spk-list "$T/spk8" "$T/adata/train" "$1"
}

@test "utils/run.sh: JOB=1:N runs every job, JOB substituted, logs with command line and exit code" {
  run "$EGS/utils/run.sh" --max-jobs-run 2 JOB=1:5 "$T/log/t.JOB.log" echo job JOB \| tr a-z A-Z \> "$T/out.JOB"
  [ "$status" -eq 0 ]
  for j in 1 2 3 4 5; do
    [ "$(cat "$T/out.$j")" = "JOB $j" ]
    head -1 "$T/log/t.$j.log" | grep -qx "# echo job $j | tr a-z A-Z > $T/out.$j "
    tail -1 "$T/log/t.$j.log" | grep -q '^# Ended (code 0) at '
  done
}

@test "utils/run.sh: a failing job makes it exit non-zero naming the job and its log" {
  run "$EGS/utils/run.sh" JOB=1:4 "$T/log/f.JOB.log" test JOB -ne 3
  [ "$status" -ne 0 ]
  [[ "$output" == *"1 / 4 failed (jobs 3)"* ]]
  [[ "$output" == *"$T/log/f.3.log"* ]]
  tail -1 "$T/log/f.3.log" | grep -q '^# Ended (code 1) at '
  tail -1 "$T/log/f.2.log" | grep -q '^# Ended (code 0) at '
  run "$EGS/utils/run.sh" "$T/log/single.log" false
  [ "$status" -ne 0 ]
  [[ "$output" == *"job failed, log is in $T/log/single.log"* ]]
  # pipefail: a failure at the start of a pipeline fails the job
  run "$EGS/utils/run.sh" "$T/log/pipe.log" false \| cat
  [ "$status" -ne 0 ]
  run "$EGS/utils/run.sh" JOB=1:2 "$T/log/nojob.log" true
  [ "$status" -ne 0 ]
  [[ "$output" == *"must contain JOB"* ]]
}

@test "utils/run.sh: interrupted, it stops its running jobs and all their processes" {
  cd "$T"
  "$EGS/utils/run.sh" JOB=1:2 log/s.JOB.log 'echo $$ > pid.JOB; sleep 60 | cat; echo finished' &
  launcher=$!
  for i in $(seq 1 50); do [ -s pid.1 ] && [ -s pid.2 ] && break; sleep 0.1; done
  kill -TERM $launcher
  wait $launcher || true
  sleep 0.5
  for j in 1 2; do
    ! kill -0 "$(cat pid.$j)" 2>/dev/null
    ! grep -qx finished log/s.$j.log
  done
}

@test "utils/run.sh --gpu 1: each job slot gets its own GPU through CUDA_VISIBLE_DEVICES" {
  CUDA_VISIBLE_DEVICES=4,7 run "$EGS/utils/run.sh" --gpu 1 JOB=1:4 "$T/log/g.JOB.log" 'echo dev=$CUDA_VISIBLE_DEVICES'
  [ "$status" -eq 0 ]
  [ "$(grep -h '^dev=' "$T"/log/g.{1,2,3,4}.log | tr '\n' ' ')" = "dev=4 dev=7 dev=4 dev=7 " ]
}

@test "utils/split_data.sh: every utterance exactly once, no speaker in two parts, no part empty" {
  for seed in 1 2 3; do
    rm -rf "$T/d"; make_fake_data "$T/d" 13 $seed
    for n in 1 2 3 5 8 13; do
      "$EGS/utils/split_data.sh" "$T/d" $n
      [ "$(ls "$T/d/split$n" | wc -l)" -eq $n ]
      for j in $(seq 1 $n); do
        [ -s "$T/d/split$n/$j/utt2spk" ]
        # the part's tables agree with its utt2spk
        for f in feats.scp text wav.scp; do
          diff <(cut -d' ' -f1 "$T/d/split$n/$j/utt2spk") <(cut -d' ' -f1 "$T/d/split$n/$j/$f")
        done
        diff <(cut -d' ' -f2 "$T/d/split$n/$j/utt2spk" | sort -u) <(cut -d' ' -f1 "$T/d/split$n/$j/spk2utt" | sort)
        diff <(cut -d' ' -f1 "$T/d/split$n/$j/spk2utt") <(cut -d' ' -f1 "$T/d/split$n/$j/cmvn.scp")
      done
      cat "$T/d/split$n"/*/utt2spk | LC_ALL=C sort | diff - "$T/d/utt2spk"
      [ "$(for j in $(seq 1 $n); do cut -d' ' -f2 "$T/d/split$n/$j/utt2spk" | sort -u; done | sort | uniq -d | wc -l)" -eq 0 ]
    done
  done
  # fewer speakers than parts: per-utterance parts, with a message (test/bats/userdata.bats)
  run "$EGS/utils/split_data.sh" "$T/d" 14
  [ "$status" -eq 0 ]
  [[ "$output" == *"13 speaker(s) for 14 jobs: splitting per utterance"* ]]
  [ "$(ls "$T/d/split14" | wc -l)" -eq 14 ]
  cat "$T/d/split14"/*/utt2spk | LC_ALL=C sort | diff - "$T/d/utt2spk"
  "$EGS/utils/split_data.sh" --per-utt "$T/d" 14
  cat "$T/d/split14utt"/*/utt2spk | LC_ALL=C sort | diff - "$T/d/utt2spk"
}

@test "utils/split_data.sh: parts of about equal size when speakers are equal" {
  mkdir -p "$T/e"
  for s in $(seq 10 49); do for u in 1 2 3 4 5; do echo "s$s-$u s$s"; done; done > "$T/e/utt2spk"
  "$EGS/utils/utt2spk_to_spk2utt.sh" "$T/e/utt2spk" > "$T/e/spk2utt"
  "$EGS/utils/split_data.sh" "$T/e" 4
  for j in 1 2 3 4; do [ "$(wc -l < "$T/e/split4/$j/utt2spk")" -eq 50 ]; done
}

@test "utils/validate_data_dir.sh: accepts a good directory, names the file and key of each problem" {
  make_fake_data "$T/v" 5 1
  run "$EGS/utils/validate_data_dir.sh" "$T/v"
  [ "$status" -eq 0 ]
  [[ "$output" == *"is OK"* ]]
  # unsorted utt2spk
  cp -r "$T/v" "$T/v1"; sort -r "$T/v/utt2spk" > "$T/v1/utt2spk"
  run "$EGS/utils/validate_data_dir.sh" "$T/v1"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$T/v1/utt2spk is not sorted"* ]]
  # a speaker missing from spk2utt
  cp -r "$T/v" "$T/v2"; sed -i '1d' "$T/v2/spk2utt"
  run "$EGS/utils/validate_data_dir.sh" "$T/v2"
  [ "$status" -ne 0 ]
  [[ "$output" == *"speaker spk001"*"is missing from $T/v2/spk2utt"* ]]
  # keys without features
  cp -r "$T/v" "$T/v3"; sed -i '2d' "$T/v3/feats.scp"
  run "$EGS/utils/validate_data_dir.sh" "$T/v3"
  [ "$status" -ne 0 ]
  [[ "$output" == *"1 utterance in $T/v3/utt2spk is not in $T/v3/feats.scp (e.g. $(sed -n 2p "$T/v/utt2spk" | cut -d' ' -f1))"* ]]
  # duplicate key, missing utt2spk
  cp -r "$T/v" "$T/v4"; { head -1 "$T/v/text"; cat "$T/v/text"; } > "$T/v4/text"
  run "$EGS/utils/validate_data_dir.sh" "$T/v4"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$T/v4/text has key"*"twice"* ]]
  rm "$T/v4/utt2spk"
  run "$EGS/utils/validate_data_dir.sh" "$T/v4"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$T/v4/utt2spk is missing"* ]]
  # fix_data_dir.sh repairs v3 (drops the utterance without features) and v1
  run "$EGS/utils/fix_data_dir.sh" "$T/v3"
  [ "$status" -eq 0 ]
  [[ "$output" == *"kept $(( $(wc -l < "$T/v/utt2spk") - 1 )) of $(wc -l < "$T/v/utt2spk") utterances"* ]]
  "$EGS/utils/validate_data_dir.sh" "$T/v3"
  "$EGS/utils/fix_data_dir.sh" "$T/v1"
  "$EGS/utils/validate_data_dir.sh" "$T/v1"
  cmp "$T/v1/utt2spk" "$T/v/utt2spk"
}

@test "steps/train_gmm.sh: --nj 3 gives the --nj 1 model (within 1e-5 + 1e-4 x largest entry), diag and full" {
  arabic_subset "$T/tr"
  for cov in diag full; do
    for nj in 1 3; do
      "$EGS/steps/train_gmm.sh" --ranks 0 --nj $nj --cmd "$EGS/utils/run.sh" --device cpu --words "$T/adata/lang/words.txt" \
        --cov-type $cov --num-gauss 2 --init-iters 2 --num-iters 3 "$T/tr" "$T/g_${cov}_$nj" >/dev/null
    done
    [ "$(ls "$T/g_${cov}_3"/log/acc.2.*.log | wc -l)" -eq 3 ]
    # 4 jobs summed in a tree of fan-in 2 (2 sum jobs, then the update job sums 2)
    "$EGS/steps/train_gmm.sh" --ranks 0 --nj 4 --sum-fan-in 2 --cmd "$EGS/utils/run.sh" --device cpu \
      --words "$T/adata/lang/words.txt" --cov-type $cov --num-gauss 2 --init-iters 2 --num-iters 3 "$T/tr" "$T/g_${cov}_4" >/dev/null
    [ "$(ls "$T/g_${cov}_4"/log/sum.2.1.*.log | wc -l)" -eq 2 ]
    "$EGS/utils/compare_gmms.sh" "$T/g_${cov}_1/final.mdl" "$T/g_${cov}_4/final.mdl"
    run "$EGS/utils/compare_gmms.sh" "$T/g_${cov}_1/final.mdl" "$T/g_${cov}_3/final.mdl"
    echo "$output"
    [ "$status" -eq 0 ]
    # and the comparison can fail: a model one iteration earlier is not equal
    ! "$EGS/utils/compare_gmms.sh" "$T/g_${cov}_1/2.mdl" "$T/g_${cov}_3/final.mdl" 2>/dev/null
  done
}

@test "steps/train_word_hmm.sh --ranks 0: --nj 3 gives the --nj 1 model and the same classification" {
  arabic_subset "$T/tr"
  for nj in 1 3; do
    "$EGS/steps/train_word_hmm.sh" --ranks 0 --nj $nj --cmd "$EGS/utils/run.sh" --device cpu --states 4 --gauss 2 --iters 3 \
      "$T/tr" "$T/adata/lang/words.txt" "$T/h$nj" >/dev/null
    "$EGS/steps/classify.sh" --nj 2 --cmd "$EGS/utils/run.sh" --device cpu --hmm true \
      "$T/tr" "$T/adata/lang/words.txt" "$T/h$nj" "$T/h$nj/decode" > "$T/h$nj.acc"
  done
  run "$EGS/utils/compare_gmms.sh" "$T/h1/final.mdl" "$T/h3/final.mdl"
  echo "$output"
  [ "$status" -eq 0 ]
  cmp "$T/h1.acc" "$T/h3.acc"
  grep -q 'accuracy: ' "$T/h1.acc"
}

@test "arabic-digits/run.sh stage 3: BW and Viterbi HMM-GMMs, MAP and fMLLR second passes on 2 dev speakers -> results.txt" {
  arabic_subset "$T/tr"
  awk 'NR <= 2 { print $1 }' "$T/adata/dev/spk2utt" > "$T/dev2"
  "$EGS/utils/subset_data_dir.sh" --spk-list "$T/dev2" "$T/adata/dev" "$T/dv"
  run "$EGS/arabic-digits/run.sh" --work "$T/w" --nj 2 --device cpu --configs "" --iters 2 \
    --train-data "$T/tr" --test-data "$T/dv" --words "$T/adata/lang/words.txt" \
    --hmm-states 3 --hmm-gauss 1 --hmm-iters 2 --viterbi true --adapt "map fmllr"
  echo "$output"
  [ "$status" -eq 0 ]
  r=$T/w/results.txt
  for tr in BW Viterbi; do
    grep -q "^HMM-GMM (3 states, diag, 1, $tr), MFCC+deltas+CMN: accuracy: " "$r"
    grep -q "^HMM-GMM (3 states, diag, 1, $tr), MFCC+deltas+CMN, adapted per dev speaker (map tau 2, 2 passes): accuracy: " "$r"
    grep -q "^HMM-GMM (3 states, diag, 1, $tr), MFCC+deltas+CMN, adapted per dev speaker (fmllr, 2 passes): accuracy: " "$r"
  done
  [ "$(grep -c '^HMM-GMM .*accuracy: .*(.*/200)$' "$r")" -eq 6 ]
  # one model per dev speaker, in one table (gmm-adapt-map --spk2utt's log)
  [ -s "$T"/w/exp/hmm_s3_diag1/decode_dev_map/map.ark ]
  grep -q "; 2 adapted models on " "$T"/w/exp/hmm_s3_diag1/decode_dev_map/log/map.2.log
  [ -s "$T/w/exp/hmm_s3_diag1_vit/decode_dev_fmllr/trans.ark" ]
  run "$EGS/arabic-digits/run.sh" --work "$T/w" --adapt bogus
  [ "$status" -ne 0 ]
  [[ "$output" == *"--adapt must be map, fmllr, none"* ]]
}

@test "steps: a failing job fails the step, naming its log; stale accumulators are never summed" {
  arabic_subset "$T/tr"
  "$EGS/steps/train_gmm.sh" --ranks 0 --nj 3 --cmd "$EGS/utils/run.sh" --device cpu --words "$T/adata/lang/words.txt" \
    --num-gauss 1 --init-iters 0 --num-iters 1 "$T/tr" "$T/gf" >/dev/null
  # an utterance whose features cannot be read: its part's job fails in iteration 1
  awk 'NR == 100 { $2 = "/nonexistent/feats.ark:0" } { print }' "$T/tr/feats.scp" > "$T/tr/feats.scp.new"
  mv "$T/tr/feats.scp.new" "$T/tr/feats.scp"
  for j in 1 2 3; do echo garbage > "$T/gf/1.$j.acc"; done   # left by an earlier attempt
  run "$EGS/steps/train_gmm.sh" --ranks 0 --nj 3 --cmd "$EGS/utils/run.sh" --device cpu --words "$T/adata/lang/words.txt" \
    --num-gauss 1 --init-iters 0 --num-iters 2 --stage 1 "$T/tr" "$T/gf"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"1 / 3 failed"*"$T/gf/log/acc.1."*".log"* ]]
  ! grep -q garbage "$T"/gf/1.*.acc
  bad=$(grep -l -- "-d[0-9]-r[0-9] /nonexistent" "$T"/tr/split3/*/feats.scp | awk -F/ '{ print $(NF - 1) }')
  [ -f "$T/gf/log/acc.1.$bad.log" ] && [ ! -e "$T/gf/1.$bad.acc" ]
  [ ! -f "$T/gf/log/update.1.log" ]
  [ ! -f "$T/gf/2.mdl" ]
  [ ! -f "$T/gf/final.mdl" ] || [ "$T/gf/final.mdl" -ot "$T/gf/log/acc.1.1.log" ]
}

@test "a killed accumulation job leaves no accumulator file behind (temp + rename)" {
  [ -f "$ARABIC" ] || skip "Arabic digits not found"
  "$EGS/arabic-digits/local/prepare_data.sh" "$ARABIC" "$T/adata" 2>/dev/null
  gmm-init --device=cpu --num-gauss=2 --num-iters=0 scp:"$T/adata/train/feats.scp" "$T/0.mdl" 2>/dev/null
  for sig in TERM KILL; do
    # features from a FIFO that stalls half-way: the tool is killed mid-way
    rm -f "$T/ff"; mkfifo "$T/ff"
    gmm-acc-stats-gpu --device=cpu "$T/0.mdl" "ark:$T/ff" "$T/1.$sig.acc" 2>/dev/null &
    pid=$!
    exec 5> "$T/ff"
    head -n 2000 "$T/adata/train/feats.scp" | copy-feats scp:- ark:- >&5 2>/dev/null
    sleep 1
    kill -$sig $pid
    wait $pid || true
    exec 5>&-
    [ ! -e "$T/1.$sig.acc" ]
  done
}

@test "recipes: yesno with --work writes nothing into the source tree, and runs on user data directories" {
  ls "$GH_SHARED"/data/yesno/waves/*.wav >/dev/null 2>&1 || skip "yesno WAVs not found"
  wav=$(ls "$GH_SHARED"/data/yesno/waves/*.wav | head -1)
  echo "k $wav" | compute-mfcc-feats --sample-frequency=8000 scp:- ark:/dev/null 2>/dev/null || skip "no libsndfile"
  before=$(cd "$ROOT" && git status --porcelain --ignored egs 2>/dev/null || true)
  run "$EGS/yesno/run.sh" --work "$T/w1" --nj 2 --device cpu --iters 6 --gauss 2
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q '^test (10 files): %WER ' "$T/w1/results.txt"
  [ "$(cd "$ROOT" && git status --porcelain --ignored egs 2>/dev/null || true)" = "$before" ]
  # the user's own data directories (here: stage 0's, moved elsewhere)
  cp -r "$T/w1/data/train" "$T/mytrain"; cp -r "$T/w1/data/test" "$T/mytest"
  rm -rf "$T/mytrain/split"* "$T/mytest/split"* "$T/mytrain/feats.scp" "$T/mytest/feats.scp" "$T/mytrain/data" "$T/mytest/data"
  run "$EGS/yesno/run.sh" --work "$T/w2" --nj 2 --device cpu --iters 6 --gauss 2 \
    --train-data "$T/mytrain" --test-data "$T/mytest" --words "$T/w1/data/lang/words.txt"
  [ "$status" -eq 0 ]
  [ ! -e "$T/mytrain/feats.scp" ]   # nothing written into the user's directories
  diff <(grep -v "^#" "$T/w1/results.txt") <(grep -v "^#" "$T/w2/results.txt")
  # a later stage on a fresh work directory: one clear error, not a crash
  run "$EGS/yesno/run.sh" --work "$T/w3" --stage 2
  [ "$status" -ne 0 ]
  [[ "$output" == *"--stage 2 needs $T/w3/data/"*"from stage 0"* ]]
}

@test "--device=cuda:N: a malformed N or a missing GPU is one clear error" {
  echo "k [ 1 2 ]" | copy-feats ark,t:- "ark:$T/k.ark" 2>/dev/null
  for d in cuda:x cuda: cuda:-1; do
    run gmm-init --device=$d --num-iters=1 "ark:$T/k.ark" "$T/k.mdl"
    [ "$status" -ne 0 ]
    [[ "$output" == *"ERROR: --device=$d: expected cuda:N with N a device number"* ]]
  done
  [ ! -e "$T/k.mdl" ]
  run gmm-init --device=cuda:99 --num-iters=1 "ark:$T/k.ark" "$T/k.mdl"
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: --device=cuda:99: "*@(no usable CUDA device|there * only)* ]]
}

@test "bench/multi-gpu.sh: CPU path at tiny sizes prints the table, 2-job models equal to 1-job models" {
  [ -z "${GH_SANITIZED:-}" ] || skip "it starts Open MPI ranks (bench/hmm-train.sh), whose own allocations LeakSanitizer reports"
  [ -f "$ARABIC" ] || skip "Arabic digits not found"
  run "$ROOT/bench/multi-gpu.sh" --device cpu --work "$T/bench" --frames 20000 --gauss 8 --iters 2 --hmm-iters 2 \
    --arabic-speakers 4
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep -c '^synthetic GMM (20000 x 40, 8 full) .* [12] .* [12] ' "$T/bench/multi-gpu.txt")" -eq 2 ]
  [ "$(grep -c '^Arabic HMM-GMM ' "$T/bench/multi-gpu.txt")" -eq 2 ]
  grep -Eq 'synthetic yes \([0-9.e+-]+ of the tolerance\), Arabic HMM-GMM yes \([0-9.e+-]+ of the tolerance\)' "$T/bench/multi-gpu.txt"
  # the split-invariance report: every kind of accumulator block, 2 jobs summed vs 1 job, within 1e-6
  # of its block's largest entry (the float accs files round at 6e-8; measured 1e-7 here)
  [ "$(grep -c 'max |a-b| / max|a| of block' "$T/bench/multi-gpu.txt")" -eq 3 ]
  awk '/max \|a-b\| \/ max\|a\| of block:/ { if ($(NF - 3) + 0 > 1e-6) bad = 1 } END { exit bad }' "$T/bench/multi-gpu.txt"
  grep -q 'models re-estimated from them: yes' "$T/bench/multi-gpu.txt"
}
