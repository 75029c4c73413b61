#!/usr/bin/env bash
# local/cv_experiment.sh -- pick yes/no training and decoding settings WITHOUT
# the test files: 4-fold cross-validation over the 20 training files (train on
# 15, decode the other 5; yes/no has one speaker, so held-out files play the
# part of a held-out speaker), then train each configuration on all 20 and
# decode the 10 test files once.
# Needs the features of run.sh (run.sh --work <work> --stop-stage 1 makes them;
# this script runs it if <work>/data/train_feats/feats.scp is missing).
# Configurations (trainer | options), each decoded with word penalties 0 10 20
# and with the loop's edge silence matching training:
#   bw        run.sh's training (steps/train_word_hmm.sh: flat start, Baum-Welch, 3-state L-to-R
#             silence, optional edge silence)
#   vit-eq    local/train_viterbi.sh --init=equal (Kaldi's equal alignment), 5-state ergodic silence, obligatory edge silence
#   vit-bw    local/train_viterbi.sh --init=flat-bw, 5-state ergodic silence, obligatory edge silence
#   vit-bw-ltr  the same with a 3-state L-to-R silence
#   vit-bw-opt  the same as vit-bw with optional edge silence (--edge-silence-prob=0.5)
#   vit-bw-s8   vit-bw with 8 states per word
#   vit-bw-sp9  vit-bw with silence between words taken with probability 0.9 (training graphs)
#   vit-bw-g4   vit-bw with 4 Gaussians per pdf;  vit-bw-sp9-g4  both
# Usage: local/cv_experiment.sh [--work=/tmp/adapt-work/yesno] [--device=cpu] [--configs="bw vit-bw ..."]
# Writes <work>/cv/results.<configs>.txt: one line per configuration and word penalty:
#   config wp  cv-errors/160 cv-WER  test-WER(ins/del/sub)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
work=/tmp/adapt-work/yesno; device=cpu; configs="bw vit-eq vit-bw vit-bw-ltr vit-bw-opt vit-bw-s8"
for a in "$@"; do
  case $a in
    --work=*) work=${a#*=} ;; --device=*) device=${a#*=} ;; --configs=*) configs=${a#*=} ;;
    *) echo "cv_experiment.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
[ -s "$work"/data/train_feats/feats.scp ] || "$root"/egs/yesno/run.sh --work "$work" --device "$device" --stop-stage 1 > /dev/null
cd "$work"   # the scp files name data/... relative to the work dir
cv=$work/cv; mkdir -p "$cv"
train_cfg() {  # train_cfg <config> <data-dir> <exp-dir>; echoes the decode edge flag
  local c=$1
  case $c in
    bw) printf 'yes\nno\n' > "$cv"/words.txt
        steps/train_word_hmm.sh --nj 1 --device "$device" --states 5 --silence sil --sil-states 3 --gauss 8 --iters 30 \
          --flat-start global --skip-prob 0 --self-loop-prob 0.8 --mixup-start 8 --mixup-end 15 --seed 1 --est-seed 0 \
          "$2" "$cv"/words.txt "$3" > /dev/null; echo false ;;
    vit-eq) "$here"/train_viterbi.sh --device="$device" --init=equal "$2" "$3" > /dev/null; echo true ;;
    vit-bw) "$here"/train_viterbi.sh --device="$device" --init=flat-bw "$2" "$3" > /dev/null; echo true ;;
    vit-bw-ltr) "$here"/train_viterbi.sh --device="$device" --init=flat-bw --sil-topology=ltr --sil-states=3 "$2" "$3" > /dev/null; echo true ;;
    vit-bw-opt) "$here"/train_viterbi.sh --device="$device" --init=flat-bw --edge-silence-prob=0.5 "$2" "$3" > /dev/null; echo false ;;
    vit-bw-s8) "$here"/train_viterbi.sh --device="$device" --init=flat-bw --states=8 "$2" "$3" > /dev/null; echo true ;;
    vit-bw-sp9) "$here"/train_viterbi.sh --device="$device" --init=flat-bw --silence-prob=0.9 "$2" "$3" > /dev/null; echo true ;;
    vit-bw-g4) "$here"/train_viterbi.sh --device="$device" --init=flat-bw --gauss=4 "$2" "$3" > /dev/null; echo true ;;
    vit-bw-sp9-g4) "$here"/train_viterbi.sh --device="$device" --init=flat-bw --silence-prob=0.9 --gauss=4 "$2" "$3" > /dev/null; echo true ;;
    *) echo "cv_experiment.sh: unknown config $c" >&2; exit 1 ;;
  esac
}
# folds: file i (sorted) goes to fold i % 4
for f in 0 1 2 3; do
  mkdir -p "$cv"/data/f$f/train "$cv"/data/f$f/dev
  awk -v f=$f '(NR - 1) % 4 != f' data/train_feats/feats.scp > "$cv"/data/f$f/train/feats.scp
  awk -v f=$f '(NR - 1) % 4 == f' data/train_feats/feats.scp > "$cv"/data/f$f/dev/feats.scp
  for s in train dev; do
    for x in text utt2spk; do
      awk 'NR == FNR { k[$1]; next } $1 in k' "$cv"/data/f$f/$s/feats.scp data/train_feats/$x > "$cv"/data/f$f/$s/$x
    done
    utils/utt2spk_to_spk2utt.sh "$cv"/data/f$f/$s/utt2spk > "$cv"/data/f$f/$s/spk2utt
  done
done
out=$cv/results.$(echo "$configs" | tr " " _).txt; : > "$out"
for c in $configs; do
  declare -A err=()
  for f in 0 1 2 3; do
    edge=$(train_cfg "$c" "$cv"/data/f$f/train "$cv"/"$c"/f$f)
    for wp in 0 10 20; do
      n=$("$here"/decode.sh --device="$device" --edge-silence="$edge" --word-penalty=$wp "$cv"/"$c"/f$f "$cv"/data/f$f/dev \
        "$cv"/"$c"/f$f/decode_dev_wp$wp | awk '{ print $4 }')
      err[$wp]=$(( ${err[$wp]:-0} + n ))
    done
  done
  edge=$(train_cfg "$c" data/train_feats "$cv"/"$c"/all)
  for wp in 0 10 20; do
    t=$("$here"/decode.sh --device="$device" --edge-silence="$edge" --word-penalty=$wp "$cv"/"$c"/all data/test_feats \
      "$cv"/"$c"/all/decode_test_wp$wp)
    printf "%-11s wp=%-3s cv %3d/160 errors (%5.2f%%)   test %s\n" "$c" $wp "${err[$wp]}" \
      $(awk -v e="${err[$wp]}" 'BEGIN { print 100 * e / 160 }') "$t" | tee -a "$out"
  done
  unset err
done
