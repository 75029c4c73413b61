#!/usr/bin/env bash
# bench/tri-model.sh -- the triphone model as a benchmark of real tied states (bench/RESULTS.md,
# "Triphone model"): gmm-train-tri --mono=true (drivers/train/am-train.h: the monophone and the
# triphone stage in one process) trains on cathy ($GH_SHARED/data/cathy, CMVN + deltas, 39 dims;
# --utts N takes the first N utterances, 0 all 1,582; --train-frames F > 0 lists them again
# under new keys and speakers up to F frames, 8,640,000 = 24 hours), then that model (--leaves tied states, --gauss Gaussians) scores, accumulates and aligns
# cathy replicated to --frames frames (the utterances listed again under new keys, pointing at one
# archive of the features: nothing is copied).  Rows:
#   tri train   whole-job seconds (read -> mono passes -> tree -> tri passes -> written models),
#               the monophone stage's and the tree stage's (tree statistics, questions, tree,
#               model, convert-ali, graphs) seconds, pdfs, Gaussians, the last pass's
#               log-likelihood per frame
#   tri score   gmm-score-gpu over every (frame, pdf) pair, written to ark:/dev/null: whole
#               seconds, frames/s, the loglikes kernel's frames/s, the shares of pairs on each
#               arithmetic path (kernels/backend.h GH_PATH_*: fp32 whitened cand double host)
#   tri estep   gmm-acc-stats-ali with the trained model's alignments (one pdf per frame):
#               whole and E-step seconds, frames/s, path shares
#   tri align   gmm-align-compiled over the replicated utterances' triphone graphs, per --align
#               mode (beam: Kaldi's beam 10 / retry 40, scored on the device and decoded on the
#               host; exact: the batched exact aligner on the device): seconds, frames/s
#   tri peer    where CUDA torch is there (--peer true): bench/tri_torch_peer.py on the same
#               features, model and alignments -- every pdf's Gaussians as one padded GEMM batch
#               and a logsumexp (scoring), the aligned pdf's Gaussians gathered per frame and
#               the statistics added with index_add_ (E-step), float32, TF32 off -- and the
#               ratios against our rows.
# Usage (from anywhere, tools built):
#   GH_SHARED=/path/to/shared bench/tri-model.sh [--device cuda] [--utts 0] [--train-frames 0] [--leaves 2000]
#     [--gauss 10000] [--mono-gauss 1000] [--frames 8000000] [--align "beam exact"]
#     [--peer true] [--work /tmp/gmmhmm-bench-tri]
# Small CPU run (bench/RESULTS.md gives its rows as 2-core VM numbers):
#   bench/tri-model.sh --device cpu --utts 300 --leaves 300 --gauss 1500 --mono-gauss 300 \
#     --frames 200000 --peer false
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="${GH_BIN:-$root/bin}:$PATH" LC_ALL=C
shared=${GH_SHARED:-$root/../shared}
device=cuda; utts=0; train_frames=0; leaves=2000; gauss=10000; mono_gauss=1000; frames=8000000; align="beam exact"
peer=true; work=/tmp/gmmhmm-bench-tri
. "$root/egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "tri-model.sh: unexpected argument $1" >&2; exit 1; }
D=$shared/data/cathy
[ -f "$D/feats.scp" ] || { echo "tri-model.sh: missing $D/feats.scp (set GH_SHARED)" >&2; exit 1; }
for t in gmm-train-mono gmm-train-tri gmm-score-gpu gmm-acc-stats-ali gmm-align-compiled compile-train-graphs \
  apply-cmvn add-deltas ali-to-pdf copy-int-vector prepare-lang; do
  command -v $t > /dev/null || { echo "tri-model.sh: $t not built (make in $root)" >&2; exit 1; }
