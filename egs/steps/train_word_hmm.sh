#!/usr/bin/env bash
# steps/train_word_hmm.sh -- word HMM-GMMs (one left-to-right HMM per word,
# optionally a silence HMM), Baum-Welch as N parallel jobs per iteration:
#   hmm-init-topo: one L-to-R HMM per word of words.txt (+ --silence), pdf ids
#     consecutive (word w, state k -> pdf w*states + k; silence last)
#   flat start (--flat-start): "segment" = each training utterance (one word)
#     split into equal parts over its word's states, gmm-init one Gaussian per
#     pdf (the mean and variance of its frames: no EM iterations, which on
#     these hard labels would give the same bytes, and no device start);
#     "global" = every pdf the global mean and variance (HTK's HCompV)
#   per iteration: --nj jobs of  hmm-bw --gmm --transcripts
#     --write-accs (transition counts, pdf posteriors) && gmm-acc-stats-gpu
#     --label-type=post  on the parts of utils/split_data.sh, then
#     hmm-sum-accs -> hmm-est and gmm-sum-accs -> gmm-est, mixing up linearly
#     from iteration --mixup-start to --mixup-end (default: 1 to iters/2) to
#     --gauss Gaussians per pdf
#
# Usage: steps/train_word_hmm.sh [options] <data-dir> <words.txt> <dir>
#   e.g. steps/train_word_hmm.sh --nj 4 --cmd utils/run.sh --states 8 --gauss 8 \
#          data/train_dcmn data/lang/words.txt exp/hmm
# <data-dir>: feats.scp, utt2spk, text (an utterance's words; with --flat-start
# segment, exactly one).  <words.txt>: one word a line, the HMM names.
# Also accepted, the earlier form (one job unless --nj is given):
#   steps/train_word_hmm.sh [options] <train-feats-rspecifier> <utt2word> <num-words> <dir>
# Output: <dir>/final.mdl (GMM set), <dir>/final.hmm (HMM set: word i = HMM i),
# <dir>/log/*.log.  Classify with steps/classify.sh --hmm true.
# Options (--name value or --name=value; defaults in brackets):
#   --nj [4] --cmd [utils/run.sh of this tree] --device [auto] --cov [diag] --states [5]
#   --gauss [8] --iters [12] --seed [1] (gmm-init and mix-up)
#   --skip-prob [0.2] --self-loop-prob [0.6] --silence [""] --sil-states [3]
#   --flat-start [segment] --mixup-start [1] --mixup-end [iters/2]
#   --est-seed [same as --seed] (gmm-est --seed, mix-up perturbation)
#   --ranks [1]: N > 0: all iterations as ONE job of N MPI ranks, hmm-train
#     (features read once, graphs compiled once; --cmd utils/run.sh starts it
#     with mpirun, utils/slurm.sh with srun; 1: a plain process); 0: the
#     per-iteration jobs below (--nj, --cmd; for clusters without MPI).  Any N
#     gives the --ranks 1 model within double rounding, and that equals the
#     --ranks 0 model within the --nj tolerance (test/bats/hmm-train.bats)
# --nj N gives the --nj 1 model up to the order of summing the accumulators;
set -euo pipefail
nj=; cmd=$(realpath -s --relative-to=. "$(dirname "$0")/../utils/run.sh"); device=auto; cov=diag; states=5; gauss=8; iters=12; seed=1
skip_prob=0.2; self_loop_prob=0.6; silence=; sil_states=3; flat_start=segment
mixup_start=1; mixup_end=; est_seed=; ranks=1
. "$(dirname "$0")/../utils/parse_options.sh"
utils=$(cd "$(dirname "$0")/../utils" && pwd)
me=train_word_hmm.sh
if [ $# -eq 4 ]; then
  # The earlier form <train-feats-rspecifier> <utt2word> <num-words> <dir>
  # (utt2word: "utt word-index"): made into a data directory <dir>/data with
  # words 0..num-words-1, each utterance its own speaker, utterances in the
  # order of the features; one job unless --nj is given.
  dir=${4%/}; mkdir -p "$dir"/data
  case $1 in
    scp:*) cp "${1#scp:}" "$dir"/data/feats.scp ;;
    *) copy-feats "$1" ark,scp:"$dir"/data/feats.ark,"$dir"/data/feats.scp 2> "$dir"/data/copy-feats.log ;;
  esac
  awk '{ print $1, $1 }' "$dir"/data/feats.scp > "$dir"/data/utt2spk
  cp "$dir"/data/utt2spk "$dir"/data/spk2utt
  awk -v me=$me 'NR == FNR { w[$1] = $2; next } !($1 in w) { print me ": no word for " $1 > "/dev/stderr"; exit 1 }
    { print $1, w[$1] }' "$2" "$dir"/data/feats.scp > "$dir"/data/text
  seq 0 $(( $3 - 1 )) > "$dir"/data/words.txt
  nj=${nj:-1}
  set -- "$dir"/data "$dir"/data/words.txt "$dir"
