#!/usr/bin/env bats
# Speaker adaptation tools: gmm-est-fmllr, transform-feats, gmm-adapt-map.
# References: Kaldi's own fMLLR transforms and transformed features
# ($GH_SHARED/data/kaldi-fixtures, README there: gmm-global-est-fmllr on the
# AMI features with ami-diag16.gmm), and float64 numpy
# (test/python/fmllr_ref.py: statistics, auxiliary function, row update,
# MAP closed form) written from the equations.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  PY=$BATS_TEST_DIRNAME/../python
  FIX=$GH_SHARED/data/kaldi-fixtures
  AMI=$GH_SHARED/data/kaldi-ami-feats/feats.ark
  TMP=$(mktemp -d "${BATS_TMPDIR:-/tmp}/adapt.XXXXXX")
}

teardown() {
  rm -rf "$TMP"
}

# exactly one ERROR line mentioning $1 (LOG lines before it are allowed), exit != 0
one_error_line() {
  [ "$status" -ne 0 ]
  [ "$(printf '%s\n' "$output" | grep -vc ': LOG: ')" -eq 1 ]
  [[ "$output" == *"ERROR:"* ]]
  [[ "$output" == *"$1"* ]]
}

# max |a-b| / (1 + |b|) over the matrices of two archives with the same keys
cmp_ark() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys, kaldiio, numpy as np
a, b, tol = dict(kaldiio.load_ark(sys.argv[1])), dict(kaldiio.load_ark(sys.argv[2])), float(sys.argv[3])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
e = max(float((np.abs(a[k].astype(float) - b[k]) / (1 + np.abs(b[k]))).max()) for k in b)
print("max rel diff %.3g over %d keys" % (e, len(b)))
sys.exit(0 if e <= tol else 1)
PY
}

@test "gmm-est-fmllr --spk2utt: Kaldi's transform (1e-4) and Kaldi's logged gain 0.374413 per frame" {
  run "$BIN/gmm-est-fmllr" --device=cpu --spk2utt=ark:$FIX/ami.spk2utt "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/spk.ark"
  [ "$status" -eq 0 ]
  [[ "$output" == *"fMLLR auxf impr per frame is 0.3744"* ]]
  [[ "$output" == *"over 2395 frames"* ]]
  cmp_ark "$TMP/spk.ark" "$FIX/ami-diag16.fmllr-spk.ark" 1e-4
  # the same through a text archive and scp-indexed features
  "$BIN/gmm-est-fmllr" --device=cpu --spk2utt=ark:$FIX/ami.spk2utt "$FIX/ami-diag16.gmm.txt" "ark:$AMI" "ark,t:$TMP/spk.txt" 2>/dev/null
  cmp_ark "$TMP/spk.txt" "$FIX/ami-diag16.fmllr-spk.ark" 1e-4
}

@test "gmm-est-fmllr per utterance (min count 100): Kaldi's 10 transforms (3e-4: Kaldi's float posteriors, elements up to 84) and gain 2.03552" {
  run "$BIN/gmm-est-fmllr" --device=cpu --fmllr-min-count=100 "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/utt.ark"
  [ "$status" -eq 0 ]
  [[ "$output" == *"fMLLR auxf impr per frame is 2.0355"* ]]
  cmp_ark "$TMP/utt.ark" "$FIX/ami-diag16.fmllr-utt.ark" 3e-4
}

@test "transform-feats: Kaldi's transformed features (per speaker 1e-5; per utterance 3e-5: Kaldi sums in float), FM output" {
  "$BIN/transform-feats" --utt2spk=ark:$FIX/ami.utt2spk "ark:$FIX/ami-diag16.fmllr-spk.ark" "ark:$AMI" "ark:$TMP/a.ark" 2>/dev/null
  cmp_ark "$TMP/a.ark" "$FIX/ami-diag16.fmllr-spk-feats.ark" 1e-5
  "$BIN/transform-feats" "ark:$FIX/ami-diag16.fmllr-utt.ark" "ark:$AMI" "ark:$TMP/b.ark" 2>/dev/null
  cmp_ark "$TMP/b.ark" "$FIX/ami-diag16.fmllr-utt-feats.ark" 3e-5
  # binary float matrices as Kaldi writes them: "<key> \0BFM "
  python3 -c "d = open('$TMP/b.ark', 'rb').read(); i = d.index(b' '); assert d[i + 1:i + 6] == b'\\0BFM ', d[:i + 6]"
}

