#!/usr/bin/env bats
# Acceptance: the tool calls of Kaldi's sid/train_diag_ubm.sh and
# sid/train_full_ubm.sh, same options and pipes (egs/fsdd/local/sid_ubm.sh,
# our own script; run.pl jobs, gselect lists through gzip pipes, accumulators
# summed in an rxfilename pipe), on all 2,000 FSDD recordings with our own
# compute-mfcc-feats / compute-vad and the options of the fixture run
# ($GH_SHARED/data/kaldi-fixtures/ubm/README.md): the full UBM's average
# frame log-likelihood on FSDD's voiced frames (fgmm-global-get-frame-likes
# --average=true; the "Overall likelihood per frame" over all frames) within
# 0.5% of Kaldi's final.ubm on the same frames, and the diagonal UBM's within
# 0.5% of Kaldi's final.dubm.  SID_DEVICE (default cpu) picks the GMM tools'
# device (make test-gpu: cuda).  Random draws differ (gmm-global-init-from-feats),
# so likelihoods are compared, not bytes.  About 30 s on 2 CPU cores.

setup_file() {
  export GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  export BIN=${GH_BIN:-$BATS_TEST_DIRNAME/../../bin}
  export WORK=$(mktemp -d "${BATS_TMPDIR:-/tmp}/kaldi-sid.XXXXXX")
  export PATH="$BIN:$PATH"
}

teardown_file() {
  rm -rf "$WORK"
}

overall() { # tool model rspecifier: the average frame log-likelihood
  "$BIN/$1" --average=true "$2" "$3" ark:/dev/null 2>&1 | sed -n 's/.*Overall likelihood per frame = \([-0-9.e]*\) over.*/\1/p'
}

@test "sid UBM recipe on FSDD: diagonal and full UBMs within 0.5% of Kaldi's average frame log-likelihood" {
  F=$GH_SHARED/data/kaldi-fixtures/ubm
  W=$GH_SHARED/data/fsdd/recordings
  D=$WORK/data
  mkdir -p "$D"
  e=wav; compgen -G "$W/*.wav" > /dev/null || e=flac   # the recordings as shipped: WAV or FLAC
  for f in "$W"/*.$e; do
    b=$(basename "$f" .$e); IFS=_ read -r d s i <<< "$b"; echo "${s}_${d}_$i $f"
  done | LC_ALL=C sort > "$D/wav.scp"
  [ "$(wc -l < "$D/wav.scp")" -eq 2000 ]
  awk '{ split($1, a, "_"); print $1, a[1] }' "$D/wav.scp" > "$D/utt2spk"
  compute-mfcc-feats --sample-frequency=8000 --num-ceps=20 --use-energy=true --dither=0 scp:"$D/wav.scp" \
    ark,scp:"$WORK/feats.ark,$D/feats.scp"
  compute-vad --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 scp:"$D/feats.scp" ark,scp:"$WORK/vad.ark,$D/vad.scp"
  run "$BATS_TEST_DIRNAME/../../egs/fsdd/local/sid_ubm.sh" --device="${SID_DEVICE:-cpu}" --nj 2 --num-threads 2 --num-iters 4 \
    --num-iters-init 10 --subsample 2 --full-iters 3 --num-gauss 32 "$D" "$WORK/diag" "$WORK/full"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -s "$WORK/diag/final.dubm" ] && [ -s "$WORK/full/final.ubm" ]
  grep -q "gmm-global-sum-accs - $WORK/diag/3.\*.acc|" "$WORK/diag/log/update.3.log"
  grep -q "Done [0-9]* files; 0 with errors" "$WORK/diag/log/acc.0.1.log"
  all="ark,s,cs:add-deltas --delta-window=3 --delta-order=2 scp:$D/feats.scp ark:- | apply-cmvn-sliding --norm-vars=false --center=true --cmn-window=300 ark:- ark:- | select-voiced-frames ark:- scp,s,cs:$D/vad.scp ark:- |"
  ours=$(overall fgmm-global-get-frame-likes "$WORK/full/final.ubm" "$all")
  ref=$(overall fgmm-global-get-frame-likes "$F/final.ubm" "$all")
  dours=$(overall gmm-global-get-frame-likes "$WORK/diag/final.dubm" "$all")
  dref=$(overall gmm-global-get-frame-likes "$F/final.dubm" "$all")
  echo "full: ours $ours, Kaldi's $ref; diag: ours $dours, Kaldi's $dref"
  python3 -c "
import sys
a, b, c, d = $ours, $ref, $dours, $dref
print('full %.4f%%, diag %.4f%%' % (100 * abs(a - b) / abs(b), 100 * abs(c - d) / abs(d)))
sys.exit(0 if abs(a - b) <= 0.005 * abs(b) and abs(c - d) <= 0.005 * abs(d) else 1)"
}
