#!/usr/bin/env bats
# Features from waveforms: compute-mfcc-feats / compute-fbank-feats against real
# Kaldi (kaldi-fixtures) and kaldi-native-fbank (FSDD, yes/no, synthetic 16 kHz),
# add-deltas / compute-cmvn-stats / apply-cmvn against Kaldi (bit for bit) and
# hand-computed cases, and WAV edge cases (stereo, 8-bit, float, truncated,
# empty, wrong sample rate, pipes).

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  PY=$BATS_TEST_DIRNAME/../python
  FIX=$GH_SHARED/data/kaldi-fixtures
  TMP=$(mktemp -d)
}

# Tests that decode audio are skipped when the tools were built without libsndfile.
need_audio() {
  if grep -qa "built without libsndfile" "$BIN/compute-mfcc-feats"; then skip "built without libsndfile"; fi
}

teardown() {
  rm -rf "$TMP"
}

# compare <ours.ark> <ref.ark> <tol>: same keys and shapes, max |a-b|/max(1,|ref|) <= tol.
compare() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys, kaldiio, numpy as np
a = dict(kaldiio.load_ark(sys.argv[1])); r = dict(kaldiio.load_ark(sys.argv[2])); tol = float(sys.argv[3])
assert a.keys() == r.keys(), (sorted(a), sorted(r))
worst = 0.0
for k in r:
    assert a[k].shape == r[k].shape, (k, a[k].shape, r[k].shape)
    worst = max(worst, float((np.abs(a[k] - r[k]) / np.maximum(1.0, np.abs(r[k]))).max()))
print("max rel error %.3g" % worst)
sys.exit(0 if worst <= tol else 1)
EOF
}

# mkwav <out> <rate> <channels> <sampwidth> <seconds> [seed]: a speech-like test signal
# (sum of tones with a moving formant plus noise) with Python's wave module.
mkwav() {
  python3 - "$@" <<'EOF'
import sys, wave, numpy as np
out, rate, ch, width, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
rng = np.random.default_rng(int(sys.argv[6]) if len(sys.argv) > 6 else 1)
t = np.arange(int(rate * secs)) / rate
x = np.stack([(3000 * np.sin(2 * np.pi * (150 + 40 * c) * t) * (1 + np.sin(2 * np.pi * 3 * t))
               + 1500 * np.sin(2 * np.pi * (700 + 500 * t + 100 * c) * t)
               + 300 * rng.standard_normal(len(t))) for c in range(ch)], axis=1)
x = np.clip(np.round(x), -32768, 32767).astype(np.int16)
with wave.open(out, "wb") as w:
    w.setnchannels(ch); w.setsampwidth(width); w.setframerate(rate)
    if width == 2:
        w.writeframes(x.astype("<i2").tobytes())
    else:  # 8-bit unsigned: the top byte of each sample
        w.writeframes(((x.astype(np.int32) >> 8) + 128).astype(np.uint8).tobytes())
EOF
}

@test "compute-mfcc-feats matches Kaldi's mfcc.ark to 1e-4" {
  need_audio
  cd "$FIX"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 scp:wav.scp "ark:$TMP/mfcc.ark"
  compare "$TMP/mfcc.ark" "$FIX/mfcc.ark" 1e-4
}

@test "compute-fbank-feats matches Kaldi's fbank.ark to 1e-5" {
  need_audio
  cd "$FIX"
  "$BIN/compute-fbank-feats" --sample-frequency=8000 --dither=0 scp:wav.scp "ark:$TMP/fbank.ark"
  compare "$TMP/fbank.ark" "$FIX/fbank.ark" 1e-5
}

@test "add-deltas, compute-cmvn-stats, apply-cmvn are byte-identical to Kaldi's" {
  "$BIN/add-deltas" "ark:$FIX/mfcc.ark" "ark:$TMP/d.ark"
  cmp "$TMP/d.ark" "$FIX/mfcc-deltas.ark"
  "$BIN/compute-cmvn-stats" "ark:$FIX/mfcc-deltas.ark" "ark:$TMP/cmvn.ark"
  cmp "$TMP/cmvn.ark" "$FIX/cmvn.ark"
  "$BIN/apply-cmvn" --norm-vars=true "ark:$FIX/cmvn.ark" "ark:$FIX/mfcc-deltas.ark" "ark:$TMP/n.ark"
  cmp "$TMP/n.ark" "$FIX/mfcc-deltas-cmvn.ark"
}

