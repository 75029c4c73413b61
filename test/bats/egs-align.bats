#!/usr/bin/env bats
# The forced-alignment recipes on a small cathy subset ($GH_SHARED/data/cathy): egs/cathy/run.sh
# (100 utterances, 8 training passes, 300 Gaussians: a fast model, not a good one) writes the
# CTMs and TextGrids, which test/python/align_outputs.py checks against the transcripts and
# the dictionary (every word on phone boundaries, spelled by one of its pronunciations;
# the TextGrids read by praatio); egs/align/run.sh --model with that model on the same
# utterances plus an empty transcript, a transcript longer than its audio and a word the
# lexicon lacks (failures.txt, oov.txt); and on the 20 FLAC clips through our
# compute-mfcc-feats (the shipped features before Kaldi's lossy compression: the same phones
# and words, boundaries within a frame); --device opencl (PoCL) against cpu.  About a minute
# on 2 cores.

setup_file() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export GH_SHARED ROOT BIN
  export W=$BATS_FILE_TMPDIR/w
  mkdir -p "$W"
}

setup() {
  cd "$W"
  export PATH=$BIN:$PATH LC_ALL=C
  D=$GH_SHARED/data/cathy
  PY=$ROOT/test/python/align_outputs.py
}

@test "egs/cathy/run.sh --subset 100: phones.ctm, words.ctm, TextGrids that parse; words on phone boundaries" {
  SECONDS=0
  run "$ROOT/egs/cathy/run.sh" --work "$W/cathy" --subset 100 --nj 2 --num-iters 8 --totgauss 300
  echo "$output" | tail -n 12
  echo "egs/cathy: $SECONDS s" >&3
  [ "$status" -eq 0 ]
  o=$W/cathy/out
  [[ "$output" == *"aligned 100 of 100 utterances; failed 0"* ]]
  [ -s "$o/phones.ctm" ] && [ -s "$o/words.ctm" ] && [ ! -s "$o/failures.txt" ]
  [ "$(ls "$o/textgrid" | wc -l)" -eq 100 ]
  grep -q "utterances: 100, aligned: 100, failed: 0" "$o/summary.txt"
  # the training log-likelihood rises pass by pass
  awk 'NR > 1 && $2 <= prev { exit 1 } { prev = $2 }' "$W/cathy/align/exp/mono/loglike.txt"
  [ "$(wc -l < "$W/cathy/align/exp/mono/loglike.txt")" -eq 7 ]
  run python3 "$PY" check "$o/phones.ctm" "$o/words.ctm" "$D/dict/lexicon.txt" "$D/text" "$o/textgrid"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "checked 100 utterances, "*" 100 TextGrids" ]]
  # steps/get_train_ctm.sh made words.ctm from word_boundary.int; align_lexicon.int gives the same
  a=$W/cathy/align
  rm -rf lang_lex; cp -r "$a/data/lang" lang_lex; rm lang_lex/phones/word_boundary.int
  "$ROOT/egs/steps/get_train_ctm.sh" "$a/data/train" lang_lex "$a/exp/mono_ali" ctm_lex
  cmp ctm_lex/ctm "$o/words.ctm"
  grep -q "align_lexicon.int" ctm_lex/log/get_ctm.1.log
}