@test "transform-feats: one global transform from a file (DM text and FM binary, linear D x D too)" {
  python3 - "$TMP" <<'PY'
import sys, numpy as np, kaldiio
d = sys.argv[1]
A = np.array([[2.0, 0.5], [0.0, 1.0]]); b = np.array([1.0, -3.0])
X = np.arange(12, dtype=np.float32).reshape(6, 2)
kaldiio.save_ark(d + '/x.ark', {'u1': X})
with open(d + '/w.txt', 'w') as f:  # Kaldi text matrix
    f.write(' [\n  2 0.5 1\n  0 1 -3 ]\n')
kaldiio.save_mat(d + '/lin.mat', A.astype(np.float64))   # DM, binary
np.save(d + '/want_aff.npy', X @ A.T + b); np.save(d + '/want_lin.npy', X @ A.T)
PY
  "$BIN/transform-feats" "$TMP/w.txt" "ark:$TMP/x.ark" "ark:$TMP/aff.ark" 2>/dev/null
  "$BIN/transform-feats" "$TMP/lin.mat" "ark:$TMP/x.ark" "ark:$TMP/lin.ark" 2>/dev/null
  python3 -c "
import kaldiio, numpy as np
for n in ('aff', 'lin'):
    got = kaldiio.load_ark('$TMP/' + n + '.ark').__next__()[1]
    assert np.array_equal(got, np.load('$TMP/want_' + n + '.npy').astype(np.float32)), n
"
}

@test "fMLLR vs float64 numpy: auxiliary function never decreases, same transform and Q (speaker and utterances)" {
  "$BIN/gmm-est-fmllr" --device=cpu --spk2utt=ark:$FIX/ami.spk2utt "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/spk.ark" 2>/dev/null
  run python3 "$PY/fmllr_ref.py" aux "$FIX/ami-diag16.gmm.txt" "$AMI" "$TMP/spk.ark" --tol 1e-4
  echo "$output"; [ "$status" -eq 0 ]
  "$BIN/gmm-est-fmllr" --device=cpu --fmllr-min-count=100 "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/utt.ark" 2>/dev/null
  run python3 "$PY/fmllr_ref.py" aux "$FIX/ami-diag16.gmm.txt" "$AMI" "$TMP/utt.ark" --per-utt --min-count 100 --tol 1e-3
  echo "$output"; [ "$status" -eq 0 ]
}

@test "fMLLR recovers a known affine distortion of features sampled from the model (two passes, 0.05)" {
  python3 "$PY/fmllr_ref.py" gen-distort "$TMP"
  awk '{for (i = 2; i <= NF; i++) print $i, $1}' "$TMP/spk2utt" > "$TMP/utt2spk"
  "$BIN/gmm-est-fmllr" --spk2utt=ark:$TMP/spk2utt "$TMP/model.txt" "ark:$TMP/feats.ark" "ark:$TMP/w1.ark" 2>/dev/null
  "$BIN/transform-feats" --utt2spk=ark:$TMP/utt2spk "ark:$TMP/w1.ark" "ark:$TMP/feats.ark" "ark:$TMP/f1.ark" 2>/dev/null
  "$BIN/gmm-est-fmllr" --spk2utt=ark:$TMP/spk2utt "$TMP/model.txt" "ark:$TMP/f1.ark" "ark:$TMP/w2.ark" 2>/dev/null
  run python3 "$PY/fmllr_ref.py" check-distort "$TMP" "$TMP/w1.ark" "$TMP/w2.ark" 0.05
  echo "$output"; [ "$status" -eq 0 ]
}

@test "gmm-est-fmllr with pdf alignments on a multi-pdf model (yes/no .mdl) raises the likelihood by > 1 nat/frame" {
  MDL=$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl
  feats="ark:$FIX/mfcc-deltas.ark"
  # pdf alignment: blocks of 10 frames cycling through the model's 22 pdfs
  "$BIN/feat-to-len" "$feats" ark,t:- 2>/dev/null |
    awk '{printf "%s", $1; for (t = 0; t < $2; t++) printf " %d", int(t / 10) % 22; print ""}' > "$TMP/ali.txt"
  run "$BIN/gmm-est-fmllr" --device=cpu --fmllr-min-count=50 "$MDL" "$feats" "ark:$TMP/ali.txt" "ark:$TMP/t.ark"
  echo "$output"; [ "$status" -eq 0 ]
  [[ "$output" == *"Done 6 utterances"* ]]
  "$BIN/transform-feats" "ark:$TMP/t.ark" "$feats" "ark:$TMP/a.ark" 2>/dev/null
  b=$("$BIN/gmm-score-gpu" --device=cpu "$MDL" "$feats" ark:/dev/null 2>&1 | sed -n 's/.*best pdf \([-0-9.]*\).*/\1/p')
  a=$("$BIN/gmm-score-gpu" --device=cpu "$MDL" "ark:$TMP/a.ark" ark:/dev/null 2>&1 | sed -n 's/.*best pdf \([-0-9.]*\).*/\1/p')
  echo "best-pdf loglike per frame before $b after $a"
  python3 -c "import sys; sys.exit(0 if $a > $b + 1.0 else 1)"
}

