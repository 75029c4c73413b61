#!/usr/bin/env bats
# Kaldi's feature and archive helper tools against real
# Kaldi's outputs (kaldi-fixtures/ubm: the sid recipes' pipeline on ten FSDD
# utterances; kaldi-fixtures: compressed archives) and against numpy/kaldiio
# references computed here: compute-vad, add-deltas --delta-window,
# apply-cmvn-sliding, select-voiced-frames, subsample-feats, copy-feats
# --compress, copy-matrix, copy-vector, subset-feats, select-feats,
# paste-feats, splice-feats, ali-to-pdf, ali-to-post.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  FIX=$GH_SHARED/data/kaldi-fixtures
  UBM=$FIX/ubm
  TMP=$(mktemp -d)
}

teardown() {
  rm -rf "$TMP"
}

# compare <ours.ark> <ref.ark> <tol>: same keys (in order) and shapes, max |a-b|/(1+|ref|) <= tol.
compare() {
  python3 - "$1" "$2" "$3" <<'PYEOF'
import sys, kaldiio, numpy as np
a = list(kaldiio.load_ark(sys.argv[1])); r = list(kaldiio.load_ark(sys.argv[2])); tol = float(sys.argv[3])
assert [k for k, _ in a] == [k for k, _ in r], ([k for k, _ in a], [k for k, _ in r])
worst = 0.0
for (k, x), (_, y) in zip(a, r):
    x = np.asarray(x); y = np.asarray(y)
    assert x.shape == y.shape, (k, x.shape, y.shape)
    if x.size: worst = max(worst, float((np.abs(x - y) / (1.0 + np.abs(y))).max()))
print("max rel error %.3g" % worst)
sys.exit(0 if worst <= tol else 1)
PYEOF
}

# ---------------- the sid feature pipeline ----------------

@test "compute-vad with the fixture's options gives Kaldi's decisions exactly" {
  "$BIN/compute-vad" --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 "ark:$UBM/feats.ark" "ark,t:$TMP/vad.txt"
  cmp "$TMP/vad.txt" "$UBM/vad-recomputed.txt"
  cmp "$TMP/vad.txt" "$UBM/vad.txt"
}

@test "compute-vad: --vad-frames-context and --vad-proportion-threshold against a numpy reference" {
  for opts in "--vad-frames-context=2 --vad-proportion-threshold=0.5" \
              "--vad-frames-context=5 --vad-proportion-threshold=0.9 --vad-energy-mean-scale=0" \
              "--vad-energy-threshold=9 --vad-energy-mean-scale=0.3"; do
    # shellcheck disable=SC2086
    "$BIN/compute-vad" $opts "ark:$UBM/feats.ark" "ark:$TMP/vad.ark"
    python3 - "$TMP/vad.ark" "$UBM/feats.ark" $opts <<'PYEOF'
import sys, kaldiio, numpy as np
o = {"threshold": 5.0, "mean_scale": 0.5, "context": 0, "prop": 0.6}
names = {"--vad-energy-threshold": "threshold", "--vad-energy-mean-scale": "mean_scale",
         "--vad-frames-context": "context", "--vad-proportion-threshold": "prop"}
for a in sys.argv[3:]:
    k, v = a.split("="); o[names[k]] = float(v)
ours = dict(kaldiio.load_ark(sys.argv[1])); n_changed = 0
for k, x in kaldiio.load_ark(sys.argv[2]):
    e = x[:, 0].astype(np.float64); T = len(e)
    thr = np.float32(o["threshold"]) + np.float32(o["mean_scale"]) * np.float32(e.sum()) / T
    c = int(o["context"]); ref = np.zeros(T, np.float32)
    for t in range(T):
        w = e[max(0, t - c):min(T, t + c + 1)]
        ref[t] = 1.0 if (w > thr).sum() >= len(w) * np.float32(o["prop"]) else 0.0
    assert ours[k].shape == ref.shape and (ours[k] == ref).all(), (k, ours[k], ref)
    n_changed += int(((e > thr) != (ref > 0)).sum())
print("frames where the window changed the decision:", n_changed)
PYEOF
  done
}

@test "compute-vad: --omit-unvoiced-utts drops all-unvoiced utterances; bad options are one-line errors" {
  run "$BIN/compute-vad" --vad-energy-threshold=1000 --omit-unvoiced-utts=true "ark:$UBM/feats.ark" "ark,t:$TMP/v.txt"
  [ "$status" -eq 1 ]            # nothing voiced: Kaldi's exit status 1
  [ ! -s "$TMP/v.txt" ]
  [[ "$output" == *"no frames were judged voiced"* ]]
  # without --omit-unvoiced-utts all 10 are written (all-zero vectors), but
  # the exit status is still 1, so a file output is not committed (outputs
  # commit at exit status 0 only, doc/reliability.md); stdout shows them
  run "$BIN/compute-vad" --vad-energy-threshold=1000 "ark:$UBM/feats.ark" "ark,t:$TMP/v.txt"
  [ "$status" -eq 1 ] && [ ! -e "$TMP/v.txt" ]
  run "$BIN/compute-vad" --vad-energy-threshold=1000 "ark:$UBM/feats.ark" ark,t:-
  [ "$status" -eq 1 ]
  [ "$(grep -c '^george_' <<<"$output")" -eq 10 ]
  run "$BIN/compute-vad" --vad-proportion-threshold=1.5 "ark:$UBM/feats.ark" "ark:$TMP/v.ark"
  [ "$status" -ne 0 ]
  [[ "$output" == *"--vad-proportion-threshold=1.5 must be in (0, 1)"* ]]
  [ ! -e "$TMP/v.ark" ]
}

