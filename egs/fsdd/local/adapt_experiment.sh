#!/usr/bin/env bash
# local/adapt_experiment.sh -- speaker adaptation on FSDD, leave-one-speaker-out
# (results: ../RESULTS).  Every step a gmmhmm tool; shell/awk only for lists.
#
# For a held-out (test) speaker T and training speakers R (the other three):
#   si     speaker-independent per-digit HMM-GMMs (steps/train_word_hmm.sh, or
#          steps/train_word_hmm_viterbi.sh with --train=viterbi) on R
#   fmllr  two-pass decoding: decode T with si, align T's files to the
#          recognised digits (hmm-viterbi --transcripts), estimate one fMLLR
#          transform for T (gmm-est-fmllr --spk2utt, no labels of T used),
#          transform-feats, decode again; --passes re-estimates on the new
#          alignments
#   sat    speaker-adaptive training: one fMLLR transform per training speaker
#          (supervised alignments of the si model), models retrained on the
#          transformed features (--sat-iters rounds of transform + retrain),
#          then T decoded in two passes as for fmllr but against the sat model
#   map    MAP-adapt the si model's means to T (gmm-adapt-map --mean-tau, on
#          the first-pass alignments), decode again (one result per tau of
#          the comma-separated list)
#          (--map-passes=2: realign with the adapted model, adapt the si
#          model again); fmllr+map: MAP on the fMLLR-transformed features
# --sat-iters=0 skips SAT.  Columns: si, fmllrP (after pass P), mapTAU.P,
# fmllr+mapTAU, satP.
# --dev=true: the same on the TRAINING speakers only (for each of the 4
# outer folds, each of its 3 training speakers held out in turn, trained
# on the other 2): the accuracies used to pick settings; the test speaker
# of the outer fold is never seen.
# Usage: local/adapt_experiment.sh [--work=/tmp/adapt-work/fsdd] [--states=10]
#          [--gauss=2] [--iters=12] [--train=bw|viterbi] [--passes=2]
#          [--sat-iters=1] [--fmllr-iters=40] [--mean-tau=10[,20...]] [--map-passes=1] [--dev=false]
#          [--device=cpu] [--tag=NAME] [--speakers="george jackson nicolas yweweler"]
# (the RESULTS numbers for BW were made with steps/train_word_hmm.sh before
# the egs/ restructuring; it now runs the restructured one, --nj 1)
# Prints one line per fold and system, and the means.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
shared=${GH_SHARED:-$root/../shared}
wavdir=$shared/data/fsdd/recordings
work=/tmp/adapt-work/fsdd; states=10; gauss=2; iters=12; train=bw; passes=2; sat_iters=1
fmllr_iters=40; tau=10; map_passes=1; dev=false; device=cpu; tag=""
speakers="george jackson nicolas yweweler"
for a in "$@"; do
  case $a in
    --work=*) work=${a#*=} ;; --states=*) states=${a#*=} ;; --gauss=*) gauss=${a#*=} ;;
    --iters=*) iters=${a#*=} ;; --train=*) train=${a#*=} ;; --passes=*) passes=${a#*=} ;;
    --sat-iters=*) sat_iters=${a#*=} ;; --fmllr-iters=*) fmllr_iters=${a#*=} ;; --mean-tau=*) tau=${a#*=} ;; --map-passes=*) map_passes=${a#*=} ;;
    --dev=*) dev=${a#*=} ;; --device=*) device=${a#*=} ;; --tag=*) tag=${a#*=} ;;
    --speakers=*) speakers=${a#*=} ;;
    *) echo "adapt_experiment.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
