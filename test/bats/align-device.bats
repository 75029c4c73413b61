#!/usr/bin/env bats
# The batched exact aligner (gmm-align-compiled --exact on a --device: backend.h align_batch,
# drivers/align/align-batch.c) on the cathy data with Kaldi's mono/final.mdl
# ($GH_SHARED/data/kaldi-fixtures/align) and graphs from our compile-train-graphs: alignments,
# scores and per-frame log-likelihoods byte-identical to lib/decoder's one-utterance exact
# decoder (--batch-size=0) on the CPU backend and on $ALIGN_DEVICE (default opencl: PoCL here;
# test/run-gpu.sh runs this file with ALIGN_DEVICE=cuda); a long utterance made by
# concatenating 30 utterances and their transcripts (1.5 minutes of audio; test_align.c checks 40,000 frames) aligned with
# checkpointed back-pointers equals the whole back-pointers; the GMMs of a block of utterances scored
# in one backend call (--block-frames) and searched on the OpenMP threads give the per-utterance
# calls' bytes in both modes.

setup_file() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export GH_SHARED ROOT BIN
  export W=$BATS_FILE_TMPDIR/w
  D=$GH_SHARED/data/cathy F=$GH_SHARED/data/kaldi-fixtures/align
  mkdir -p "$W" && cd "$W"
  export PATH=$BIN:$PATH LC_ALL=C
  # 300 utterances (of 1582), features as align_si.sh makes them
  head -n 300 "$D/feats.scp" | sed "s| feats.ark:| $D/feats.ark:|" > feats.scp
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > cmvn.scp
  "$BIN/apply-cmvn" --utt2spk=ark:"$D/utt2spk" scp:cmvn.scp scp:feats.scp ark:- 2>/dev/null |
    "$BIN/add-deltas" ark:- ark,scp:feats.ark,feats39.scp 2>/dev/null
  cut -d' ' -f1 feats.scp > keys
  awk 'NR == FNR {k[$1] = 1; next} $1 in k' keys "$D/text" |
    awk 'NR == FNR {id[$1] = $2; next} {printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", id[$i]; print ""}' \
      "$F/lang/words.txt" - > int.txt
  MDL=$F/mono/final.mdl
  compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/mono/tree" "$MDL" \
    "gunzip -c $F/lang/L.fst.gz|" ark:int.txt ark:graphs.ark 2>/dev/null
  # the long utterance: the first 30 utterances end to end (8,910 frames, 7,590 states)
  head -n 30 int.txt | awk '{for (i = 2; i <= NF; i++) w = w " " $i} END {print "long" w}' > long.int
  python3 - <<'PY'
import kaldiio, numpy as np
keys = [l.split()[0] for l in open("int.txt")][:30]
feats = dict(kaldiio.load_ark("feats.ark"))
kaldiio.save_ark("long.ark", {"long": np.concatenate([feats[k] for k in keys])})
PY
  compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/mono/tree" "$MDL" \
    "gunzip -c $F/lang/L.fst.gz|" ark:long.int ark:long.fsts 2>/dev/null
}

setup() {
  cd "$W"
  export PATH=$BIN:$PATH LC_ALL=C
  F=$GH_SHARED/data/kaldi-fixtures/align
  MDL=$F/mono/final.mdl
  SCALES="--transition-scale=1.0 --acoustic-scale=0.1 --self-loop-scale=0.1"
  DEV=${ALIGN_DEVICE:-opencl}
}

align() { # <name> <options...>: alignments, scores and per-frame log-likelihoods as text
  local n=$1; shift
  gmm-align-compiled $SCALES --exact "$@" "$MDL" ark:graphs.ark ark:feats.ark ark,t:$n.ali ark,t:$n.scores \
    --write-per-frame-acoustic-loglikes=ark,t:$n.frames 2> $n.log
}

@test "gmm-align-compiled --exact: the batched aligner on cpu = the one-utterance decoder, byte for byte" {
  [ -f one.ali ] || align one --device=cpu --batch-size=0
  align cpu --device=cpu
  grep -q 'Done 300, errors on 0' cpu.log
  cmp one.ali cpu.ali
  cmp one.scores cpu.scores
  cmp one.frames cpu.frames
  grep 'Overall' one.log | sed 's/.*LOG: //' > a; grep 'Overall' cpu.log | sed 's/.*LOG: //' > b; cmp a b
}

@test "gmm-align-compiled --exact --device=\$ALIGN_DEVICE: the CPU's alignments, scores and frame log-likelihoods" {
  [ -f one.ali ] || align one --device=cpu --batch-size=0
  align dev --device=$DEV --batch-size=64
  grep -q 'Done 300, errors on 0' dev.log
  cmp one.ali dev.ali
  cmp one.scores dev.scores
  cmp one.frames dev.frames
}

