#!/usr/bin/env bats
# The documentation stays true to the tree: no comment or doc cites the
# development log's work periods, numbers of a tracker that is not in the
# repository, or the seed papers by file number (cite the paper by authors
# and year, doc/references.md, or the benchmark row, bench/RESULTS.md), every relative link in README.md and doc/*.md
# names a file that exists, and every lib/... path the docs name exists.

setup() {
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  cd "$ROOT"
  DIRS=""
  for d in doc lib kernels drivers tools egs bench; do [ -e "$d" ] && DIRS="$DIRS $d"; done
}

# The references the docs must not make (the brackets keep this file from
# matching itself): the word for a development-log work period, a tracker
# number after "issue" or "issues" (with or without #), and "seed" followed
# by a seed paper's file number.
PATTERN='[s]ession|\b[i]ssues? #?[0-9]+|\b[s]eed 00[0-9]|\b[s]eed [0-9]{3}\b'

@test "docs: no work-period, tracker-number or seed-number references in doc lib kernels drivers tools egs bench README.md" {
  run grep -rniE "$PATTERN" $DIRS README.md
  echo "$output"
  [ "$status" -eq 1 ]
  [ -z "$output" ]
}

@test "docs: the check finds such references (it can fail)" {
  w=ssion; i=ssue; s=eed
  printf 'a comment (i%s 24)\nthe fifth se%s\ns%s 003 Sec. V\ni%ss 26 and 27\n' $i $w $s $i > "$BATS_TEST_TMPDIR/bad.md"
  run grep -ciE "$PATTERN" "$BATS_TEST_TMPDIR/bad.md"
  [ "$output" = 4 ]
  printf 'Cook et al. 2011\nissue an instruction in 28%% of cycles\n--seed 1\n' > "$BATS_TEST_TMPDIR/good.md"
  run grep -ciE "$PATTERN" "$BATS_TEST_TMPDIR/good.md"
  [ "$output" = 0 ]
}

# every markdown link [text](target) whose target is relative (not http:,
# https:, mailto: or a #fragment alone), with its #fragment removed, as
# "file<TAB>target"
relative_links() {
  for f in README.md doc/*.md; do
    grep -oE '\]\([^)[:space:]]+\)' "$f" | sed 's/^](//; s/)$//' |
      grep -vE '^(https?:|mailto:|#)' | sed 's/#.*//' | sed "s|^|$f\t|"
  done
}

@test "docs: every relative link in README.md and doc/*.md points to a file that exists" {
  n=0; bad=""
  while IFS=$'\t' read -r f target; do
    n=$((n + 1))
    [ -e "$(dirname "$f")/$target" ] || bad="$bad$f: $target\n"
  done < <(relative_links)
  printf "%b" "$bad"
  [ -z "$bad" ]
  [ "$n" -ge 20 ]   # README.md's table of the docs alone has more
}

@test "docs: the link check finds a broken link (it can fail)" {
  mkdir -p "$BATS_TEST_TMPDIR/doc"
  printf 'see [x](missing.md) and [y](../README.md#top) and [z](https://example.org)\n' > "$BATS_TEST_TMPDIR/doc/t.md"
  cp README.md "$BATS_TEST_TMPDIR/README.md"
  cd "$BATS_TEST_TMPDIR"
  run relative_links
  [[ "$output" == *"doc/t.md"$'\t'"missing.md"* ]]
  [[ "$output" == *"doc/t.md"$'\t'"../README.md"* ]]
  [[ "$output" != *"example.org"* ]]
  [ ! -e doc/missing.md ]
}

# Source paths the docs name: lib/..., kernels/..., drivers/..., tools/...,
# bench/... at the start of a word (not build/kernels/..., not Kaldi's
# egs/...), except the installed lib/pkgconfig/.
source_paths() {
  grep -ohE '(^|[^A-Za-z0-9_./-])(lib|kernels|drivers|tools|bench)/[A-Za-z0-9_./{},*-]*[A-Za-z0-9_}*]' "$@" |
    sed -E 's|^[^a-z]||' | grep -v '^lib/pkgconfig/' | sort -u
}

@test "docs: every lib/, kernels/, drivers/, tools/, bench/ path named in README.md and doc/*.md exists" {
  bad=""
  n=0
  for p in $(source_paths README.md doc/*.md); do
    n=$((n + 1))
    # lib/hmm/hmm.{h,c} -> both; globs (egs/*/RESULTS) -> at least one match
    for q in $(eval echo "$p"); do
      compgen -G "$q" > /dev/null || bad="$bad $p"
    done
  done
  echo "missing:$bad"
  [ -z "$bad" ]
  [ "$n" -ge 20 ]
}

@test "docs: the path check finds a stale path (it can fail)" {
  printf 'Code: `lib/hmm.{h,c}`, `build/kernels/x.c`, lib/gmm/gmm.h, `lib/pkgconfig/gmmhmm.pc`\n' > "$BATS_TEST_TMPDIR/t.md"
  run source_paths "$BATS_TEST_TMPDIR/t.md"
  [ "$output" = "$(printf 'lib/gmm/gmm.h\nlib/hmm.{h,c}')" ]
  [ ! -e lib/hmm.h ]
}
