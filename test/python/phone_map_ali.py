#!/usr/bin/env python3
"""Rewrite alignments' phones by hand, as an independent check of --phone-map.

Usage: phone_map_ali.py <phones.txt> <show-transitions output> <ali text in>
                        <ali text out> <phone map out>

The map sends every stressed variant of a phone (AA0_B, AA1_B, AA2_B) to its
base phone (AA_B) where phones.txt has one, every other phone to itself, and
is written as Kaldi's phone map ("old new" per line).  The alignments
(Kaldi text int-vector archive of transition-ids) are rewritten frame by
frame: a transition-id of (phone, HMM state, k-th transition of the state)
becomes the transition-id of (mapped phone, same HMM state, k-th transition),
read from show-transitions' listing; a model whose mapped phone has no such
transition-state (another topology, or pdfs not shared) stops the script.
Prints "<mapped phones> <frames rewritten>"."""
import re
import sys


def main():
    phones_txt, trans_txt, ali_in, ali_out, map_out = sys.argv[1:6]
    ids = {}
    for line in open(phones_txt):
        name, i = line.split()
        ids[name] = int(i)
    phone_map = {}
    for name, i in ids.items():
        if i == 0 or name.startswith('#'):
            continue
        m = re.fullmatch(r'([A-Z]+)[012](_[BEIS])?', name)
        base = m.group(1) + (m.group(2) or '') if m else None
        phone_map[i] = ids[base] if base in ids else i
    with open(map_out, 'w') as f:
        for i in sorted(phone_map):
            f.write(f'{i} {phone_map[i]}\n')
    # transition-id -> (phone, hmm-state, k); (phone, hmm-state) -> [transition-ids]
    tid_info, state_tids = {}, {}
    cur = None
    for line in open(trans_txt):
        m = re.match(r'Transition-state \d+: phone = (\S+) hmm-state = (\d+)', line)
        if m:
            cur = (ids[m.group(1)], int(m.group(2)))
            assert cur not in state_tids, f'{cur}: more than one transition-state (unshared pdfs)'
            state_tids[cur] = []
            continue
        m = re.match(r'\s*Transition-id = (\d+)', line)
        if m:
            t = int(m.group(1))
            tid_info[t] = (cur[0], cur[1], len(state_tids[cur]))
            state_tids[cur].append(t)
    frames = 0
    with open(ali_out, 'w') as out:
        for line in open(ali_in):
            f = line.split()
            new = []
            for t in map(int, f[1:]):
                ph, hs, k = tid_info[t]
                nph = phone_map[ph]
                new.append(state_tids[(nph, hs)][k])
                frames += nph != ph
            out.write(f[0] + ' ' + ' '.join(map(str, new)) + '\n')
    print(sum(1 for k, v in phone_map.items() if k != v), frames)


main()
