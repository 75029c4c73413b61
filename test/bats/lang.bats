#!/usr/bin/env bats
# The lang directory and OpenFst's binary FST format: prepare-lang (through
# egs/utils/prepare_lang.sh) against the goldens real Kaldi wrote on the cathy dict
# ($GH_SHARED/data/kaldi-fixtures/align/lang, lang_nopos: every text file byte for
# byte, L.fst byte for byte and as printed), our FST reader against an independent
# Python decoder of the format (and OpenFst's fstprint when libfst-tools is
# installed), archive round trips through fstcopy, Kaldi's own prepare_lang.sh on
# other options when OpenFst's tools are installed, and bad input.

setup() {
  GH_SHARED=${GH_SHARED:-$BATS_TEST_DIRNAME/../../../shared}
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=${GH_BIN:-$ROOT/bin}
  export PATH="$BIN:$PATH"
  FIX=$GH_SHARED/data/kaldi-fixtures/align
  DICT=$GH_SHARED/data/cathy/dict
  KS=$GH_SHARED/kaldi-scripts
  # OpenFst's own tools (Debian libfst-tools), never ours of the same name in $BIN
  OFST=""
  for d in /usr/bin /usr/local/bin; do
    if [ -x $d/fstcompile ] && [ -x $d/fstarcsort ] && [ -x $d/fstprint ] && [ "$d" != "$BIN" ]; then OFST=$d; break; fi
  done
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  cd "$T"
  export LC_ALL=C
}

# An independent reader of OpenFst's binary vector format (Python struct), printing
# as fstprint does (start state first, weights %.9g, weight 0 not printed).
pyprint() {
  python3 - "$1" <<'EOF'
import struct, sys, gzip
d = open(sys.argv[1], 'rb').read()
if d[:2] == b'\x1f\x8b': d = gzip.decompress(d)
o = 0
def take(fmt):
    global o
    v = struct.unpack_from('<' + fmt, d, o); o += struct.calcsize('<' + fmt); return v
def string():
    n, = take('i'); s = d[o:o + n].decode(); take('%ds' % n); return s
magic, = take('i'); assert magic == 2125659606
assert string() == 'vector' and string() == 'standard'
version, flags, props, start, nstates, narcs = take('iiQqqq')
def w(x): return 'Infinity' if x == float('inf') else '%.9g' % x
states = []
for s in range(nstates):
    final, n = take('fq')
    states.append((final, [take('iifi') for _ in range(n)]))
assert o == len(d)
out = []
for s in [start] + [q for q in range(nstates) if q != start]:
    final, arcs = states[s]
    for i, ol, wt, nx in arcs:
        out.append('%d\t%d\t%d\t%d' % (s, nx, i, ol) + ('' if wt == 0 else '\t' + w(wt)))
    if final != float('inf') or not arcs:
        out.append('%d' % s + ('' if final == 0 else '\t' + w(final)))
print('\n'.join(out))
EOF
}

# Every file of golden dir $1 (L.fst.gz as L.fst) equals ours in $2.
same_as_golden() {
  local g=$1 o=$2 n=0
  for f in $(cd "$g" && find . -type f | sort); do
    case "$f" in
      ./L.fst.gz) gunzip -c "$g/$f" | cmp - "$o/L.fst" ;;
      *) cmp "$g/$f" "$o/$f" ;;
    esac
    n=$((n + 1))
  done
  [ "$n" -ge 20 ]
}

@test "prepare_lang.sh: lang/ equals Kaldi's, every text file and L.fst byte for byte" {
  run "$ROOT/egs/utils/prepare_lang.sh" "$DICT" "<UNK>" tmp lang
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [[ "$output" == *"346 phones (10 silence, 336 non-silence), 2697 words, 3196 pronunciations, 5 disambiguation symbols"* ]]
  same_as_golden "$FIX/lang" lang
  # the same states and arcs, printed by our reader and by the independent one
  fstprint lang/L.fst > ours.txt
  fstprint "gunzip -c $FIX/lang/L.fst.gz |" > golden.txt
  cmp ours.txt golden.txt
  pyprint lang/L.fst | cmp - ours.txt
  [ "$(wc -l < ours.txt)" -eq 20065 ]   # 20,064 arcs + 1 final state
  # outputs the fixture leaves out: present, consistent with L.fst
  [ -s lang/L_disambig.fst ] && [ -s lang/phones/align_lexicon.txt ] && [ -s lang/phones/align_lexicon.int ]
  [ "$(wc -l < lang/phones/align_lexicon.txt)" -eq 3197 ]
}