@test "add-deltas --delta-window=3 --delta-order=2 matches Kaldi's deltas.ark" {
  # Kaldi's ComputeDeltas adds each term with BLAS saxpy: the ubm fixture's
  # Kaldi was linked with an FMA saxpy, the top-level fixture's (mfcc-deltas.ark,
  # byte-identical in feat.bats) without; we round each term as the latter, so
  # here the two agree to one float rounding per term.
  "$BIN/add-deltas" --delta-window=3 --delta-order=2 "ark:$UBM/feats.ark" "ark:$TMP/d.ark"
  compare "$TMP/d.ark" "$UBM/deltas.ark" 1e-5
  "$BIN/add-deltas" --delta-order=3 --delta-window=1 --truncate=13 "ark:$UBM/feats.ark" "ark:$TMP/d3.ark"
  python3 - "$TMP/d3.ark" "$UBM/feats.ark" <<'PYEOF'
import sys, kaldiio, numpy as np
ours = dict(kaldiio.load_ark(sys.argv[1]))
for k, x in kaldiio.load_ark(sys.argv[2]):
    x = x[:, :13].astype(np.float64); T = len(x); i = np.arange(T)
    # Kaldi's definition: the order-n filter is the order-1 regression filter
    # (j / sum j^2, j = -1..1) convolved with itself n times, applied to the
    # raw frames with the frame index clamped to [0, T-1].
    f1 = np.array([-1.0, 0.0, 1.0]) / 2.0; filt = np.array([1.0]); out = []
    for n in range(4):
        L = (len(filt) - 1) // 2
        out.append(sum(filt[j + L] * x[np.clip(i + j, 0, T - 1)] for j in range(-L, L + 1)))
        filt = np.convolve(filt, f1)
    ref = np.hstack(out)
    assert ours[k].shape == (T, 52), ours[k].shape
    assert np.abs(ours[k] - ref).max() <= 1e-4 * (1 + np.abs(ref).max()), np.abs(ours[k] - ref).max()
PYEOF
}

@test "apply-cmvn-sliding --norm-vars=false --center=true --cmn-window=300 is byte-identical to Kaldi's" {
  "$BIN/apply-cmvn-sliding" --norm-vars=false --center=true --cmn-window=300 "ark:$UBM/deltas.ark" "ark:$TMP/c.ark"
  cmp "$TMP/c.ark" "$UBM/cmvn-sliding.ark"
}

@test "apply-cmvn-sliding: left and centred windows, --min-cmn-window, --norm-vars against numpy" {
  python3 - "$UBM/feats.ark" "$TMP/in.ark" <<'PYEOF'
import sys, kaldiio, numpy as np
# the ten utterances joined into one long one (521 frames), so that windows slide
x = np.vstack([m for _, m in kaldiio.load_ark(sys.argv[1])]).astype(np.float32)
kaldiio.save_ark(sys.argv[2], {"long": x, "short": x[:7]})
PYEOF
  for opts in "--cmn-window=50 --min-cmn-window=20" "--cmn-window=51 --center=true --min-cmn-window=51" \
              "--cmn-window=600 --min-cmn-window=100 --norm-vars=true" "--cmn-window=40 --center=true --min-cmn-window=5 --norm-vars=true" \
              "--cmn-window=30 --min-cmn-window=1 --norm-vars=true"; do
    # shellcheck disable=SC2086
    "$BIN/apply-cmvn-sliding" $opts "ark:$TMP/in.ark" "ark:$TMP/out.ark"
    python3 - "$TMP/out.ark" "$TMP/in.ark" $opts <<'PYEOF'
import sys, kaldiio, numpy as np
o = {"cmn-window": 600, "min-cmn-window": 100, "center": "false", "norm-vars": "false"}
for a in sys.argv[3:]:
    k, v = a[2:].split("="); o[k] = v
W, M = int(o["cmn-window"]), int(o["min-cmn-window"]); center = o["center"] == "true"; nv = o["norm-vars"] == "true"
ours = dict(kaldiio.load_ark(sys.argv[1]))
for k, x in kaldiio.load_ark(sys.argv[2]):
    x = x.astype(np.float64); T = len(x); ref = np.empty_like(x)
    for t in range(T):   # the window, written out as Kaldi's SlidingWindowCmnInternal documents it
        if center: s = t - W // 2; e = s + W
        else: s = t - W; e = t + 1
        if s < 0: e -= s; s = 0
        if not center and e > t: e = max(t + 1, M)
        if e > T: s -= e - T; e = T; s = max(s, 0)
        w = x[s:e]; ref[t] = x[t] - w.mean(0)
        if nv: ref[t] = 0 if len(w) == 1 else ref[t] / np.sqrt(np.maximum(w.var(0), 1e-10))
    err = np.abs(ours[k] - ref).max() / (1 + np.abs(ref).max())
    assert err < 2e-5, (k, sys.argv[3:], err)
PYEOF
  done
}

@test "apply-cmvn-sliding: bad window options are one-line errors" {
  run "$BIN/apply-cmvn-sliding" --cmn-window=0 "ark:$UBM/feats.ark" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"--cmn-window=0 must be > 0"* ]]; [ ! -e "$TMP/o.ark" ]
  run "$BIN/apply-cmvn-sliding" --center=true --cmn-window=10 --min-cmn-window=20 "ark:$UBM/feats.ark" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"--min-cmn-window=20"* ]]
}

@test "select-voiced-frames and subsample-feats --n=2 are byte-identical to Kaldi's" {
  "$BIN/select-voiced-frames" "ark:$UBM/cmvn-sliding.ark" "ark:$UBM/vad.txt" "ark:$TMP/v.ark"
  cmp "$TMP/v.ark" "$UBM/voiced.ark"
  "$BIN/subsample-feats" --n=2 "ark:$UBM/voiced.ark" "ark:$TMP/s.ark"
  cmp "$TMP/s.ark" "$UBM/subsampled.ark"
}

@test "the sid pipeline as a chain of pipes equals Kaldi's subsampled.ark" {
  "$BIN/compute-vad" --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 "ark:$UBM/feats.ark" "ark:$TMP/vad.ark"
  "$BIN/add-deltas" --delta-window=3 --delta-order=2 "ark:$UBM/feats.ark" ark:- |
    "$BIN/apply-cmvn-sliding" --norm-vars=false --center=true --cmn-window=300 ark:- ark:- |
    "$BIN/select-voiced-frames" ark:- "ark,s,cs:$TMP/vad.ark" ark:- |
    "$BIN/subsample-feats" --n=2 ark:- "ark:$TMP/s.ark"
  compare "$TMP/s.ark" "$UBM/subsampled.ark" 1e-5
}

@test "subsample-feats: --offset, negative --n (repeat), empty outputs and bad options" {
  "$BIN/subsample-feats" --n=3 --offset=2 "ark:$UBM/feats.ark" "ark:$TMP/a.ark"
  "$BIN/subsample-feats" --n=-3 "ark:$UBM/feats.ark" "ark:$TMP/b.ark"
  python3 - "$TMP/a.ark" "$TMP/b.ark" "$UBM/feats.ark" <<'PYEOF'
import sys, kaldiio, numpy as np
a = dict(kaldiio.load_ark(sys.argv[1])); b = dict(kaldiio.load_ark(sys.argv[2]))
for k, x in kaldiio.load_ark(sys.argv[3]):
    assert (a[k] == x[2::3]).all() and (b[k] == np.repeat(x, 3, axis=0)).all(), k
PYEOF
  run "$BIN/subsample-feats" --offset=10000 "ark:$UBM/feats.ark" "ark:$TMP/c.ark"
  [ "$status" -eq 1 ]; [[ "$output" == *"output would have no rows"* ]]
  run "$BIN/subsample-feats" --n=0 "ark:$UBM/feats.ark" "ark:$TMP/c.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"--n=0 is not allowed"* ]]
  run "$BIN/subsample-feats" --n=-2 --offset=1 "ark:$UBM/feats.ark" "ark:$TMP/c.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"--offset cannot be used with a negative --n"* ]]
}