@test "gmm-adapt-map vs the closed form in numpy (means; means+variances+weights)" {
  "$BIN/gmm-adapt-map" --device=cpu --mean-tau=5 --binary=false "$FIX/ami-diag16.gmm" "ark:$AMI" "$TMP/m.txt" 2>/dev/null
  run python3 "$PY/fmllr_ref.py" map "$FIX/ami-diag16.gmm.txt" "$AMI" "$TMP/m.txt" 5 50 10 m
  echo "$output"; [ "$status" -eq 0 ]
  "$BIN/gmm-adapt-map" --device=cpu --update-flags=mvw --mean-tau=5 --variance-tau=20 --weight-tau=7 --binary=false \
    "$FIX/ami-diag16.gmm" "ark:$AMI" "$TMP/mvw.txt" 2>/dev/null
  run python3 "$PY/fmllr_ref.py" map "$FIX/ami-diag16.gmm.txt" "$AMI" "$TMP/mvw.txt" 5 20 7 mvw
  echo "$output"; [ "$status" -eq 0 ]
  # tau = 0 with means only: ML means of the Gaussians (posteriors of the prior)
  "$BIN/gmm-adapt-map" --device=cpu --tau=0 --binary=false "$FIX/ami-diag16.gmm" "ark:$AMI" "$TMP/t0.txt" 2>/dev/null
  run python3 "$PY/fmllr_ref.py" map "$FIX/ami-diag16.gmm.txt" "$AMI" "$TMP/t0.txt" 0 0 0 m
  echo "$output"; [ "$status" -eq 0 ]
}

@test "gmm-adapt-map --spk2utt writes one model per speaker to a table (= the single-model output)" {
  "$BIN/gmm-adapt-map" --device=cpu --spk2utt=ark:$FIX/ami.spk2utt "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/m.ark" 2>/dev/null
  "$BIN/gmm-adapt-map" --device=cpu "$FIX/ami-diag16.gmm" "ark:$AMI" "$TMP/one.gmm" 2>/dev/null
  printf 'FEE041 ' > "$TMP/want.ark"; cat "$TMP/one.gmm" >> "$TMP/want.ark"
  cmp "$TMP/m.ark" "$TMP/want.ark"
}

# the AMI feats.scp lines of the keys on stdin, with absolute paths
subset_scp() {
  awk -v d="$GH_SHARED/data/kaldi-ami-feats/" 'NR == FNR { k[$1]; next } $1 in k { print $1, d $2 }' - \
    "$GH_SHARED/data/kaldi-ami-feats/feats.scp"
}

# two pseudo-speakers A and B taking the AMI utterances in turn (so that the
# scorer's model changes at every utterance) -> $TMP/spk2utt, $TMP/utt2spk
two_speakers() {
  cut -d' ' -f2- "$FIX/ami.spk2utt" | tr ' ' '\n' | grep . | awk '{ print $1, (NR % 2 ? "A" : "B") }' > "$TMP/utt2spk"
  for s in A B; do echo "$s $(awk -v s=$s '$2 == s { printf "%s ", $1 }' "$TMP/utt2spk")"; done | sed 's/ $//' > "$TMP/spk2utt"
}

