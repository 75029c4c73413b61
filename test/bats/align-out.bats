#!/usr/bin/env bats
# Forced-alignment outputs and failures: ali-to-word-ctm (Kaldi's get_train_ctm.sh word
# CTM) on Kaldi's own alignments of cathy ($GH_SHARED/data/kaldi-fixtures/align: mono_ali,
# mono/final.mdl) against the word CTM that Kaldi's phone CTM (mono_ctm/phones.ctm.gz) implies
# (test/python/align_outputs.py, from the phones' word-position marks and the transcripts);
# ctm-to-textgrid's TextGrids read back by praatio; gmm-align-compiled's per-utterance
# failure report (each reason provoked, the too-few-frames bound recomputed from the
# lexicon); the bad-input cases of the aligner's pipeline, each one error line naming the
# file, the key and the cause, among them a model of one lang with the lexicon of another
# (the lang with and without word-position phones, both ways: compile-train-graphs,
# gmm-train-mono, gmm-train-tri).  About 30 s on 2 cores.

setup_file() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export GH_SHARED ROOT BIN
  export W=$BATS_FILE_TMPDIR/w
  D=$GH_SHARED/data/cathy F=$GH_SHARED/data/kaldi-fixtures/align
  mkdir -p "$W" && cd "$W"
  export PATH=$BIN:$PATH LC_ALL=C
  "$ROOT/egs/utils/prepare_lang.sh" "$D/dict" "<UNK>" tmp lang > /dev/null 2>&1
  awk 'NR == FNR { id[$1] = $2; next } { printf "%s", $1; for (i = 2; i <= NF; i++) printf " %s", id[$i]; print "" }' \
    lang/words.txt "$D/text" > text.int
  # the first 40 utterances' features as align_si.sh makes them, and their graphs
  sed "s| feats.ark:| $D/feats.ark:|" "$D/feats.scp" | head -n 40 > feats.scp
  sed "s| cmvn.ark:| $D/cmvn.ark:|" "$D/cmvn.scp" > cmvn.scp
  apply-cmvn --utt2spk=ark:"$D/utt2spk" scp:cmvn.scp scp:feats.scp ark:- 2>/dev/null |
    add-deltas ark:- ark,scp:f39.ark,f39.scp 2>/dev/null
  head -n 40 text.int > t40.int
  compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/mono/tree" "$F/mono/final.mdl" \
    "gunzip -c $F/lang/L.fst.gz|" ark:t40.int ark:g40.ark 2>/dev/null
}

setup() {
  cd "$W"
  export PATH=$BIN:$PATH LC_ALL=C
  F=$GH_SHARED/data/kaldi-fixtures/align
  D=$GH_SHARED/data/cathy
  MDL=$F/mono/final.mdl
  SCALES="--transition-scale=1.0 --acoustic-scale=0.1 --self-loop-scale=0.1"
  PY=$ROOT/test/python/align_outputs.py
}

@test "ali-to-word-ctm: usage with an e.g. line; wrong arguments exit 1" {
  run ali-to-word-ctm
  [ "$status" -ne 0 ]
  [[ "$output" == *"Usage:"*"ali-to-word-ctm"*"e.g."* ]]
  run ali-to-word-ctm a b c d
  [ "$status" -ne 0 ]
}

