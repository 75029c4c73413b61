#!/usr/bin/env bash
# local/train_viterbi.sh -- connected yes/no word HMM-GMMs by Viterbi training
# (Kaldi's steps/train_mono.sh structure), as --nj jobs through --cmd, beside
# steps/train_word_hmm.sh (Baum-Welch):
#   hmm-init-topo: left-to-right "yes", "no" (--states) and a silence "sil"
#     (--sil-states, --sil-topology=ergodic: Kaldi's silence, inner states
#     connected to each other; or ltr)
#   --init=equal: every training file's frames split evenly over the states
#     of "sil W1 sil W2 ... Wn sil" (Kaldi's align-equal-compiled) -> gmm-init,
#     one Gaussian per pdf; --init=flat-bw: HTK's flat start (every pdf the
#     global mean/variance) and --init-bw-iters Baum-Welch passes (hmm-bw,
#     transitions re-estimated too), whose Viterbi alignment then starts the
#     Viterbi iterations
#   per iteration: realign on --realign-iters (--nj jobs of hmm-viterbi --gmm
#     --transcripts --optional-silence=sil --silence-prob: the
#     same optional silence as decoding's loop; --edge-silence-prob=1: every
#     file starts and ends in silence, so no word model learns the leading/
#     trailing silence), --nj jobs of gmm-acc-stats-gpu --label-type=ali ->
#     gmm-sum-accs -> gmm-est, mixing up linearly to --gauss per pdf over the
#     first half of the iterations (gmm-est --seed for the mix-up)
#   --bw-iters=N: then N Baum-Welch iterations (hmm-bw --write-accs and
#     gmm-acc-stats-gpu --label-type=post as --nj jobs -> hmm-est, gmm-est)
# --ranks N (default 1): the Baum-Welch passes and the Viterbi iterations each
# run as ONE resident job (hmm-train --mode=bw|viterbi: features read once,
# graphs compiled once) of N MPI ranks started by --cmd (utils/run.sh: mpirun,
# utils/slurm.sh: srun); --ranks 0: the per-iteration --nj jobs above.
# Every step runs through --cmd (utils/run.sh, utils/slurm.sh) with its log in
# <exp-dir>/log/ (Kaldi's header lines "# command", "# Started at ...",
# "# Ended (code N) at ..."); the data directory is split into --nj parts by
# utils/split_data.sh (per utterance when it has fewer speakers than jobs).
# Usage: local/train_viterbi.sh [options] <data-dir> <exp-dir>
# Options (--name value or --name=value):
#   --nj 2 --cmd utils/run.sh --seed 1 --device auto --ranks 1
#   --states 5 --sil-states 5 --sil-topology ergodic --gauss 8 --iters 30
#   --self-loop-prob 0.8 --silence-prob 0.5 --edge-silence-prob 1 --bw-iters 0
#   --init equal|flat-bw --init-bw-iters 5 --words FILE (one word a line; default yes, no)
#   --realign-iters "1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29"
# <data-dir> has feats.scp, text (and utt2spk); writes <exp-dir>/final.{hmm,mdl}
# and <exp-dir>/loglike.txt (iteration, average log-likelihood per frame).
set -euo pipefail
utils=$(cd "$(dirname "$0")/../../utils" && pwd)
nj=2; cmd=$(realpath -s --relative-to=. "$utils/run.sh"); seed=1; device=auto; ranks=1
states=5; sil_states=5; sil_topology=ergodic; gauss=8; iters=30; self_loop_prob=0.8; silence_prob=0.5
edge_silence_prob=1; bw_iters=0; init=equal; init_bw_iters=5; words=
realign_iters="1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29"
. "$utils/parse_options.sh"
me=train_viterbi.sh
[ $# -eq 2 ] || { sed -n '2,/^set -e/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; }
data=${1%/}; dir=${2%/}
case $init in equal|flat-bw) ;; *) echo "$me: --init must be equal or flat-bw" >&2; exit 1 ;; esac
for f in "$data"/feats.scp "$data"/text; do [ -f "$f" ] || { echo "$me: missing $f" >&2; exit 1; }; done
mkdir -p "$dir"/log
[ -f "$data"/utt2spk ] || awk '{ print $1, $1 }' "$data"/feats.scp > "$data"/utt2spk
"$utils"/split_data.sh "$data" "$nj"
sdata=$data/split$nj
# words: --words FILE (one a line, HMM i = line i), default yes, no; pdfs word w, state k -> w*S + k
if [ -n "$words" ]; then grep -v '^ *$' "$words" > "$dir"/words.list; else printf 'yes\nno\n' > "$dir"/words.list; fi
nw=$(wc -l < "$dir"/words.list)
awk -v S="$states" '{ printf "%s", $1; for (k = 0; k < S; k++) printf " %d", (NR - 1) * S + k; print "" }' \
  "$dir"/words.list > "$dir"/words.txt
