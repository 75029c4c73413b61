#!/usr/bin/env bash
# local/decode.sh -- decode yes/no files with the word loop of a trained dir and score.
# Usage: local/decode.sh [--device=auto] [--word-penalty=20] [--acoustic-scale=1] [--feats=RSPEC] [--edge-silence=false]
#          [--loop-silence-prob=-1] <exp-dir> <data-dir> <decode-dir>
# Builds <exp-dir>'s loop (hmm-make-loop --edge-silence=$edge --silence=sil
# --silence-prob=<loop-silence-prob>: after a word, the silence with that probability;
# < 0: equal shares), decodes <data-dir>/feats.scp
# (or --feats), writes hyp.txt, ali.ark, per_utt and wer.txt to <decode-dir>; prints
# the %WER line.
set -euo pipefail
device=auto; wp=20; acwt=1; feats=""; edge=false; lsp=-1; args=()
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;; --word-penalty=*) wp=${a#*=} ;; --acoustic-scale=*) acwt=${a#*=} ;;
    --feats=*) feats=${a#*=} ;; --edge-silence=*) edge=${a#*=} ;; --loop-silence-prob=*) lsp=${a#*=} ;;
    --*) echo "decode.sh: unknown option $a" >&2; exit 1 ;;
    *) args+=("$a") ;;
  esac
done
[ ${#args[@]} -eq 3 ] || { sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
dir=${args[0]}; data=${args[1]}; d=${args[2]}
[ -n "$feats" ] || feats=scp:$data/feats.scp
mkdir -p "$d"
hmm-make-loop --edge-silence="$edge" --silence=sil --silence-prob="$lsp" --word-loop=loop --word-penalty="$wp" "$dir"/final.hmm "$d"/loop.hmm 2> "$d"/make-loop.log
hmm-viterbi --device="$device" --gmm="$dir"/final.mdl --acoustic-scale="$acwt" --hmm=loop \
  --words-wspecifier=ark,t:"$d"/hyp.txt "$d"/loop.hmm "$feats" ark:"$d"/ali.ark 2> "$d"/decode.log
compute-wer --text --mode=present --per-utt="$d"/per_utt ark:"$data"/text ark:"$d"/hyp.txt > "$d"/wer.txt 2> "$d"/wer.log
head -1 "$d"/wer.txt