[ -z "$tag" ] && tag=s${states}g${gauss}i${iters}-$train
mkdir -p $work/data
data=$work/data
if [ ! -s $data/feats.scp ]; then
  ext=wav; compgen -G "$wavdir/*.wav" > /dev/null || ext=flac   # the recordings as shipped: WAV or FLAC
  for f in "$wavdir"/*.$ext; do
    b=$(basename $f .$ext); IFS=_ read -r d s i <<< "$b"; echo "$s-$d-$i $f"
  done | sort > $data/wav.scp
  awk '{ split($1, a, "-"); print $1, a[2] }' $data/wav.scp > $data/utt2word
  awk '{ split($1, a, "-"); print $1, a[1] }' $data/wav.scp > $data/utt2spk
  awk '{ u[$2] = u[$2] " " $1 } END { for (s in u) print s u[s] }' $data/utt2spk | sort > $data/spk2utt
  compute-mfcc-feats --sample-frequency=8000 --dither=0 scp:$data/wav.scp ark:- 2> $data/mfcc.log |
    add-deltas ark:- ark,scp:$data/deltas.ark,$data/deltas.scp 2>> $data/mfcc.log
  compute-cmvn-stats --spk2utt=ark,t:$data/spk2utt scp:$data/deltas.scp ark:$data/cmvn.ark 2>> $data/mfcc.log
  apply-cmvn --norm-vars=true --utt2spk=ark,t:$data/utt2spk ark:$data/cmvn.ark scp:$data/deltas.scp \
    ark,scp:$data/feats.ark,$data/feats.scp 2>> $data/mfcc.log
fi

trainer() {  # trainer <feats-rspec> <utt2word> <dir>
  if [ $train = viterbi ]; then
    "$root"/egs/steps/train_word_hmm_viterbi.sh --device=$device --states=$states --gauss=$gauss --iters=$iters \
      "$1" "$2" 10 "$3" > "$3/train.out"
  else
    # steps/train_word_hmm.sh takes a data directory and words.txt (HMM i = digit i)
    local td=$3/data; mkdir -p $td
    case $1 in scp:*) cp ${1#scp:} $td/feats.scp ;; ark:*) copy-feats "$1" ark,scp:$td/feats.ark,$td/feats.scp 2>/dev/null ;; esac
    cp $2 $td/text
    awk '{ split($1, a, "-"); print $1, a[1] }' $td/feats.scp > $td/utt2spk
    awk '{ u[$2] = u[$2] " " $1 } END { for (s in u) print s u[s] }' $td/utt2spk | sort > $td/spk2utt
    seq 0 9 > $td/words.txt
    "$root"/egs/steps/train_word_hmm.sh --nj 1 --cmd "$root/egs/utils/run.sh" --device $device --states $states \
      --gauss $gauss --iters $iters $td $td/words.txt $3 > "$3/train.out"
  fi
}
decode() {  # decode <dir-with-final> <feats-rspec> <out-text>: "utt best-digit"; echoes accuracy
  hmm-forward --device=$device --gmm=$1/final.mdl $1/final.hmm "$2" ark,t:- 2>/dev/null |
    awk '{ best = -1; for (i = 3; i <= NF && $i != "]"; i++) if (best < 0 || $i + 0 > bv) { bv = $i + 0; best = i - 3 }
           print $1, best }' > $3
  awk 'NR == FNR { ref[$1] = $2; next } { n++; ok += ref[$1] == $2 } END { printf "%.2f", 100 * ok / n }' $data/utt2word $3
}
align() {  # align <dir> <feats-rspec> <text> <ali-out>
  hmm-viterbi --device=$device --gmm=$1/final.mdl --transcripts=ark,t:$3 $1/final.hmm "$2" ark:$4 2>/dev/null
}
fmllr() {  # fmllr <dir> <feats-rspec> <text> <spk2utt> <trans-out>
  align $1 "$2" $3 $5.ali
  gmm-est-fmllr --device=$device --fmllr-iters=$fmllr_iters --spk2utt=ark,t:$4 $1/final.mdl "$2" ark:$5.ali ark:$5 \
    2> $5.log
  rm -f $5.ali
}
apply() {  # apply <trans> <utt2spk> <feats-rspec> <out-ark>
  transform-feats --utt2spk=ark,t:$2 ark:$1 "$3" ark:$4 2>/dev/null
}

# one fold: train on speakers $1 (comma list), test on speaker $2, in dir $3
fold() {
  local trs=$1 ts=$2 d=$3
  mkdir -p $d/si
  awk -v L=",$trs," 'index(L, "," substr($1, 1, index($1, "-") - 1) ",")' $data/feats.scp > $d/train.scp
  grep "^$ts-" $data/feats.scp > $d/test.scp
  awk 'NR == FNR { k[$1]; next } $1 in k' $d/train.scp $data/utt2word > $d/train.text
  awk 'NR == FNR { k[$1]; next } $1 in k' $d/train.scp $data/utt2spk > $d/train.utt2spk
  awk '{ u[$2] = u[$2] " " $1 } END { for (s in u) print s u[s] }' $d/train.utt2spk | sort > $d/train.spk2utt
  awk 'NR == FNR { k[$1]; next } $1 in k' $d/test.scp $data/utt2spk > $d/test.utt2spk
  awk '{ u[$2] = u[$2] " " $1 } END { for (s in u) print s u[s] }' $d/test.utt2spk > $d/test.spk2utt
  trainer scp:$d/train.scp $d/train.text $d/si
  local a_si a_f a_sat a_map res
  a_si=$(decode $d/si scp:$d/test.scp $d/hyp.si)
  res="si $a_si"
  # fMLLR two-pass (unsupervised on the test speaker)
  local hyp=$d/hyp.si feats=scp:$d/test.scp
  for p in $(seq 1 $passes); do
    fmllr $d/si scp:$d/test.scp $hyp $d/test.spk2utt $d/trans.si.$p
    apply $d/trans.si.$p $d/test.utt2spk scp:$d/test.scp $d/test.fmllr.ark
    a_f=$(decode $d/si ark:$d/test.fmllr.ark $d/hyp.fmllr.$p); hyp=$d/hyp.fmllr.$p
    res="$res fmllr$p $a_f"
  done
  # MAP (means) on the first-pass alignments
  align $d/si scp:$d/test.scp $d/hyp.si $d/map.ali
  mkdir -p $d/map; cp $d/si/final.hmm $d/map/
  for t in ${tau//,/ }; do
    cp $d/map.ali $d/map.cur.ali
    for p in $(seq 1 $map_passes); do
      # pass p > 1: realign with the adapted model to its own hypotheses, adapt the si model again
      [ $p -gt 1 ] && align $d/map scp:$d/test.scp $d/hyp.map.$t.$((p - 1)) $d/map.cur.ali
      gmm-adapt-map --device=$device --mean-tau=$t $d/si/final.mdl scp:$d/test.scp ark:$d/map.cur.ali \
        $d/map/final.mdl 2>/dev/null
      a_map=$(decode $d/map scp:$d/test.scp $d/hyp.map.$t.$p)
      res="$res map$t.$p $a_map"
    done
  done
  # fMLLR (last pass's transform) then MAP of the si model on the transformed features
  align $d/si ark:$d/test.fmllr.ark $d/hyp.fmllr.$passes $d/fm.ali
  for t in ${tau//,/ }; do
    gmm-adapt-map --device=$device --mean-tau=$t $d/si/final.mdl ark:$d/test.fmllr.ark ark:$d/fm.ali \
      $d/map/final.mdl 2>/dev/null
    res="$res fmllr+map$t $(decode $d/map ark:$d/test.fmllr.ark $d/hyp.fmmap.$t)"
  done
  [ $sat_iters -gt 0 ] || { echo "$tag train=$trs test=$ts $res"; return; }
  # SAT
  local cur=$d/si trf=scp:$d/train.scp
  for k in $(seq 1 $sat_iters); do
    fmllr $cur scp:$d/train.scp $d/train.text $d/train.spk2utt $d/trans.train.$k
    apply $d/trans.train.$k $d/train.utt2spk scp:$d/train.scp $d/train.sat.ark
    mkdir -p $d/sat$k; trainer ark:$d/train.sat.ark $d/train.text $d/sat$k; cur=$d/sat$k
  done
  hyp=$d/hyp.si
  for p in $(seq 1 $passes); do
    fmllr $cur scp:$d/test.scp $hyp $d/test.spk2utt $d/trans.sat.$p
    apply $d/trans.sat.$p $d/test.utt2spk scp:$d/test.scp $d/test.sat.ark
    a_sat=$(decode $cur ark:$d/test.sat.ark $d/hyp.sat.$p); hyp=$d/hyp.sat.$p
    res="$res sat$p $a_sat"
  done
  echo "$tag train=$trs test=$ts $res"
}

all_speakers="george jackson nicolas yweweler"
out=$work/results.$tag.$([ $dev = true ] && echo dev || echo test).txt
: > $out
for ts in $speakers; do
  others=$(echo $all_speakers | tr ' ' '\n' | grep -vx $ts | tr '\n' ' ')
  if [ $dev = true ]; then
    for vs in $others; do
      trs=$(echo $others | tr ' ' '\n' | grep -vx $vs | paste -sd,)
      fold $trs $vs $work/$tag/dev-$ts-$vs | tee -a $out
    done
  else
    fold $(echo $others | tr ' ' ',') $ts $work/$tag/test-$ts | tee -a $out
  fi
done
awk '{ for (i = 4; i < NF; i += 2) { s[$i] += $(i + 1); n[$i]++ } }
     END { printf "mean over %d folds:", n["si"]; for (k in s) printf " %s %.2f", k, s[k] / n[k]; printf "\n" }' $out | tee -a $out
