#!/usr/bin/env bash
# local/cv_experiment.sh -- choose the yes/no recipe's defaults by k-fold
# cross-validation over ALL 30 files of the corpus (240 words; yes/no has one
# speaker, so held-out files stand in for new recordings of that speaker):
# file i (sorted by name, i = 0..29) is in fold i % K; each fold's files are
# decoded with models trained on the other folds' files.  Nothing else is
# held out: the table says how each configuration does on recordings it was
# not trained on, and the recipe's defaults are the best configuration.
#
# Needs the features of run.sh (run.sh --work <work> --stop-stage 1 makes
# them; this script runs it if <work>/data/{train,test}_feats are missing).
# Configurations: --configs="name ..." from the list below (trainer options),
# each decoded with every word penalty of --penalties and every loop silence
# probability of --loop-sil (local/decode.sh; decoding is cheap, training is
# not).  The trainers are the recipe's: viterbi = local/train_viterbi.sh
# --init=flat-bw (run.sh --train viterbi), bw = steps/train_word_hmm.sh
# (run.sh --train bw).
#   vit            viterbi, 5 states per word, 5-state ergodic silence, 8 Gaussians, 30 iterations
#   vit-g4 vit-g2 vit-g1   the same with 4, 2, 1 Gaussians per pdf
#   vit-s3 vit-s8  3 or 8 states per word
#   vit-i15        15 iterations (realigning on 1..10, 12, 14)
#   vit-bw2        vit + 2 Baum-Welch iterations at the end (transitions re-estimated)
#   bw bw-g4 bw-g2 Baum-Welch, 3-state L-to-R silence, optional edge silence, 8/4/2 Gaussians
# Usage: local/cv_experiment.sh [--work=/tmp/gmmhmm-$USER/yesno-cv] [--device=cpu] [--folds=5]
#          [--configs="vit bw ..."] [--penalties="0 10 20 40"] [--loop-sil="-1 0.9 1"]
# Writes <work>/cv/<config>/fold<f>/..., appends one line per configuration,
# word penalty and loop silence probability to <work>/cv/results.txt:
#   config wp=P ls=S  fold errors e1 e2 .. eK  total E/240 (ins I del D sub S)  WER%
# and rewrites <work>/cv/results.md, the README's table of every line so far.
# --loop-sil -1 is hmm-make-loop's equal shares (no --silence-prob).  The
# README's tables: local/cv_experiment.sh --work=W with the defaults (9
# configurations x 4 penalties x 3 loops; about 40 minutes with --device=cpu on
# a 2-core machine shared with other jobs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(cd "$here/../.." && pwd); root=$(dirname "$egs")
export PATH="${GH_BIN:-$root/bin}:$PATH"
work=/tmp/gmmhmm-$(id -un)/yesno-cv; device=cpu; folds=5
configs="vit vit-g4 vit-g2 vit-s3 vit-s8 vit-i15 vit-bw2 bw bw-g4"; penalties="0 10 20 40"; loop_sil="-1 0.9 1"
for a in "$@"; do
  case $a in
    --work=*) work=${a#*=} ;; --device=*) device=${a#*=} ;; --configs=*) configs=${a#*=} ;;
    --folds=*) folds=${a#*=} ;; --penalties=*) penalties=${a#*=} ;; --loop-sil=*) loop_sil=${a#*=} ;;
    *) echo "cv_experiment.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
[ -s $work/data/test_feats/feats.scp ] ||
  "$egs"/yesno/run.sh --work $work --device $device --nj 1 --stop-stage 1 > /dev/null
cd $work   # the scp files name data/... relative to the work dir
cv=$work/cv; mkdir -p $cv
# all 30 files, sorted, and the folds
cat data/train_feats/feats.scp data/test_feats/feats.scp | LC_ALL=C sort > $cv/all.scp
cat data/train_feats/text data/test_feats/text | LC_ALL=C sort > $cv/all.text
n=$(wc -l < $cv/all.scp)
for f in $(seq 0 $((folds - 1))); do
  for s in train dev; do
    d=$cv/data/f$f/$s; mkdir -p $d
    awk -v f=$f -v K=$folds -v s=$s '((NR - 1) % K == f) == (s == "dev")' $cv/all.scp > $d/feats.scp
    awk 'NR == FNR { k[$1]; next } $1 in k' $d/feats.scp $cv/all.text > $d/text
    awk '{ print $1, $1 }' $d/feats.scp > $d/utt2spk; cp $d/utt2spk $d/spk2utt
  done