done
mkdir -p "$work"; cd "$work"
mkdir -p utils
for f in "$shared"/kaldi-scripts/utils/*; do ln -sfn "$f" utils/; done
for f in "$root"/egs/utils/*; do ln -sfn "$f" utils/; done
export PATH="$PWD/utils:$PATH"
now() { date +%s.%N; }
since() { awk -v a=$1 -v b=$(now) 'BEGIN { printf "%.3f", b - a }'; }
echo "tri-model.sh: device $device, $leaves leaves, $gauss Gaussians, $frames frames, in $work ($(date -u));" \
  "$(nproc) cores; $(nvidia-smi -L 2>/dev/null | tr '\n' ';')"

# ---- data: cathy (or its first --utts utterances), the lang directory ----
if [ ! -f data/lang/L.fst ]; then
  mkdir -p data/local; rm -rf data/local/dict; cp -r "$D/dict" data/local/dict
  utils/prepare_lang.sh data/local/dict "<UNK>" data/local/lang_tmp data/lang > prepare_lang.log 2>&1
fi
rm -rf data/train; mkdir -p data/train
if [ "$utts" -gt 0 ]; then head -n "$utts" "$D/text"; else cat "$D/text"; fi > data/train/text.0
feat-to-len "scp:sed 's| feats.ark:| $D/feats.ark:|' $D/feats.scp |" ark,t:- 2> /dev/null > cathy.len
cmvn=$(awk '$1 == "cathy" {sub(/^cmvn.ark:/, "", $2); print $2}' "$D/cmvn.scp")
# copy c of an utterance: key r<c>-<key>, speaker r<c>-cathy-arctic_<a|b>; one copy unless --train-frames
awk -v want=$train_frames -v D="$D" -v cmvn="$D/cmvn.ark:$cmvn" '
  FILENAME == ARGV[1] { len[$1] = $2; next }
  FILENAME == ARGV[2] { loc[$1] = $2; sub(/^feats.ark:/, D "/feats.ark:", loc[$1]); next }
  { keys[++n] = $1; text[$1] = $0; base += len[$1] }
  END {
    if (want <= 0) want = base
    got = 0
    for (c = 1; got < want; c++)
      for (i = 1; i <= n && got < want; i++) {
        k = keys[i]; u = sprintf("r%03d-%s", c, k); s = sprintf("r%03d-cathy-%s", c, substr(k, 7, 8))
        t = text[k]; sub(/^[^ ]*/, u, t); print t > "data/train/text"
        print u, loc[k] > "data/train/feats.scp"; print u, s > "data/train/utt2spk"
        if (!(s in seen)) { seen[s] = 1; print s, cmvn > "data/train/cmvn.scp" }
        got += len[k]
      }
  }' cathy.len "$D/feats.scp" data/train/text.0
sort -o data/train/cmvn.scp data/train/cmvn.scp
utils/utt2spk_to_spk2utt.pl data/train/utt2spk > data/train/spk2utt

# ---- training: mono, then tri, in one process ----
rm -rf exp/mono exp/tri
t0=$(now)
gmm-train-tri --device=$device --mono=true --mono-totgauss=$mono_gauss $leaves $gauss data/train data/lang \
  exp/mono exp/tri 2> tri.log || { echo "tri train: gmm-train-tri failed ($work/tri.log)"; tail -3 tri.log; exit 1; }
t_all=$(since $t0)
nfr=$(grep -v '^#' exp/tri/log/train.log | tail -1 | awk '{print $3}')
pdfs=$(sed -n 's/^# tree: \([0-9]*\) pdfs.*/\1/p' exp/tri/log/train.log)
part() { awk -v k=$1 '/^# total/ { for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' exp/tri/log/train.log; }
ng=$(grep -v '^#' exp/tri/log/train.log | tail -1 | awk '{print $4}')
ll=$(grep -v '^#' exp/tri/log/train.log | tail -1 | awk '{print $2}')
echo "tri train utts=$(wc -l < data/train/text) frames=$nfr device=$device: whole_s=$t_all mono_s=$(part mono)" \
  "tree_s=$(part tree) tri_align_s=$(part align) tri_estep_s=$(part estep) pdfs=$pdfs gauss=$ng avg_loglike=$ll"

# ---- the replicated set: features once (CMVN + deltas), keys listed again up to --frames ----
grep '^r001-' data/train/feats.scp > base.in.scp
apply-cmvn --utt2spk=ark:data/train/utt2spk scp:data/train/cmvn.scp scp:base.in.scp ark:- 2> /dev/null |
  add-deltas ark:- ark,scp:$work/base.ark,base.scp 2> /dev/null
feat-to-len scp:base.scp ark,t:base.len 2> /dev/null
gunzip -c exp/tri/ali.*.gz | copy-int-vector ark:- ark,t:base.ali 2> /dev/null
rm -rf rep; mkdir -p rep
awk -v want=$frames -v out=rep '
  FILENAME == ARGV[1] { len[$1] = $2; next }
  FILENAME == ARGV[2] { ali[$1] = $0; next }
  FILENAME == ARGV[3] { text[$1] = $0; next }
  ($1 in ali) { keys[++n] = $1; loc[$1] = $2 }
  END {
    got = 0
    for (c = 1; got < want && n > 0; c++)
      for (i = 1; i <= n && got < want; i++) {
        k = keys[i]; u = sprintf("r%03d-%s", c, k)
        print u, loc[k] > (out "/feats.scp")
        a = ali[k]; sub(/^[^ ]*/, u, a); print a > (out "/ali.txt")
        t = text[k]; sub(/^[^ ]*/, u, t); print t > (out "/text")
        got += len[k]
      }
    print got > (out "/frames")
  }' base.len base.ali data/train/text base.scp
