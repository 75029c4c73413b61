#!/usr/bin/env bats
# Recipes on a user's own data: a standard one-speaker yes/no data
# directory with the default --nj 2 (split_data.sh falls back to per-utterance
# parts), the yes/no trainer's jobs, logs (Kaldi's header lines) and --seed;
# kaldiio's relative paths in feats.scp (egs/arabic-digits/run.sh
# --train-data): resolved at stage 0, or one error naming the line; results.txt
# says which data; the pictures (loglike.png, confusion.png) are valid PNGs.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  EGS=$ROOT/egs
  export PATH="${GH_BIN:-$ROOT/bin}:$PATH"
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  ARABIC=$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt
  [ -f "$ARABIC" ] || [ ! -f "$ARABIC.gz" ] || ARABIC=$ARABIC.gz   # plain or gzipped
}

valid_png() {  # the file decodes as a PNG image of at least 100 x 100 pixels
  python3 -c '
import sys, matplotlib.image as m
a = m.imread(sys.argv[1])
assert open(sys.argv[1], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
assert a.shape[0] >= 100 and a.shape[1] >= 100, a.shape' "$1"
}

need_matplotlib() { python3 -c 'import matplotlib' 2>/dev/null || skip "matplotlib not installed (tools/install-deps.sh)"; }

@test "utils/split_data.sh: fewer speakers than jobs splits per utterance, with a message" {
  mkdir -p "$T/d"
  for i in 1 2 3 4 5; do echo "u$i global"; done > "$T/d/utt2spk"
  echo "global u1 u2 u3 u4 u5" > "$T/d/spk2utt"
  for i in 1 2 3 4 5; do echo "u$i /x/f.ark:$i"; done > "$T/d/feats.scp"
  run "$EGS/utils/split_data.sh" "$T/d" 2
  [ "$status" -eq 0 ]
  [[ "$output" == *"1 speaker(s) for 2 jobs: splitting per utterance"* ]]
  [ "$(cat "$T/d/split2/1/feats.scp" "$T/d/split2/2/feats.scp" | LC_ALL=C sort | cut -d' ' -f1 | tr '\n' ' ')" = "u1 u2 u3 u4 u5 " ]
  [ -s "$T/d/split2/1/feats.scp" ] && [ -s "$T/d/split2/2/feats.scp" ]
  [ "$(cut -d' ' -f1 "$T/d/split2/2/spk2utt")" = global ]
  # as many speakers as jobs: split by speaker, no message
  run "$EGS/utils/split_data.sh" "$T/d" 1
  [ "$status" -eq 0 ] && [ -z "$output" ]
}

@test "yesno: a standard one-speaker data directory with the default --nj 2; jobs, Kaldi log headers, --seed; loglike.png" {
  ls "$GH_SHARED"/data/yesno/waves/*.wav >/dev/null 2>&1 || skip "yesno WAVs not found"
  wav=$(ls "$GH_SHARED"/data/yesno/waves/*.wav | head -1)
  echo "k $wav" | compute-mfcc-feats --sample-frequency=8000 scp:- ark:/dev/null 2>/dev/null || skip "no libsndfile"
  need_matplotlib
  # Kaldi's egs/yesno/s5 layout: one speaker "global" for every file
  for s in train test; do
    mkdir -p "$T/$s"
    ls "$GH_SHARED"/data/yesno/waves/*.wav | LC_ALL=C sort |
      if [ $s = train ]; then head -n 20; else tail -n 10; fi |
      while read -r f; do echo "$(basename "$f" .wav) $f"; done > "$T/$s/wav.scp"
    awk '{ n = split($1, w, "_"); printf "%s", $1; for (i = 1; i <= n; i++) printf " %s", w[i] == "1" ? "yes" : "no"; print "" }' \
      "$T/$s/wav.scp" > "$T/$s/text"
    awk '{ print $1, "global" }' "$T/$s/wav.scp" > "$T/$s/utt2spk"
    awk '{ printf "%s%s", NR == 1 ? "global" : "", " " $1 } END { print "" }' "$T/$s/wav.scp" > "$T/$s/spk2utt"
  done
  # the resident trainer (default): one hmm-train job per phase, its log with Kaldi's header
  run "$EGS/yesno/run.sh" --work "$T/r" --device cpu --iters 6 --gauss 2 --seed 7 \
    --train-data "$T/train" --test-data "$T/test" --stop-stage 2
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"== stage 2: training (local/train_viterbi.sh, resident hmm-train, 1 rank(s))"* ]]
  for f in "$T/r/exp/mono/log/train.init.log" "$T/r/exp/mono/log/train.vit.log"; do
    head -1 "$f" | grep -q '^# '
    tail -1 "$f" | grep -q '^# Ended (code 0) at '
  done
  [ "$(grep -c '^[0-9]' "$T/r/exp/mono/loglike.txt")" -eq 6 ]
  # the per-iteration jobs (--ranks 0)
  run "$EGS/yesno/run.sh" --work "$T/w" --device cpu --iters 6 --gauss 2 --seed 7 --ranks 0 \
    --train-data "$T/train" --test-data "$T/test"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"splitting per utterance"* ]]
  [[ "$output" == *"== stage 2: training (local/train_viterbi.sh, 2 jobs per step)"*"6 Viterbi iterations, up to 2 Gaussians"* ]]
  grep -q '^# data: --train-data '"$T/train"', --test-data '"$T/test"'$' "$T/w/results.txt"
  grep -q '^test (10 files): %WER ' "$T/w/results.txt"
  log=$T/w/exp/mono/log
  # two accumulation jobs per iteration, each log with Kaldi's header and footer
  [ "$(ls "$log"/acc.6.*.log | wc -l)" -eq 2 ]
  for f in "$log"/acc.6.1.log "$log"/align.6.2.log "$log"/update.6.log "$log"/bw.init1.2.log; do
    head -1 "$f" | grep -q '^# '
    sed -n 2p "$f" | grep -q '^# Started at '
    tail -1 "$f" | grep -q '^# Ended (code 0) at '
  done
  grep -q 'gmm-est --mix-up=[0-9]* --seed=7 ' "$log/update.3.log"
  [ "$(wc -l < "$T/w/exp/mono/loglike.txt")" -eq 11 ]   # 5 Baum-Welch passes + 6 iterations
  valid_png "$T/w/loglike.png"
}

@test "arabic-digits --train-data: kaldiio's relative paths resolved at stage 0; results.txt names the data; PNGs" {
  [ -f "$ARABIC" ] || skip "Arabic digits not found under $GH_SHARED/data"
  python3 -c 'import kaldiio' 2>/dev/null || skip "kaldiio not installed"
  need_matplotlib
  cd "$T"
  "$EGS/arabic-digits/local/prepare_data.sh" "$ARABIC" adata > /dev/null 2>&1
  awk 'NR <= 3 { print $1 }' adata/train/spk2utt > s3; awk 'NR <= 2 { print $1 }' adata/dev/spk2utt > d2
  "$EGS/utils/subset_data_dir.sh" --spk-list s3 adata/train sub/train
  "$EGS/utils/subset_data_dir.sh" --spk-list d2 adata/dev sub/dev
  # train: names relative to the data directory; dev: relative to where Python ran
  python3 - <<'EOF'
import kaldiio, os, shutil
for s, rel_to_dir in (('train', True), ('dev', False)):
    d = 'mine/' + s
    os.makedirs(d)
    for f in ('utt2spk', 'spk2utt', 'text'):
        shutil.copy('sub/%s/%s' % (s, f), d)
    feats = kaldiio.load_scp('sub/%s/feats.scp' % s)
    cwd = os.getcwd()
    if rel_to_dir:
        os.chdir(d)
        spec = 'ark,scp:feats.ark,feats.scp'
    else:
        spec = 'ark,scp:%s/feats.ark,%s/feats.scp' % (d, d)
    with kaldiio.WriteHelper(spec) as w:
        for k in feats:
            w(k, feats[k])
    os.chdir(cwd)
EOF
  [[ "$(head -1 mine/train/feats.scp)" == *" feats.ark:"* ]]
  [[ "$(head -1 mine/dev/feats.scp)" == *" mine/dev/feats.ark:"* ]]
  args=(--nj 2 --device cpu --configs diag:2 --seed 1 --iters 2 --sklearn false --hmm false
        --train-data mine/train --test-data mine/dev)
  run "$EGS/arabic-digits/run.sh" --work "$T/w" "${args[@]}"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"train: 300 utterances, "[0-9]*" frames"* ]]
  grep -q "^$T/mine/train/feats.ark:" <(cut -d' ' -f2 "$T/w/data/train/feats.scp")
  grep -q "^$T/mine/dev/feats.ark:" <(cut -d' ' -f2 "$T/w/data/dev/feats.scp")
  r=$T/w/results.txt
  grep -q "^# data: --train-data $T/mine/train (300 utterances), --test-data $T/mine/dev (200 utterances)$" "$r"
  ! grep -q "13 MFCCs" "$r"
  grep -q "the data directories' features (13 dimensions)" "$r"
  grep -q '^gmmhmm diag:2 seed 1: accuracy: ' "$T/w/exp/diag2_s1/decode_dev/scoring.txt"
  valid_png "$T/w/loglike.png"
  valid_png "$T/w/confusion.png"
  # a name found nowhere: stage 0 stops with one message naming file, line and key
  sed -i '3s| mine/dev/feats.ark:| mine/dev/missing.ark:|' mine/dev/feats.scp
  key=$(sed -n 3p mine/dev/feats.scp | cut -d' ' -f1)
  run "$EGS/arabic-digits/run.sh" --work "$T/w2" "${args[@]}"
  [ "$status" -ne 0 ]
  [[ "$output" == *"copy_data_dir.sh: $T/mine/dev/feats.scp, line 3, key $key: relative file name \"mine/dev/missing.ark\" found neither"* ]]
  [ ! -e "$T/w2/exp" ]
}

@test "fsdd --train-data (2 training speakers, 1 test speaker): results.txt names the data; loglike.png and confusion.png" {
  W=$GH_SHARED/data/fsdd/recordings
  e=wav; [ -f "$W/0_george_0.wav" ] || e=flac   # the recordings as shipped: WAV or FLAC
  [ -f "$W/0_george_0.$e" ] || skip "FSDD not found under $GH_SHARED/data"
  echo "k $W/0_george_0.$e" | compute-mfcc-feats --sample-frequency=8000 scp:- ark:/dev/null 2>/dev/null || skip "no libsndfile"
  need_matplotlib
  cd "$T"
  for s in train test; do
    mkdir -p $s
    if [ $s = train ]; then spk="george jackson"; n=4; else spk=nicolas; n=2; fi
    for sp in $spk; do for d in 0 1 2 3 4 5 6 7 8 9; do for r in $(seq 0 $((n - 1))); do
      echo "${sp}_${d}_$r $W/${d}_${sp}_$r.$e"; done; done; done | LC_ALL=C sort > $s/wav.scp
    awk '{ split($1, a, "_"); print $1, a[2] }' $s/wav.scp > $s/text
    awk '{ split($1, a, "_"); print $1, a[1] }' $s/wav.scp > $s/utt2spk
    "$EGS/utils/utt2spk_to_spk2utt.sh" $s/utt2spk > $s/spk2utt
  done
  run "$EGS/fsdd/run.sh" --work "$T/w" --device cpu --states 3 --gauss 1 --iters 2 --adapt none \
    --train-data train --test-data test
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q "^# data: --train-data $T/train, --test-data $T/test$" "$T/w/results.txt"
  grep -q '^train_test: accuracy: [0-9.]*% ([0-9]*/20)$' "$T/w/results.txt"
  valid_png "$T/w/loglike.png"
  valid_png "$T/w/confusion.png"
}