@test "ali-to-word-ctm on Kaldi's alignments: the word CTM Kaldi's phone CTM implies, byte for byte (1,582 utterances)" {
  python3 "$PY" words-from-phones <(gunzip -c "$F/mono_ctm/phones.ctm.gz") "$D/text" > ref.ctm
  [ "$(wc -l < ref.ctm)" -eq 13983 ]
  for info in align_lexicon word_boundary; do
    for j in 1 2; do
      ali-to-word-ctm --word-symbol-table=lang/words.txt lang/phones/$info.int "$MDL" \
        "ark:gunzip -c $F/mono_ali/ali.$j.gz|" ark:text.int - 2>/dev/null
    done > words.$info.ctm
    cmp ref.ctm words.$info.ctm
  done
  # integer labels (Kaldi's nbest-to-ctm before int2sym.pl) and the silence segments
  ali-to-word-ctm lang/phones/align_lexicon.int "$MDL" "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark:text.int int.ctm
  paste -d' ' <(cut -d' ' -f1-4 int.ctm) <(awk 'NR == FNR { s[$2] = $1; next } { print s[$5] }' lang/words.txt int.ctm) |
    cmp - <(head -n "$(wc -l < int.ctm)" ref.ctm)
  # with --print-silence the segments tile each utterance: they add up to its frames
  ali-to-word-ctm --print-silence lang/phones/align_lexicon.int "$MDL" "ark:gunzip -c $F/mono_ali/ali.1.gz|" \
    ark:text.int sil.ctm
  grep -q ' 0$' sil.ctm
  copy-int-vector "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark,t:- 2>/dev/null | awk '{ print $1, NF - 1 }' > len.txt
  awk '{ n[$1] += int($4 * 100 + 0.5) } END { for (u in n) print u, n[u] }' sil.ctm | sort | cmp - <(sort len.txt)
}

@test "ali-to-word-ctm: a transcript the phones do not spell, a missing transcript: warned by key, counted" {
  copy-int-vector "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark,t:- 2>/dev/null | head -n 3 > a3.txt
  # utterance 2 gets utterance 1's words plus one; utterance 3 has no transcript
  awk 'NR == 1 { print; t = $0 } NR == 2 { sub(/^[^ ]+/, "", t); print $1 t " 5" }' text.int > t3.int
  run ali-to-word-ctm lang/phones/align_lexicon.int "$MDL" ark:a3.txt ark:t3.int out.ctm
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Word alignment failed for utterance cathy-arctic_a0001-2: the phones are not a pronunciation of the transcript"* ]]
  [[ "$output" == *"no transcript for utterance cathy-arctic_a0001-3"* ]]
  [[ "$output" == *"Done 1 utterances"*"failed for 2"* ]]
  run ali-to-word-ctm lang/phones/word_boundary.int "$MDL" ark:a3.txt ark:t3.int out.ctm
  [[ "$output" == *"cathy-arctic_a0001-2: the alignment has 8 words, the transcript 9"* ]]
  # nothing done: exit 1, no CTM left behind
  rm -f none.ctm
  run ali-to-word-ctm lang/phones/align_lexicon.int "$MDL" "ark:sed -n 2p a3.txt|" ark:t3.int none.ctm
  [ "$status" -eq 1 ]
  [ ! -e none.ctm ]
}

@test "ali-to-word-ctm: a lexicon of another lang, a malformed lexicon, a word id out of range: one error line" {
  rm -f out.ctm
  copy-int-vector "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark,t:- 2>/dev/null | head -n 3 > a3.txt
  awk 'NR == 5 { $3 = 9999 } 1' lang/phones/align_lexicon.int > other.int
  run ali-to-word-ctm other.int "$MDL" ark:a3.txt ark:text.int out.ctm
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: other.int: word "*" uses phone 9999, which the model "*"final.mdl does not have"* ]]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  awk 'NR == 7 { $2 = $2 + 1 } 1' lang/phones/align_lexicon.int > bad.int
  run ali-to-word-ctm bad.int "$MDL" ark:a3.txt ark:text.int out.ctm
  [ "$status" -eq 1 ]
  [[ "$output" == *"bad.int: line 7: the first two fields differ"* ]]
  printf '1 nonword\n2 sideways\n' > wb.int
  run ali-to-word-ctm wb.int "$MDL" ark:a3.txt ark:text.int out.ctm
  [[ "$output" == *"wb.int: line 2: unknown word position \"sideways\""* ]]
  echo "cathy-arctic_a0001-1 1 99999" > big.int
  run ali-to-word-ctm --word-symbol-table=lang/words.txt lang/phones/align_lexicon.int "$MDL" ark:a3.txt ark:big.int out.ctm
  [ "$status" -eq 1 ]
  [[ "$output" == *"ark:big.int: utterance cathy-arctic_a0001-1: word id 99999 (position 2) is not a word of lang/words.txt"* ]]
  [ ! -e out.ctm ]
}

