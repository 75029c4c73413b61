#!/usr/bin/env bash
# egs/cathy/run.sh -- forced alignment of the cathy corpus ($GH_SHARED/data/cathy:
# one US English speaker reading CMU ARCTIC prompts, 1,582 utterances, a
# CMUdict-based dictionary in dict/): its data directory with the shipped
# 13-dim MFCCs (feats.scp, Kaldi's compute-mfcc-feats --use-energy=false), or
# with --mfcc true the 20 FLAC clips of wav.scp through our compute-mfcc-feats,
# then egs/align/run.sh: lang -> CMVN + deltas -> monophone training (Kaldi's
# train_mono.sh schedule) -> alignment -> phones.ctm, words.ctm,
# textgrid/<utt>.TextGrid and failures.txt in <work>/out.
#
# Options (--name value or --name=value):
#   --work DIR [/tmp/gmmhmm-$USER/cathy]  --nj 4  --cmd utils/run.sh  --device auto
#   --subset N  the first N utterances only (0: all)   --mfcc false
#   --num-iters 40  --totgauss 1000  --stage 0  (egs/align/run.sh's stages)
#   --model DIR  no training: align with DIR/final.mdl and DIR/tree (egs/align/run.sh --model)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(dirname "$here"); root=$(dirname "$egs")
shared=${GH_SHARED:-$root/../shared}
src=$shared/data/cathy
work=/tmp/gmmhmm-$(id -un)/cathy
nj=4; cmd=utils/run.sh; device=auto; subset=0; mfcc=false; num_iters=40; totgauss=1000; stage=0; model=
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "run.sh: unexpected argument $1 (options are --name value)" >&2; exit 1; }
[ -f "$src/text" ] || { echo "run.sh: no cathy corpus in $src (set GH_SHARED)" >&2; exit 1; }
mkdir -p "$work"; work=$(cd "$work" && pwd)
d=$work/data/cathy
if [ $stage -le 0 ]; then
  rm -rf "$d"; mkdir -p "$d"
  if $mfcc; then   # the clips that have audio: our compute-mfcc-feats in egs/align's stage 1
    awk -v s="$src" '{ print $1, s "/" $2 }' "$src/wav.scp" > "$d/wav.scp"
  else
    awk -v s="$src" '{ sub(/^feats.ark:/, s "/feats.ark:", $2); print }' "$src/feats.scp" > "$d/feats.scp"
  fi
  keys=$(awk '{ print $1 }' "$d"/*.scp)
  [ "$subset" -eq 0 ] || keys=$(echo "$keys" | head -n "$subset")
  for f in text utt2spk; do
    awk 'NR == FNR { k[$1]; next } $1 in k' <(echo "$keys") "$src/$f" > "$d/$f"
  done
  for f in "$d"/*.scp; do awk 'NR == FNR { k[$1]; next } $1 in k' <(echo "$keys") "$f" > "$f.tmp"; mv "$f.tmp" "$f"; done
  "$egs/utils/utt2spk_to_spk2utt.sh" "$d/utt2spk" > "$d/spk2utt"
  echo "run.sh: cathy data directory $d: $(wc -l < "$d/text") utterances ($($mfcc && echo "FLAC, our MFCCs" || echo "shipped MFCCs"))"
fi
"$egs/align/run.sh" --data "$d" --dict "$src/dict" --out "$work/out" --work "$work/align" --nj $nj --cmd "$cmd" \
  --device $device --num-iters $num_iters --totgauss $totgauss --stage $stage ${model:+--model "$model"}