@test "prepare_lang.sh --position-dependent-phones false: lang_nopos/ equals Kaldi's" {
  "$ROOT/egs/utils/prepare_lang.sh" --position-dependent-phones false "$DICT" "<UNK>" tmp lang 2> log
  same_as_golden "$FIX/lang_nopos" lang
  pyprint lang/L.fst | cmp - <(fstprint lang/L.fst)
}

@test "FST reader: the golden L.fst read and printed as the independent reader and OpenFst's fstprint print it" {
  gunzip -c "$FIX/lang/L.fst.gz" > L.fst
  fstprint L.fst > ours.txt
  pyprint L.fst | cmp - ours.txt
  fstprint - < L.fst | cmp - ours.txt
  if [ -n "$OFST" ]; then
    $OFST/fstprint L.fst | cmp - ours.txt
    gunzip -c "$FIX/lang_nopos/L.fst.gz" > N.fst
    $OFST/fstprint N.fst | cmp - <(fstprint N.fst)
  fi
}

@test "fstcopy: FST archives round-trip byte for byte (binary, text, gzip'd, scp)" {
  gunzip -c "$FIX/lang/L.fst.gz" > L.fst
  gunzip -c "$FIX/lang_nopos/L.fst.gz" > N.fst
  { printf 'utt1 '; cat L.fst; printf 'utt2 '; cat N.fst; } > a.ark
  fstcopy ark:a.ark ark:b.ark
  cmp a.ark b.ark
  gzip -c a.ark > a.ark.gz
  fstcopy "ark:gunzip -c a.ark.gz |" ark:- | cmp - a.ark
  fstcopy ark:a.ark ark,scp:c.ark,c.scp
  fstcopy scp:c.scp ark:- | cmp - a.ark
  # text entries: "key \n" + the lines (6 digits, as Kaldi) + an empty line
  fstcopy ark:a.ark ark,t:t.ark
  head -n 2 t.ark | cat -A | head -n 2 > head.txt
  [ "$(sed -n 1p head.txt)" = 'utt1 $' ] && [ "$(sed -n 2p head.txt)" = '0^I1^I0^I0^I0.693147$' ]
  fstcopy ark:t.ark ark,t:- | cmp - t.ark
  # the text entry holds the same states and arcs
  fstcopy ark:t.ark ark:u.ark
  python3 - <<'EOF'
d = open('u.ark', 'rb').read()
assert d.startswith(b'utt1 \xd6\xfd\xb2\x7e')
EOF
}

@test "prepare-lang against Kaldi's prepare_lang.sh on other options (OpenFst's tools)" {
  [ -n "$OFST" ] || skip "OpenFst's fstcompile/fstarcsort/fstprint (Debian libfst-tools) not installed"
  [ -d "$KS/utils" ] || skip "Kaldi's scripts not in $KS"
  # Kaldi's script with OpenFst's tools first on PATH; fstaddselfloops (a Kaldi
  # binary) is stubbed, so L_disambig.fst is compared apart, below.
  mkdir -p kbin
  printf '#!/bin/sh\ncat\n' > kbin/fstaddselfloops; chmod +x kbin/fstaddselfloops
  ln -s "$KS/utils" utils
  # a dict with pronunciation probabilities, homophones and prefixes (disambiguation)
  mkdir dict
  cp "$DICT"/{silence_phones,nonsilence_phones,optional_silence,extra_questions}.txt dict/
  head -n 300 "$DICT/lexicon.txt" | awk '{ w = $1; $1 = ""; p = (NR % 7 == 0) ? 0.25 : (NR % 5 == 0 ? 0.6 : 1.0);
    print w, p $0 }' > dict/lexiconp.txt
  printf 'ZZA 0.5 AA1 B\nZZB 1.0 AA1 B\nZZC 1.0 AA1\n' >> dict/lexiconp.txt
  # a phone table with other ids (reversed, with gaps), for --phone-symbol-table
  python3 - "$FIX/lang/phones.txt" > ptab.txt <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