@test "gmm-score-gpu --spk-models --utt2spk: each utterance under its speaker's MAP model (= one run per speaker)" {
  two_speakers
  "$BIN/gmm-adapt-map" --device=cpu --mean-tau=5 --spk2utt=ark,t:$TMP/spk2utt "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/m.ark" 2>/dev/null
  for dev in cpu opencl; do
    "$BIN/gmm-score-gpu" --device=$dev --utt2spk=ark,t:$TMP/utt2spk --spk-models=ark:$TMP/m.ark "$FIX/ami-diag16.gmm" \
      "ark:$AMI" "ark:$TMP/ll.$dev.ark" 2>/dev/null
    # the reference: each speaker's model alone (gmm-adapt-map on the speaker's utterances)
    for s in A B; do
      awk -v s=$s '$2 == s { print $1 }' "$TMP/utt2spk" | subset_scp > "$TMP/$s.scp"
      "$BIN/gmm-adapt-map" --device=cpu --mean-tau=5 "$FIX/ami-diag16.gmm" "scp:$TMP/$s.scp" "$TMP/$s.gmm" 2>/dev/null
    done
    run python3 - "$TMP" "$dev" "$BIN" "$FIX" "$AMI" <<'PY'
import sys, subprocess, kaldiio, numpy as np
tmp, dev, bin_, fix, ami = sys.argv[1:]
got = dict(kaldiio.load_ark(f"{tmp}/ll.{dev}.ark"))
spk = dict(l.split() for l in open(f"{tmp}/utt2spk"))
assert sorted(got) == sorted(spk), "keys differ"
worst = 0.0
for s in "AB":
    subprocess.run([f"{bin_}/gmm-score-gpu", f"--device={dev}", f"{tmp}/{s}.gmm", f"ark:{ami}", f"ark:{tmp}/ref.{s}.ark"],
                   check=True, stderr=subprocess.DEVNULL)
    ref = dict(kaldiio.load_ark(f"{tmp}/ref.{s}.ark"))
    for k in got:
        if spk[k] == s:
            worst = max(worst, float(np.max(np.abs(got[k] - ref[k]))))
print(f"{dev}: largest difference {worst:.3g}")
sys.exit(0 if worst <= 1e-4 else 1)
PY
    echo "$output"; [ "$status" -eq 0 ]
  done
}

@test "gmm-score-gpu --spk-models without --utt2spk: a model per utterance" {
  "$BIN/gmm-adapt-map" --device=cpu --mean-tau=5 "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/m.ark" 2>/dev/null
  "$BIN/gmm-score-gpu" --device=cpu --spk-models=ark:$TMP/m.ark "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/ll.ark" 2>/dev/null
  # the reference for two utterances: each one's model alone
  for n in 1 7; do
    sed -n ${n}p "$GH_SHARED/data/kaldi-ami-feats/feats.scp" | cut -d' ' -f1 | subset_scp > "$TMP/u$n.scp"
    "$BIN/gmm-adapt-map" --device=cpu --mean-tau=5 "$FIX/ami-diag16.gmm" "scp:$TMP/u$n.scp" "$TMP/u$n.gmm" 2>/dev/null
    "$BIN/gmm-score-gpu" --device=cpu "$TMP/u$n.gmm" "scp:$TMP/u$n.scp" "ark:$TMP/ref$n.ark" 2>/dev/null
  done
  run python3 - "$TMP" <<'PY'
import sys, kaldiio, numpy as np
tmp = sys.argv[1]
got = dict(kaldiio.load_ark(f"{tmp}/ll.ark"))
worst = 0.0
for n in (1, 7):
    for k, v in kaldiio.load_ark(f"{tmp}/ref{n}.ark"):
        worst = max(worst, float(np.max(np.abs(got[k] - v))))
print(f"{len(got)} utterances; largest difference on the two checked {worst:.3g}")
sys.exit(0 if worst <= 1e-4 and len(got) > 2 else 1)
PY
  echo "$output"; [ "$status" -eq 0 ]
}

@test "bad input: --spk-models: a speaker without a model, an utterance without a speaker, another shape" {
  two_speakers
  "$BIN/gmm-adapt-map" --device=cpu --spk2utt=ark,t:$TMP/spk2utt "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/m.ark" 2>/dev/null
  sed '3s/ [AB]$/ C/' "$TMP/utt2spk" > "$TMP/utt2spk.c"
  run "$BIN/gmm-score-gpu" --device=cpu --utt2spk=ark,t:$TMP/utt2spk.c --spk-models=ark:$TMP/m.ark "$FIX/ami-diag16.gmm" \
    "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "speaker 'C' of utterance '$(sed -n 3p "$TMP/utt2spk" | cut -d' ' -f1)' has no model"
  [ ! -e "$TMP/out.ark" ]
  sed 3d "$TMP/utt2spk" > "$TMP/utt2spk.short"
  run "$BIN/gmm-score-gpu" --device=cpu --utt2spk=ark,t:$TMP/utt2spk.short --spk-models=ark:$TMP/m.ark \
    "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "is not in --utt2spk"
  [ ! -e "$TMP/out.ark" ]
  run "$BIN/gmm-score-gpu" --device=cpu --utt2spk=ark,t:$TMP/utt2spk --spk-models=ark:$TMP/m.ark \
    "$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "key 'A'"
  [ ! -e "$TMP/out.ark" ]
  run "$BIN/gmm-score-gpu" --device=cpu --utt2spk=ark,t:$TMP/utt2spk "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "--utt2spk needs --spk-models"
  run "$BIN/gmm-score-gpu" --device=cpu --spk-models=scp:$TMP/m.scp "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "ark:<rxfilename>"
  cat "$TMP/m.ark" "$TMP/m.ark" > "$TMP/m2.ark"
  run "$BIN/gmm-score-gpu" --device=cpu --spk-models=ark:$TMP/m2.ark "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "key 'A' appears twice"
  [ ! -e "$TMP/out.ark" ]
}