fi
if [ $# -ne 3 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
data=${1%/}; words=$2; dir=${3%/}
nj=${nj:-4}
for f in "$data"/feats.scp "$data"/text "$words"; do [ -f "$f" ] || { echo "$me: missing $f" >&2; exit 1; }; done
[ -n "$mixup_end" ] || mixup_end=$(( iters / 2 ))
[ $mixup_end -ge $mixup_start ] || mixup_end=$mixup_start
[ -n "$est_seed" ] || est_seed=$seed
mkdir -p "$dir"/log
[ "$ranks" != 0 ] || "$utils"/split_data.sh "$data" "$nj"
sdata=$data/split$nj

nwords=$(wc -l < "$words")
cp "$words" "$dir"/words.txt
if [ -n "$silence" ]; then
  topo_opts="--silence=$silence --silence-states=$sil_states"; bw_opts="--optional-silence=$silence"
  npdf=$(( nwords * states + sil_states ))
else
  topo_opts=; bw_opts=; npdf=$(( nwords * states ))
fi
hmm-init-topo --num-states=$states --self-loop-prob=$self_loop_prob --skip-prob=$skip_prob $topo_opts \
  "$dir"/words.txt "$dir"/0.hmm 2> "$dir"/log/topo.log || { echo "$me: hmm-init-topo failed, see $dir/log/topo.log" >&2; exit 1; }
case $flat_start in
  segment)
    feat-to-len scp:"$data"/feats.scp ark,t:- 2> "$dir"/log/flat.log |
      awk -v S=$states -v me=$me -v W="$words" -v T="$data"/text '
        FILENAME == W { w[$1] = FNR - 1; next }
        FILENAME == T { if (NF != 2 || !($2 in w)) { printf "%s: %s: utterance %s must have one word of %s\n", me, T, $1, W > "/dev/stderr"; exit 1 }
                        word[$1] = w[$2]; next }
        !($1 in word) { printf "%s: no text for %s\n", me, $1 > "/dev/stderr"; exit 1 }
        { T = $2; printf "%s", $1; for (t = 0; t < T; t++) printf " %d", word[$1] * S + int(t * S / T); printf "\n" }' \
        "$words" "$data"/text - | copy-int-vector ark,t:- ark:"$dir"/flat.ali 2>> "$dir"/log/flat.log
    $cmd "$dir"/log/init.log \
      gmm-init --device=$device --cov-type=$cov --num-gauss=1 --num-pdfs=$npdf --num-iters=0 --seed=$seed \
        --labels=ark:"$dir"/flat.ali scp:"$data"/feats.scp "$dir"/0.mdl
    rm -f "$dir"/flat.ali ;;
  global)
    feat-to-len scp:"$data"/feats.scp ark,t:- 2> "$dir"/log/flat.log |
      awk -v P=$npdf '{ printf "%s", $1
        for (t = 0; t < $2; t++) { printf " ["; for (p = 0; p < P; p++) printf " %d %.7g", p, 1 / P; printf " ]" }
        printf "\n" }' | copy-post ark,t:- ark:"$dir"/flat.post 2>> "$dir"/log/flat.log
    $cmd "$dir"/log/init.log \
      gmm-init --device=$device --cov-type=$cov --num-gauss=1 --num-pdfs=$npdf --num-iters=0 --seed=$seed \
        --labels=ark:"$dir"/flat.post --label-type=post scp:"$data"/feats.scp "$dir"/0.mdl
    rm -f "$dir"/flat.post ;;
  *) echo "$me: --flat-start must be segment or global, not $flat_start" >&2; exit 1 ;;
esac

