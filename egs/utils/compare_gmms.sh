#!/usr/bin/env bash
# utils/compare_gmms.sh -- are two GMM models (any form gmm-copy reads) equal
# up to a relative tolerance?  For checking that --nj N training gives the
# --nj 1 model (the accumulators are summed in another order).
#
#   utils/compare_gmms.sh [--rel-tol 1e-4] [--abs-tol 1e-5] <model-a> <model-b>
#
# Both models are written as text (gmm-copy --binary=false); every pair of
# numbers must satisfy |a - b| <= abs-tol + rel-tol * m, m the largest absolute
# entry of the vector or matrix ("[ ... ]") they are in (float rounding in a
# matrix inverse scales with the matrix, not the entry); every other token
# must be identical.  Prints the largest difference as a share of what is
# allowed (also when the models differ); exits 1, naming the first offending
# number or token, if they differ.
set -euo pipefail
rel_tol=1e-4; abs_tol=1e-5
. "$(dirname "$0")/parse_options.sh"
if [ $# -ne 2 ]; then sed -n '2,/^set -eu/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 1; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare_gmms.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
gmm-copy --binary=false "$1" "$tmp"/a 2> "$tmp"/log || { cat "$tmp"/log >&2; exit 1; }
gmm-copy --binary=false "$2" "$tmp"/b 2> "$tmp"/log || { cat "$tmp"/log >&2; exit 1; }
tr -s ' \n' '\n\n' < "$tmp"/a > "$tmp"/ta; tr -s ' \n' '\n\n' < "$tmp"/b > "$tmp"/tb
na=$(wc -l < "$tmp"/ta); nb=$(wc -l < "$tmp"/tb)
[ "$na" -eq "$nb" ] || { echo "compare_gmms.sh: $1 and $2 differ in size ($na and $nb tokens)" >&2; exit 1; }
paste -d' ' "$tmp"/ta "$tmp"/tb | awk -v r=$rel_tol -v a=$abs_tol -v A="$1" -v B="$2" '
  function abs(x) { return x < 0 ? -x : x }
  function isnum(x) { return x ~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/ }
  # one vector/matrix "[ ... ]" at a time: tolerance relative to its largest entry
  function flush(   i, d, tol) {
    for (i = 1; i <= n; i++) {
      d = abs(va[i] - vb[i]); tol = a + r * scale
      if (d / tol > worst) worst = d / tol
      if (d > tol && !bad) { printf "compare_gmms.sh: number %d differs: %s in %s, %s in %s (%.3g, more than %g + %g x %.4g, the largest entry of its block)\n", pos[i], va[i], A, vb[i], B, d, a, r, scale > "/dev/stderr"; bad = 1 }
    }
    n = 0; scale = 0 }
  { if (isnum($1) && isnum($2)) {
      va[++n] = $1; vb[n] = $2; pos[n] = NR
      if (abs($1) > scale) scale = abs($1); if (abs($2) > scale) scale = abs($2)
      if (!inblock) flush()
      next }
    if ($1 != $2) { printf "compare_gmms.sh: token %d differs: %s in %s, %s in %s\n", NR, $1, A, $2, B > "/dev/stderr"; tokbad = 1; exit 1 }
    if ($1 == "[") { flush(); inblock = 1 } else if ($1 == "]") { flush(); inblock = 0 } }
  END { if (tokbad) exit 1; flush()
        printf "compare_gmms.sh: %s within %g + %g x (largest entry of each vector or matrix); largest difference %.2g of that\n", bad ? "NOT equal" : "equal", a, r, worst
        exit bad }'
