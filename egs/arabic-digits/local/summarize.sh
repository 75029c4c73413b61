#!/usr/bin/env bash
# Usage: local/summarize.sh <results.txt>
# Lines "<system> <cov>:<n> seed <s>: dev accuracy: P% (k/n) ..." -> a table of
# mean accuracy per system and configuration (with min..max over seeds).
awk '{
  sys = $1; cfg = $2; sub(/:$/, "", cfg);
  for (i = 1; i <= NF; i++) if ($i == "accuracy:") acc = $(i + 1) + 0;
  k = sys " " cfg; n[k]++; s[k] += acc;
  if (!(k in lo) || acc < lo[k]) lo[k] = acc; if (!(k in hi) || acc > hi[k]) hi[k] = acc;
  if (!(cfg in seen)) { seen[cfg] = 1; order[++nc] = cfg }
  if (!(sys in sseen)) { sseen[sys] = 1; sorder[++ns] = sys }
} END {
  printf "%-10s", "config"; for (j = 1; j <= ns; j++) printf "  %-26s", sorder[j]; printf "\n";
  for (i = 1; i <= nc; i++) {
    printf "%-10s", order[i];
    for (j = 1; j <= ns; j++) { k = sorder[j] " " order[i];
      if (k in n) printf "  %6.2f%% (%6.2f..%6.2f)   ", s[k] / n[k], lo[k], hi[k]; else printf "  %-26s", "-" }
    printf "\n";
  }
}' "$1"