@test "gmm-align-compiled --exact: a 1.5-minute utterance, checkpointed back-pointers = whole ones (cpu and device)" {
  T=$(feat-to-len ark:long.ark ark,t:- 2>/dev/null | awk '{print $2}')
  [ "$T" -gt 8000 ]
  for dev in cpu $DEV; do
    for k in 0 150; do
      gmm-align-compiled $SCALES --exact --device=$dev --checkpoint-interval=$k "$MDL" ark:long.fsts ark:long.ark \
        ark,t:long.$dev.$k.ali ark,t:long.$dev.$k.sc 2> long.$dev.$k.log
      grep -q 'Done 1, errors on 0' long.$dev.$k.log
    done
    cmp long.$dev.0.ali long.$dev.150.ali
    cmp long.$dev.0.sc long.$dev.150.sc
  done
  cmp long.cpu.0.ali long.$DEV.0.ali
  cmp long.cpu.0.sc long.$DEV.0.sc
  # --max-bp-memory in MB: a budget smaller than T x S back-pointers checkpoints by itself
  gmm-align-compiled $SCALES --exact --device=cpu --max-bp-memory=1 "$MDL" ark:long.fsts ark:long.ark \
    ark,t:long.mem.ali 2>/dev/null
  cmp long.cpu.0.ali long.mem.ali
  # the one-utterance decoder: the same path, the same score
  gmm-align-compiled $SCALES --exact --batch-size=0 --device=cpu "$MDL" ark:long.fsts ark:long.ark \
    ark,t:long.one.ali ark,t:long.one.sc 2>/dev/null
  cmp long.cpu.0.ali long.one.ali
  cmp long.cpu.0.sc long.one.sc
}

@test "gmm-align-compiled --exact: too few frames fail with Kaldi's line, the others align; bad options exit 1" {
  # utterance 1's features cut to 5 frames: no final state reachable
  k=$(head -n 1 keys)
  python3 -c '
import kaldiio
f = dict(kaldiio.load_ark("feats.ark")); k = "'$k'"; f[k] = f[k][:5]
kaldiio.save_ark("short.ark", f)'
  run gmm-align-compiled $SCALES --exact --device=$DEV "$MDL" ark:graphs.ark ark:short.ark ark,t:short.ali
  [ "$status" -eq 0 ]
  [[ "$output" == *"Did not successfully decode file $k, len = 5"* ]]
  [[ "$output" == *"Done 299, errors on 1"* ]]
  [ "$(wc -l < short.ali)" -eq 299 ]
  run gmm-align-compiled --exact --batch-size=-1 "$MDL" ark:graphs.ark ark:feats.ark ark:/dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == *"--batch-size"* ]]
}

@test "gmm-align-compiled: a block scored in one call and searched on the threads = one utterance at a time (beam, exact; cpu, device)" {
  # --block-frames=1: each utterance alone in its backend call (the per-utterance scoring); 2000: blocks of
  # several utterances, a block boundary inside the archive; default (65536): all 300 utterances in few calls
  for dev in cpu $DEV; do
    for mode in "--beam=10 --retry-beam=40" "--exact"; do
      for bf in 1 2000 65536; do
        gmm-align-compiled $SCALES $mode --device=$dev --block-frames=$bf "$MDL" ark:graphs.ark ark:feats.ark \
          ark,t:blk.$bf.ali ark,t:blk.$bf.scores --write-per-frame-acoustic-loglikes=ark,t:blk.$bf.frames 2> blk.$bf.log
        grep -q 'Done 300, errors on 0' blk.$bf.log
        grep -E 'Log-like per frame|Overall|Retried' blk.$bf.log | sed 's/.*LOG[^:]*: //' > blk.$bf.lines
      done
      # the block's searches on one thread instead of all (each utterance's result is its own)
      OMP_NUM_THREADS=1 gmm-align-compiled $SCALES $mode --device=$dev "$MDL" ark:graphs.ark ark:feats.ark \
        ark,t:blk.t1.ali ark,t:blk.t1.scores --write-per-frame-acoustic-loglikes=ark,t:blk.t1.frames 2> blk.t1.log
      grep -E 'Log-like per frame|Overall|Retried' blk.t1.log | sed 's/.*LOG[^:]*: //' > blk.t1.lines
      for bf in 2000 65536 t1; do
        cmp blk.1.ali blk.$bf.ali
        cmp blk.1.scores blk.$bf.scores
        cmp blk.1.frames blk.$bf.frames
        cmp blk.1.lines blk.$bf.lines
      done
      [ "$(wc -l < blk.1.lines)" -eq 302 ]
    done
  done
  run gmm-align-compiled --block-frames=0 "$MDL" ark:graphs.ark ark:feats.ark ark:/dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == *"--block-frames must be >= 1 (got 0)"* ]]
}