npdf=$((nw * states + sil_states))
trn=(--transcripts=ark,t:"$sdata"/JOB/text --optional-silence=sil --silence-prob="$silence_prob"
  --edge-silence-prob="$edge_silence_prob")
$cmd "$dir"/log/topo.log hmm-init-topo --silence=sil --silence-states="$sil_states" --silence-topology="$sil_topology" \
  --self-loop-prob="$self_loop_prob" "$dir"/words.txt "$dir"/0.hmm
: > "$dir"/loglike.txt

# bw_pass <in-hmm> <in-mdl> <out-hmm> <out-mdl> <tag>: one Baum-Welch pass as
# --nj jobs (transitions and GMMs re-estimated, no mix-up).
bw_pass() {
  local hmm=$1 mdl=$2 ohmm=$3 omdl=$4 tag=$5 j accs=() taccs=()
  rm -f "$dir"/"$tag".*.acc "$dir"/"$tag".*.tacc
  $cmd JOB=1:"$nj" "$dir"/log/bw."$tag".JOB.log \
    hmm-bw --device="$device" --gmm="$mdl" "${trn[@]}" --write-accs="$dir"/"$tag".JOB.tacc "$hmm" \
      scp:"$sdata"/JOB/feats.scp ark:"$dir"/post.JOB.ark \&\& \
    gmm-acc-stats-gpu --device="$device" --label-type=post "$mdl" scp:"$sdata"/JOB/feats.scp ark:"$dir"/post.JOB.ark \
      "$dir"/"$tag".JOB.acc \&\& rm "$dir"/post.JOB.ark
  for j in $(seq 1 "$nj"); do accs+=("$dir/$tag.$j.acc"); taccs+=("$dir/$tag.$j.tacc"); done
  $cmd "$dir"/log/update."$tag".log hmm-sum-accs "$dir"/"$tag".tacc "${taccs[@]}" \&\& \
    gmm-sum-accs "$dir"/"$tag".acc "${accs[@]}" \&\& \
    hmm-est "$hmm" "$dir"/"$tag".tacc "$ohmm" \&\& gmm-est --seed="$seed" "$mdl" "$dir"/"$tag".acc "$omdl"
  rm -f "$dir"/"$tag".*.acc "$dir"/"$tag".*.tacc "$dir"/"$tag".acc "$dir"/"$tag".tacc
}

# resident <mode> <iters> <tag> <hmm-in> <mdl-in> <hmm-out> <mdl-out> [hmm-train options]:
# one hmm-train job of --ranks ranks through --cmd; its per-iteration
# log-likelihoods go to loglike.txt as "<tag><iteration> <value>".
resident() {
  local mode=$1 n=$2 tag=$3 ih=$4 im=$5 oh=$6 om=$7; shift 7
  local launch=(); [ "$ranks" -le 1 ] || launch=(--ranks "$ranks")
  $cmd ${launch[@]+"${launch[@]}"} "$dir"/log/train."$tag".log hmm-train --device="$device" --mode="$mode" \
    --num-iters="$n" --seed="$seed" --optional-silence=sil --silence-prob="$silence_prob" \
    --edge-silence-prob="$edge_silence_prob" "$@" "$ih" "$im" scp:"$data"/feats.scp ark,t:"$data"/text "$oh" "$om"
  grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]*' "$dir"/log/train."$tag".log |
    awk -v t="$([ "$tag" = vit ] && echo || echo "$tag")" '{ print t $2 + 0, $NF }' >> "$dir"/loglike.txt
}

