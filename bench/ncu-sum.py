#!/usr/bin/env python3
"""ncu-sum.py A.csv [B.csv]: the kernel time of an ncu run, per kernel
(`ncu --metrics gpu__time_duration.sum --csv ...`; the "Metric Unit" column
read, so ns / us / ms / s rows, or nsecond ... second, add up alike). With B, the
per-kernel difference B - A: the launches B made beyond A (bench/ncu-iter.sh:
the kernels of one iteration as a run of N + 1 iterations minus a run of N).
Prints "name  ms  launches" lines, the largest first, then "total <ms> ms"."""
import collections
import csv
import re
import sys

SCALE = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3,  # -> ms
         "ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}  # (ncu --print-units base)


def kernel_ms(path):
    tot = collections.defaultdict(float)
    cnt = collections.Counter()
    rows = list(csv.reader(line for line in open(path) if line.startswith('"')))
    if not rows:
        sys.exit("%s: no ncu CSV rows" % path)
    h = rows[0]
    ki, vi = h.index("Kernel Name"), h.index("Metric Value")
    ui = h.index("Metric Unit") if "Metric Unit" in h else None
    for r in rows[1:]:
        try:
            v = float(r[vi].replace(",", ""))
        except ValueError:
            continue
        unit = r[ui] if ui is not None else "nsecond"
        if unit not in SCALE:
            sys.exit("%s: unknown time unit %r" % (path, unit))
        name = re.sub(r"\(.*", "", r[ki]).replace("void ", "")[:48]
        tot[name] += v * SCALE[unit]
        cnt[name] += 1
    return tot, cnt


def main():
    a, ca = kernel_ms(sys.argv[1])
    if len(sys.argv) > 2:
        b, cb = kernel_ms(sys.argv[2])
        names = set(a) | set(b)
        tot = {k: b.get(k, 0.0) - a.get(k, 0.0) for k in names}
        cnt = {k: cb.get(k, 0) - ca.get(k, 0) for k in names}
    else:
        tot, cnt = a, ca
    for k, v in sorted(tot.items(), key=lambda x: -x[1]):
        if cnt[k] or v:
            print("%-48s %9.3f ms %6d launches" % (k, v, cnt[k]))
    print("total %.3f ms" % sum(tot.values()))


if __name__ == "__main__":
    main()
