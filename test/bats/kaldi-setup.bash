# kaldi-setup.bash -- the working directory of the Bats files that run Kaldi's
# recipe scripts (kaldi-mono, kaldi-tri) or our resident trainers against them
# (gmm-train-mono, gmm-train-tri): `load kaldi-setup` at the top of the file,
# then in setup_file
#   kaldi_workdir                   # $W with steps/ and utils/, PATH, LC_ALL
#   cathy_data_dir data/cathy       # all 1,582 utterances
#   cathy_data_dir data/sub 100     # the first 100 of each speaker id
#   cathy_lang                      # data/lang from our prepare_lang.sh
# The data directory is the one $GH_SHARED/data/kaldi-fixtures/align/make.sh
# makes (its README: two speaker ids, both with the shipped CMVN stats).

# Exports GH_SHARED ROOT BIN W (BATS_FILE_TMPDIR/w, made and entered) and
# PATH (our bin/ first, then W/utils) and LC_ALL=C; sets KS (Kaldi's scripts),
# D (the cathy data) and F (the fixture).  W/steps is Kaldi's steps/, W/utils
# holds Kaldi's utils/ with our egs/utils scripts in place of theirs.
kaldi_workdir() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export GH_SHARED ROOT BIN
  export W=$BATS_FILE_TMPDIR/w
  KS=$GH_SHARED/kaldi-scripts D=$GH_SHARED/data/cathy F=$GH_SHARED/data/kaldi-fixtures/align
  mkdir -p "$W" && cd "$W"
  ln -sfn "$KS/steps" steps
  mkdir -p utils
  for f in "$KS"/utils/*; do ln -sfn "$f" utils/; done
  for f in "$ROOT"/egs/utils/*; do ln -sfn "$f" utils/; done
  export PATH=$BIN:$W/utils:$PATH LC_ALL=C
}

# cathy_data_dir DIR [N]: a Kaldi data directory DIR (text, utt2spk, spk2utt,
# feats.scp, cmvn.scp) of all of cathy, or of the first N utterances of each
# speaker id; speaker ids cathy-arctic_a and cathy-arctic_b (the prompt set),
# both with cathy's CMVN stats.  Needs kaldi_workdir first.
cathy_data_dir() {
  local dir=$1 n=${2:-} cmvn_off s
  mkdir -p "$dir"
  if [ -n "$n" ]; then
    { grep '^cathy-arctic_a' "$D/text" | head -n "$n"; grep '^cathy-arctic_b' "$D/text" | head -n "$n"; } > "$dir/text"
  else
    cp "$D/text" "$dir/text"
  fi
  awk '{print $1, "cathy-" substr($1, 7, 8)}' "$dir/text" > "$dir/utt2spk"
  utils/utt2spk_to_spk2utt.pl "$dir/utt2spk" > "$dir/spk2utt"
  awk 'NR == FNR {k[$1] = 1; next} ($1 in k)' "$dir/text" "$D/feats.scp" |
    sed "s| feats.ark:| $D/feats.ark:|" > "$dir/feats.scp"
  cmvn_off=$(awk '$1 == "cathy" {sub(/^cmvn.ark:/, "", $2); print $2}' "$D/cmvn.scp")
  for s in cathy-arctic_a cathy-arctic_b; do echo "$s $D/cmvn.ark:$cmvn_off"; done > "$dir/cmvn.scp"
}

# cathy_lang: data/local/dict (cathy's dictionary) and data/lang from our
# utils/prepare_lang.sh (position-dependent phones), its log in
# prepare_lang.log.  Needs kaldi_workdir first.
cathy_lang() {
  mkdir -p data/local
  cp -r "$D/dict" data/local/dict
  utils/prepare_lang.sh data/local/dict "<UNK>" data/local/lang_tmp data/lang > prepare_lang.log 2>&1
}