@test "ctm-to-textgrid: MFA's long TextGrids, read by praatio: tiers words and phones tile the utterance" {
  # the first 100 utterances
  ali-to-phones --ctm-output "$MDL" "ark:gunzip -c $F/mono_ali/ali.1.gz|" pi_all.ctm 2>/dev/null
  awk '!($1 in k) { k[$1]; n++ } n <= 100' pi_all.ctm > pi.ctm
  awk 'NR == FNR { s[$2] = $1; next } { $5 = s[$5]; print }' lang/phones.txt pi.ctm > p.ctm
  ali-to-word-ctm --word-symbol-table=lang/words.txt lang/phones/align_lexicon.int "$MDL" \
    "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark:text.int - 2>/dev/null |
    awk 'NR == FNR { k[$1]; next } $1 in k' p.ctm - > w.ctm
  rm -rf tg; run ctm-to-textgrid w.ctm p.ctm tg
  echo "$output"
  [ "$status" -eq 0 ]
  n=$(cut -d' ' -f1 p.ctm | sort -u | wc -l)
  [ "$(ls tg | wc -l)" -eq "$n" ]
  run python3 "$PY" check p.ctm w.ctm "$D/dict/lexicon.txt" "$D/text" tg
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "checked $n utterances"*"$n TextGrids" ]]
  # Praat's header and an empty-label silence interval first
  head -n 3 tg/cathy-arctic_a0001-1.TextGrid | grep -q 'File type = "ooTextFile"'
  grep -A3 'intervals \[1\]:' tg/cathy-arctic_a0001-1.TextGrid | grep -q 'text = ""'
  # the integer phone CTM with --phone-symbol-table gives the same files; --utt2spk, --utt2dur
  rm -rf tg2; ctm-to-textgrid --phone-symbol-table=lang/phones.txt w.ctm pi.ctm tg2 2>/dev/null
  diff -r tg tg2
  echo "cathy-arctic_a0001-1 3.5" > dur
  grep '^cathy-arctic_a0001-1 ' w.ctm > w1.ctm; grep '^cathy-arctic_a0001-1 ' p.ctm > p1.ctm
  rm -rf tg3; ctm-to-textgrid --utt2spk="$D/utt2spk" --utt2dur=dur "$(pwd)/w1.ctm" "$(pwd)/p1.ctm" tg3 2>/dev/null
  run python3 -c "
from praatio import textgrid
tg = textgrid.openTextgrid('tg3/cathy-arctic_a0001-1.TextGrid', includeEmptyIntervals=True)
print(list(tg.tierNames), tg.maxTimestamp, tg.getTier('cathy - phones').entries[-1])"
  echo "$output"
  [[ "$output" == "['cathy - words', 'cathy - phones'] 3.5 Interval(start=3.23, end=3.5, label='')" ]]
}

@test "ctm-to-textgrid: a malformed CTM line, a duration shorter than the alignment: one error line, no file" {
  printf 'u1 1 0.00 0.50 A\nu1 1 0.50 x B\n' > badw.ctm
  printf 'u1 1 0.00 0.50 A_S\n' > badp.ctm
  rm -rf tgb; run ctm-to-textgrid badw.ctm badp.ctm tgb
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: badw.ctm: line 2 (utterance u1): start \"0.50\" or duration \"x\" is not a time >= 0"* ]]
  printf 'u1 1 0.00 0.50 A\n' > w1.ctm
  echo "u1 0.3" > d1
  run ctm-to-textgrid --utt2dur=d1 w1.ctm badp.ctm tgb
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: d1: utterance u1 lasts 0.3 s, but its alignment ends at 0.5 s"* ]]
  [ ! -e tgb/u1.TextGrid ]
}