done
train_cfg() {  # train_cfg <config> <data-dir> <exp-dir>; echoes the decode edge-silence flag
  local c=$1 v="$here/train_viterbi.sh --nj 1 --device $device --init flat-bw"
  case $c in
    vit) $v $2 $3 ;;
    vit-g4) $v --gauss 4 $2 $3 ;;
    vit-g2) $v --gauss 2 $2 $3 ;;
    vit-g1) $v --gauss 1 $2 $3 ;;
    vit-s3) $v --states 3 $2 $3 ;;
    vit-s8) $v --states 8 $2 $3 ;;
    vit-i15) $v --iters 15 $2 $3 ;;
    vit-bw2) $v --bw-iters 2 $2 $3 ;;
    bw|bw-g4|bw-g2)
      local g=8; [ $c = bw-g4 ] && g=4; [ $c = bw-g2 ] && g=2
      printf 'yes\nno\n' > $cv/words.txt
      "$egs"/steps/train_word_hmm.sh --nj 1 --device $device --states 5 --silence sil --sil-states 3 --gauss $g \
        --iters 30 --flat-start global --skip-prob 0 --self-loop-prob 0.8 --mixup-start 8 --mixup-end 15 --seed 1 \
        --est-seed 0 $2 $cv/words.txt $3 ;;
    *) echo "cv_experiment.sh: unknown config $c" >&2; exit 1 ;;
  esac > $3.train.log 2>&1 || { echo "cv_experiment.sh: $c training failed, see $3.train.log" >&2; exit 1; }
  case $c in bw*) echo false ;; *) echo true ;; esac
}
out=$cv/results.txt
for c in $configs; do
  declare -A err=() ins=() del=() sub=()
  for f in $(seq 0 $((folds - 1))); do
    mkdir -p $cv/$c
    edge=$(train_cfg $c $cv/data/f$f/train $cv/$c/f$f)
    for wp in $penalties; do
      for ls in $loop_sil; do
        k=$wp/$ls
        line=$("$here"/decode.sh --device=$device --edge-silence=$edge --word-penalty=$wp --loop-silence-prob=$ls \
          $cv/$c/f$f $cv/data/f$f/dev $cv/$c/f$f/decode_wp${wp}_ls$ls)
        # %WER 1.25 [ 1 / 80, 0 ins, 1 del, 0 sub ]
        set -- $(echo "$line" | tr -d '[],' | awk '{ print $3, $6, $8, $10 }')
        err[$k]="${err[$k]:-} $1"; ins[$k]=$(( ${ins[$k]:-0} + $2 )); del[$k]=$(( ${del[$k]:-0} + $3 ))
        sub[$k]=$(( ${sub[$k]:-0} + $4 ))
      done
    done
  done
  for wp in $penalties; do
    for ls in $loop_sil; do
      k=$wp/$ls; tot=$(echo ${err[$k]} | awk '{ for (i = 1; i <= NF; i++) s += $i; print s }')
      printf "%-8s wp=%-3s ls=%-4s fold errors%s  total %3d/%d (ins %d del %d sub %d)  %5.2f%%\n" $c $wp $ls \
        "${err[$k]}" $tot $((n * 8)) ${ins[$k]} ${del[$k]} ${sub[$k]} \
        $(awk -v e=$tot -v n=$((n * 8)) 'BEGIN { print 100 * e / n }') | tee -a $out
    done
  done
  unset err ins del sub
done
# The README's table: every line of results.txt (all runs so far) as markdown.
awk 'BEGIN { print "| configuration | word penalty | loop silence prob | errors per fold | total (ins/del/sub) | WER |"
             print "|---|---|---|---|---|---|" }
  { c = $1; wp = substr($2, 4); ls = substr($3, 4); f = ""
    for (i = 6; $i != "total"; i++) f = f (f == "" ? "" : " ") $i
    tot = $(i + 1); ins = $(i + 3); del = $(i + 5); sub_ = $(i + 7); sub(/\)/, "", sub_)
    printf "| %s | %s | %s | %s | %s (%s/%s/%s) | %s |\n", c, wp, ls == "-1" ? "equal shares" : ls, f, tot, ins, del, sub_, $NF }' \
  $out > $cv/results.md
# ... and the compact one: per configuration, total errors (insertions) for every word penalty and
# loop silence probability.
awk '{ c = $1; k = substr($2, 4) "/" substr($3, 4); if (!(c in seen)) { seen[c]; cs[++nc] = c }
       if (!(k in seenk)) { seenk[k]; ks[++nk] = k }
       for (i = 6; $i != "total"; i++) ; e[c, k] = $(i + 1); sub(/\/.*/, "", e[c, k]); ins[c, k] = $(i + 3) }
  END { printf "\n| configuration |"; for (j = 1; j <= nk; j++) { split(ks[j], p, "/"); printf " wp %s, %s |", p[1], p[2] == "-1" ? "eq" : "ls " p[2] }
        printf "\n|---|"; for (j = 1; j <= nk; j++) printf "---|"; printf "\n"
        for (i = 1; i <= nc; i++) { printf "| %s |", cs[i]; for (j = 1; j <= nk; j++) printf " %s (%s) |", e[cs[i], ks[j]], ins[cs[i], ks[j]]; printf "\n" } }' \
  $out >> $cv/results.md
echo "cv_experiment.sh: $out, $cv/results.md"