@test "select-voiced-frames: missing VAD, length mismatch and non-0/1 values" {
  python3 - "$UBM/feats.ark" "$TMP" <<'PYEOF'
import sys, kaldiio, numpy as np
f = list(kaldiio.load_ark(sys.argv[1]))
kaldiio.save_ark(sys.argv[2] + "/short.ark", {k: np.ones(len(x) - 1, np.float32) for k, x in f[:3]})
kaldiio.save_ark(sys.argv[2] + "/half.ark", {f[0][0]: np.full(len(f[0][1]), 0.5, np.float32)})
PYEOF
  run "$BIN/select-voiced-frames" "ark:$UBM/feats.ark" "ark:$TMP/short.ark" "ark:$TMP/o.ark"
  [ "$status" -eq 1 ]
  [[ "$output" == *"mismatch in number of frames"* ]]
  [[ "$output" == *"ark:$TMP/short.ark: no VAD vector for key 'george_0_12'; utterance skipped"* ]]
  rm -f "$TMP/o.ark"
  run "$BIN/select-voiced-frames" "ark:$UBM/feats.ark" "ark:$TMP/half.ark" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  [[ "$output" == *"key 'george_0_0': VAD value 0.5 at frame 0 (must be 0 or 1)"* ]]
  [ ! -e "$TMP/o.ark" ]
}

@test "select-voiced-frames and compute-vad with nothing voiced: the ERROR says which key and why" {
  python3 - "$UBM/feats.ark" "$TMP" <<'PYEOF'
import sys, kaldiio, numpy as np
f = list(kaldiio.load_ark(sys.argv[1]))
kaldiio.save_ark(sys.argv[2] + "/zero.ark", {k: np.zeros(len(x), np.float32) for k, x in f})
PYEOF
  first=$(python3 -c "import kaldiio, sys; print(next(iter(kaldiio.load_ark(sys.argv[1])))[0])" "$UBM/feats.ark")
  run "$BIN/select-voiced-frames" "ark:$UBM/feats.ark" "ark:$TMP/zero.ark" "ark:$TMP/o.ark"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
  [[ "$(grep ERROR <<<"$output")" == *"key '$first'"*"no frame is voiced in ark:$TMP/zero.ark"* ]]
  [[ "$(grep ERROR <<<"$output")" != *"exiting with status"* ]]
  [ ! -e "$TMP/o.ark" ]
  for omit in false true; do
    run "$BIN/compute-vad" --vad-energy-threshold=1000 --omit-unvoiced-utts=$omit "ark:$UBM/feats.ark" "ark,t:$TMP/v.txt"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(grep -c ERROR <<<"$output")" -eq 1 ]
    [[ "$(grep ERROR <<<"$output")" == *"ark:$UBM/feats.ark"*"key '$first'"*"no frame was judged voiced"*"--vad-energy-threshold=1000"* ]]
    [[ "$(grep ERROR <<<"$output")" != *"exiting with status"* ]]
    [ ! -e "$TMP/v.txt" ]
  done
}

@test "apply-cmvn-sliding --norm-vars: a constant column is floored, with at most --max-warnings warnings per utterance" {
  python3 - "$TMP/c.ark" <<'PYEOF'
import sys, kaldiio, numpy as np
x = np.random.RandomState(0).randn(40, 3).astype(np.float32); x[:, 1] = 2.5
kaldiio.save_ark(sys.argv[1], {"u": x})
PYEOF
  run "$BIN/apply-cmvn-sliding" --norm-vars=true --cmn-window=10 --min-cmn-window=2 --max-warnings=3 "ark:$TMP/c.ark" "ark:$TMP/o.ark"
  [ "$status" -eq 0 ]
  [ "$(grep -c "utterance 'u', frame .*floored 1 elements" <<<"$output")" -eq 3 ]
  [[ "$output" == *"variances were floored (at 1e-10) in 40 frames"* ]]   # --min-cmn-window=2: no one-frame window
  run "$BIN/apply-cmvn-sliding" --norm-vars=true --cmn-window=10 --min-cmn-window=2 --max-warnings=-1 "ark:$TMP/c.ark" "ark:$TMP/o.ark"
  [ "$(grep -c "utterance 'u', frame" <<<"$output")" -eq 40 ]
  python3 -c "
import kaldiio, numpy as np
y = dict(kaldiio.load_ark('$TMP/o.ark'))['u']
assert np.isfinite(y).all() and (np.abs(y[:, 1]) < 1e-10).all(), y[:, 1]"
}

# ---------------- compressed matrices ----------------

@test "copy-feats --compress=true writes Kaldi's CM, CM2 and CM3 archives byte for byte" {
  A=$GH_SHARED/data/kaldi-ami-feats
  "$BIN/copy-feats" --compress=true --compression-method=3 "ark:$A/feats.ark" "ark:$TMP/cm2.ark"
  cmp "$TMP/cm2.ark" "$FIX/ami-cm2.ark"
  "$BIN/copy-feats" --compress=true --compression-method=5 "ark:$A/feats.ark" "ark:$TMP/cm3.ark"
  cmp "$TMP/cm3.ark" "$FIX/ami-cm3.ark"
  # method 1 (automatic: CM for more than 8 rows) and 2 give Kaldi's feats_compressed.ark
  "$BIN/copy-feats" --compress=true "ark:$A/feats.ark" "ark:$TMP/cm.ark"
  cmp "$TMP/cm.ark" "$A/feats_compressed.ark"
  "$BIN/copy-feats" --compress=true --compression-method=2 "ark:$A/feats.ark" "ark,scp:$TMP/cm1.ark,$TMP/cm1.scp"
  cmp "$TMP/cm1.ark" "$A/feats_compressed.ark"
  # and decompressing them gives Kaldi's decompression
  "$BIN/copy-feats" "ark:$TMP/cm2.ark" "ark:$TMP/d2.ark"
  cmp "$TMP/d2.ark" "$FIX/ami-cm2.decoded.ark"
  "$BIN/copy-feats" "scp:$TMP/cm1.scp" "ark:$TMP/d1.ark"
  "$BIN/copy-feats" "ark:$A/feats_compressed.ark" "ark:$TMP/d1ref.ark"
  cmp "$TMP/d1.ark" "$TMP/d1ref.ark"
}