@test "gmm-align-compiled: failure report: no-features, no-graph, too-few-frames, beam; --fail-on-error" {
  # utterance 2: its first 30 frames only; utterance 3: no features; utterance 41: an empty graph
  copy-feats "scp:sed -n 2p f39.scp|" ark,t:- 2>/dev/null |
    awk 'NR == 1 || NR <= 30 { print; next } NR == 31 { sub(/ *\]?$/, " ]"); print }' > short.txt
  copy-feats ark:short.txt ark,scp:short.ark,short.scp 2>/dev/null
  awk 'NR == FNR { s[$1] = $0; next } FNR == 3 { next } ($1 in s) { print s[$1]; next } 1' short.scp f39.scp > bad.scp
  { cat g40.ark; printf 'cathy-zz-empty \n\n'; } > g41.ark
  echo "cathy-zz-empty $(sed -n 4p f39.scp | cut -d' ' -f2)" >> bad.scp
  run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 --failure-report=rep.txt "$MDL" ark:g41.ark scp:bad.scp \
    ark,t:ali.txt
  [ "$status" -eq 0 ]
  [[ "$output" == *"Failed to align utterance cathy-arctic_a0001-3: no-features"* ]]
  [[ "$output" == *"Aligned 38 of 41 utterances; failed 3: no-features 1, no-graph 1, too-few-frames 1, no-path 0, beam 0"* ]]
  [ "$(wc -l < ali.txt)" -eq 38 ]
  [ "$(wc -l < rep.txt)" -eq 3 ]
  grep -qx 'cathy-arctic_a0001-3 no-features no entry in scp:bad.scp' rep.txt
  grep -q '^cathy-zz-empty no-graph empty graph' rep.txt
  # the bound: three frames per phone (3-state phones) of the transcript's shortest pronunciations
  want=$(awk 'NR == FNR { n = NF - 1; if (!($1 in m) || n < m[$1]) m[$1] = n; next }
    $1 == "cathy-arctic_a0001-2" { for (i = 2; i <= NF; i++) s += m[$i]; print 3 * s }' "$D/dict/lexicon.txt" "$D/text")
  grep -qx "cathy-arctic_a0001-2 too-few-frames the transcript needs at least $want frames, the features have 30" rep.txt
  # --fail-on-error: exit 1, the alignments and the report still written
  rm -f ali.txt rep.txt
  run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 --fail-on-error --failure-report=rep.txt "$MDL" \
    ark:g41.ark scp:bad.scp ark,t:ali.txt
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: 3 of 41 utterances were not aligned (--fail-on-error; outputs written)"* ]]
  [ "$(wc -l < ali.txt)" -eq 38 ] && [ "$(wc -l < rep.txt)" -eq 3 ]
  # each utterance's features given to another's graph: the beams fail, the exact search does not
  awk 'NR == FNR { a[NR] = $2; next } { print $1, a[(FNR + 19) % 40 + 1] }' f39.scp f39.scp > swap.scp
  run gmm-align-compiled $SCALES --beam=10 --retry-beam=40 --failure-report=rep.txt "$MDL" ark:g40.ark scp:swap.scp \
    ark:/dev/null
  nb=$(grep -c ' beam no final state within beam 10 (retry beam 40); --exact aligns it$' rep.txt)
  [ "$nb" -ge 5 ] && [ "$nb" -eq "$(wc -l < rep.txt)" ]
  [[ "$output" == *"failed $nb: no-features 0, no-graph 0, too-few-frames 0, no-path 0, beam $nb"* ]]
  run gmm-align-compiled $SCALES --exact --fail-on-error "$MDL" ark:g40.ark scp:swap.scp ark:/dev/null
  [ "$status" -eq 0 ]
  [[ "$output" == *"Aligned 40 of 40 utterances; failed 0"* ]]
}

@test "gmm-align-compiled: nothing aligned: exit 1 with the report written" {
  printf 'cathy-arctic_a0001-1 \n\n' > empty.ark
  rm -f rep1.txt
  run gmm-align-compiled --failure-report=rep1.txt "$MDL" ark,t:empty.ark scp:f39.scp ark:/dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: no utterance was aligned (1 failed; outputs written)"* ]]
  grep -q '^cathy-arctic_a0001-1 no-graph' rep1.txt
}

@test "bad input: unknown word, empty transcript, a lexicon phone not in phones.txt, another lang's model, a tree of another model" {
  # a word id the lexicon lacks, an empty transcript: compile-train-graphs names the key and the cause
  printf 'u1 99999\nu2\n' > bad.int
  run compile-train-graphs --read-disambig-syms="$F/lang/phones/disambig.int" "$F/mono/tree" "$MDL" \
    "gunzip -c $F/lang/L.fst.gz|" ark:bad.int ark:g.ark
  [ "$status" -eq 1 ]
  [[ "$output" == *"Empty decoding graph for utterance u1 (ark:bad.int: word id 99999 (word 1 of 1) is not an output label of the lexicon FST"* ]]
  [[ "$output" == *"Empty decoding graph for utterance u2 (ark:bad.int: empty transcript); skipped"* ]]
  # a lexicon whose phone is in no phone list
  rm -rf dict2 lang2; cp -r "$D/dict" dict2; echo "ZZZWORD Q9" >> dict2/lexicon.txt
  run "$ROOT/egs/utils/prepare_lang.sh" dict2 "<UNK>" tmp2 lang2
  [ "$status" -ne 0 ]
  [[ "$output" == *"ERROR: dict2/lexicon.txt, line 3197: phone 'Q9' of word 'ZZZWORD' is in neither silence_phones.txt nor nonsilence_phones.txt"* ]]
  [ ! -e lang2/L.fst ]
  # a model of another lang (no word-position phones) with this lang's lexicon and graphs
  gmm-init-mono --train-feats=scp:f39.scp "$F/lang_nopos/topo" 39 nopos.mdl nopos.tree 2>/dev/null
  run compile-train-graphs nopos.tree nopos.mdl "gunzip -c $F/lang/L.fst.gz|" ark:t40.int ark:/dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: the lexicon FST"*"has input label"*"neither a phone of the model nor a disambiguation symbol"* ]]
  run gmm-align-compiled nopos.mdl ark:g40.ark scp:f39.scp ark:/dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: ark:g40.ark: graph of utterance cathy-arctic_a0001-1: invalid symbol"*"(transition-ids of nopos.mdl are 1 .. "* ]]
  run ali-to-word-ctm lang/phones/align_lexicon.int nopos.mdl "ark:gunzip -c $F/mono_ali/ali.1.gz|" ark:text.int o.ctm
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: lang/phones/align_lexicon.int: word "*" uses phone "*", which the model nopos.mdl does not have"* ]]
  # a tree that does not belong to the model
  run compile-train-graphs "$F/tri1/tree" "$MDL" "gunzip -c $F/lang/L.fst.gz|" ark:t40.int ark:/dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: the tree "*"tri1/tree has 432 pdfs but the model "*"final.mdl uses 127: the tree does not belong to the model"* ]]
}

@test "bad input: a model of the lang with word-position phones with the lexicon of the lang without, and the reverse" {
  # the two langs of one dictionary: phones 1 .. 346 (AA0_B ...) and 1 .. 86 (AA0 ...); the ids overlap,
  # so an in-range label proves nothing: the disambiguation symbols and phones.txt tell
  "$ROOT/egs/utils/prepare_lang.sh" --position-dependent-phones false "$D/dict" "<UNK>" tmpn lang_nopos > /dev/null 2>&1
  gmm-init-mono --train-feats=scp:f39.scp lang_nopos/topo 39 nopos.mdl nopos.tree 2>/dev/null
  # compile-train-graphs as Kaldi's scripts call it: Kaldi's position-dependent monophone model, the other L.fst
  rm -f g.ark
  run compile-train-graphs --read-disambig-syms=lang_nopos/phones/disambig.int "$F/mono/tree" "$MDL" lang_nopos/L.fst \
    ark:t40.int ark:g.ark
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: lang_nopos/phones/disambig.int: disambiguation symbol 87 is phone 87 of the model $MDL (346 phones, 1 .. 346): the lang has fewer phones than the model, the model is of another lang"* ]]
  [ "$(echo "$output" | grep -c ERROR)" -eq 1 ]
  [ ! -e g.ark ]
  # the reverse: the model without word positions, the position-dependent L.fst
  run compile-train-graphs --read-disambig-syms=lang/phones/disambig.int nopos.tree nopos.mdl lang/L.fst ark:t40.int ark:g.ark
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: the lexicon FST lang/L.fst has input label 166 on an arc of state 1: neither a phone of the model nor a disambiguation symbol (the model nopos.mdl has 86 phones, 1 .. 86; lang/phones/disambig.int): the lexicon is of another lang"* ]]
  [ ! -e g.ark ]
  # each model with its own lang compiles
  compile-train-graphs --read-disambig-syms=lang_nopos/phones/disambig.int nopos.tree nopos.mdl lang_nopos/L.fst \
    ark:t40.int ark:/dev/null 2>/dev/null
  compile-train-graphs --read-disambig-syms=lang/phones/disambig.int "$F/mono/tree" "$MDL" lang/L.fst \
    ark:t40.int ark:/dev/null 2>/dev/null

  # the trainers: five utterances (they die before reading features)
  mkdir -p dat && head -n 5 "$D/text" > dat/text && cp cmvn.scp dat/ && head -n 5 feats.scp > dat/feats.scp
  awk '{ print $1, "cathy" }' dat/text > dat/utt2spk
  # gmm-train-mono makes its model from the lang's topo: a lang directory holding the other lang's topo
  rm -rf mix exp; cp -r lang mix; cp lang_nopos/topo mix/topo
  run gmm-train-mono --num-iters=1 dat mix exp/m
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: mix/phones.txt: phone 87 'AW2_B' is not a phone of the model mix/topo (the table has 346 phones, the model 86: 1 .. 86): the model is of another lang"* ]]
  [ ! -e exp/m/0.mdl ] && [ ! -e exp/m/final.mdl ]
  rm -rf mix; cp -r lang_nopos mix; cp lang/topo mix/topo
  run gmm-train-mono --num-iters=1 dat mix exp/m
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: mix/phones.txt: phone 87 of the model mix/topo is the symbol '#0' there (the table has 86 phones, the model 346: 1 .. 346): the model is of another lang"* ]]
  [ ! -e exp/m/0.mdl ] && [ ! -e exp/m/final.mdl ]
  # gmm-train-tri: the alignment directory's model of one lang, the lang directory of the other
  mkdir -p ali_pos ali_nopos
  cp "$MDL" ali_pos/final.mdl && cp "$F/mono_ali/ali.1.gz" ali_pos/ && echo 1 > ali_pos/num_jobs
  cp nopos.mdl ali_nopos/final.mdl && cp nopos.tree ali_nopos/tree && echo 1 > ali_nopos/num_jobs
  gzip -c < /dev/null > ali_nopos/ali.1.gz
  run gmm-train-tri --num-iters=2 50 200 dat lang_nopos ali_pos exp/t
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: lang_nopos/phones.txt: phone 87 of the model ali_pos/final.mdl is the symbol '#0' there (the table has 86 phones, the model 346: 1 .. 346): the model is of another lang"* ]]
  run gmm-train-tri --num-iters=2 50 200 dat lang ali_nopos exp/t
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: lang/phones.txt: phone 87 'AW2_B' is not a phone of the model ali_nopos/final.mdl (the table has 346 phones, the model 86: 1 .. 86): the model is of another lang"* ]]
  [ ! -e exp/t/tree ] && [ ! -e exp/t/final.mdl ]
  # the alignment directory's phones.txt names other phones (utils/lang/check_phones_compatible.sh)
  sed 's/^AA0_B /XX_B /' lang/phones.txt > ali_pos/phones.txt
  run gmm-train-tri --num-iters=2 50 200 dat lang ali_pos exp/t
  [ "$status" -eq 1 ]
  [[ "$output" == *"ERROR: phone symbol tables lang/phones.txt and ali_pos/phones.txt are not compatible: id 15 is 'AA0_B' in the first, 'XX_B' in the second"* ]]
  # the valid pairs train
  cp lang/phones.txt ali_pos/phones.txt
  gmm-train-tri --num-iters=2 50 200 dat lang ali_pos exp/t 2>/dev/null
  [ -s exp/t/final.mdl ]
  gmm-train-mono --num-iters=1 dat lang_nopos exp/m 2>/dev/null
  [ -s exp/m/final.mdl ]
}
