#!/usr/bin/env python3
"""Independent checks of the forced aligner's outputs (ali-to-word-ctm, ctm-to-textgrid,
egs/align/run.sh), from the dictionary and the transcripts, without our C code.

    align_outputs.py words-from-phones <phones.ctm> <text> > words.ctm
        The word CTM that the phone CTM implies (phone symbols with Kaldi's word-position
        suffixes _B _I _E _S: a word is a _S phone or a _B .. _E run, anything else is
        silence), words from the transcript in order; times as Kaldi's nbest-to-ctm prints
        them (float32 frame shift 0.01 times frames, 2 decimals).  Dies if the number of
        words differs from the transcript's.
    align_outputs.py check <phones.ctm> <words.ctm> <lexicon.txt> <text> [<textgrid-dir>]
        Every utterance of words.ctm: its words are the transcript's (a word missing from
        the lexicon as <UNK>); each word starts and ends on a phone boundary of phones.ctm;
        the phones inside are a pronunciation of the word in lexicon.txt (suffixes
        stripped); the phones outside words are silence phones (SIL, SPN).  With a
        TextGrid directory, each <utt>.TextGrid (read by praatio) has the tiers "words"
        and "phones", intervals that tile [0, xmax] with xmax >= the last phone's end, and
        the non-empty labels of words.ctm and of phones.ctm (stripped, silence empty) in
        order, at the same times (1e-6 s).  Prints "checked N utterances, W words, P
        phones, T TextGrids"; exits 1 with the first problem otherwise.
"""
import collections
import os
import sys

import numpy as np


def read_ctm(path):
    out = collections.OrderedDict()
    for line in open(path):
        f = line.split()
        if f:
            out.setdefault(f[0], []).append((float(f[2]), float(f[3]), f[4]))
    return out


def read_text(path):
    return {l.split()[0]: l.split()[1:] for l in open(path) if l.strip()}


def strip(p):
    return p[:-2] if len(p) > 2 and p[-2] == "_" and p[-1] in "BIES" else p


def fail(msg):
    print("align_outputs.py: " + msg, file=sys.stderr)
    sys.exit(1)


def words_from_phones(phones_ctm, text_path):
    text = read_text(text_path)
    fs = np.float32(0.01)
    for utt, ph in read_ctm(phones_ctm).items():
        words, cur = [], None
        for st, du, p in ph:
            a, b = int(round(st * 1000)) // 10, int(round((st + du) * 1000)) // 10
            if p.endswith("_S"):
                words.append((a, b))
            elif p.endswith("_B"):
                cur = a
            elif p.endswith("_E"):
                words.append((cur, b))
                cur = None
        ref = text[utt]
        if len(words) != len(ref):
            fail("%s: %d words in the phones, %d in the transcript" % (utt, len(words), len(ref)))
        for (a, b), w in zip(words, ref):
            print("%s 1 %.2f %.2f %s" % (utt, float(fs * np.float32(a)), float(fs * np.float32(b - a)), w))


def check(phones_ctm, words_ctm, lexicon, text_path, tg_dir=None):
    lex = collections.defaultdict(set)
    for line in open(lexicon):
        f = line.split()
        if f:
            lex[f[0]].add(tuple(f[1:]))
    text = read_text(text_path)
    P, W = read_ctm(phones_ctm), read_ctm(words_ctm)
    nw = npn = ntg = 0
    for utt, words in W.items():
        if utt not in P:
            fail("%s: in words.ctm, not in phones.ctm" % utt)
        ph = P[utt]
        ref = [w if w in lex else "<UNK>" for w in text[utt]]
        if [w for _, _, w in words] != ref:
            fail("%s: words %s, transcript %s" % (utt, [w for _, _, w in words], ref))
        starts = {round(s, 3): i for i, (s, _, _) in enumerate(ph)}
        ends = {round(s + d, 3): i for i, (s, d, _) in enumerate(ph)}
        inside = set()
        for s, d, w in words:
            i, j = starts.get(round(s, 3)), ends.get(round(s + d, 3))
            if i is None or j is None:
                fail("%s: word %s (%.2f + %.2f) does not start and end on phone boundaries" % (utt, w, s, d))
            pron = tuple(strip(p) for _, _, p in ph[i:j + 1])
            if pron not in lex[w]:
                fail("%s: word %s has phones %s, not a pronunciation in %s" % (utt, w, pron, lexicon))
            inside.update(range(i, j + 1))
        for k, (_, _, p) in enumerate(ph):
            if k not in inside and strip(p) not in ("SIL", "SPN"):
                fail("%s: phone %s at %.2f is outside every word but not silence" % (utt, p, ph[k][0]))
        nw += len(words)
        npn += len(ph)
        if tg_dir is None:
            continue
        from praatio import textgrid
        tg = textgrid.openTextgrid(os.path.join(tg_dir, utt + ".TextGrid"), includeEmptyIntervals=True)
        if list(tg.tierNames) != ["words", "phones"]:
            fail("%s: tiers %s" % (utt, tg.tierNames))
        end = max(s + d for s, d, _ in ph)
        if tg.maxTimestamp < end - 1e-6:
            fail("%s: the TextGrid ends at %g, the phones at %g" % (utt, tg.maxTimestamp, end))
        for name, ctm, lab in (("words", words, lambda x: x), ("phones", ph, strip)):
            ents = tg.getTier(name).entries
            if abs(ents[0].start) > 1e-9 or abs(ents[-1].end - tg.maxTimestamp) > 1e-9:
                fail("%s: tier %s does not cover 0 .. %g" % (utt, name, tg.maxTimestamp))
            for a, b in zip(ents, ents[1:]):
                if abs(a.end - b.start) > 1e-9:
                    fail("%s: tier %s has a gap at %g" % (utt, name, a.end))
            got = [(e.start, e.end, e.label) for e in ents if e.label != ""]
            want = [(s, s + d, lab(x)) for s, d, x in ctm if lab(x) not in ("SIL", "<eps>")]
            if len(got) != len(want) or any(g[2] != w[2] or abs(g[0] - w[0]) > 1e-6 or abs(g[1] - w[1]) > 1e-6
                                            for g, w in zip(got, want)):
                fail("%s: tier %s: %s, the CTM %s" % (utt, name, got[:5], want[:5]))
        ntg += 1
    print("checked %d utterances, %d words, %d phones, %d TextGrids" % (len(W), nw, npn, ntg))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "words-from-phones":
        words_from_phones(sys.argv[2], sys.argv[3])
    elif len(sys.argv) in (6, 7) and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