@test "whole chain from WAVs (mfcc | add-deltas | cmvn) matches Kaldi's to 1e-4" {
  need_audio
  cd "$FIX"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 scp:wav.scp ark:- | "$BIN/add-deltas" ark:- "ark:$TMP/d.ark"
  compare "$TMP/d.ark" "$FIX/mfcc-deltas.ark" 1e-4
  "$BIN/compute-cmvn-stats" "ark:$TMP/d.ark" "ark:$TMP/c.ark"
  compare "$TMP/c.ark" "$FIX/cmvn.ark" 1e-4
  "$BIN/apply-cmvn" --norm-vars=true "ark:$TMP/c.ark" "ark:$TMP/d.ark" "ark:$TMP/n.ark"
  compare "$TMP/n.ark" "$FIX/mfcc-deltas-cmvn.ark" 1e-4
}

@test "MFCC matches kaldi-native-fbank on all FSDD recordings and yes/no waves (5e-4)" {
  need_audio
  python3 -c 'import kaldi_native_fbank' || skip "kaldi-native-fbank not installed"
  for d in fsdd/recordings yesno/waves; do
    src=$GH_SHARED/data/$d
    if ! compgen -G "$src/*.wav" > /dev/null && compgen -G "$src/*.flac" > /dev/null; then
      # shipped as FLAC only: the reference reads WAV, so decode a copy (flac -d)
      command -v flac > /dev/null || skip "$d is FLAC and flac is not installed"
      mkdir -p "$TMP/$d"
      for f in "$src"/*.flac; do flac -s -d -o "$TMP/$d/$(basename "$f" .flac).wav" "$f"; done
      src=$TMP/$d
    fi
    for f in "$src"/*.wav; do k=$(basename "$f" .wav); echo "$k $f"; done
  done > "$TMP/wav.scp"
  [ "$(wc -l < "$TMP/wav.scp")" -ge 2000 ]
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/wav.scp" "ark:$TMP/m.ark"
  run python3 "$PY/knf_compare.py" --sample-frequency=8000 --tol=5e-4 "$TMP/wav.scp" "$TMP/m.ark"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "16 kHz and other options match kaldi-native-fbank (windows, snip-edges, bins, fbank)" {
  need_audio
  python3 -c 'import kaldi_native_fbank' || skip "kaldi-native-fbank not installed"
  mkwav "$TMP/a.wav" 16000 1 2 1.37 1
  mkwav "$TMP/b.wav" 16000 1 2 0.52 2
  printf 'a %s\nb %s\n' "$TMP/a.wav" "$TMP/b.wav" > "$TMP/wav.scp"
  "$BIN/compute-mfcc-feats" --dither=0 "scp:$TMP/wav.scp" "ark:$TMP/m.ark"
  python3 "$PY/knf_compare.py" --tol=1e-4 "$TMP/wav.scp" "$TMP/m.ark"
  for w in hamming hanning rectangular blackman sine; do
    "$BIN/compute-mfcc-feats" --dither=0 --window-type=$w "scp:$TMP/wav.scp" "ark:$TMP/m.ark"
    python3 "$PY/knf_compare.py" --window-type=$w --tol=1e-4 "$TMP/wav.scp" "$TMP/m.ark"
  done
  "$BIN/compute-mfcc-feats" --dither=0 --snip-edges=false --num-mel-bins=40 --num-ceps=20 --high-freq=-400 \
    --low-freq=60 "scp:$TMP/wav.scp" "ark:$TMP/m.ark"
  python3 "$PY/knf_compare.py" --snip-edges=false --num-mel-bins=40 --num-ceps=20 --high-freq=-400 --low-freq=60 \
    --tol=1e-4 "$TMP/wav.scp" "$TMP/m.ark"
  "$BIN/compute-fbank-feats" --dither=0 --num-mel-bins=40 "scp:$TMP/wav.scp" "ark:$TMP/f.ark"
  python3 "$PY/knf_compare.py" --feat=fbank --num-mel-bins=40 --tol=1e-4 "$TMP/wav.scp" "$TMP/f.ark"
  "$BIN/compute-fbank-feats" --dither=0 --use-energy=true "scp:$TMP/wav.scp" "ark:$TMP/f.ark"
  python3 "$PY/knf_compare.py" --feat=fbank --use-energy=true --tol=1e-4 "$TMP/wav.scp" "$TMP/f.ark"
  [ "$("$BIN/feat-to-dim" "ark:$TMP/f.ark" -)" = 24 ]
}

@test "wav.scp: pipe entries, relative paths; dither is deterministic" {
  need_audio
  cd "$FIX"
  head -n 2 wav.scp | awk '{print $1, "cat", $2, "|"}' > "$TMP/pipe.scp"
  head -n 2 wav.scp > "$TMP/plain.scp"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/pipe.scp" "ark:$TMP/p.ark"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/plain.scp" "ark:$TMP/q.ark"
  cmp "$TMP/p.ark" "$TMP/q.ark"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 "scp:$TMP/plain.scp" "ark:$TMP/d1.ark"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 "scp:$TMP/plain.scp" "ark:$TMP/d2.ark"
  cmp "$TMP/d1.ark" "$TMP/d2.ark"
  ! cmp -s "$TMP/d1.ark" "$TMP/q.ark"
  [ "$("$BIN/feat-to-len" "ark:$TMP/d1.ark")" = "$("$BIN/feat-to-len" "ark:$TMP/q.ark")" ]
}

@test "stereo: --channel=-1 warns and uses channel 0, --channel=1 the right one, --channel=2 no output" {
  need_audio
  python3 - "$TMP" <<'EOF'
import sys, wave, numpy as np
d = sys.argv[1]; rng = np.random.default_rng(5)
x = (rng.standard_normal((20000, 2)) * 2000).astype("<i2")
for name, data, ch in (("st", x, 2), ("l", x[:, 0].copy(), 1), ("r", x[:, 1].copy(), 1)):
    with wave.open(f"{d}/{name}.wav", "wb") as w:
        w.setnchannels(ch); w.setsampwidth(2); w.setframerate(8000); w.writeframes(data.tobytes())
EOF
  for n in st l r; do echo "u $TMP/$n.wav" > "$TMP/$n.scp"; done
  run "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/st.scp" "ark:$TMP/st0.ark"
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING"*"st.wav"*"'u'"*"2 channels"*"defaulting to zero"* ]]
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/l.scp" "ark:$TMP/l.ark"
  cmp "$TMP/st0.ark" "$TMP/l.ark"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 --channel=1 "scp:$TMP/st.scp" "ark:$TMP/st1.ark"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/r.scp" "ark:$TMP/r.ark"
  cmp "$TMP/st1.ark" "$TMP/r.ark"
  run "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 --channel=2 "scp:$TMP/st.scp" "ark:$TMP/st2.ark"
  [ "$status" -ne 0 ]
  [[ "$output" == *"WARNING"*"'u'"*"2 channels but you specified channel 2"* ]]
}

@test "8-bit and float WAVs are read on the 16-bit scale" {
  need_audio
  mkwav "$TMP/u8.wav" 8000 1 1 0.5
  python3 - "$TMP" <<'EOF'
import sys, wave, struct, numpy as np
d = sys.argv[1]
with wave.open(f"{d}/u8.wav", "rb") as w:
    u = np.frombuffer(w.readframes(w.getnframes()), np.uint8)
x16 = ((u.astype(np.int32) - 128) * 256).astype("<i2")
with wave.open(f"{d}/s16.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000); w.writeframes(x16.tobytes())
f = (x16.astype(np.float32) / 32768).astype("<f4").tobytes()   # IEEE float WAV, format 3
hdr = b"RIFF" + struct.pack("<I", 36 + len(f)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 3, 1, 8000, 32000, 4, 32)
open(f"{d}/f32.wav", "wb").write(hdr + b"data" + struct.pack("<I", len(f)) + f)
EOF
  for n in u8 s16 f32; do echo "u $TMP/$n.wav" > "$TMP/$n.scp"
    "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/$n.scp" "ark:$TMP/$n.ark"; done
  cmp "$TMP/u8.ark" "$TMP/s16.ark"
  cmp "$TMP/f32.ark" "$TMP/s16.ark"
}

@test "wrong sample rate: warning naming file and key, utterance skipped (as Kaldi)" {
  need_audio
  mkwav "$TMP/a16.wav" 16000 1 2 0.5
  mkwav "$TMP/a8.wav" 8000 1 2 0.5
  printf 'a16 %s\na8 %s\n' "$TMP/a16.wav" "$TMP/a8.wav" > "$TMP/wav.scp"
  run "$BIN/compute-mfcc-feats" --sample-frequency=8000 --dither=0 "scp:$TMP/wav.scp" "ark:$TMP/o.ark"
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING"*"a16.wav"*"'a16'"*"16000"*"--sample-frequency=8000"* ]]
  [[ "$output" == *"Done 1 out of 2"* ]]
  [ "$("$BIN/feat-to-len" "ark:$TMP/o.ark" ark,t:- | cut -d' ' -f1)" = a8 ]
  echo "a16 $TMP/a16.wav" > "$TMP/one.scp"
  run "$BIN/compute-mfcc-feats" --dither=0 --sample-frequency=8000 "scp:$TMP/one.scp" "ark:$TMP/o2.ark"
  [ "$status" -ne 0 ]
}

@test "truncated header, empty file, missing file: one-line error naming file and key, no output" {
  need_audio
  mkwav "$TMP/ok.wav" 8000 1 2 0.5
  head -c 30 "$TMP/ok.wav" > "$TMP/trunc.wav"
  : > "$TMP/empty.wav"
  head -c 44 "$TMP/ok.wav" > "$TMP/nodata.wav"
  for bad in trunc empty nodata missing; do
    printf 'good %s\nk_%s %s\n' "$TMP/ok.wav" $bad "$TMP/$bad.wav" > "$TMP/wav.scp"
    run "$BIN/compute-mfcc-feats" --sample-frequency=8000 "scp:$TMP/wav.scp" "ark:$TMP/o.ark"
    echo "$output"
    [ "$status" -ne 0 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == *"ERROR"*"'k_$bad'"*"$bad.wav"* ]]
    [ ! -e "$TMP/o.ark" ]
  done
  # permissive scp: the bad entry is skipped with a warning
  run "$BIN/compute-mfcc-feats" --sample-frequency=8000 "scp,p:$TMP/wav.scp" "ark:$TMP/o.ark"
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING"*"k_missing"* ]]
}

@test "truncated data chunk is read as far as it goes; a WAV shorter than a frame gives an empty matrix" {
  need_audio
  mkwav "$TMP/ok.wav" 8000 1 2 0.5
  head -c 4044 "$TMP/ok.wav" > "$TMP/short.wav"   # 2000 of 4000 samples
  echo "u $TMP/short.wav" > "$TMP/wav.scp"
  "$BIN/compute-mfcc-feats" --sample-frequency=8000 "scp:$TMP/wav.scp" "ark:$TMP/o.ark"
  [ "$("$BIN/feat-to-len" "ark:$TMP/o.ark")" = 23 ]
  head -c 444 "$TMP/ok.wav" > "$TMP/tiny.wav"     # 200 samples: exactly one frame
  head -c 442 "$TMP/ok.wav" > "$TMP/tiny2.wav"    # 199 samples: none
  printf 'a %s\nb %s\n' "$TMP/tiny.wav" "$TMP/tiny2.wav" > "$TMP/wav.scp"
  run "$BIN/compute-mfcc-feats" --sample-frequency=8000 "scp:$TMP/wav.scp" "ark,t:$TMP/o.txt"
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING"*"'b'"*"shorter than one frame"* ]]
  [ "$(grep -c '\[' "$TMP/o.txt")" -eq 2 ]
  grep -q '^b  \[ \]$' "$TMP/o.txt"
}

@test "add-deltas on a hand-computed case" {
  printf 'u1  [\n  1 \n  2 \n  4 \n  8 \n  16 ]\n' > "$TMP/x.ark"
  "$BIN/add-deltas" "ark:$TMP/x.ark" ark,t:- > "$TMP/d.txt"
  # t=2: static 4, delta (-2*1 - 2 + 8 + 2*16)/10 = 3.6, delta-delta 0.73 (9-tap filter, ends clamped)
  [ "$(sed -n 4p "$TMP/d.txt" | awk '{printf "%.4f %.4f %.4f", $1, $2, $3}')" = "4.0000 3.6000 0.7300" ]
  run "$BIN/add-deltas" --delta-order=1 --delta-window=1 "ark:$TMP/x.ark" ark,t:-
  # t=0: (x1 - x0) / 2 = 0.5
  [[ "${lines[1]}" == "  1 0.5 " ]]
  run "$BIN/add-deltas" --delta-window=0 "ark:$TMP/x.ark" ark,t:-
  [ "$status" -ne 0 ]
}

@test "compute-cmvn-stats: per utterance, per speaker (--spk2utt), global; hand-computed values" {
  printf 'a  [\n  1 2 \n  5 4 ]\nb  [\n  3 0 ]\n' > "$TMP/x.ark"
  run "$BIN/compute-cmvn-stats" "ark:$TMP/x.ark" ark,t:-
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "a  [" ]
  [ "${lines[1]}" = "  6 6 2 " ]
  [ "${lines[2]}" = "  26 20 0 ]" ]
  printf 's1 a b\n' > "$TMP/spk2utt"
  run "$BIN/compute-cmvn-stats" --spk2utt="ark:$TMP/spk2utt" "ark:$TMP/x.ark" ark,t:-
  [ "${lines[0]}" = "s1  [" ]
  [ "${lines[1]}" = "  9 6 3 " ]
  [ "${lines[2]}" = "  35 20 0 ]" ]
  "$BIN/compute-cmvn-stats" --binary=false "ark:$TMP/x.ark" "$TMP/global.txt"
  [ "$(tr -s ' \n' ' ' < "$TMP/global.txt")" = " [ 9 6 3 35 20 0 ] " ]
  run "$BIN/compute-cmvn-stats" --spk2utt="ark:$TMP/spk2utt" "ark:$TMP/x.ark" "$TMP/g2"
  [ "$status" -ne 0 ]
}

@test "apply-cmvn: per speaker via --utt2spk, global stats file, norm-means=false, missing stats" {
  printf 'a  [\n  1 2 \n  5 4 ]\nb  [\n  3 0 ]\n' > "$TMP/x.ark"
  printf 's1 a b\n' > "$TMP/spk2utt"
  printf 'a s1\nb s1\n' > "$TMP/utt2spk"
  "$BIN/compute-cmvn-stats" --spk2utt="ark:$TMP/spk2utt" "ark:$TMP/x.ark" "ark:$TMP/spk.ark"
  run "$BIN/apply-cmvn" --utt2spk="ark:$TMP/utt2spk" "ark:$TMP/spk.ark" "ark:$TMP/x.ark" ark,t:-
  [ "$status" -eq 0 ]
  # means (3, 2): a -> [-2 0; 2 2], b -> [0 -2]
  [ "${lines[1]}" = "  -2 0 " ]
  [ "${lines[2]}" = "  2 2 ]" ]
  [ "${lines[4]}" = "  0 -2 ]" ]
  "$BIN/compute-cmvn-stats" "ark:$TMP/x.ark" "$TMP/global.mat"
  "$BIN/apply-cmvn" "$TMP/global.mat" "ark:$TMP/x.ark" "ark,t:$TMP/g.txt"
  "$BIN/apply-cmvn" --utt2spk="ark:$TMP/utt2spk" "ark:$TMP/spk.ark" "ark:$TMP/x.ark" "ark,t:$TMP/s.txt"
  cmp "$TMP/g.txt" "$TMP/s.txt"
  # variance: dim 0 values 1 5 3: mean 3, var 8/3
  run "$BIN/apply-cmvn" --norm-vars=true "$TMP/global.mat" "ark:$TMP/x.ark" ark,t:-
  [ "$(echo "${lines[1]}" | awk '{printf "%.5f", $1}')" = "-1.22474" ]
  run "$BIN/apply-cmvn" --norm-means=false "$TMP/global.mat" "ark:$TMP/x.ark" ark,t:-
  [ "${lines[1]}" = "  1 2 " ]
  run "$BIN/apply-cmvn" --norm-vars=true --norm-means=false "$TMP/global.mat" "ark:$TMP/x.ark" ark:/dev/null
  [ "$status" -ne 0 ]
  printf 'a s1\nb s2\n' > "$TMP/utt2spk2"
  run "$BIN/apply-cmvn" --utt2spk="ark:$TMP/utt2spk2" "ark:$TMP/spk.ark" "ark:$TMP/x.ark" ark,t:-
  [ "$status" -eq 0 ]
  [[ "$output" == *"WARNING"*"'s2'"* ]]
  [[ "$output" == *"to 1 utterances, errors on 1"* ]]
}

@test "bad options: unknown window, too many mel bins, wave archive, --help" {
  cd "$FIX"
  run "$BIN/compute-mfcc-feats" --window-type=triangle scp:wav.scp ark:/dev/null
  [ "$status" -ne 0 ]
  [[ "$output" == *"window-type"*"triangle"* ]]
  run "$BIN/compute-mfcc-feats" --sample-frequency=8000 --num-mel-bins=200 --num-ceps=13 scp:wav.scp ark:/dev/null
  [ "$status" -ne 0 ]
  run "$BIN/compute-mfcc-feats" ark:wav.ark ark:/dev/null
  [ "$status" -ne 0 ]
  [[ "$output" == *"not supported"* ]]
  run "$BIN/compute-fbank-feats" --help
  [[ "$output" == *"--use-log-fbank"* ]]
  [[ "$output" == *"--sample-frequency"* ]]
}