ph = [r[0] for r in rows if not r[0].startswith('#')]
print('<eps> 0')
for i, p in enumerate(reversed(ph[1:])): print(p, 3 * i + 5)
for i, r in enumerate(r for r in rows if r[0].startswith('#')): print(r[0], 2000 + i)
EOF
  for opts in "--sil-prob 0.3 --num-sil-states 3 --num-nonsil-states 4" \
              "--phone-symbol-table $T/ptab.txt" \
              "--sil-prob 0 --share-silence-phones true --num-sil-states 1" \
              "--position-dependent-phones false --sil-prob 0.5"; do
    rm -rf k o
    cp -r dict kd
    PATH=$T/kbin:$OFST:/usr/bin:/bin bash utils/prepare_lang.sh $opts kd "<UNK>" k/tmp k/lang > klog 2>&1 || true
    rm -rf kd
    [ -s k/lang/L.fst ] || { cat klog; false; }
    "$ROOT/egs/utils/prepare_lang.sh" $opts dict "<UNK>" o/tmp o/lang 2> olog
    for f in $(cd k/lang && find . -type f ! -name L_disambig.fst | sort); do cmp k/lang/$f o/lang/$f; done
    cmp k/tmp/lexiconp_disambig.txt o/tmp/lexiconp_disambig.txt
    cmp k/tmp/lex_ndisambig o/tmp/lex_ndisambig
    # L_disambig.fst: Kaldi's arcs plus fstaddselfloops' #0:#0 loops (sorted lines)
    p0=$(awk '$1 == "#0" {print $2}' k/lang/phones.txt); w0=$(awk '$1 == "#0" {print $2}' k/lang/words.txt)
    $OFST/fstprint k/lang/L_disambig.fst | awk -v p=$p0 -v w=$w0 '{print} NF >= 4 && $4 != 0 {n[$1]} NF <= 2 {n[$1]}
      END {for (s in n) print s "\t" s "\t" p "\t" w}' | sort > kld.txt
    $OFST/fstprint o/lang/L_disambig.fst | sort | cmp - kld.txt
    [ "$($OFST/fstinfo o/lang/L_disambig.fst | awk '/output label sorted/ {print $NF}')" = y ]
  done
}

@test "fstarcsort: byte-identical to OpenFst's, ties included (L.fst; random FSTs with many equal labels)" {
  [ -n "$OFST" ] || skip "OpenFst's tools (Debian libfst-tools) not installed"
  gunzip -c "$FIX/lang/L.fst.gz" > L.fst
  for t in ilabel olabel; do
    $OFST/fstarcsort --sort_type=$t L.fst > k.fst
    fstarcsort --sort_type=$t L.fst > o.fst
    cmp k.fst o.fst
    $OFST/fstarcsort --sort_type=$t k.fst | cmp - <(fstarcsort --sort_type=$t o.fst)
  done
  # random FSTs (states numbered in order of appearance, so fstcompile keeps them):
  # OpenFst compiles and sorts; we read the same text as a Kaldi text table entry
  python3 - <<'EOF'
import random
random.seed(7)
for k in range(6):
    n = random.choice([3, 40, 300])
    lines, seen = [], 1
    for a in range(random.choice([50, 2000, 20000])):
        s = random.randrange(seen); d = random.randrange(min(n, seen + 1)); seen = max(seen, d + 1)
        w = random.choice(['', '\t0.5', '\t1.25', '\t0'])
        lines.append('%d\t%d\t%d\t%d%s' % (s, d, random.randrange(4), random.randrange(3), w))
    lines.append('0\t0.5')
    lines.sort(key=lambda l: l.split('\t')[0] != '0')  # the first line's source is state 0
    ids = {}  # renumber in order of first appearance, as fstcompile does
    def num(x): return str(ids.setdefault(x, len(ids)))
    out = []
    for l in lines:
        f = l.split('\t')
        f[0] = num(f[0])
        if len(f) >= 4: f[1] = num(f[1])
        out.append('\t'.join(f))
    open('r%d.txt' % k, 'w').write('\n'.join(out) + '\n')
EOF
  for k in 0 1 2 3 4 5; do
    { printf 'k \n'; cat r$k.txt; echo; } > r$k.ark
    fstcopy ark:r$k.ark ark:- 2> /dev/null | tail -c +3 > r$k.fst
    $OFST/fstcompile r$k.txt | cmp - r$k.fst
    for t in ilabel olabel; do
      $OFST/fstcompile r$k.txt | $OFST/fstarcsort --sort_type=$t | cmp - <(fstarcsort --sort_type=$t r$k.fst)
    done
  done
}