@test "compressed matrices: every method, short and constant matrices, decoded by kaldiio within the codes' resolution" {
  python3 - "$TMP/in.ark" <<'PYEOF'
import sys, kaldiio, numpy as np
r = np.random.RandomState(3)
kaldiio.save_ark(sys.argv[1], {
  "long": (r.randn(50, 6) * 10).astype(np.float32),
  "short3": r.randn(3, 4).astype(np.float32),          # < 5 rows: the sorted-percentile special case
  "rows8": r.randn(8, 2).astype(np.float32),           # method 1 picks CM2 for <= 8 rows
  "const": np.full((12, 3), -4.25, np.float32),        # max == min
  "ints": r.randint(-300, 300, size=(20, 5)).astype(np.float32),
  "unit": r.rand(20, 5).astype(np.float32),
  "bytes": r.randint(0, 256, size=(20, 5)).astype(np.float32)})
PYEOF
  for m in 1 2 3 4 5 6 7; do
    "$BIN/copy-feats" --compress=true --compression-method=$m "ark:$TMP/in.ark" "ark:$TMP/c$m.ark"
    "$BIN/copy-feats" "ark:$TMP/c$m.ark" "ark:$TMP/d$m.ark"
  done
  python3 - "$TMP" <<'PYEOF'
import sys, kaldiio, numpy as np
d = sys.argv[1]; x = dict(kaldiio.load_ark(d + "/in.ark"))
tok = {1: None, 2: b"CM ", 3: b"CM2", 4: b"CM2", 5: b"CM3", 6: b"CM3", 7: b"CM3"}
for m in range(1, 8):
    raw = open(d + "/c%d.ark" % m, "rb").read()
    ours = dict(kaldiio.load_ark(d + "/d%d.ark" % m))   # our decompression
    kio = dict(kaldiio.load_ark(d + "/c%d.ark" % m))    # kaldiio's decompression of our bytes
    for k, a in x.items():
        i = raw.index(k.encode() + b" \0B") + len(k) + 3
        t = raw[i:i + 3]
        want = tok[m] or (b"CM " if a.shape[0] > 8 else b"CM2")
        assert t == want, (m, k, t, want)
        assert np.allclose(ours[k], kio[k], rtol=0, atol=1e-5 * (1 + np.abs(a).max())), (m, k)
        lo, hi = a.min(), a.max()
        if m in (4, 6, 7):   # fixed ranges: values outside are clamped
            lo, hi = {4: (-32768, 32767), 6: (0, 255), 7: (0, 1)}[m]
        rng = max(hi - lo, 1 + abs(lo)) if hi == lo else hi - lo
        clamped = np.clip(a, lo, hi)
        if t == b"CM2": tol = rng / 65535 * 0.51 + 1e-6 * (1 + abs(lo))
        elif t == b"CM3": tol = rng / 255 * 0.51 + 1e-6 * (1 + abs(lo))
        else: tol = rng / 64 * 0.51 + rng / 65535 + 1e-5 * (1 + abs(lo))   # widest CM interval: p25..p75 / 128 and p0..p25 / 64
        err = np.abs(ours[k] - clamped).max()
        assert err <= tol, (m, k, err, tol)
print("ok")
PYEOF
}

@test "copy-feats --compress: bad method, single files, NaN input are one-line errors" {
  run "$BIN/copy-feats" --compress=true --compression-method=8 "ark:$UBM/feats.ark" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"--compression-method=8 is not a compression method"* ]]
  [ ! -e "$TMP/o.ark" ]
  "$BIN/copy-feats" "ark:$UBM/feats.ark" "ark,scp:$TMP/f.ark,$TMP/f.scp"
  run "$BIN/copy-feats" --compress=true "$(head -1 "$TMP/f.scp" | cut -d' ' -f2)" "$TMP/one.mat"
  [ "$status" -ne 0 ]; [[ "$output" == *"--compress=true is only supported when writing tables"* ]]
  printf 'u [ 1 2\n nan 4 ]\n' > "$TMP/nan.txt"
  run "$BIN/copy-feats" --compress=true "ark,t:$TMP/nan.txt" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"key 'u'"* ]]; [[ "$output" == *"NaN"* ]]
  [ ! -e "$TMP/o.ark" ]
}

@test "copy-feats --compress with a text archive writes the decompressed values (as Kaldi)" {
  "$BIN/copy-feats" --compress=true --compression-method=5 "ark:$UBM/feats.ark" "ark,t:$TMP/t.txt"
  "$BIN/copy-feats" --compress=true --compression-method=5 "ark:$UBM/feats.ark" "ark:$TMP/b.ark"
  "$BIN/copy-feats" "ark:$TMP/b.ark" "ark,t:$TMP/b.txt"
  cmp "$TMP/t.txt" "$TMP/b.txt"
}

# ---------------- archive helpers ----------------

@test "copy-matrix: tables and single files, --scale, --apply-log/exp/power/softmax-per-row against numpy" {
  "$BIN/copy-matrix" "ark:$UBM/feats.ark" "ark:$TMP/same.ark"
  cmp "$TMP/same.ark" "$UBM/feats.ark"
  for opts in "--scale=0.5" "--scale=0.01 --apply-exp=true" "--apply-softmax-per-row=true" \
              "--scale=-1 --apply-log=true" "--scale=0.1 --apply-power=2" "--apply-exp=true --scale=0.01 --apply-power=0.5"; do
    # shellcheck disable=SC2086
    "$BIN/copy-matrix" $opts "ark:$UBM/feats.ark" "ark:$TMP/o.ark"
    python3 - "$TMP/o.ark" "$UBM/feats.ark" $opts <<'PYEOF'
import sys, kaldiio, numpy as np
o = {"scale": 1.0, "apply-log": "false", "apply-exp": "false", "apply-softmax-per-row": "false", "apply-power": 1.0}
for a in sys.argv[3:]:
    k, v = a[2:].split("="); o[k] = v
ours = dict(kaldiio.load_ark(sys.argv[1]))
for k, x in kaldiio.load_ark(sys.argv[2]):
    y = x.astype(np.float64) * float(o["scale"])
    if o["apply-log"] == "true": y = np.log(np.maximum(y, 1e-20))
    if o["apply-exp"] == "true": y = np.exp(y)
    if o["apply-softmax-per-row"] == "true":
        y = np.exp(y - y.max(1, keepdims=True)); y /= y.sum(1, keepdims=True)
    y = y ** float(o["apply-power"])
    assert np.allclose(ours[k], y, rtol=2e-5, atol=1e-30), (sys.argv[3:], k, np.abs(ours[k] - y).max())
PYEOF
  done
  python3 -c "
import kaldiio; kaldiio.save_mat('$TMP/one.mat', dict(kaldiio.load_ark('$UBM/feats.ark'))['george_0_0'])"
  "$BIN/copy-matrix" --binary=false --scale=2 "$TMP/one.mat" "$TMP/one.txt"
  python3 -c "
import kaldiio, numpy as np
assert np.allclose(kaldiio.load_mat('$TMP/one.txt'), 2 * kaldiio.load_mat('$TMP/one.mat'), rtol=1e-6)"
  run "$BIN/copy-matrix" --apply-log=true --apply-exp=true "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"only one of --apply-log, --apply-exp"* ]]
  run "$BIN/copy-matrix" --apply-power=0.5 "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"key 'george_0_0': the result is NaN"* ]]; [ ! -e "$TMP/x.ark" ]
  run "$BIN/copy-matrix" "ark:$UBM/feats.ark" "$TMP/x.mat"
  [ "$status" -ne 0 ]; [[ "$output" == *"cannot mix archives with regular files"* ]]
}