if [ "$init" = equal ]; then
  # equal alignment over sil W1 sil ... Wn sil
  feat-to-len scp:"$data"/feats.scp ark,t:- 2> "$dir"/log/equal.log |
    awk -v S="$states" -v Z="$sil_states" -v NW="$nw" -v me=$me 'FILENAME == ARGV[1] { id[$1] = FNR - 1; next }
      FILENAME == ARGV[2] { txt[$1] = $0; next }
      { n = split(txt[$1], w, " "); K = 0
        for (k = 0; k < Z; k++) seq[K++] = NW * S + k
        for (i = 2; i <= n; i++) {
          if (!(w[i] in id)) { print me ": word " w[i] " of " $1 " not in the word list" > "/dev/stderr"; exit 1 }
          b = id[w[i]] * S; for (k = 0; k < S; k++) seq[K++] = b + k
          for (k = 0; k < Z; k++) seq[K++] = NW * S + k }
        T = $2; printf "%s", $1; for (t = 0; t < T; t++) printf " %d", seq[int(t * K / T)]; printf "\n" }' \
      "$dir"/words.list "$data"/text - | copy-int-vector ark,t:- ark:"$dir"/ali.all.ark 2>> "$dir"/log/equal.log
  $cmd "$dir"/log/init.log gmm-init --device="$device" --num-gauss=1 --num-pdfs=$npdf --num-iters=0 --seed="$seed" \
    --labels=ark:"$dir"/ali.all.ark scp:"$data"/feats.scp "$dir"/0.mdl
  # the equal alignment of each job's files
  for j in $(seq 1 "$nj"); do
    copy-int-vector ark:"$dir"/ali.all.ark ark,t:- 2>> "$dir"/log/equal.log |
      awk 'NR == FNR { k[$1]; next } $1 in k' "$sdata"/"$j"/feats.scp - |
      copy-int-vector ark,t:- ark:"$dir"/ali."$j".ark 2>> "$dir"/log/equal.log
  done
  rm -f "$dir"/ali.all.ark
else
  # HTK's flat start: every pdf the global mean and variance, then Baum-Welch
  # passes with single Gaussians; its Viterbi alignment starts the training.
  feat-to-len scp:"$data"/feats.scp ark,t:- 2> "$dir"/log/flat.log |
    awk -v P=$npdf '{ printf "%s", $1
      for (t = 0; t < $2; t++) { printf " ["; for (p = 0; p < P; p++) printf " %d %.7g", p, 1 / P; printf " ]" }
      printf "\n" }' | copy-post ark,t:- ark:"$dir"/flat.post 2>> "$dir"/log/flat.log
  $cmd "$dir"/log/init.log gmm-init --device="$device" --num-gauss=1 --num-pdfs=$npdf --num-iters=0 --seed="$seed" \
    --labels=ark:"$dir"/flat.post --label-type=post scp:"$data"/feats.scp "$dir"/0.mdl
  rm -f "$dir"/flat.post
  if [ "$ranks" != 0 ] && [ "$init_bw_iters" -ge 1 ]; then
    resident bw "$init_bw_iters" init "$dir"/0.hmm "$dir"/0.mdl "$dir"/0.hmm "$dir"/0.mdl --gauss=1
    init_bw_iters=0
  fi
  for k in $(seq 1 "$init_bw_iters"); do
    bw_pass "$dir"/0.hmm "$dir"/0.mdl "$dir"/0.hmm "$dir"/0.mdl init"$k"
    echo "init$k $(grep -o 'avg loglike per frame [-0-9.e+]*' "$dir"/log/update.init"$k".log | tail -1 | awk '{ print $NF }')" \
      >> "$dir"/loglike.txt
  done