@test "bad input: transform of the wrong size: one error line, no output" {
  python3 -c "
import kaldiio, numpy as np
kaldiio.save_ark('$TMP/w.ark', {'FEE041': np.eye(13, 15, dtype=np.float32)})"
  run "$BIN/transform-feats" --utt2spk=ark:$FIX/ami.utt2spk "ark:$TMP/w.ark" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "FEE041"
  [[ "$output" == *"15 columns"* ]]
  [ ! -e "$TMP/out.ark" ]
}

@test "bad input: speaker without utterances, utterance without features: one error line, no output" {
  printf 'FEE041 %s\nlonely\n' "$(cut -d' ' -f2- $FIX/ami.spk2utt)" > "$TMP/spk2utt"
  run "$BIN/gmm-est-fmllr" --spk2utt=ark,t:$TMP/spk2utt "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/t.ark"
  one_error_line "speaker 'lonely' has no utterances"
  [ ! -e "$TMP/t.ark" ]
  run "$BIN/gmm-adapt-map" --spk2utt=ark,t:$TMP/spk2utt "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/m.ark"
  one_error_line "speaker 'lonely' has no utterances"
  [ ! -e "$TMP/m.ark" ]
  printf 'X nosuchutt\n' > "$TMP/spk2utt2"
  run "$BIN/gmm-est-fmllr" --spk2utt=ark:$TMP/spk2utt2 "$FIX/ami-diag16.gmm" "ark:$AMI" "ark:$TMP/t.ark"
  one_error_line "nosuchutt"
  [ ! -e "$TMP/t.ark" ]
}

@test "bad input: utterance missing from utt2spk, speaker without a transform: one error line, no output" {
  head -n 3 "$FIX/ami.utt2spk" > "$TMP/utt2spk"
  run "$BIN/transform-feats" --utt2spk=ark:$TMP/utt2spk "ark:$FIX/ami-diag16.fmllr-spk.ark" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "no speaker for key '"
  [ ! -e "$TMP/out.ark" ]
  sed 's/ FEE041$/ OTHER/' "$FIX/ami.utt2spk" > "$TMP/utt2spk2"
  run "$BIN/transform-feats" --utt2spk=ark:$TMP/utt2spk2 "ark:$FIX/ami-diag16.fmllr-spk.ark" "ark:$AMI" "ark:$TMP/out.ark"
  one_error_line "no transform for key 'OTHER'"
  [ ! -e "$TMP/out.ark" ]
}

@test "bad input: full-covariance model, multi-pdf model without labels, feature dimension mismatch" {
  run "$BIN/gmm-est-fmllr" "$FIX/ami-full16.fgmm" "ark:$AMI" "ark:$TMP/t.ark"
  one_error_line "diagonal"
  run "$BIN/gmm-adapt-map" "$GH_SHARED/data/kaldi-yesno-mono-model/0.mdl" "ark:$AMI" "$TMP/m.mdl"
  one_error_line "labels argument is needed"
  run "$BIN/gmm-est-fmllr" "$FIX/ami-diag16.gmm" "ark:$FIX/mfcc-deltas.ark" "ark:$TMP/t.ark"
  one_error_line "dimension"
  [ ! -e "$TMP/t.ark" ] && [ ! -e "$TMP/m.mdl" ]
}