@test "copy-vector: archives of VAD vectors, --change-dim, single files" {
  "$BIN/copy-vector" "ark,t:$UBM/vad.txt" "ark,t:$TMP/v.txt"
  cmp "$TMP/v.txt" "$UBM/vad.txt"
  "$BIN/copy-vector" "ark,t:$UBM/vad.txt" "ark:$TMP/v.ark"
  "$BIN/copy-vector" --change-dim=30 "ark:$TMP/v.ark" "ark,t:$TMP/c.txt"
  python3 - "$TMP/c.txt" "$UBM/vad.txt" <<'PYEOF'
import sys, kaldiio, numpy as np
c = dict(kaldiio.load_ark(sys.argv[1]))
for k, v in kaldiio.load_ark(sys.argv[2]):
    ref = np.zeros(30, np.float32); n = min(30, len(v)); ref[:n] = v[:n]
    assert (c[k] == ref).all(), k
PYEOF
  python3 -c "
import kaldiio; import numpy as np
kaldiio.save_mat('$TMP/one.vec', dict(kaldiio.load_ark('$UBM/vad.txt'))['george_0_0'].astype(np.float32))"
  "$BIN/copy-vector" --binary=false "$TMP/one.vec" "$TMP/one.txt"
  [ "$(cat "$TMP/one.txt")" = "$(head -1 "$UBM/vad.txt" | sed 's/^george_0_0 //')" ]
}

@test "subset-feats: --n, --include, --exclude as Kaldi's" {
  "$BIN/subset-feats" --n=3 "ark:$UBM/feats.ark" "ark:$TMP/a.ark"
  printf 'george_0_12 x\ngeorge_0_0\nnot_there\n' > "$TMP/list"
  "$BIN/subset-feats" --include="$TMP/list" "ark:$UBM/feats.ark" "ark:$TMP/i.ark"
  "$BIN/subset-feats" --exclude="$TMP/list" "ark:$UBM/feats.ark" "ark:$TMP/e.ark"
  python3 - "$TMP" "$UBM/feats.ark" <<'PYEOF'
import sys, kaldiio
d = sys.argv[1]; keys = [k for k, _ in kaldiio.load_ark(sys.argv[2])]
get = lambda f: [k for k, _ in kaldiio.load_ark(d + f)]
assert get("/a.ark") == keys[:3]
assert get("/i.ark") == [k for k in keys if k in ("george_0_12", "george_0_0")]
assert get("/e.ark") == [k for k in keys if k not in ("george_0_12", "george_0_0")]
PYEOF
  run "$BIN/subset-feats" --include="$TMP/list" --exclude="$TMP/list" "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"should not have both --exclude and --include"* ]]
  run "$BIN/subset-feats" --n=0 "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"--n=0"* ]]
  echo nobody > "$TMP/none"
  run "$BIN/subset-feats" --include="$TMP/none" "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -eq 1 ]; [[ "$output" == *"Wrote 0 out of 10 utterances"* ]]
}

@test "select-feats, splice-feats and paste-feats against numpy" {
  "$BIN/select-feats" 0,3-5,19-17 "ark:$UBM/feats.ark" "ark:$TMP/s.ark"
  "$BIN/splice-feats" --left-context=2 --right-context=1 "ark:$UBM/feats.ark" "ark:$TMP/sp.ark"
  "$BIN/paste-feats" "ark:$UBM/feats.ark" "ark:$TMP/s.ark" "ark:$TMP/p.ark"
  "$BIN/subsample-feats" --n=1 --offset=1 "ark:$UBM/feats.ark" "ark:$TMP/short.ark"
  run "$BIN/paste-feats" "ark:$UBM/feats.ark" "ark:$TMP/short.ark" "ark:$TMP/p0.ark"
  [ "$status" -eq 1 ]; [[ "$output" == *"length mismatch 28 vs. 27 for utt george_0_0 exceeds tolerance 0"* ]]
  "$BIN/paste-feats" --length-tolerance=1 "ark:$UBM/feats.ark" "ark:$TMP/short.ark" "ark:$TMP/p1.ark"
  python3 - "$TMP" "$UBM/feats.ark" <<'PYEOF'
import sys, kaldiio, numpy as np
d = sys.argv[1]; L = lambda f: dict(kaldiio.load_ark(d + f))
s, sp, p, p1 = L("/s.ark"), L("/sp.ark"), L("/p.ark"), L("/p1.ark")
for k, x in kaldiio.load_ark(sys.argv[2]):
    T = len(x); sel = x[:, [0, 3, 4, 5, 19, 18, 17]]
    assert (s[k] == sel).all()
    i = np.arange(T); ref = np.hstack([x[np.clip(i + j, 0, T - 1)] for j in range(-2, 2)])
    assert (sp[k] == ref).all()
    assert (p[k] == np.hstack([x, sel])).all()
    assert (p1[k] == np.hstack([x[:T - 1], x[1:]])).all()
PYEOF
  # single files
  one=$TMP/one.mat
  python3 -c "
import kaldiio; kaldiio.save_mat('$one', dict(kaldiio.load_ark('$UBM/feats.ark'))['george_0_0'])"
  "$BIN/paste-feats" --binary=false "$one" "$one" "$TMP/pp.txt"
  python3 -c "
import kaldiio, numpy as np
x = dict(kaldiio.load_ark('$UBM/feats.ark'))['george_0_0']; y = kaldiio.load_mat('$TMP/pp.txt')
assert np.allclose(y, np.hstack([x, x]), rtol=1e-6)"
  run "$BIN/select-feats" 0,20 "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"index 20 is out of range for features of dimension 20"* ]]
  run "$BIN/select-feats" 0,,3 "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -ne 0 ]; [[ "$output" == *"malformed selection '0,,3'"* ]]
  run "$BIN/splice-feats" --left-context=-1 "ark:$UBM/feats.ark" "ark:$TMP/x.ark"
  [ "$status" -ne 0 ]
}

