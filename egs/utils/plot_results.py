#!/usr/bin/env python3
"""utils/plot_results.py -- the recipes' pictures (matplotlib, PNG), written
beside results.txt:

  plot_results.py loglike <out.png> <title> <exp-dir>...
      training log-likelihood per iteration, one line per <exp-dir>: the
      "avg loglike per frame X" of <exp-dir>/loglike.txt ("<iteration> <X>"
      lines, in order) if present, else of the update logs
      <exp-dir>/log/update.<N>.log (steps/train_gmm.sh, steps/train_word_hmm.sh)
      or <exp-dir>/est.<N>.log (steps/train_word_hmm_viterbi.sh), by N, or the
      resident trainers' "iteration N: avg loglike per frame X" lines of
      <exp-dir>/log/train.log or <exp-dir>/train.log (--ranks N >= 1).
  plot_results.py confusion <out.png> <title> <words.txt> <scoring.txt>...
      the confusion matrix (rows = reference, columns = recognised) of
      steps/score_words.sh's scoring.txt files, summed over the files (e.g.
      the held-out folds); words.txt names word i on line i + 1.

Exit status 0 and one line naming the PNG; 1 with a message if there is
nothing to plot; 2 if matplotlib is missing (tools/install-deps.sh installs it).
"""
import glob
import os
import re
import sys

LL = re.compile(r"avg loglike per frame (-?[0-9.]+(?:e[-+]?[0-9]+)?)")


def die(msg, code=1):
    print("plot_results.py: " + msg, file=sys.stderr)
    sys.exit(code)


def curve(d):
    """(labels, values) of the training log-likelihood of exp dir d."""
    f = os.path.join(d, "loglike.txt")
    if os.path.isfile(f):
        pts = [l.split() for l in open(f) if len(l.split()) == 2]
        return [p[0] for p in pts], [float(p[1]) for p in pts]
    pts = []
    for pat in ("log/update.*.log", "est.*.log"):
        for f in glob.glob(os.path.join(d, pat)):
            m = re.search(r"\.([0-9]+)\.log$", f)
            if not m:
                continue
            vals = LL.findall(open(f, errors="replace").read())
            if vals:
                pts.append((int(m.group(1)), float(vals[-1])))
        if pts:
            break
    if not pts:
        # the resident trainers (gmm-train, hmm-train: steps' --ranks N >= 1):
        # one log, "iteration N: avg loglike per frame X" per iteration
        it = re.compile(r"iteration ([0-9]+): avg loglike per frame (-?[0-9.]+(?:e[-+]?[0-9]+)?)")
        for f in sorted(glob.glob(os.path.join(d, "log/train*.log"))) + [os.path.join(d, "train.log")]:
            if os.path.isfile(f):
                pts = [(int(a), float(b)) for a, b in it.findall(open(f, errors="replace").read())]
                if pts:
                    break
    pts.sort()
    return [str(p[0]) for p in pts], [p[1] for p in pts]


def confusion(words_file, files):
    words = [l.split()[0] for l in open(words_file) if l.strip()]
    n = len(words)
    import numpy as np
    c = np.zeros((n, n), dtype=int)
    got = 0
    for f in files:
        rows = []
        lines = open(f).read().splitlines()
        for i, l in enumerate(lines):
            if l.startswith("confusion matrix"):
                for r in lines[i + 2:]:
                    if r.strip():
                        rows.append([int(x) for x in r.split()[1:]])
                break
        if not rows:
            die("%s: no confusion matrix" % f)
        k = len(rows)
        if k > n or any(len(r) != k for r in rows):
            die("%s: a %d x %d confusion matrix for %d words in %s" % (f, k, len(rows[0]), n, words_file))
        c[:k, :k] += np.array(rows)
        got += 1
    return words, c, got


def main(argv):
    if len(argv) < 4 or argv[0] not in ("loglike", "confusion"):
        print(__doc__, file=sys.stderr)
        sys.exit(1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is not installed (tools/install-deps.sh, or pip install matplotlib): no %s" % argv[1], 2)
    what, out, title = argv[0], argv[1], argv[2]
    if what == "loglike":
        fig, ax = plt.subplots(figsize=(7, 4.5))
        n = 0
        for d in argv[3:]:
            labels, vals = curve(d)
            if not vals:
                continue
            ax.plot(range(1, len(vals) + 1), vals, marker=".", label=os.path.basename(os.path.normpath(d)))
            n += 1
            if len(argv) == 4 and any(not l.isdigit() for l in labels):
                step = max(1, len(labels) // 12)
                ax.set_xticks(range(1, len(vals) + 1)[::step])
                ax.set_xticklabels(labels[::step], rotation=45, fontsize=7)
        if n == 0:
            die("no training log-likelihoods in " + " ".join(argv[3:]))
        ax.set_xlabel("iteration")
        ax.set_ylabel("average log-likelihood per frame (nats)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if n <= 12:
            ax.legend(fontsize=7)
        else:
            ax.text(0.99, 0.02, "%d trainings" % n, transform=ax.transAxes, ha="right", fontsize=7)
    else:
        words, c, got = confusion(argv[3], argv[4:])
        fig, ax = plt.subplots(figsize=(1.5 + 0.55 * len(words), 1.2 + 0.5 * len(words)))
        im = ax.imshow(c, cmap="Blues")
        for i in range(len(words)):
            for j in range(len(words)):
                if c[i, j]:
                    ax.text(j, i, str(c[i, j]), ha="center", va="center", fontsize=8,
                            color="white" if c[i, j] > c.max() / 2 else "black")
        ax.set_xticks(range(len(words)))
        ax.set_xticklabels(words, rotation=45, fontsize=8)
        ax.set_yticks(range(len(words)))
        ax.set_yticklabels(words, fontsize=8)
        ax.set_xlabel("recognised")
        ax.set_ylabel("reference")
        acc = 100.0 * c.trace() / max(c.sum(), 1)
        ax.set_title("%s\n%.2f%% (%d/%d)%s" % (title, acc, c.trace(), c.sum(), "" if got == 1 else ", %d sets" % got),
                     fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    tmp = out + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, out)
    print("plot_results.py: wrote " + out)


if __name__ == "__main__":
    main(sys.argv[1:])
