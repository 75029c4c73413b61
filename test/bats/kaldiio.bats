#!/usr/bin/env bats
# Interoperability with Python's kaldiio (an independent implementation of
# Kaldi's formats): archives it writes are read by our tools and rewritten
# byte-identically, and archives our tools write (binary and text, float
# matrices, int32 vectors, scp offsets) read back in kaldiio to the same values.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  TMP=$(mktemp -d)
}
teardown() { rm -rf "$TMP"; }

@test "kaldiio-written float matrices and int vectors round-trip byte-identically" {
  python3 - "$TMP" <<'PY'
import sys, numpy as np, kaldiio
d = sys.argv[1]
rng = np.random.default_rng(7)
with kaldiio.WriteHelper('ark:%s/m.ark' % d) as w:
    for i in range(5):
        w('utt%d' % i, rng.standard_normal((3 + 7 * i, 13)).astype(np.float32))
with kaldiio.WriteHelper('ark:%s/a.ark' % d) as w:
    for i in range(5):
        w('utt%d' % i, rng.integers(0, 50, size=4 + i).astype(np.int32))
PY
  "$BIN/copy-feats" "ark:$TMP/m.ark" "ark:$TMP/m2.ark"
  cmp "$TMP/m.ark" "$TMP/m2.ark"
  "$BIN/copy-int-vector" "ark:$TMP/a.ark" "ark:$TMP/a2.ark"
  cmp "$TMP/a.ark" "$TMP/a2.ark"
}

@test "kaldiio reads our binary+scp and text archives to the same values" {
  "$BIN/copy-feats" "ark:$GH_SHARED/data/kaldi-ami-feats/feats.ark" "ark,scp:$TMP/o.ark,$TMP/o.scp"
  "$BIN/copy-feats" --binary=false "ark:$GH_SHARED/data/kaldi-ami-feats/feats.ark" "ark:$TMP/o.txt"
  python3 - "$TMP" "$GH_SHARED/data/kaldi-ami-feats/feats.ark" <<'PY'
import sys, numpy as np, kaldiio
d, ref = sys.argv[1], sys.argv[2]
want = dict(kaldiio.load_ark(ref))
assert len(want) == 10
got_scp = kaldiio.load_scp(d + '/o.scp')
got_txt = dict(kaldiio.load_ark(d + '/o.txt'))
for k, v in want.items():
    assert np.array_equal(got_scp[k], v), k
    # text holds 7 significant digits
    assert np.allclose(got_txt[k], v, rtol=1e-6, atol=1e-6), k
PY
}
