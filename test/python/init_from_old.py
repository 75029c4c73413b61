#!/usr/bin/env python3
"""Independent check of gmm-init-model's initialization from an old model
(Kaldi InitAmGmmFromOld) when the old model is a monophone model whose pdfs
are the (phone set, HMM state) pairs the new tree's roots split.

Usage: init_from_old.py <new.mdl as text> <old.mdl as text>

Every (phone, HMM state) of a new pdf maps (through the old model's
transition tuples) to one old pdf; if all of a pdf's pairs map to the same
old pdf, the new pdf must be a copy of it (the old pdf then holds all of the
new pdf's statistics).  Pdfs listed as arguments after the models (those
gmm-init-model initialized from the global average) are skipped.  Prints the
number of pdfs checked; exit 1 on the first mismatch."""
import re
import sys


def read(path):
    text = open(path).read()
    tup = re.search(r"<Triples>\s*(\d+)\s*(.*?)</Triples>", text, re.S)
    if not tup:
        sys.exit("init_from_old: %s has no <Triples> (text model expected)" % path)
    nums = [int(x) for x in tup.group(2).split()]
    triples = [tuple(nums[i:i + 3]) for i in range(0, len(nums), 3)]
    blocks = re.findall(r"<DiagGMM>.*?</DiagGMM>", text[text.index("<NUMPDFS>"):], re.S)
    return triples, blocks


def main():
    new_t, new_b = read(sys.argv[1])
    old_t, old_b = read(sys.argv[2])
    skip = {int(x) for x in sys.argv[3:]}
    old_pdf = {(ph, st): pdf for ph, st, pdf in old_t}
    of = {}
    for ph, st, pdf in new_t:
        of.setdefault(pdf, set()).add(old_pdf[(ph, st)])
    checked = 0
    for pdf, olds in sorted(of.items()):
        if pdf in skip or len(olds) != 1:
            continue
        o = next(iter(olds))
        if new_b[pdf] != old_b[o]:
            sys.exit("init_from_old: new pdf %d is not a copy of old pdf %d" % (pdf, o))
        checked += 1
    print("init_from_old: checked %d of %d pdfs" % (checked, len(new_b)))


if __name__ == "__main__":
    main()
