#!/usr/bin/env bats
# The corpora as they may be shipped compressed: the Arabic-digit text gzipped
# (Train_Arabic_Digit.txt.gz, read through gzip -dcf) and the FSDD recordings
# as FLAC (recordings/*.flac, decoded by libsndfile). Each test makes the
# compressed form itself in a temporary directory from the uncompressed one
# and checks that the recipe reads it and that the features are byte for byte
# those of the uncompressed form.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  EGS=$ROOT/egs
  export PATH="${GH_BIN:-$ROOT/bin}:$PATH"
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  ARABIC=$GH_SHARED/data/spoken-arabic-digit/Train_Arabic_Digit.txt
  FSDD=$GH_SHARED/data/fsdd/recordings
}

# to_flac <in.wav> <out.flac>: lossless, with flac or else sox
to_flac() {
  if command -v flac > /dev/null; then flac -s -f -o "$2" "$1"
  else sox "$1" "$2"; fi
}

@test "arabic-digits: prepare_data.sh reads Train_Arabic_Digit.txt.gz; features identical to the plain text's" {
  [ -f "$ARABIC" ] || skip "Arabic digits (uncompressed) not found under $GH_SHARED/data"
  mkdir -p "$T/sh/data/spoken-arabic-digit"
  gzip -c "$ARABIC" > "$T/sh/data/spoken-arabic-digit/Train_Arabic_Digit.txt.gz"
  "$EGS/arabic-digits/local/prepare_data.sh" "$ARABIC" "$T/plain" 2> /dev/null
  "$EGS/arabic-digits/local/prepare_data.sh" "$T/sh/data/spoken-arabic-digit/Train_Arabic_Digit.txt.gz" "$T/gz" 2> /dev/null
  [ "$(wc -l < "$T/gz/all/feats.scp")" -eq 6600 ]
  cmp "$T/plain/all/feats.ark" "$T/gz/all/feats.ark"
  for s in train dev; do
    for f in utt2spk spk2utt text; do cmp "$T/plain/$s/$f" "$T/gz/$s/$f"; done
    cmp <(cut -d' ' -f1 "$T/plain/$s/feats.scp") <(cut -d' ' -f1 "$T/gz/$s/feats.scp")
  done
  # run.sh finds the gzipped corpus when the plain one is absent (stage 0 only)
  run env GH_SHARED="$T/sh" "$EGS/arabic-digits/run.sh" --work "$T/w" --stop-stage 0
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"train: 5000 utterances, 201805 frames"* ]]
  cmp "$T/plain/all/feats.ark" "$T/w/data/all/feats.ark"
  # a corrupt .gz is an error, not a short corpus
  head -c 100000 "$T/sh/data/spoken-arabic-digit/Train_Arabic_Digit.txt.gz" > "$T/bad.txt.gz"
  run "$EGS/arabic-digits/local/prepare_data.sh" "$T/bad.txt.gz" "$T/bad"
  [ "$status" -ne 0 ]
}

@test "arabic-digits: the scikit-learn baseline reads the gzipped corpus as the plain one" {
  [ -f "$ARABIC" ] || skip "Arabic digits (uncompressed) not found under $GH_SHARED/data"
  python3 -c 'import numpy, sklearn' 2> /dev/null || skip "scikit-learn not installed"
  gzip -c "$ARABIC" > "$T/a.txt.gz"
  run env PYTHONDONTWRITEBYTECODE=1 python3 - "$EGS/arabic-digits/local" "$ARABIC" "$T/a.txt.gz" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from sklearn_baseline import read_uci
u1, k1 = read_uci(sys.argv[2])
u2, k2 = read_uci(sys.argv[3])
assert k1 == k2 and len(u1) == len(u2) == 6600
assert all(np.array_equal(a, b) for a, b in zip(u1, u2))
print("ok", sum(len(a) for a in u1))
PY
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "ok 263256" ]
}

@test "fsdd: prepare_data.sh takes recordings/*.flac when there is no WAV; MFCCs identical to the WAVs'" {
  [ -f "$FSDD/0_george_0.wav" ] || skip "FSDD (WAV) not found under $GH_SHARED/data"
  command -v flac > /dev/null || command -v sox > /dev/null || skip "neither flac nor sox installed"
  echo "k $FSDD/0_george_0.wav" | compute-mfcc-feats --sample-frequency=8000 scp:- ark:/dev/null 2> /dev/null ||
    skip "built without libsndfile"
  # 2 speakers x 10 digits x 2 repetitions
  mkdir -p "$T/wav" "$T/sh/data/fsdd/recordings"
  for s in george jackson; do for d in 0 1 2 3 4 5 6 7 8 9; do for r in 0 1; do
    cp "$FSDD/${d}_${s}_$r.wav" "$T/wav/"
    to_flac "$FSDD/${d}_${s}_$r.wav" "$T/sh/data/fsdd/recordings/${d}_${s}_$r.flac"
  done; done; done
  [ -z "$(ls "$T/sh/data/fsdd/recordings" | grep -v '\.flac$')" ]
  "$EGS/fsdd/local/prepare_data.sh" "$T/wav" "$T/dw" > /dev/null
  "$EGS/fsdd/local/prepare_data.sh" "$T/sh/data/fsdd/recordings" "$T/df" > /dev/null
  [ "$(wc -l < "$T/df/all/wav.scp")" -eq 40 ]
  [ "$(grep -c '\.flac$' "$T/df/all/wav.scp")" -eq 40 ]
  for f in text utt2spk spk2utt; do cmp "$T/dw/all/$f" "$T/df/all/$f"; done
  compute-mfcc-feats --config="$EGS/fsdd/conf/mfcc.conf" "scp:$T/dw/all/wav.scp" "ark:$T/w.ark" 2> /dev/null
  compute-mfcc-feats --config="$EGS/fsdd/conf/mfcc.conf" "scp:$T/df/all/wav.scp" "ark:$T/f.ark" 2> /dev/null
  [ "$(feat-to-len "ark:$T/f.ark" ark,t:- | wc -l)" -eq 40 ]
  cmp "$T/w.ark" "$T/f.ark"
  # run.sh stage 0 on a shared folder that has only the FLAC files
  run env GH_SHARED="$T/sh" "$EGS/fsdd/run.sh" --work "$T/w" --stop-stage 0
  echo "$output"
  [ "$status" -eq 0 ]
  cmp "$T/df/all/wav.scp" "$T/w/data/all/wav.scp"
  # an empty directory is one clear error
  mkdir -p "$T/empty"
  run "$EGS/fsdd/local/prepare_data.sh" "$T/empty" "$T/de"
  [ "$status" -ne 0 ]
  [[ "$output" == *"no .wav or .flac files in $T/empty"* ]]
}
