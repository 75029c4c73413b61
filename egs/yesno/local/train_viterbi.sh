#!/usr/bin/env bash
# local/train_viterbi.sh -- connected yes/no word HMM-GMMs by Viterbi training
# (Kaldi's steps/train_mono.sh structure), beside local/train.sh (Baum-Welch):
#   hmm-init-topo: left-to-right "yes", "no" (--states) and a silence "sil"
#     (--sil-states, --sil-topology=ergodic: Kaldi's silence, inner states
#     connected to each other; or ltr)
#   --init=equal: every training file's frames split evenly over the states
#     of "sil W1 sil W2 ... Wn sil" (Kaldi's align-equal-compiled) -> gmm-init,
#     one Gaussian per pdf; --init=flat-bw: HTK's flat start (every pdf the
#     global mean/variance) and --init-bw-iters Baum-Welch passes (hmm-bw,
#     transitions re-estimated too), whose Viterbi alignment then starts the
#     Viterbi iterations
#   per iteration: realign on --realign-iters (gmm-score-gpu | hmm-viterbi
#     --transcripts --optional-silence=sil --silence-prob: the same optional
#     silence as decoding's loop; --edge-silence-prob=1: every file starts and
#     ends in silence, so no word model learns the leading/trailing silence)
#     -> gmm-est-gpu --label-type=ali, mixing up
#     linearly to --gauss per pdf over the first half of the iterations
#   --bw-iters=N: then N Baum-Welch iterations (hmm-bw, also re-estimating the
#     transitions) from the Viterbi-trained models
# Usage: local/train_viterbi.sh [options] <data-dir> <exp-dir>
# Options: --device=auto --states=5 --sil-states=5 --sil-topology=ergodic --gauss=8 --iters=30
#          --self-loop-prob=0.8 --silence-prob=0.5 --edge-silence-prob=1 --bw-iters=0
#          --init=equal|flat-bw --init-bw-iters=5 --words=FILE (one word a line; default yes, no)
#          --realign-iters="1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29"
# <data-dir> has feats.scp and text; writes <exp-dir>/final.{hmm,mdl}.
set -euo pipefail
device=auto; states=5; sil_states=5; sil_topo=ergodic; gauss=8; iters=30; self_loop=0.8; sil_prob=0.5; edge=1; bw_iters=0; init=equal; init_bw_iters=5; words=
realign_iters="1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29"
args=()
for a in "$@"; do
  case $a in
    --device=*) device=${a#*=} ;; --states=*) states=${a#*=} ;; --sil-states=*) sil_states=${a#*=} ;;
    --sil-topology=*) sil_topo=${a#*=} ;; --gauss=*) gauss=${a#*=} ;; --iters=*) iters=${a#*=} ;;
    --self-loop-prob=*) self_loop=${a#*=} ;; --silence-prob=*) sil_prob=${a#*=} ;; --bw-iters=*) bw_iters=${a#*=} ;;
    --edge-silence-prob=*) edge=${a#*=} ;; --words=*) words=${a#*=} ;; --init=*) init=${a#*=} ;; --init-bw-iters=*) init_bw_iters=${a#*=} ;;
    --realign-iters=*) realign_iters=${a#*=} ;;
    --*) echo "train_viterbi.sh: unknown option $a" >&2; exit 1 ;;
    *) args+=("$a") ;;
  esac
