#!/usr/bin/env bash
# egs/arabic-digits/local/shrink_eval.sh -- does covariance shrinkage help
# full-covariance GMMs when training data are short?  (doc/shrink.md; results in ../RESULTS)
#
# UCI Spoken Arabic Digit, 13 MFCCs, the split of run.sh (16 dev speakers
# tr_m25..32, tr_f25..32; 50 training speakers).  For each training-set size
# (number of speakers, half male; for each seed a different random subset,
# numpy RandomState(seed)) and each seed: one GMM per digit,
#   diag       gmm-init --cov-type=diag -> gmm-est-gpu
#   full       gmm-init --cov-type=full -> gmm-est-gpu
#   full+M     the same full initial model -> gmm-est-gpu --shrink=M, M in
#              fixed:0.5, occupancy:200, oas, lw, ss (fixed's 0.5 and
#              occupancy's tau = 200 frames were set before looking at dev
#              results and not tuned)
#   fc:M       (--posthoc=true, default) fc-shrink --method=M once on the trained
#              full model, with accs of that model (gmm-acc-stats-gpu
#              --shrinkage-stats=true)
# then gmm-score-gpu | matrix-sum-rows -> best digit -> dev accuracy
# (../steps/score_words.sh).  Writes everything under --work (default
# exp-shrink in the current directory), never into the source tree; the
# last lines are the markdown table of RESULTS (mean over seeds, min..max).
#
# Options: --work=DIR --device=auto|cpu|cuda --sizes="5 10 20 50" --seeds="1 2 3"
#          --gauss="4 8" --iters=20 --methods="fixed:0.5 occupancy:200 oas lw ss"
#          --posthoc=true|false
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools (make test-asan)
shared=${GH_SHARED:-$root/../shared}
src=$shared/data/spoken-arabic-digit/Train_Arabic_Digit.txt
[ -f "$src" ] || [ ! -f "$src.gz" ] || src=$src.gz   # the corpus as shipped: plain or gzipped

work=exp-shrink
device=auto
sizes="5 10 20 50"
seeds="1 2 3"
gauss="4 8"
iters=20
methods="fixed:0.5 occupancy:200 oas lw ss"
posthoc=true
for a in "$@"; do
  case $a in
    --work=*) work=${a#*=} ;;
    --device=*) device=${a#*=} ;;
    --sizes=*) sizes=${a#*=} ;;
    --seeds=*) seeds=${a#*=} ;;
    --gauss=*) gauss=${a#*=} ;;
    --iters=*) iters=${a#*=} ;;
    --methods=*) methods=${a#*=} ;;
    --posthoc=*) posthoc=${a#*=} ;;
    *) echo "shrink_eval.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
