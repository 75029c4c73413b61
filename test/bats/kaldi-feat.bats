#!/usr/bin/env bats
# Kaldi's feature and archive helper tools (issues 26 and 27) against real
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

# ---------------- issue 26: the sid feature pipeline ----------------

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
  run "$BIN/compute-vad" --vad-energy-threshold=1000 "ark:$UBM/feats.ark" "ark,t:$TMP/v.txt"
  [ "$(wc -l < "$TMP/v.txt")" -eq 10 ]
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
  [[ "$output" == *"no VAD input found for utterance 'george_0_12'"* ]]
  rm -f "$TMP/o.ark"
  run "$BIN/select-voiced-frames" "ark:$UBM/feats.ark" "ark:$TMP/half.ark" "ark:$TMP/o.ark"
  [ "$status" -ne 0 ]
  [[ "$output" == *"key 'george_0_0': VAD value 0.5 at frame 0 (must be 0 or 1)"* ]]
  [ ! -e "$TMP/o.ark" ]
}