fi

mixup_iters=$(( iters / 2 )); [ $mixup_iters -ge 1 ] || mixup_iters=1
hmm=$dir/0.hmm; mdl=$dir/0.mdl
if [ "$ranks" != 0 ]; then
  if [ "$iters" -ge 1 ]; then
    resident viterbi "$iters" vit "$hmm" "$mdl" "$dir"/vit.hmm "$dir"/"$iters".mdl --realign-iters="$realign_iters" \
      --gauss="$gauss" --mixup-start=1 --mixup-end=$mixup_iters
    mdl=$dir/$iters.mdl; rm -f "$dir"/vit.hmm
  fi
  if [ "$bw_iters" -ge 1 ]; then
    resident bw "$bw_iters" bw "$hmm" "$mdl" "$dir"/bw"$bw_iters".hmm "$dir"/bw"$bw_iters".mdl --gauss=1
    hmm=$dir/bw$bw_iters.hmm; mdl=$dir/bw$bw_iters.mdl
  fi
  iters=0; bw_iters=0
fi
for it in $(seq 1 "$iters"); do
  target=0
  if [ "$it" -le $mixup_iters ] && [ "$gauss" -gt 1 ]; then
    target=$(( npdf + npdf * (gauss - 1) * it / mixup_iters ))
  fi
  if [[ " $realign_iters " == *" $it "* ]]; then
    $cmd JOB=1:"$nj" "$dir"/log/align."$it".JOB.log \
      hmm-viterbi --device="$device" --gmm="$mdl" "${trn[@]}" "$hmm" scp:"$sdata"/JOB/feats.scp ark:"$dir"/ali.JOB.ark
  fi
  rm -f "$dir"/"$it".*.acc "$dir"/"$it".acc
  $cmd JOB=1:"$nj" "$dir"/log/acc."$it".JOB.log \
    gmm-acc-stats-gpu --device="$device" --label-type=ali "$mdl" scp:"$sdata"/JOB/feats.scp ark:"$dir"/ali.JOB.ark \
      "$dir"/"$it".JOB.acc
  accs=(); for j in $(seq 1 "$nj"); do accs+=("$dir/$it.$j.acc"); done
  $cmd "$dir"/log/update."$it".log gmm-sum-accs "$dir"/"$it".acc "${accs[@]}" \&\& \
    gmm-est --mix-up=$target --seed="$seed" "$mdl" "$dir"/"$it".acc "$dir"/"$it".mdl
  rm -f "$dir"/"$it".*.acc "$dir"/"$it".acc
  echo "$it $(grep -o 'avg loglike per frame [-0-9.e+]*' "$dir"/log/update."$it".log | tail -1 | awk '{ print $NF }')" \
    >> "$dir"/loglike.txt
  [ "$it" -gt 1 ] && rm -f "$dir"/$((it - 1)).mdl
  mdl=$dir/$it.mdl
done
for k in $(seq 1 "$bw_iters"); do
  bw_pass "$hmm" "$mdl" "$dir"/bw"$k".hmm "$dir"/bw"$k".mdl bw"$k"
  echo "bw$k $(grep -o 'avg loglike per frame [-0-9.e+]*' "$dir"/log/update.bw"$k".log | tail -1 | awk '{ print $NF }')" \
    >> "$dir"/loglike.txt
  hmm=$dir/bw$k.hmm; mdl=$dir/bw$k.mdl
done
rm -f "$dir"/ali.*.ark
cp "$hmm" "$dir"/final.hmm; cp "$mdl" "$dir"/final.mdl
last=$(ls -t "$dir"/log/*.log | grep -E "/(update|train)\.[^/]*$" | head -1 || true)
echo "  trained: $([ "$ranks" != 0 ] && echo "resident hmm-train, $ranks rank(s)" || echo "$nj jobs"), $(tail -1 "$dir"/loglike.txt | awk '{ print "avg loglike per frame", $2 }')," \
  "$(grep -o '[0-9]* Gaussians' "$last" | tail -1)"