@test "prepare-lang: bad dictionaries are one clear error naming the file and line, nothing written" {
  mk() { rm -rf d; mkdir d; cp "$DICT"/{silence_phones,nonsilence_phones,optional_silence,extra_questions}.txt d/; }
  mk; printf 'HELLO HH AH0 L OW1\nWORLD W ER1 QQ D\n' > d/lexicon.txt
  run prepare-lang d "<UNK>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"d/lexicon.txt, line 2: phone 'QQ' of word 'WORLD' is in neither"* ]]
  [ ! -e lang/L.fst ] && [ ! -e lang/phones.txt ]
  mk; : > d/lexicon.txt
  run prepare-lang d "<UNK>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"d/lexicon.txt: the lexicon is empty"* ]]
  mk; printf 'HELLO HH AH0 L OW1\nWORLD\n' > d/lexicon.txt
  run prepare-lang d "<UNK>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"d/lexicon.txt, line 2: word 'WORLD' has no pronunciation"* ]]
  mk; printf 'HELLO 1.5 HH AH0 L OW1\n' > d/lexiconp.txt
  run prepare-lang d "<UNK>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"d/lexiconp.txt, line 1: bad pronunciation probability '1.5'"* ]]
  mk; rm d/silence_phones.txt; cp "$DICT/lexicon.txt" d/
  run "$ROOT/egs/utils/prepare_lang.sh" d "<UNK>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"d/silence_phones.txt: cannot open: No such file or directory"* ]]
  mk; cp "$DICT/lexicon.txt" d/; echo 'AA1 XX' >> d/extra_questions.txt
  run prepare-lang d "<UNK>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"d/extra_questions.txt, line "*": phone 'XX' is in neither"* ]]
  mk; cp "$DICT/lexicon.txt" d/
  run prepare-lang d "<NOPE>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"the OOV word '<NOPE>' is not in the lexicon"* ]]
  [ ! -e lang/L.fst ] && [ ! -e lang/words.txt ]
  run prepare-lang --sil-prob=1 d "<UNK>" tmp lang
  [ "$status" -ne 0 ] && [[ "$output" == *"--sil-prob=1: expected 0 <= p < 1"* ]]
}

@test "FST reader: corrupt files are one error line with the file and offset, never a crash" {
  gunzip -c "$FIX/lang/L.fst.gz" > L.fst
  printf 'not an fst' > bad.fst
  run fstprint bad.fst
  [ "$status" -ne 0 ] && [[ "$output" == *"bad.fst, offset 4: not an OpenFst binary FST"* ]]
  head -c 100 L.fst > trunc.fst
  run fstprint trunc.fst
  [ "$status" -ne 0 ] && [[ "$output" == *"trunc.fst, offset 66: "*"needs 164064 bytes, but only 34 are left"* ]]
  python3 -c "
import struct
d = bytearray(open('L.fst', 'rb').read())
struct.pack_into('<q', d, 0x32, 2**31 - 2); open('many.fst', 'wb').write(d)
d = bytearray(open('L.fst', 'rb').read())
struct.pack_into('<i', d, 0x5a, 99999); open('next.fst', 'wb').write(d)
d = bytearray(open('L.fst', 'rb').read())
d[8:14] = b'vectox'; open('type.fst', 'wb').write(d)"
  run fstprint many.fst
  [ "$status" -ne 0 ] && [[ "$output" == *"many.fst, offset 66: "*"the FST's states needs"* ]]
  run fstprint next.fst
  [ "$status" -ne 0 ] && [[ "$output" == *"next.fst, offset "*"state 0, arc 0: next state 99999 out of range (13672 states)"* ]]
  run fstprint type.fst
  [ "$status" -ne 0 ] && [[ "$output" == *"FST type is \"vectox\", only \"vector\" is supported"* ]]
  # a bad entry in an archive names the key
  { printf 'utt1 '; cat L.fst; printf 'utt2 '; cat trunc.fst; } > a.ark
  run fstcopy ark:a.ark ark:b.ark
  [ "$status" -ne 0 ] && [[ "$output" == *"key 'utt2'"* ]] && [ ! -e b.ark ]
}