@test "recipes: --train-data and --test-data paths with a space (yesno run through, fsdd and arabic-digits stage 0)" {
  ls "$GH_SHARED"/data/yesno/waves/*.wav >/dev/null 2>&1 || skip "yesno WAVs not found"
  wav=$(ls "$GH_SHARED"/data/yesno/waves/*.wav | head -1)
  echo "k $wav" | compute-mfcc-feats --sample-frequency=8000 scp:- ark:/dev/null 2>/dev/null || skip "no libsndfile"
  D="$T/my data"
  for s in train test; do
    mkdir -p "$D/$s"
    ls "$GH_SHARED"/data/yesno/waves/*.wav | LC_ALL=C sort |
      if [ $s = train ]; then head -n 20; else tail -n 10; fi |
      while read -r f; do echo "$(basename "$f" .wav) $f"; done > "$D/$s/wav.scp"
    awk '{ n = split($1, w, "_"); printf "%s", $1; for (i = 1; i <= n; i++) printf " %s", w[i] == "1" ? "yes" : "no"; print "" }' \
      "$D/$s/wav.scp" > "$D/$s/text"
    awk '{ print $1, "global" }' "$D/$s/wav.scp" > "$D/$s/utt2spk"
    awk '{ printf "%s%s", NR == 1 ? "global" : "", " " $1 } END { print "" }' "$D/$s/wav.scp" > "$D/$s/spk2utt"
  done
  run "$EGS/yesno/run.sh" --work "$T/y" --device cpu --iters 2 --gauss 1 --seed 7 \
    --train-data "$D/train" --test-data "$D/test"
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q "^# data: --train-data $D/train, --test-data $D/test$" "$T/y/results.txt"
  grep -q '^test (10 files): %WER ' "$T/y/results.txt"
  # the other two recipes read the same loop at stage 0 (their own data: yes/no files as FSDD's layout)
  run "$EGS/fsdd/run.sh" --work "$T/f" --device cpu --stop-stage 0 --train-data "$D/train" --test-data "$D/test"
  echo "$output"
  [ "$status" -eq 0 ]
  cmp "$T/f/data/train/text" "$D/train/text" && cmp "$T/f/data/test/text" "$D/test/text"
  if [ -f "$ARABIC" ]; then
    (cd "$T" && "$EGS/arabic-digits/local/prepare_data.sh" "$ARABIC" adata > /dev/null 2>&1)
    mkdir -p "$T/a data"
    awk 'NR <= 1 { print $1 }' "$T/adata/train/spk2utt" > "$T/s1"
    "$EGS/utils/subset_data_dir.sh" --spk-list "$T/s1" "$T/adata/train" "$T/a data/train"
    "$EGS/utils/subset_data_dir.sh" --spk-list "$T/s1" "$T/adata/train" "$T/a data/dev"
    run "$EGS/arabic-digits/run.sh" --work "$T/a" --device cpu --stop-stage 0 \
      --train-data "$T/a data/train" --test-data "$T/a data/dev"
    echo "$output"
    [ "$status" -eq 0 ]
    cmp "$T/a/data/train/text" "$T/a data/train/text"
  fi
}