@test "ali-to-pdf maps transition-ids through Kaldi's transition model; ali-to-post gives weight-1 posteriors" {
  M=$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl
  "$BIN/gmm-copy" --binary=false "$M" "$TMP/mdl.txt"
  python3 - "$TMP/mdl.txt" "$TMP/ali.txt" "$TMP/ref.txt" <<'PYEOF'
import sys, re, numpy as np
# tid -> pdf from the text model, as Kaldi numbers transition-ids: one per
# transition of each (phone, hmm-state, pdf) triple, triples in file order.
t = open(sys.argv[1]).read()
topo = t[t.index("<Topology>"):t.index("</Topology>")]
ntrans = {}
for entry in topo.split("<TopologyEntry>")[1:]:
    phones = entry.split("<ForPhones>")[1].split("</ForPhones>")[0].split()
    for st in re.findall(r"<State> (\d+) (.*?)</State>", entry):
        for ph in phones: ntrans[(int(ph), int(st[0]))] = st[1].count("<Transition>")
tri = t.split("<Triples>")[1].split("</Triples>")[0].split()
n = int(tri[0]); tid2pdf = [None]
for i in range(n):
    ph, hs, pdf = map(int, tri[1 + 3 * i: 4 + 3 * i])
    tid2pdf += [pdf] * ntrans[(ph, hs)]
r = np.random.RandomState(1); ali = open(sys.argv[2], "w"); ref = open(sys.argv[3], "w")
for u in range(5):
    a = r.randint(1, len(tid2pdf), size=r.randint(1, 40))
    ali.write("utt%d %s\n" % (u, " ".join(map(str, a))))
    ref.write("utt%d %s \n" % (u, " ".join(str(tid2pdf[x]) for x in a)))
print(len(tid2pdf) - 1, "transition-ids")
PYEOF
  "$BIN/ali-to-pdf" "$M" "ark,t:$TMP/ali.txt" "ark,t:$TMP/pdf.txt"
  cmp "$TMP/pdf.txt" "$TMP/ref.txt"
  "$BIN/ali-to-post" "ark,t:$TMP/pdf.txt" "ark,t:$TMP/post.txt"
  python3 - "$TMP/post.txt" "$TMP/ref.txt" <<'PYEOF'
import sys
ref = {l.split()[0]: l.split()[1:] for l in open(sys.argv[2])}
for l in open(sys.argv[1]):
    k, rest = l.split(None, 1)
    frames = [f.split() for f in rest.replace("]", "").split("[")[1:]]
    assert [f[0] for f in frames] == ref[k] and all(f[1] == "1" and len(f) == 2 for f in frames), k
PYEOF
  echo "bad 1 277" > "$TMP/bad.txt"
  run "$BIN/ali-to-pdf" "$M" "ark,t:$TMP/bad.txt" "ark,t:$TMP/o.txt"
  [ "$status" -ne 0 ]; [[ "$output" == *"key 'bad': transition-id 277 at frame 1 is out of range [1, 276]"* ]]
  run "$BIN/ali-to-pdf" "$UBM/final.dubm" "ark,t:$TMP/ali.txt" "ark,t:$TMP/o.txt"
  [ "$status" -ne 0 ]; [[ "$output" == *"expected a Kaldi model starting with <TransitionModel>"* ]]
}

# ---------------- run.pl, slurm.pl, queue.pl ----------------

UTILS=$BATS_TEST_DIRNAME/../../egs/utils

# fake_bin <dir>: a fake Grid Engine qsub and Slurm sbatch that run the array
# tasks here, one after another, and append their arguments to <dir>/args.
fake_bin() {
  mkdir -p "$1"
  cat > "$1/qsub" <<'SH'
#!/usr/bin/env bash
echo "qsub $*" >> "$(dirname "$0")/args"
t=; out=/dev/null; script=
while [ $# -gt 0 ]; do
  case $1 in -cwd|-V) shift ;; -pe) shift 3 ;; -t) t=$2; shift 2 ;; -o) out=$2; shift 2 ;; -*) shift 2 ;; *) script=$1; shift ;; esac