[ -f "$src" ] || { echo "shrink_eval.sh: missing $src (set GH_SHARED)" >&2; exit 1; }
for t in copy-feats feat-to-len copy-int-vector gmm-init gmm-est-gpu gmm-score-gpu matrix-sum-rows gmm-acc-stats-gpu \
  fc-shrink; do
  command -v $t >/dev/null || { echo "shrink_eval.sh: $t not built (run make)" >&2; exit 1; }
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
case $work/ in "$root"/egs/*|"$root"/lib/*|"$root"/tools/*) echo "shrink_eval.sh: --work must not be in the source tree" >&2; exit 1 ;; esac
data=$work/data
dev_spk="tr_m25 tr_m26 tr_m27 tr_m28 tr_m29 tr_m30 tr_m31 tr_m32 tr_f25 tr_f26 tr_f27 tr_f28 tr_f29 tr_f30 tr_f31 tr_f32"

# labels: key -> digit; alignments: every frame -> that digit's pdf
make_labels() {  # <scp> <utt2label-out> <ali-out>
  awk '{ split($1, a, "-"); print $1, substr(a[2], 2) }' "$1" > "$2"
  feat-to-len scp:"$1" ark,t:- |
    awk 'NR == FNR { lab[$1] = $2; next } { printf "%s", $1; for (i = 0; i < $2; i++) printf " %s", lab[$1]; printf "\n" }' \
      "$2" - | copy-int-vector ark,t:- ark:"$3"
}

if [ ! -s "$data/dev.ali" ]; then
  echo "== data preparation in $data"
  mkdir -p "$data"
  gzip -dcf "$src" | awk -f "$here/local/uci2text-ark.awk" | copy-feats ark,t:- ark,scp:$data/all.ark,$data/all.scp
  echo "$dev_spk" | tr ' ' '\n' > $data/dev.spk
  awk 'NR == FNR { dev[$1] = 1; next } { split($1, a, "-"); print > (a[1] in dev ? "'$data'/dev.scp" : "'$data'/train.scp") }' \
    $data/dev.spk $data/all.scp
  make_labels $data/dev.scp $data/dev.utt2label $data/dev.ali
fi

# score <model-base> <log with the lambda line> "<size> <gauss> <system> <seed>": one results line
score() {
  gmm-score-gpu --device=$device $1.mdl scp:$data/dev.scp ark:- 2> $1.score.log |
    matrix-sum-rows ark:- ark,t:$1.totals 2>> $1.score.log
  local acc lam
  acc=$("$here/../steps/score_words.sh" $data/dev.utt2label $1.totals | awk 'NR == 1 { print $2 }')
  lam=$(awk '/lambda mean/ { for (i = 1; i < NF; i++) if ($i == "mean") v = $(i + 1) } END { print v }' $2)
  echo "$3 $acc ${lam:--} $frames" | tee -a $results
}

results=$work/results.txt
: > $results
for size in $sizes; do
  for seed in $seeds; do
    sub=$data/train_${size}_s$seed
    if [ ! -s $sub.ali ]; then
      # size speakers of the 50, ceil(size/2) male and floor(size/2) female, chosen by the seed
      python3 - "$data/train.scp" "$size" "$seed" > $sub.spk <<'EOF'
import sys, numpy as np
spk = sorted({l.split('-')[0] for l in open(sys.argv[1])})
k, r = int(sys.argv[2]), np.random.RandomState(int(sys.argv[3]))
m = [s for s in spk if s.startswith('tr_m')]; f = [s for s in spk if s.startswith('tr_f')]
km = min((k + 1) // 2, len(m)); kf = min(k - km, len(f))
print('\n'.join(sorted(list(r.choice(m, km, replace=False)) + list(r.choice(f, kf, replace=False)))))
EOF
      awk 'NR == FNR { s[$1] = 1; next } { split($1, a, "-"); if (a[1] in s) print }' $sub.spk $data/train.scp > $sub.scp
      make_labels $sub.scp $sub.utt2label $sub.ali
    fi
    frames=$(feat-to-len scp:$sub.scp 2>/dev/null)
    for ng in $gauss; do
      dir=$work/n${size}_g${ng}_s$seed
      mkdir -p $dir
      echo "== $size speakers ($frames frames), $ng Gaussians per digit, seed $seed"
      for cov in diag full; do
        gmm-init --device=$device --cov-type=$cov --num-gauss=$ng --seed=$seed --labels=ark:$sub.ali \
          scp:$sub.scp $dir/$cov.0.mdl 2> $dir/$cov.init.log
      done
      for sys in diag full $methods; do
        name=${sys//:/_}
        case $sys in
          diag) init=$dir/diag.0.mdl; opt="" ;;
          full) init=$dir/full.0.mdl; opt="" ;;
          *) init=$dir/full.0.mdl; opt="--shrink=$sys" ;;
        esac
        gmm-est-gpu --device=$device --num-iters=$iters $opt $init scp:$sub.scp ark:$sub.ali \
          $dir/$name.mdl 2> $dir/$name.est.log
        score $dir/$name $dir/$name.est.log "$size $ng $sys $seed"
      done
      if [ "$posthoc" = true ]; then
        # fc-shrink once on the trained full model, accs of that model with the shrinkage statistics
        gmm-acc-stats-gpu --device=$device --shrinkage-stats=true $dir/full.mdl scp:$sub.scp ark:$sub.ali \
          $dir/full.acc 2> $dir/full.acc.log
        for sys in $methods; do
          name=fc_${sys//:/_}
          case $sys in
            fixed:*) opt="--method=fixed --factor=${sys#*:}" ;;
            occupancy:*) opt="--method=occupancy --tau=${sys#*:}" ;;
            *) opt="--method=$sys" ;;
          esac
          fc-shrink $opt $dir/full.mdl $dir/full.acc $dir/$name.mdl 2> $dir/$name.log
          score $dir/$name $dir/$name.log "$size $ng fc:$sys $seed"
        done
      fi
    done
  done
done

table() {  # <systems> <prefix of the shrinkage columns>
awk -v methods="$1" -v pre="$2" '
  { k = $1 " " $2 " " $3; a = $5 + 0; n[k]++; s[k] += a; if (!(k in lo) || a < lo[k]) lo[k] = a;
    if (!(k in hi) || a > hi[k]) hi[k] = a; if ($6 != "-") { ls[k] += $6; ln[k]++ }
    cfg = $1 " " $2; if (!(cfg in seen)) { seen[cfg] = 1; order[++nc] = cfg; fr[cfg] = $7 } }
  END {
    ns = split(methods, m, " ");
    printf "| speakers (frames, seed %s) | Gaussians |", "1"; for (j = 1; j <= ns; j++) printf " %s |", (j > 2 ? pre : "") m[j]; printf "\n";
    printf "|---|---|"; for (j = 1; j <= ns; j++) printf "---|"; printf "\n";
    for (i = 1; i <= nc; i++) { split(order[i], c, " "); printf "| %s (%s) | %s |", c[1], fr[order[i]], c[2];
      for (j = 1; j <= ns; j++) { k = order[i] " " m[j];
        if (!(k in n)) { printf " - |"; continue }
        printf " %.2f (%.2f..%.2f)", s[k] / n[k], lo[k], hi[k];
        if (k in ln) printf " [%.2f]", ls[k] / ln[k]; printf " |" }
      printf "\n" }
  }' $results
}
echo "== dev accuracy (%), mean over seeds ($seeds) (min..max); last-iteration mean lambda in brackets"
table "diag full $methods" "full+"
if [ "$posthoc" = true ]; then
  echo "== fc-shrink once after training (on the full model): dev accuracy (%), mean lambda in brackets"
  table "diag full $(for m in $methods; do printf 'fc:%s ' $m; done)" ""
fi