nrep=$(cat rep/frames)
oov=$(cat data/lang/oov.int)
utils/sym2int.pl --map-oov $oov -f 2- data/lang/words.txt < rep/text > rep/text.int
cat base.ark > /dev/null

# ---- scoring: every (frame, pdf) pair ----
shares() {  # shares <log>: fp32=.. whitened=.. cand=.. double=.. host=.. from the last "paths:" line
  local p=$(grep -o 'paths: .*' "$1" | tail -1)
  awk -v s="$p" 'BEGIN { n = split("fp32 whitened cand double host", k, " ")
    for (i = 1; i <= n; i++) { v = "-"; if (match(s, k[i] " [0-9.e+-]+%")) v = substr(s, RSTART + length(k[i]) + 1, RLENGTH - length(k[i]) - 1)
      printf "%s%s=%s", (i > 1 ? " " : ""), k[i], v } }'
}
score_w=-; estep_e=-
t0=$(now)
if gmm-score-gpu --device=$device --verbose=1 exp/tri/final.mdl scp:rep/feats.scp ark:/dev/null 2> score.log; then
  w=$(since $t0); score_w=$w
  kfps=$(sed -n 's/.*loglikes kernel alone \([0-9.e+]*\) frames\/s.*/\1/p' score.log | tail -1)
  echo "tri score pdfs=$pdfs gauss=$ng frames=$nrep device=$device: whole_s=$w" \
    "frames_per_s=$(awk -v n=$nrep -v w=$w 'BEGIN { printf "%.4g", n / w }') kernel_frames_per_s=${kfps:--}" \
    "$(shares score.log)"
else echo "tri score: gmm-score-gpu failed ($work/score.log)"; tail -2 score.log; fi

# ---- E-step: the aligned pdf of every frame ----
t0=$(now)
if gmm-acc-stats-ali --device=$device --verbose=1 exp/tri/final.mdl scp:rep/feats.scp ark:rep/ali.txt /dev/null \
  2> estep.log; then
  w=$(since $t0)
  e=$(sed -n 's/.*E-step \([0-9.]*\) s over.*/\1/p' estep.log | tail -1); estep_e=${e:--}
  echo "tri estep pdfs=$pdfs gauss=$ng frames=$nrep device=$device: whole_s=$w estep_s=${e:--}" \
    "estep_frames_per_s=$(awk -v n=$nrep -v e=${e:-0} 'BEGIN { if (e > 0) printf "%.4g", n / e; else print "-" }')" \
    "$(shares estep.log)"
else echo "tri estep: gmm-acc-stats-ali failed ($work/estep.log)"; tail -2 estep.log; fi

# ---- alignment: the triphone graphs of the replicated utterances ----
if [ -n "$align" ]; then
  compile-train-graphs --read-disambig-syms=data/lang/phones/disambig.int exp/tri/tree exp/tri/final.mdl \
    data/lang/L.fst ark:rep/text.int ark:rep/fsts 2> graphs.log
  for mode in $align; do
    case $mode in
      beam) opts=(--beam=10 --retry-beam=40) ;;
      exact) opts=(--exact) ;;
      *) echo "tri align: unknown mode $mode (beam, exact)"; continue ;;
    esac
    t0=$(now)
    if gmm-align-compiled --device=$device "${opts[@]}" --transition-scale=1.0 --acoustic-scale=0.1 \
      --self-loop-scale=0.1 exp/tri/final.mdl ark:rep/fsts scp:rep/feats.scp ark:/dev/null 2> align.$mode.log; then
      w=$(since $t0)
      echo "tri align $mode pdfs=$pdfs frames=$nrep device=$device: whole_s=$w" \
        "frames_per_s=$(awk -v n=$nrep -v w=$w 'BEGIN { printf "%.4g", n / w }')"
    else echo "tri align $mode: gmm-align-compiled failed ($work/align.$mode.log)"; tail -2 align.$mode.log; fi
  done
fi

# ---- the PyTorch peer ----
if [ "$peer" = true ] && [ "$device" != cpu ] &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  gmm-copy --binary=false exp/tri/final.mdl final.txt 2> /dev/null
  ali-to-pdf exp/tri/final.mdl ark:rep/ali.txt ark,t:rep/pdf.txt 2> /dev/null
  if j=$(python3 "$root/bench/tri_torch_peer.py" final.txt rep/feats.scp rep/pdf.txt "$score_w" "$estep_e" 2> peer.log | tail -1) && [ -n "$j" ]; then
    echo "tri peer pdfs=$pdfs gauss=$ng frames=$nrep: $j"
  else echo "tri peer: failed ($work/peer.log)"; tail -2 peer.log; fi
else
  echo "tri peer: skipped (device $device, --peer $peer; the peer needs CUDA torch)"
fi
