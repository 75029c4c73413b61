#!/usr/bin/awk -f
# Converts the UCI "Spoken Arabic Digit" training file (13 MFCCs per line,
# utterances separated by blank lines) into a Kaldi text archive.
# Block b (0-based, file order): digit = b/660, w = b%660, gender = w<330 ? m : f,
# speaker slot = (w%330)/10, repetition = w%10 (UCI documentation; see
# ../shared/data/spoken-arabic-digit/README.md).  Key: <speaker>-d<digit>-r<rep>,
# e.g. tr_m00-d3-r7, speaker first so that Kaldi-style speaker prefixes work.
function key(b,   d, w, g, s) {
  d = int(b / 660); w = b % 660; g = (w < 330) ? "m" : "f";
  s = int((w % 330) / 10);
  return sprintf("tr_%s%02d-d%d-r%d", g, s, d, w % 10);
}
function close_block() { if (open) { printf " ]\n"; open = 0 } }
/^[ \t]*$/ { close_block(); b++; next }
{
  if (!open) { printf "%s  [", key(b - 1); open = 1 }
  printf "\n "; for (i = 1; i <= NF; i++) printf " %s", $i
}
END { close_block() }
