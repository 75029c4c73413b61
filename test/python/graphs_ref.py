#!/usr/bin/env python3
"""Independent checks of training graphs and equal alignments (test/bats/graphs.bats).

  graphs_ref.py weights GRAPHS_TXT ALI_TXT MODEL_TXT TEXT_INT SIL_PROB [SCALE]
      For every alignment: the cheapest path of the utterance's graph (Kaldi text FST
      table, compiled with --transition-scale=SCALE --self-loop-scale=SCALE, default 1)
      that reads exactly the alignment's transition-ids must cost
      -SCALE * sum(log p(tid)) (the model's <LogProbs>)
      plus the lexicon's optional-silence costs (n words: n + 1 choices of silence or
      not, each -log(sil_prob) or -log(1 - sil_prob); pronunciation probabilities 1),
      within 1e-3 relative, and write the transcript's words.
  graphs_ref.py phones PHONES_TXT LEXICON_TXT WORDS_TXT TEXT_INT PHONE_SEQS_TXT OPTIONAL_SILENCE
      Every phone sequence (ali-to-phones output) must be the transcript's words, each
      one of its pronunciations in the dictionary's lexicon.txt with word-position
      suffixes (_B _I _E, _S for one phone), with the optional silence phone (no suffix)
      only between words, at the start or at the end.
Exit status 1 with one line per failure.
"""
import math
import sys


def read_table_ints(path):
    out = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if p:
                out[p[0]] = [int(x) for x in p[1:]]
    return out


def read_graphs(path):
    graphs, key, arcs, finals = {}, None, None, None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if key is None:
                if line.strip():
                    key, arcs, finals = line.split()[0], {}, {}
                    start = None
                continue
            if not line.strip():
                graphs[key] = (start, arcs, finals)
                key = None
                continue
            p = line.split('\t') if '\t' in line else line.split()
            if start is None:
                start = int(p[0])
            if len(p) >= 4:
                w = float(p[4]) if len(p) > 4 else 0.0
                arcs.setdefault(int(p[0]), []).append((int(p[2]), int(p[3]), w, int(p[1])))
            else:
                finals[int(p[0])] = float(p[1]) if len(p) > 1 else 0.0
    return graphs


def read_log_probs(path):
    toks = open(path).read().split()
    i = toks.index('<LogProbs>')
    assert toks[i + 1] == '['
    j = toks.index(']', i)
    return [float(x) for x in toks[i + 2:j]]


def weights(gpath, apath, mpath, tpath, sil_prob, scale):
    graphs, alis, texts = read_graphs(gpath), read_table_ints(apath), read_table_ints(tpath)
    logp = read_log_probs(mpath)
    bad = 0
    for key, ali in alis.items():
        start, arcs, finals = graphs[key]
        words = texts[key]
        cur = {start: (0.0, ())}
        for tid in ali:
            nxt = {}
            for s, (c, ws) in cur.items():
                for il, ol, w, d in arcs.get(s, ()):
                    if il == tid:
                        cand = (c + w, ws + ((ol,) if ol else ()))
                        if d not in nxt or cand[0] < nxt[d][0]:
                            nxt[d] = cand
            cur = nxt
        best = min(((c + finals[s], ws) for s, (c, ws) in cur.items() if s in finals), default=None)
        if best is None:
            print(f'{key}: the graph has no path for the alignment'); bad += 1; continue
        expect = -scale * sum(logp[t] for t in ali)
        # every choice costs -log(sil_prob) or -log(1-sil_prob): equal for 0.5
        sil_cost = -math.log(sil_prob)
        expect += (len(words) + 1) * sil_cost
        if abs(best[0] - expect) > 1e-3 * max(1.0, abs(expect)):
            print(f'{key}: path cost {best[0]:.6f}, expected {expect:.6f}'); bad += 1
        if list(best[1]) != words:
            print(f'{key}: output words {list(best[1])}, transcript {words}'); bad += 1
    print(f'checked {len(alis)} alignments')
    return bad


def phones(ppath, lpath, wpath, tpath, spath, optsil):
    id2p = {}
    for line in open(ppath):
        s, i = line.split()
        id2p[int(i)] = s
    id2w = {}
    for line in open(wpath):
        s, i = line.split()
        id2w[int(i)] = s
    lex = {}
    for line in open(lpath):
        p = line.split()
        w, pr = p[0], p[1:]
        if len(pr) == 1:
            pos = [pr[0] + '_S']
        else:
            pos = [pr[0] + '_B'] + [x + '_I' for x in pr[1:-1]] + [pr[-1] + '_E']
        lex.setdefault(w, []).append(pos)
    texts, seqs = read_table_ints(tpath), read_table_ints(spath)
    bad = 0
    for key, seq in seqs.items():
        ph = [id2p[x] for x in seq]
        words = [id2w[x] for x in texts[key]]
        # positions reachable: (index in ph, words done), silence only at word boundaries
        states = {(0, 0)}
        ok = False
        while states:
            i, k = states.pop()
            if i == len(ph) and k == len(words):
                ok = True
                break
            if i < len(ph) and ph[i] == optsil:  # optional silence between words
                states.add((i + 1, k))
            if k < len(words):
                for pron in lex.get(words[k], []):
                    if ph[i:i + len(pron)] == pron:
                        states.add((i + len(pron), k + 1))
        if not ok:
            print(f'{key}: phones {" ".join(ph)} are not the transcript {" ".join(words)}'); bad += 1
    print(f'checked {len(seqs)} phone sequences')
    return bad


if __name__ == '__main__':
    if sys.argv[1] == 'weights':
        bad = weights(*sys.argv[2:6], float(sys.argv[6]), float(sys.argv[7]) if len(sys.argv) > 7 else 1.0)
    elif sys.argv[1] == 'phones':
        bad = phones(*sys.argv[2:8])
    else:
        sys.exit('usage: graphs_ref.py weights|phones ...')
    sys.exit(1 if bad else 0)
