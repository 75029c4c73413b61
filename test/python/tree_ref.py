"""Independent reader of Kaldi's tree statistics (treeacc, binary BTS
format: build-tree-utils.cc WriteBuildTreeStats) and numpy float64 checks.

  tree_ref.py sum OUT IN1 IN2 ...   OUT is the union of the inputs' events,
                                    each statistic the float64 sum of the
                                    inputs' in argument order (exact)
  tree_ref.py info TREEACC          prints "<num-stats> <total-count> <dim>"
  tree_ref.py close A B TOL         the same events, counts and variance
                                    floors; per event and dimension
                                    |sum x| differs by at most
                                    TOL * sqrt(count * sum x^2) (the size of
                                    the rounding of a sum of count terms),
                                    sum x^2 by at most TOL * sum x^2;
                                    prints the largest of each, relative
  tree_ref.py narrow WIDE NARROW OFF N TOL
                                    WIDE's events narrowed to the window of
                                    N positions from OFF (keys OFF..OFF+N-1
                                    become 0..N-1, others dropped; the
                                    pdf-class key -1 kept) and summed in
                                    float64 must be NARROW's events with the
                                    same counts and sums within TOL relative
                                    (of sqrt(count * sum x^2) and sum x^2)
Exits non-zero with a message on the first difference."""
import struct
import sys
import numpy as np


def read_bts(path):
    """[(event tuple, count, var_floor, stats[2, dim] float64)] in file order."""
    d = open(path, 'rb').read()
    assert d[:2] == b'\0B', f'{path}: not a binary Kaldi file'
    pos = 2

    def tok(t):
        nonlocal pos
        assert d[pos:pos + len(t) + 1] == t + b' ', f'{path}@{pos}: expected {t}'
        pos += len(t) + 1

    def u32():
        nonlocal pos
        assert d[pos] == 0xFC
        v = struct.unpack('<I', d[pos + 1:pos + 5])[0]
        pos += 5
        return v

    def i32():
        nonlocal pos
        assert d[pos] == 4
        v = struct.unpack('<i', d[pos + 1:pos + 5])[0]
        pos += 5
        return v

    def f64():
        nonlocal pos
        assert d[pos] == 8
        v = struct.unpack('<d', d[pos + 1:pos + 9])[0]
        pos += 9
        return v

    tok(b'BTS')
    out = []
    for _ in range(u32()):
        tok(b'EV')
        ev = tuple((i32(), i32()) for _ in range(u32()))
        assert d[pos:pos + 1] == b'T', f'{path}@{pos}: NULL statistics'
        pos += 1
        tok(b'GCL')
        count, floor = f64(), f64()
        tok(b'DM')
        rows, cols = i32(), i32()
        st = np.frombuffer(d, dtype='<f8', count=rows * cols, offset=pos).reshape(rows, cols)
        pos += 8 * rows * cols
        out.append((ev, count, floor, st))
    assert pos == len(d), f'{path}: {len(d) - pos} bytes after the statistics'
    return out


def main():
    verb = sys.argv[1]
    if verb == 'info':
        s = read_bts(sys.argv[2])
        print(len(s), sum(c for _, c, _, _ in s), s[0][3].shape[1] if s else 0)
        return
    if verb == 'close':
        a, b, tol = read_bts(sys.argv[2]), read_bts(sys.argv[3]), float(sys.argv[4])
        if [e for e, _, _, _ in a] != [e for e, _, _, _ in b]:
            sys.exit('events differ')
        w1 = w2 = 0.0
        for (ev, c1, f1, s1), (_, c2, f2, s2) in zip(a, b):
            if c1 != c2 or f1 != f2:
                sys.exit(f'event {ev}: count or floor differs ({c1} vs {c2}, {f1} vs {f2})')
            scale1 = np.sqrt(c2 * s2[1]) + 1e-300
            w1 = max(w1, float(np.max(np.abs(s1[0] - s2[0]) / scale1)))
            w2 = max(w2, float(np.max(np.abs(s1[1] - s2[1]) / (s2[1] + 1e-300))))
        print(f'{len(a)} statistics; sum x within {w1:.2e}, sum x^2 within {w2:.2e} relative')
        if w1 > tol or w2 > tol:
            sys.exit(f'beyond {tol}')
        return
    if verb == 'narrow':
        wide, narrow = read_bts(sys.argv[2]), read_bts(sys.argv[3])
        off, n, tol = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
        want = {}
        for ev, c, fl, st in wide:
            ev2 = tuple((k - off if k >= 0 else k, v) for k, v in ev if k < 0 or off <= k < off + n)
            if ev2 in want:
                c0, fl0, st0 = want[ev2]
                want[ev2] = (c0 + c, fl0, st0 + st)
            else:
                want[ev2] = (c, fl, st.copy())
        if sorted(want) != [e for e, _, _, _ in narrow]:
            sys.exit(f'events differ: {len(want)} narrowed, {len(narrow)} in {sys.argv[3]}')
        w1 = w2 = 0.0
        for ev, c, fl, st in narrow:
            c0, fl0, st0 = want[ev]
            if c != c0 or fl != fl0:
                sys.exit(f'event {ev}: count or floor differs ({c0} vs {c}, {fl0} vs {fl})')
            w1 = max(w1, float(np.max(np.abs(st0[0] - st[0]) / (np.sqrt(c * st[1]) + 1e-300))))
            w2 = max(w2, float(np.max(np.abs(st0[1] - st[1]) / (st[1] + 1e-300))))
        print(f'{len(wide)} statistics narrowed to {len(narrow)}; counts equal; sum x within {w1:.2e}, '
              f'sum x^2 within {w2:.2e} relative')
        if w1 > tol or w2 > tol:
            sys.exit(f'beyond {tol}')
        return
    assert verb == 'sum'
    out = read_bts(sys.argv[2])
    want = {}
    for p in sys.argv[3:]:
        for ev, c, fl, st in read_bts(p):
            if ev in want:
                c0, fl0, st0 = want[ev]
                want[ev] = (c0 + c, fl0, st0 + st)
            else:
                want[ev] = (c, fl, st.copy())
    keys = sorted(want)
    got = [e for e, _, _, _ in out]
    if got != keys:
        sys.exit(f'events differ: {len(got)} in the output, {len(keys)} in the inputs\' union (or order differs)')
    for ev, c, fl, st in out:
        c0, fl0, st0 = want[ev]
        if c != c0 or fl != fl0 or not np.array_equal(st, st0):
            sys.exit(f'event {ev}: sums differ (count {c} vs {c0}, max |diff| {np.abs(st - st0).max()})')
    print(f'{len(out)} statistics, sums exact')


main()
