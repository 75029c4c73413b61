#!/usr/bin/env bash
# steps/score_words.sh -- isolated-word classification accuracy.
# Usage: steps/score_words.sh <utt2word> <scores-text-ark> [<name>]
# <utt2word>: "key word-index" lines.  <scores-text-ark>: per-utterance vectors
# of scores per word (word i = entry i), e.g. from hmm-forward (ark,t) or
# matrix-sum-rows of gmm-score-gpu output.  Prints the accuracy line, then the
# confusion matrix (rows: reference, columns: recognised).
set -euo pipefail
name=${3:-}
awk -v name="$name" '
  FNR == NR { ref[$1] = $2; next }
  {
    k = $1; best = -1; bv = 0;
    for (i = 3; i <= NF && $i != "]"; i++) { v = $i + 0; if (best < 0 || v > bv) { bv = v; best = i - 3 } }
    if (!(k in ref)) { print "score_words.sh: no label for " k > "/dev/stderr"; exit 1 }
    n++; c[ref[k], best]++; if (ref[k] == best) ok++;
    if (ref[k] + 1 > nl) nl = ref[k] + 1; if (best + 1 > nl) nl = best + 1;
  }
  END {
    if (n == 0) { print "score_words.sh: nothing scored" > "/dev/stderr"; exit 1 }
    printf "%saccuracy: %.2f%% (%d/%d)\n", (name == "" ? "" : name ": "), 100 * ok / n, ok, n;
    printf "confusion matrix (rows = reference, columns = recognised):\n     ";
    for (j = 0; j < nl; j++) printf "%5d", j; printf "\n";
    for (i = 0; i < nl; i++) { printf "%5d", i; for (j = 0; j < nl; j++) printf "%5d", c[i, j] + 0; printf "\n" }
  }' "$1" "$2"