# ---- silence topology and word edges (lib/hmm/hmm.c gh_hmm_silence, gh_hmm_compile_edges,
# gh_hmm_loop_edge_silence) on hand-made log-likelihoods: word "a" = pdf 0, silence = pdf 1.
edge_setup() {
  printf 'a 0\n' > "$TMP/words.txt"
  "$BIN/hmm-init-topo" --silence=sil --silence-states=1 "$TMP/words.txt" "$TMP/set.hmm" 2>/dev/null
  # 6 frames that all fit the word far better than the silence
  printf 'u1  [\n' > "$TMP/ll.txt"
  for t in 1 2 3 4 5 6; do printf '  0 -8\n' >> "$TMP/ll.txt"; done
  sed -i '$ s/$/ ]/' "$TMP/ll.txt"
  echo "u1 a" > "$TMP/text"
}

@test "hmm-init-topo --silence-topology=ergodic: Kaldi's 5-state silence (17 arcs, inner states connected)" {
  printf 'yes\nno\n' > "$TMP/w.txt"
  "$BIN/hmm-init-topo" --binary=false --silence=sil --silence-states=5 --silence-topology=ergodic "$TMP/w.txt" "$TMP/s.hmm" 2>/dev/null
  run awk '/<Hmm> sil/ { s = 1 } s && /<Arcs>/ { print $2; exit }' "$TMP/s.hmm"
  [ "$output" = 17 ]
  grep -A 20 '<Hmm> sil' "$TMP/s.hmm" | grep -q '^3 1 -1.386294'   # inner state 3 back to 1, p = 1/4
  grep -A 20 '<Hmm> sil' "$TMP/s.hmm" | grep -q '^4 4 -0.287682'   # last state self-loop 0.75
  run "$BIN/hmm-init-topo" --silence=sil --silence-states=2 --silence-topology=ergodic "$TMP/w.txt" "$TMP/t.hmm"
  one_error_line ">= 3 states"
  [ ! -e "$TMP/t.hmm" ]
}

@test "hmm-viterbi --edge-silence-prob=1: the path starts and ends in silence; optional edges do not" {
  edge_setup
  "$BIN/hmm-viterbi" --transcripts=ark,t:$TMP/text --optional-silence=sil "$TMP/set.hmm" "ark,t:$TMP/ll.txt" ark,t:- 2>/dev/null > "$TMP/opt.ali"
  [ "$(cat "$TMP/opt.ali")" = "u1 0 0 0 0 0 0 " ]
  "$BIN/hmm-viterbi" --transcripts=ark,t:$TMP/text --optional-silence=sil --edge-silence-prob=1 "$TMP/set.hmm" \
    "ark,t:$TMP/ll.txt" ark,t:- 2>/dev/null > "$TMP/edge.ali"
  [ "$(cat "$TMP/edge.ali")" = "u1 1 0 0 0 0 1 " ]
  # the same constraint in Baum-Welch: all posterior mass of frame 0 on the silence pdf
  "$BIN/hmm-bw" --transcripts=ark,t:$TMP/text --optional-silence=sil --edge-silence-prob=1 "$TMP/set.hmm" \
    "ark,t:$TMP/ll.txt" ark,t:- 2>/dev/null | grep -q '^u1 \[ 1 1 \]'
}

@test "hmm-make-loop --edge-silence: decoding paths start and end in silence too" {
  edge_setup
  "$BIN/hmm-make-loop" --silence=sil --word-loop=loop "$TMP/set.hmm" "$TMP/loop.hmm" 2>/dev/null
  "$BIN/hmm-viterbi" --hmm=loop "$TMP/loop.hmm" "ark,t:$TMP/ll.txt" ark,t:- 2>/dev/null > "$TMP/a1"
  [ "$(cat "$TMP/a1")" = "u1 0 0 0 0 0 0 " ]
  "$BIN/hmm-make-loop" --edge-silence --silence=sil --word-loop=loop "$TMP/set.hmm" "$TMP/loop2.hmm" 2>/dev/null
  "$BIN/hmm-viterbi" --hmm=loop --words-wspecifier=ark,t:$TMP/w2 "$TMP/loop2.hmm" "ark,t:$TMP/ll.txt" ark,t:- 2>/dev/null > "$TMP/a2"
  [ "$(cat "$TMP/a2")" = "u1 1 0 0 0 0 1 " ]
  grep -q '^u1 a' "$TMP/w2"
  run "$BIN/hmm-make-loop" --edge-silence --word-loop=loop "$TMP/set.hmm" "$TMP/loop3.hmm"
  one_error_line "needs --silence"
  [ ! -e "$TMP/loop3.hmm" ]
}