done
[ ${#args[@]} -eq 2 ] || { sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
data=${args[0]}; dir=${args[1]}
mkdir -p "$dir"
# words: --words FILE (one a line, HMM i = line i), default yes, no; pdfs word w, state k -> w*S + k
if [ -n "$words" ]; then grep -v '^ *$' "$words" > "$dir"/words.list; else printf 'yes\nno\n' > "$dir"/words.list; fi
nw=$(wc -l < "$dir"/words.list)
awk -v S="$states" '{ printf "%s", $1; for (k = 0; k < S; k++) printf " %d", (NR - 1) * S + k; print "" }' \
  "$dir"/words.list > "$dir"/words.txt
npdf=$((nw * states + sil_states))
hmm-init-topo --silence=sil --silence-states="$sil_states" --silence-topology="$sil_topo" --self-loop-prob="$self_loop" \
  "$dir"/words.txt "$dir"/0.hmm 2> "$dir"/init.log
# equal alignment over sil W1 sil ... Wn sil
feat-to-len scp:"$data"/feats.scp ark,t:- 2>/dev/null |
  awk -v S="$states" -v Z="$sil_states" -v NW="$nw" 'FILENAME == ARGV[1] { id[$1] = FNR - 1; next }
    FILENAME == ARGV[2] { txt[$1] = $0; next }
    { n = split(txt[$1], w, " "); K = 0
      for (k = 0; k < Z; k++) seq[K++] = NW * S + k
      for (i = 2; i <= n; i++) {
        if (!(w[i] in id)) { print "train_viterbi.sh: word " w[i] " of " $1 " not in the word list" > "/dev/stderr"; exit 1 }
        b = id[w[i]] * S; for (k = 0; k < S; k++) seq[K++] = b + k
        for (k = 0; k < Z; k++) seq[K++] = NW * S + k }
      T = $2; printf "%s", $1; for (t = 0; t < T; t++) printf " %d", seq[int(t * K / T)]; printf "\n" }' \
    "$dir"/words.list "$data"/text - | copy-int-vector ark,t:- ark:"$dir"/ali.ark 2>> "$dir"/init.log
if [ "$init" = flat-bw ]; then
  # HTK's flat start: every pdf the global mean and variance, then Baum-Welch
  # passes with single Gaussians; its Viterbi alignment starts the training.
  feat-to-len scp:"$data"/feats.scp ark,t:- 2>/dev/null |
    awk -v P=$npdf '{ printf "%s", $1
      for (t = 0; t < $2; t++) { printf " ["; for (p = 0; p < P; p++) printf " %d %.7g", p, 1 / P; printf " ]" }
      printf "\n" }' | copy-post ark,t:- ark:"$dir"/flat.post 2>> "$dir"/init.log
  gmm-init --device="$device" --num-gauss=1 --num-pdfs=$npdf --num-iters=0 --labels=ark:"$dir"/flat.post \
    --label-type=post scp:"$data"/feats.scp "$dir"/0.mdl 2>> "$dir"/init.log
  for k in $(seq 1 "$init_bw_iters"); do
    gmm-score-gpu --device="$device" "$dir"/0.mdl scp:"$data"/feats.scp ark:- 2>> "$dir"/init.log |
      hmm-bw --device="$device" --transcripts=ark,t:"$data"/text --optional-silence=sil --silence-prob="$sil_prob" \
        --edge-silence-prob="$edge" "$dir"/0.hmm ark:- ark:"$dir"/flat.post "$dir"/0.hmm 2>> "$dir"/init.log
    gmm-est-gpu --device="$device" --label-type=post "$dir"/0.mdl scp:"$data"/feats.scp ark:"$dir"/flat.post "$dir"/0.mdl \
      2>> "$dir"/init.log
  done
  rm -f "$dir"/flat.post
elif [ "$init" = equal ]; then
  gmm-init --device="$device" --num-gauss=1 --num-pdfs=$npdf --num-iters=0 --labels=ark:"$dir"/ali.ark \
    scp:"$data"/feats.scp "$dir"/0.mdl 2>> "$dir"/init.log
else
  echo "train_viterbi.sh: --init must be equal or flat-bw" >&2; exit 1
fi
mixup_iters=$(( iters / 2 )); [ $mixup_iters -ge 1 ] || mixup_iters=1
hmm=$dir/0.hmm; mdl=$dir/0.mdl
for it in $(seq 1 "$iters"); do
  target=0
  if [ "$it" -le $mixup_iters ] && [ "$gauss" -gt 1 ]; then
    target=$(( npdf + npdf * (gauss - 1) * it / mixup_iters ))
  fi
  if [[ " $realign_iters " == *" $it "* ]]; then
    gmm-score-gpu --device="$device" "$mdl" scp:"$data"/feats.scp ark:- 2> "$dir"/score."$it".log |
      hmm-viterbi --device="$device" --transcripts=ark,t:"$data"/text --optional-silence=sil --silence-prob="$sil_prob" --edge-silence-prob="$edge" \
        "$hmm" ark:- ark:"$dir"/ali.ark 2> "$dir"/align."$it".log
  fi
  gmm-est-gpu --device="$device" --label-type=ali --mix-up=$target "$mdl" scp:"$data"/feats.scp \
    ark:"$dir"/ali.ark "$dir"/"$it".mdl 2> "$dir"/est."$it".log
  [ "$it" -gt 1 ] && rm -f "$dir"/$((it - 1)).mdl
  mdl=$dir/$it.mdl
done
for k in $(seq 1 "$bw_iters"); do
  gmm-score-gpu --device="$device" "$mdl" scp:"$data"/feats.scp ark:- 2> "$dir"/score.bw"$k".log |
    hmm-bw --device="$device" --transcripts=ark,t:"$data"/text --optional-silence=sil --silence-prob="$sil_prob" --edge-silence-prob="$edge" "$hmm" ark:- \
      ark:"$dir"/post.ark "$dir"/bw"$k".hmm 2> "$dir"/bw."$k".log
  gmm-est-gpu --device="$device" --label-type=post "$mdl" scp:"$data"/feats.scp ark:"$dir"/post.ark "$dir"/bw"$k".mdl \
    2> "$dir"/est.bw"$k".log
  hmm=$dir/bw$k.hmm; mdl=$dir/bw$k.mdl
done
rm -f "$dir"/post.ark
cp "$hmm" "$dir"/final.hmm; cp "$mdl" "$dir"/final.mdl
echo "  trained: $(grep -o 'avg loglike per frame [-0-9.e+]*' "$dir"/est."$iters".log | tail -1), $(grep -o '[0-9]* Gaussians' "$dir"/est."$iters".log | tail -1)"