@test "egs/align/run.sh --model: an empty transcript, a transcript too long for its audio, a word not in the lexicon" {
  [ -f "$W/cathy/align/exp/mono/final.mdl" ] || skip "needs the first test's model"
  src=$W/cathy/data/cathy
  rm -rf bad; mkdir bad
  cp "$src/feats.scp" "$src/text" "$src/utt2spk" bad/
  short=$(feat-to-len scp:bad/feats.scp ark,t:- 2>/dev/null | sort -k2n | head -n 1 | cut -d' ' -f1)
  grep "^$short " bad/feats.scp | sed 's/^[^ ]*/cathy-zz-long/' >> bad/feats.scp
  echo "cathy-zz-long $(head -n 4 bad/text | cut -d' ' -f2- | tr '\n' ' ')" >> bad/text
  sed -n 5p bad/feats.scp | sed 's/^[^ ]*/cathy-zz-empty/' >> bad/feats.scp
  echo "cathy-zz-empty" >> bad/text
  sed -i '6s/$/ QWXZY/' bad/text
  printf 'cathy-zz-long cathy\ncathy-zz-empty cathy\n' >> bad/utt2spk
  for f in feats.scp text utt2spk; do sort -o bad/$f bad/$f; done
  run "$ROOT/egs/align/run.sh" --data bad --dict "$D/dict" --out bad_out --nj 2 --model "$W/cathy/align/exp/mono"
  echo "$output" | tail -n 8
  [ "$status" -eq 0 ]
  [[ "$output" == *"aligned 100 of 102 utterances; failed 2"* ]]
  [ "$(wc -l < bad_out/failures.txt)" -eq 2 ]
  grep -qx "cathy-zz-empty no-graph Empty decoding graph for utterance cathy-zz-empty (ark:data/train/split2utt/2/text.int: empty transcript); skipped" bad_out/failures.txt
  grep -q "^cathy-zz-long too-few-frames the transcript needs at least [0-9]* frames, the features have $(feat-to-len "scp:grep ^$short bad/feats.scp|" 2>/dev/null)$" bad_out/failures.txt
  grep -qx "$(sed -n 6p bad/text | cut -d' ' -f1) QWXZY" bad_out/oov.txt
  run python3 "$PY" check bad_out/phones.ctm bad_out/words.ctm "$D/dict/lexicon.txt" bad/text bad_out/textgrid
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q " <UNK>$" bad_out/words.ctm
  [ ! -e bad_out/textgrid/cathy-zz-long.TextGrid ] && [ ! -e bad_out/textgrid/cathy-zz-empty.TextGrid ]
  ! grep -q "^cathy-zz" bad_out/phones.ctm bad_out/words.ctm
  # --fail-on-error: the same outputs, exit 1 naming the count
  run "$ROOT/egs/align/run.sh" --data bad --dict "$D/dict" --out bad_out --nj 2 --model "$W/cathy/align/exp/mono" \
    --stage 3 --fail-on-error true
  [ "$status" -eq 1 ]
  [[ "$output" == *"run.sh: 2 utterances not aligned (--fail-on-error)"* ]]
}

@test "egs/cathy/run.sh --mfcc true: the 20 FLAC clips through compute-mfcc-feats give the shipped features' CTMs within a frame" {
  [ -f "$W/cathy/align/exp/mono/final.mdl" ] || skip "needs the first test's model"
  run "$ROOT/egs/cathy/run.sh" --work "$W/flac" --mfcc true --nj 2 --model "$W/cathy/align/exp/mono"
  echo "$output" | tail -n 5
  [ "$status" -eq 0 ]
  [[ "$output" == *"20 utterances (FLAC, our MFCCs)"* ]]
  [[ "$output" == *"aligned 20 of 20 utterances; failed 0"* ]]
  [ "$(ls "$W/flac/out/textgrid" | wc -l)" -eq 20 ]
  # the same 20 utterances' shipped features (CMVN statistics over the same 20)
  run "$ROOT/egs/cathy/run.sh" --work "$W/feats20" --subset 20 --nj 2 --model "$W/cathy/align/exp/mono"
  [ "$status" -eq 0 ]
  [[ "$output" == *"20 utterances (shipped MFCCs)"* ]]
  # the shipped features are Kaldi's lossy compressed matrices, ours are not: the same phones
  # and words, every boundary within one frame, at most 2% of them moved
  for c in phones words; do
    a=$W/feats20/out/$c.ctm b=$W/flac/out/$c.ctm
    [ "$(wc -l < "$a")" -eq "$(wc -l < "$b")" ]
    run awk '{ getline l < B; split(l, f, " "); if ($1 != f[1] || $5 != f[5]) bad++
               d = $3 - f[3]; if (d < 0) d = -d; if (d > 0.0105) far++; if (d > 0.0005) moved++; n++ }
             END { printf "%d %d %d %d\n", bad, far, moved, n }' B="$b" "$a"
    echo "$c: $output" >&3
    set -- $output
    [ "$1" -eq 0 ] && [ "$2" -eq 0 ] && [ $(( $3 * 50 )) -le "$4" ]
  done
}

@test "egs/cathy/run.sh --device opencl (PoCL here): the CTMs of --device cpu" {
  [ -f "$W/cathy/align/exp/mono/final.mdl" ] || skip "needs the first test's model"
  probe=$(gmm-align-compiled --device=opencl "$W/cathy/align/exp/mono/final.mdl" "ark:printf ''|" "ark:printf ''|" \
    ark:/dev/null 2>&1) || true
  [[ "$probe" == *"using device opencl"* ]] || skip "no OpenCL device: $(echo "$probe" | tail -n 1)"
  for dev in cpu opencl; do
    run "$ROOT/egs/cathy/run.sh" --work "$W/dev-$dev" --subset 20 --nj 2 --device $dev --model "$W/cathy/align/exp/mono"
    echo "$output" | tail -n 3
    [ "$status" -eq 0 ]
  done
  grep -q "using device opencl" "$W/dev-opencl/align/exp/mono_ali/log/align.1.log"
  cmp "$W/dev-cpu/out/phones.ctm" "$W/dev-opencl/out/phones.ctm"
  cmp "$W/dev-cpu/out/words.ctm" "$W/dev-opencl/out/words.ctm"
}