done
first=1; last=1; [ -z "$t" ] || { first=${t%-*}; last=${t#*-}; }
echo "Your job-array 42.$first-$last:1 has been submitted"; rc=0
for ((k = first; k <= last; k++)); do
  if [ -n "$t" ]; then export SGE_TASK_ID=$k; else export SGE_TASK_ID=undefined; fi
  JOB_ID=42 bash "$script" > "${out//\$TASK_ID/$k}" 2>&1 || rc=1
done
exit $rc
SH
  cat > "$1/sbatch" <<'SH'
#!/usr/bin/env bash
echo "sbatch $*" >> "$(dirname "$0")/args"
array=1-1; out=/dev/null; script=
for a in "$@"; do
  case $a in --array=*) array=${a#*=} ;; --output=*) out=${a#*=} ;; --*) ;; *) script=$a ;; esac
done
array=${array%%%*}; first=${array%-*}; last=${array#*-}
echo 77
for ((k = first; k <= last; k++)); do
  SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_JOB_ID=77 bash "$script" > "${out//%a/$k}" 2>&1
done
exit 0
SH
  chmod +x "$1/qsub" "$1/sbatch"
}

# check_log <log> <command> <code>: Kaldi's run.pl log lines, in order.
check_log() {
  [ "$(sed -n 1p "$1")" = "# $2" ] || { echo "$1: first line '$(sed -n 1p "$1")', expected '# $2'"; return 1; }
  sed -n 2p "$1" | grep -q '^# Started at ' || { echo "$1: no '# Started at' line"; return 1; }
  tail -2 "$1" | head -1 | grep -Eq '^# Accounting: time=[0-9]+ threads=[0-9]+$' || { echo "$1: no '# Accounting:' line"; return 1; }
  tail -1 "$1" | grep -Eq "^# Ended \(code $3\) at .*, elapsed time [0-9.]+ seconds$" || { echo "$1: last line '$(tail -1 "$1")'"; return 1; }
}

@test "run.pl: JOB ranges, Kaldi's log lines, exit codes, options in Kaldi's forms" {
  cd "$TMP"
  "$UTILS/run.pl" JOB=1:4 log/a.JOB.log echo job JOB of 4
  for j in 1 2 3 4; do
    check_log log/a.$j.log "echo job $j of 4 " 0
    grep -qx "job $j of 4" log/a.$j.log
  done
  # Kaldi's option forms: "--name value", -tc, options after the JOB range, JOB=N
  "$UTILS/run.pl" --num-threads 3 -V JOB=2:3 --max-jobs-run 1 log/b.JOB.log echo x
  [ ! -e log/b.1.log ]
  grep -q 'threads=3' log/b.2.log
  check_log log/b.3.log "echo x " 0
  "$UTILS/run.pl" -tc 2 JOB=5 log/c.JOB.log echo five JOB
  grep -qx "five 5" log/c.5.log
  "$UTILS/run.pl" --mem 2G --config conf/queue.conf log/single.log echo one
  check_log log/single.log "echo one " 0
  # pipes as Kaldi's scripts write them (an escaped bar) and quoted arguments
  "$UTILS/run.pl" JOB=1:2 log/p.JOB.log echo "a  b" JOB \| tr a-z A-Z
  grep -qx "A  B 2" log/p.2.log
  # failures: exit 1, the failed jobs named, each log with its code
  run "$UTILS/run.pl" JOB=1:3 log/f.JOB.log 'exit $(( JOB == 2 ? 7 : 0 ))'
  [ "$status" -eq 1 ]
  [[ "$output" == *"1 / 3 failed (jobs 2)"*"log/f.2.log"* ]]
  check_log log/f.2.log 'exit $(( 2 == 2 ? 7 : 0 ))' 7
  check_log log/f.3.log 'exit $(( 3 == 2 ? 7 : 0 ))' 0
  run "$UTILS/run.pl" JOB=0:2 log/z.JOB.log true
  [ "$status" -ne 0 ]; [[ "$output" == *"start must be strictly positive"* ]]
  run "$UTILS/run.pl" JOB=3:2 log/z.JOB.log true
  [ "$status" -ne 0 ]; [[ "$output" == *"invalid job range JOB=3:2"* ]]
  run "$UTILS/run.pl" --max-jobs-run 0 JOB=1:2 log/z.JOB.log true
  [ "$status" -ne 0 ]; [[ "$output" == *"invalid option --max-jobs-run 0"* ]]
  run "$UTILS/run.pl" --bogus 1 log/z.log true
  [ "$status" -ne 0 ]; [[ "$output" == *"unknown option --bogus"* ]]
  run "$UTILS/run.pl" JOB=1:2 log/nojob.log true
  [ "$status" -ne 0 ]; [[ "$output" == *"must contain JOB"* ]]
}

@test "run.pl: failures name run.pl and the logs; a log directory it cannot create is one line naming it and the cause" {
  cd "$TMP"
  run "$UTILS/run.pl" JOB=1:2 log/x.JOB.log false
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "${lines[0]}" == "run.pl: 2 / 2 failed (jobs 1 2), log is in log/x.1.log, log/x.2.log" ]]
  run "$UTILS/run.pl" log/y.log false
  [ "$status" -eq 1 ]
  [[ "$output" == "run.pl: job failed, log is in log/y.log" ]]
  # the same through run.sh says run.sh
  run "$UTILS/run.sh" JOB=1:2 log/x.JOB.log false
  [[ "$output" == "run.sh: 2 / 2 failed (jobs 1 2), log is in log/x.1.log, log/x.2.log" ]]
  # a log directory under a regular file: no job runs, one line, no log named
  touch afile
  for launcher in run.pl run.sh; do
    run "$UTILS/$launcher" JOB=1:2 afile/log/x.JOB.log touch ran.JOB
    echo "$output"
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == "$launcher: cannot create the log directory afile/log: Not a directory" ]]
    [ ! -e ran.1 ] && [ ! -e ran.2 ]
  done
}

@test "run.pl: a sid-script style call (a quoted feature pipeline rspecifier, an escaped pipe to gzip) gives Kaldi's features" {
  cd "$TMP"
  head -5 "$UBM/utts.txt" > first5
  "$BIN/subset-feats" --include=first5 "ark:$UBM/feats.ark" ark:feats.1.ark
  "$BIN/subset-feats" --exclude=first5 "ark:$UBM/feats.ark" ark:feats.2.ark
  "$BIN/copy-vector" "ark,t:$UBM/vad.txt" ark,scp:vad.ark,vad.scp
  feats="ark,s,cs:add-deltas --delta-window=3 --delta-order=2 ark:feats.JOB.ark ark:- | apply-cmvn-sliding --norm-vars=false --center=true --cmn-window=300 ark:- ark:- | select-voiced-frames ark:- scp,s,cs:vad.scp ark:- |"
  PATH="$BIN:$PATH" "$UTILS/run.pl" --num-threads 2 JOB=1:2 log/sub.JOB.log \
    subsample-feats --n=2 "$feats" ark:- \| gzip -c \> sub.JOB.ark.gz
  check_log log/sub.2.log "subsample-feats --n=2 '${feats//JOB/2}' ark:- | gzip -c > sub.2.ark.gz " 0
  grep -q 'threads=2$' log/sub.1.log
  "$BIN/copy-feats" "ark:gunzip -c sub.1.ark.gz sub.2.ark.gz |" ark:sub.ark
  compare sub.ark "$UBM/subsampled.ark" 1e-5
}

@test "run.pl --max-jobs-run bounds the jobs running at once" {
  cd "$TMP"
  # each job records its start and end; count the most that overlapped
  "$UTILS/run.pl" --max-jobs-run 2 JOB=1:6 log/m.JOB.log 'echo "s $(date +%s%N)" >> t.JOB; sleep 0.4; echo "e $(date +%s%N)" >> t.JOB'
  python3 - t.* <<'PYEOF'
import sys
ev = []
for f in sys.argv[1:]:
    for l in open(f):
        k, t = l.split(); ev.append((int(t), 1 if k == "s" else -1))
cur = peak = 0
for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
    cur += d; peak = max(peak, cur)
assert len(ev) == 12 and peak == 2, (len(ev), peak)
PYEOF
}