if [ "$ranks" != 0 ] && [ $iters -ge 1 ]; then
  # hmm-train: all iterations in one job (of --ranks MPI ranks)
  t0=$(date +%s.%N)
  rank_opt=(); [ "$ranks" = 1 ] || rank_opt=(--ranks "$ranks")
  $cmd ${rank_opt[@]+"${rank_opt[@]}"} "$dir"/log/train.log \
    hmm-train --device=$device --mode=bw --num-iters=$iters --gauss=$gauss --mixup-start=$mixup_start \
      --mixup-end=$mixup_end --seed=$est_seed $bw_opts "$dir"/0.hmm "$dir"/0.mdl scp:"$data"/feats.scp ark,t:"$data"/text \
      "$dir"/final.hmm "$dir"/final.mdl ||
    { echo "$me: hmm-train failed, see $dir/log/train.log" >&2; exit 1; }
  grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]*\|[0-9]* Gaussians; [0-9.e+-]* s' "$dir"/log/train.log |
    awk '/^iteration/ { l = $0; next } { print "  " l ", " $1 " Gaussians (" $3 " s)" }'
  echo "  hmm-train: $ranks rank(s), $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
  exit 0
fi

for it in $(seq 1 $iters); do
  prev=$((it - 1)); t0=$(date +%s.%N)
  target=0
  if [ "$it" -ge $mixup_start ] && [ "$it" -le $mixup_end ] && [ $gauss -gt 1 ]; then
    target=$(awk -v k=$((it - mixup_start + 1)) -v n=$((mixup_end - mixup_start + 1)) -v g=$gauss -v p=$npdf \
      'BEGIN { printf "%d", p + int(p * (g - 1) * k / n) }')
  fi
  # Accumulators of an earlier attempt must not be summed if a job fails now.
  rm -f "$dir"/"$it".*.acc "$dir"/"$it".*.tacc "$dir"/"$it".acc "$dir"/"$it".tacc
  $cmd JOB=1:"$nj" "$dir"/log/acc."$it".JOB.log \
    hmm-bw --device=$device --gmm="$dir"/$prev.mdl --transcripts=ark,t:"$sdata"/JOB/text $bw_opts \
      --write-accs="$dir"/"$it".JOB.tacc "$dir"/$prev.hmm scp:"$sdata"/JOB/feats.scp ark:"$dir"/post.JOB.ark \&\& \
    gmm-acc-stats-gpu --device=$device --label-type=post "$dir"/$prev.mdl scp:"$sdata"/JOB/feats.scp \
      ark:"$dir"/post.JOB.ark "$dir"/"$it".JOB.acc \&\& rm "$dir"/post.JOB.ark
  accs=(); taccs=()
  for j in $(seq 1 "$nj"); do accs+=("$dir/$it.$j.acc"); taccs+=("$dir/$it.$j.tacc"); done
  # one job sums and estimates
  $cmd "$dir"/log/update."$it".log hmm-sum-accs "$dir"/"$it".tacc "${taccs[@]}" \&\& gmm-sum-accs "$dir"/"$it".acc "${accs[@]}" \&\& \
    hmm-est "$dir"/$prev.hmm "$dir"/"$it".tacc "$dir"/"$it".hmm \&\& \
    gmm-est --mix-up="$target" --seed=$est_seed "$dir"/$prev.mdl "$dir"/"$it".acc "$dir"/"$it".mdl
  echo "  iteration $it: $(grep -o 'avg loglike per frame [-0-9.e+]*' "$dir"/log/update."$it".log | tail -1)," \
    "$(grep -o 'wrote [^:]*: [0-9]* pdfs, [0-9]* Gaussians' "$dir"/log/update."$it".log | grep -o '[0-9]* Gaussians' | tail -1)" \
    "($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s)"
  rm -f "$dir"/"$it".*.acc "$dir"/"$it".*.tacc "$dir"/"$it".acc "$dir"/"$it".tacc
  [ $prev -eq 0 ] || rm -f "$dir"/$prev.mdl "$dir"/$prev.hmm
done
cp "$dir"/$iters.hmm "$dir"/final.hmm.tmp && mv "$dir"/final.hmm.tmp "$dir"/final.hmm
cp "$dir"/$iters.mdl "$dir"/final.mdl.tmp && mv "$dir"/final.mdl.tmp "$dir"/final.mdl
