#!/usr/bin/env bash
# egs/align/run.sh -- forced alignment of a user's corpus in one call (the way
# the Montreal Forced Aligner's "mfa train" aligns the corpus it trains on):
# a Kaldi data directory and a dictionary in, phone and word boundaries out.
#
#   egs/align/run.sh --data DIR --dict DIR --out DIR [options]
#
#   --data  a Kaldi data directory: text, utt2spk (spk2utt), and wav.scp (16 kHz
#           audio; compute-mfcc-feats with conf/mfcc.conf) or feats.scp (13 MFCCs)
#   --dict  a dictionary in Kaldi's data/local/dict layout (lexicon.txt,
#           silence_phones.txt, nonsilence_phones.txt, optional_silence.txt,
#           extra_questions.txt), with the --oov word in the lexicon
#   --out   gets phones.ctm, words.ctm (text labels, seconds), textgrid/<utt>.TextGrid
#           (a words and a phones tier, as MFA writes them), failures.txt (one
#           "<utt> <reason> <detail>" line per utterance not aligned), oov.txt
#           ("<utt> <word>": words not in the lexicon, aligned as --oov) and summary.txt
#
#   stage 0  data and lang: utils/copy_data_dir.sh, utils/validate_data_dir.sh,
#            utils/prepare_lang.sh <dict> <oov> (position-dependent phones)
#   stage 1  features: steps/make_mfcc.sh (if there is no feats.scp),
#            steps/compute_cmvn_stats.sh (per speaker); apply-cmvn | add-deltas
#            are applied on the fly by the next stages
#   stage 2  training: local/train_mono.sh (Kaldi's train_mono.sh schedule:
#            equal alignment, --num-iters passes, realignment, mixing up to --totgauss);
#            with --model DIR, no training: DIR/final.mdl and DIR/tree (a model
#            trained by this recipe on a lang from the same dictionary) align the data
#   stage 3  alignment with the final model: compile-train-graphs,
#            gmm-align-compiled --beam --retry-beam (or --exact) with
#            --failure-report; utterances without a graph (a word the lexicon
#            lacks, an empty transcript) are reported as no-graph
#   stage 4  outputs: ali-to-phones --ctm-output, steps/get_train_ctm.sh (ali-to-word-ctm),
#            ctm-to-textgrid
#
# Options (--name value or --name=value):
#   --work DIR [<out>/work]  --nj 4  --cmd utils/run.sh  --device auto
#   --stage 0  --stop-stage 4  --oov "<UNK>"  --mfcc-config conf/mfcc.conf
#   --num-iters 40  --totgauss 1000  --beam 10  --retry-beam 40  --exact false
#   --fail-on-error false  (true: exit 1 when any utterance was not aligned)
#   --model DIR  align with DIR/final.mdl and DIR/tree instead of training
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
egs=$(dirname "$here"); root=$(dirname "$egs")
export PATH="${GH_BIN:-$root/bin}:$PATH"   # GH_BIN: another build of the tools
export LC_ALL=C
data=; dict=; out=; work=
nj=4; cmd=utils/run.sh; device=auto; stage=0; stop_stage=4; oov="<UNK>"; mfcc_config=$here/conf/mfcc.conf
num_iters=40; totgauss=1000; beam=10; retry_beam=40; exact=false; fail_on_error=false; model=
. "$egs/utils/parse_options.sh"
me=run.sh
[ $# -eq 0 ] || { echo "$me: unexpected argument $1 (options are --name value)" >&2; exit 1; }
[ -n "$data" ] && [ -n "$dict" ] && [ -n "$out" ] || { echo "$me: give --data, --dict and --out (--help)" >&2; exit 1; }
for t in prepare-lang compute-mfcc-feats compute-cmvn-stats apply-cmvn add-deltas gmm-init-mono compile-train-graphs \
  align-equal-compiled gmm-acc-stats-ali gmm-est gmm-sum-accs gmm-align-compiled ali-to-phones ali-to-word-ctm \
  ctm-to-textgrid; do
  command -v $t >/dev/null || { echo "$me: $t not built (run make in $root)" >&2; exit 1; }
done
start=$(date +%s)
origin=$(pwd)
abs() { (cd "$origin" && mkdir -p "$1" && cd "$1" && pwd); }
[ -d "$data" ] || { echo "$me: no such data directory: $data" >&2; exit 1; }
[ -d "$dict" ] || { echo "$me: no such dictionary directory: $dict" >&2; exit 1; }
data=$(cd "$data" && pwd); dict=$(cd "$dict" && pwd); out=$(abs "$out")
[ -n "$work" ] || work=$out/work
work=$(abs "$work")
case $mfcc_config in /*) ;; *) mfcc_config=$origin/$mfcc_config ;; esac
if [ -n "$model" ]; then
  for f in "$model"/final.mdl "$model"/tree; do [ -f "$f" ] || { echo "$me: --model: $f is missing" >&2; exit 1; }; done
  model=$(cd "$model" && pwd)
fi
cd "$work"
ln -sfn "$egs/steps" steps; ln -sfn "$egs/utils" utils
echo "$me: working in $work"
dir=exp/mono

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  echo "== stage 0: data directory and lang"
  rm -rf data/train data/lang data/local/lang
  (cd "$origin" && "$egs/utils/copy_data_dir.sh" "$data" "$work/data/train")
  [ -f data/train/spk2utt ] || utils/utt2spk_to_spk2utt.sh data/train/utt2spk > data/train/spk2utt
  if [ -f data/train/feats.scp ]; then utils/validate_data_dir.sh data/train
  else utils/validate_data_dir.sh --no-feats data/train; fi
  utils/prepare_lang.sh "$dict" "$oov" data/local/lang data/lang > /dev/null
  # words of the transcripts the lexicon lacks: aligned as the --oov word (Kaldi's sym2int.pl --map-oov)
  awk 'NR == FNR { w[$1]; next } { for (i = 2; i <= NF; i++) if (!($i in w)) print $1, $i }' \
    data/lang/words.txt data/train/text > "$out"/oov.txt
  [ ! -s "$out"/oov.txt ] || echo "$me: $(wc -l < "$out"/oov.txt) words not in the lexicon, aligned as $oov: $out/oov.txt"
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  echo "== stage 1: features"
  if [ ! -f data/train/feats.scp ]; then
    [ -f data/train/wav.scp ] || { echo "$me: $data has neither feats.scp nor wav.scp" >&2; exit 1; }
    steps/make_mfcc.sh --nj $nj --cmd "$cmd" --mfcc-config "$mfcc_config" data/train > /dev/null
  fi
  steps/compute_cmvn_stats.sh --nj $nj --cmd "$cmd" data/train > /dev/null
  feat-to-len scp:data/train/feats.scp ark,t:data/train/utt2num_frames 2>/dev/null
  echo "$(wc -l < data/train/feats.scp) utterances, $(awk '{ n += $2 } END { print n }' data/train/utt2num_frames) frames"
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ] && [ -n "$model" ]; then
  echo "== stage 2: no training: the model of $model"
  rm -rf $dir; mkdir -p $dir
  cp "$model"/final.mdl "$model"/tree $dir/
  [ ! -f "$model"/loglike.txt ] || cp "$model"/loglike.txt $dir/
elif [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  echo "== stage 2: monophone training (local/train_mono.sh: $num_iters passes, up to $totgauss Gaussians)"
  rm -rf $dir
  # Gaussians grow until pass 30 of 40 (Kaldi's max_iter_inc), or 3/4 of fewer passes
  mii=$(( num_iters * 3 / 4 )); [ $mii -le 30 ] || mii=30; [ $mii -ge 1 ] || mii=1
  "$here"/local/train_mono.sh --nj $nj --cmd "$cmd" --device $device --num-iters $num_iters --totgauss $totgauss \
    --max-iter-inc $mii \
    data/train data/lang $dir
fi

ali=exp/mono_ali
if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  echo "== stage 3: alignment (beam $beam, retry beam $retry_beam, exact $exact)"
  rm -rf $ali; mkdir -p $ali/log
  sdata=data/train/split${nj}utt
  [ -d $sdata ] || utils/split_data.sh --per-utt data/train $nj > /dev/null
  for j in $(seq $nj); do
    awk -v oov="$(cat data/lang/oov.int)" 'NR == FNR { id[$1] = $2; next }
      { printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", ($i in id) ? id[$i] : oov; print "" }' \
      data/lang/words.txt $sdata/$j/text > $sdata/$j/text.int
  done
  feats="ark,s,cs:apply-cmvn --utt2spk=ark:data/train/utt2spk scp:data/train/cmvn.scp scp:$sdata/JOB/feats.scp ark:- | add-deltas ark:- ark:- |"
  $cmd JOB=1:$nj $ali/log/compile_graphs.JOB.log \
    compile-train-graphs --read-disambig-syms=data/lang/phones/disambig.int $dir/tree $dir/final.mdl data/lang/L.fst \
    ark:$sdata/JOB/text.int "ark:|gzip -c > $ali/fsts.JOB.gz" || true   # a job whose graphs all failed: no-graph below
  $cmd JOB=1:$nj $ali/log/align.JOB.log \
    gmm-align-compiled --device=$device --transition-scale=1.0 --acoustic-scale=0.1 --self-loop-scale=0.1 \
    --beam=$beam --retry-beam=$retry_beam --exact=$exact --failure-report=$ali/failures.JOB.txt \
    $dir/final.mdl "ark:gunzip -c $ali/fsts.JOB.gz|" "$feats" "ark:|gzip -c > $ali/ali.JOB.gz" || true
  for j in $(seq $nj); do # a job that wrote no report died on an error (not a failed utterance)
    [ -f $ali/failures.$j.txt ] || { echo "$me: alignment job $j failed: $ali/log/align.$j.log" >&2; tail -3 $ali/log/align.$j.log >&2; exit 1; }
  done
  # the report: the aligner's lines, then every utterance of text it never saw
  # (compile-train-graphs skipped it: its warning says why)
  for j in $(seq $nj); do
    cat $ali/failures.$j.txt
    keys=$( { copy-int-vector "ark:gunzip -c $ali/ali.$j.gz|" ark,t:- 2>/dev/null || true; } | awk '{ print $1 }'
            awk '{ print $1 }' $ali/failures.$j.txt )
    awk -v lg=$ali/log/compile_graphs.$j.log 'NR == FNR { seen[$1]; next } !($1 in seen) {
        why = "no graph was compiled (see " lg ")"
        while ((getline l < lg) > 0) if (index(l, "utterance " $1 " ")) { sub(/.*WARNING: /, "", l); why = l }
        close(lg); print $1, "no-graph", why }' <(echo "$keys") $sdata/$j/text
  done > $ali/failures.txt
  rm -f $ali/failures.*.txt
  cp $dir/final.mdl $ali/final.mdl; echo $nj > $ali/num_jobs
  n=$(wc -l < data/train/text); nf=$(wc -l < $ali/failures.txt)
  echo "aligned $((n - nf)) of $n utterances; failed $nf$(awk '{ c[$2]++ } END { for (r in c) printf "%s %s %d", (k++ ? "," : ":"), r, c[r] }' $ali/failures.txt)"
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  echo "== stage 4: CTMs and TextGrids in $out"
  nj_ali=$(cat $ali/num_jobs)
  for j in $(seq $nj_ali); do
    ali-to-phones --ctm-output $ali/final.mdl "ark:gunzip -c $ali/ali.$j.gz|" - 2>/dev/null
  done | awk 'NR == FNR { s[$2] = $1; next } { $5 = s[$5]; print }' data/lang/phones.txt - > "$out"/phones.ctm.tmp
  steps/get_train_ctm.sh --cmd "$cmd" data/train data/lang $ali
  mv "$out"/phones.ctm.tmp "$out"/phones.ctm; cp $ali/ctm "$out"/words.ctm
  # durations: the frames' span, (frames - 1) x 10 ms + 25 ms
  awk '{ printf "%s %.3f\n", $1, ($2 - 1) * 0.01 + 0.025 }' data/train/utt2num_frames > $ali/utt2dur
  rm -rf "$out"/textgrid
  ctm-to-textgrid --utt2dur=$ali/utt2dur "$out"/words.ctm "$out"/phones.ctm "$out"/textgrid 2> $ali/log/textgrid.log ||
    { cat $ali/log/textgrid.log >&2; exit 1; }
  cp $ali/failures.txt "$out"/failures.txt
  n=$(wc -l < data/train/text); nf=$(wc -l < "$out"/failures.txt)
  {
    echo "# egs/align/run.sh --data $data --dict $dict --out $out --nj $nj$([ -n "$model" ] && echo " --model $model" || echo " --num-iters $num_iters --totgauss $totgauss")"
    echo "utterances: $n, aligned: $((n - nf)), failed: $nf (failures.txt)"
    echo "final pass log-likelihood per frame: $(tail -1 $dir/loglike.txt 2>/dev/null | awk '{ print $2 " over " $3 " frames" }')"
    echo "phones.ctm: $(wc -l < "$out"/phones.ctm) phones; words.ctm: $(wc -l < "$out"/words.ctm) words;" \
      "textgrid/: $(ls "$out"/textgrid | wc -l) files"
  } > "$out"/summary.txt
  cat "$out"/summary.txt
  echo "(run.sh took $(( $(date +%s) - start )) s)"
  if $fail_on_error && [ "$nf" -gt 0 ]; then echo "$me: $nf utterances not aligned (--fail-on-error)" >&2; exit 1; fi
fi