@test "run.pl --gpu 1 spreads concurrent jobs over the visible GPUs round-robin" {
  cd "$TMP"
  CUDA_VISIBLE_DEVICES=3,5,6 "$UTILS/run.pl" --gpu 1 JOB=1:7 log/g.JOB.log \
    'echo "gpu=$CUDA_VISIBLE_DEVICES s=$(date +%s%N)"; sleep 0.3; echo "e=$(date +%s%N)"'
  for j in 1 2 3 4 5 6 7; do
    want=$(echo "3 5 6" | cut -d' ' -f$(( (j - 1) % 3 + 1 )))
    grep -q "^gpu=$want s=" log/g.$j.log
  done
  # no two jobs on one GPU at the same time, and three GPUs in use at once
  python3 - log/g.*.log <<'PYEOF'
import sys, re
iv = []
for f in sys.argv[1:]:
    t = open(f).read()
    g, s = re.search(r"gpu=(\d+) s=(\d+)", t).groups(); e = re.search(r"e=(\d+)", t).group(1)
    iv.append((g, int(s), int(e)))
for a in iv:
    for b in iv:
        if a is not b and a[0] == b[0]: assert a[2] <= b[1] or b[2] <= a[1], (a, b)
assert any(sum(1 for b in iv if b[1] <= a[1] < b[2]) == 3 for a in iv)
PYEOF
  # without a GPU list: nvidia-smi -L counts them (a fake one with 2 GPUs here)
  mkdir -p fake; printf '#!/bin/sh\necho "GPU 0: Fake (UUID: a)"\necho "GPU 1: Fake (UUID: b)"\n' > fake/nvidia-smi
  chmod +x fake/nvidia-smi
  env -u CUDA_VISIBLE_DEVICES PATH="$TMP/fake:$PATH" "$UTILS/run.pl" --gpu 1 JOB=1:4 log/n.JOB.log 'echo "gpu=$CUDA_VISIBLE_DEVICES"'
  [ "$(grep -h '^gpu=' log/n.{1,2,3,4}.log | tr '\n' ' ')" = "gpu=0 gpu=1 gpu=0 gpu=1 " ]
}

@test "queue.pl: qsub with Kaldi's default queue.conf rules, a --config file, logs and exit codes; no qsub is a clear error" {
  cd "$TMP"; fake_bin "$TMP/fb"
  PATH="$TMP/fb:$PATH" "$UTILS/queue.pl" --mem 2G --num-threads 4 --max-jobs-run 2 --gpu 1 -q all.q \
    JOB=1:3 log/q.JOB.log echo task JOB
  args=$(cat fb/args)
  [[ "$args" == "qsub -v PATH -cwd -S /bin/bash -j y -l arch=*64* "* ]]
  for o in "-l mem_free=2G,ram_free=2G" "-pe smp 4" "-tc 2" "-l gpu=1 -q g.q" "-q all.q" "-t 1-3" "-sync y" "-N q"; do
    [[ "$args" == *" $o "* ]] || { echo "missing $o in: $args"; false; }
  done
  for j in 1 2 3; do check_log log/q.$j.log "echo task $j " 0; grep -qx "task $j" log/q.$j.log; done
  grep -q 'threads=4' log/q.2.log
  rm fb/args
  printf 'command qsub -v PATH -cwd -j y\noption mem=* -l h_vmem=$0\noption mem=0\ndefault mem=1G\noption gpu=* -l gpu=$0\n' > q.conf
  run env PATH="$TMP/fb:$PATH" "$UTILS/queue.pl" --config q.conf JOB=1:2 log/r.JOB.log 'exit $(( JOB - 1 ))'
  [ "$status" -eq 1 ]; [[ "$output" == *"1 / 2 failed (jobs 2)"* ]]
  [[ "$(cat fb/args)" == "qsub -v PATH -cwd -j y -l h_vmem=1G -N r "* ]]
  check_log log/r.2.log 'exit $(( 2 - 1 ))' 1
  run env PATH="$TMP/fb:$PATH" "$UTILS/queue.pl" --config q.conf --num-threads 2 log/s.log true
  [ "$status" -ne 0 ]; [[ "$output" == *"--num-threads 2 is not described in q.conf"* ]]
  # no qsub at all
  mkdir -p nobin; for b in bash dirname cat mkdir; do ln -s "$(command -v $b)" nobin/; done
  run env PATH="$TMP/nobin" "$UTILS/queue.pl" JOB=1:2 log/x.JOB.log true
  [ "$status" -ne 0 ]; [[ "$output" == *"qsub not found"*"utils/slurm.pl"* ]]
}

@test "slurm.pl: Kaldi's options become slurm.sh's sbatch options; logs and exit codes" {
  cd "$TMP"; fake_bin "$TMP/fb"
  PATH="$TMP/fb:$PATH" "$UTILS/slurm.pl" --mem 3G --num-threads 2 --gpu 1 --max-jobs-run 2 --time 1:00:00 \
    JOB=1:3 log/s.JOB.log echo slurm JOB
  args=$(cat fb/args)
  for o in --mem=3G --cpus-per-task=2 --gres=gpu:1 --array=1-3%2 --time=1:00:00 --wait; do
    [[ " $args " == *" $o "* ]] || { echo "missing $o in: $args"; false; }
  done
  for j in 1 2 3; do grep -qx "slurm $j" log/s.$j.log; check_log log/s.$j.log "echo slurm $j " 0; done
  run env PATH="$TMP/fb:$PATH" "$UTILS/slurm.pl" -pe smp 3 JOB=1:2 log/t.JOB.log 'exit $(( JOB == 1 ))'
  [ "$status" -eq 1 ]; [[ "$output" == *"1 / 2 failed"*"jobs 1"* ]]
  [[ "$(tail -1 fb/args)" == *"--cpus-per-task=3"* ]]
}

@test "recipes ship Kaldi's cmd.sh and path.sh; \$train_cmd runs a job array" {
  for r in arabic-digits yesno fsdd; do
    d=$BATS_TEST_DIRNAME/../../egs/$r
    [ -f "$d/cmd.sh" ] && [ -f "$d/path.sh" ]
    (
      cd "$TMP"
      unset GH_BIN
      . "$d/path.sh"; . "$d/cmd.sh"
      [ "$(command -v run.pl)" -ef "$UTILS/run.pl" ]
      [ "$(command -v compute-vad)" -ef "$BATS_TEST_DIRNAME/../../bin/compute-vad" ]
      $train_cmd JOB=1:2 log/$r.JOB.log echo JOB
      grep -qx 2 log/$r.2.log
    )
  done
}
