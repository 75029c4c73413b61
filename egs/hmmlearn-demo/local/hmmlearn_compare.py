#!/usr/bin/env python3
"""local/hmmlearn_compare.py -- data and the hmmlearn side of egs/hmmlearn-demo:

  make <data-dir> --states S --seqs N --length T --seed K
      samples N sequences of T frames from a known S-state Gaussian HMM (2-D,
      diagonal covariances, "sticky" transitions) with hmmlearn's
      GaussianHMM.sample, writes <data-dir>/feats.{ark,scp} (kaldiio; absolute
      names), <data-dir>/states.txt (the true state sequences, Kaldi text int
      vectors) and <data-dir>/true.txt (the generating parameters).
  compare <data-dir> <init-model-text> <ours-loglike.txt> <ours-final-model-text>
          <ours-final-hmm-text> <ours-states.txt> --iters K
      fits hmmlearn's GaussianHMM (covariance_type="diag") from OUR initial
      model (ergodic, uniform start and transitions, k-means means/variances:
      init_params="", params="stmc", tol=-inf, so exactly K Baum-Welch
      iterations), then prints, one per line: the average log-likelihood per
      frame of both per iteration (the E-step of that iteration's model, nats;
      ours as hmm-bw logs it, 4 decimals), the
      largest differences of the final parameters (after matching states by
      their means), and the state accuracy of both Viterbi paths against the
      true states (best permutation of state labels).
"""
import argparse
import itertools
import re
import sys

import numpy as np
import kaldiio
from hmmlearn import hmm


def true_model(S, seed):
    r = np.random.RandomState(seed)
    ang = 2 * np.pi * np.arange(S) / S
    means = 1.5 * np.stack([np.cos(ang), np.sin(ang)], 1)
    covars = 0.5 + r.rand(S, 2)
    trans = np.full((S, S), 0.1 / (S - 1)) if S > 1 else np.ones((1, 1))
    np.fill_diagonal(trans, 0.9 if S > 1 else 1.0)
    start = np.full(S, 1.0 / S)
    m = hmm.GaussianHMM(n_components=S, covariance_type="diag", init_params="", random_state=r)
    m.startprob_, m.transmat_, m.means_, m.covars_ = start, trans, means, covars
    return m


def read_model_text(path):
    """Our GMM set in text form (gmm-copy --binary=false): one diagonal Gaussian per pdf."""
    t = open(path).read()
    means, covars = [], []
    for blk in re.findall(r"<DiagGMM>(.*?)</DiagGMM>", t, re.S):
        def arr(tag):
            m = re.search(tag + r"\s*\[(.*?)\]", blk, re.S)
            return np.array([float(x) for x in m.group(1).split()])
        w = arr("<WEIGHTS>")
        if len(w) != 1:
            sys.exit("hmmlearn_compare.py: %s: expected one Gaussian per pdf" % path)
        iv = arr("<INV_VARS>")
        means.append(arr("<MEANS_INVVARS>") / iv)
        covars.append(1.0 / iv)
    return np.array(means), np.array(covars)


def read_hmm_text(path, S):
    """startprob and transmat of the first HMM of our text HMM set."""
    toks = open(path).read().replace("[", " [ ").replace("]", " ] ").split()
    i = toks.index("<InitLogProbs>") + 2
    start = np.exp(np.array([float(x) for x in toks[i:i + S]]))
    i = toks.index("<Arcs>")
    A = int(toks[i + 1])
    trans = np.zeros((S, S))
    for k in range(A):
        f, to, lp = toks[i + 2 + 3 * k:i + 5 + 3 * k]
        trans[int(f), int(to)] = np.exp(float(lp))
    return start, trans


def read_int_text(path):
    d = {}
    for line in open(path):
        f = line.split()
        if f:
            d[f[0]] = np.array([int(x) for x in f[1:] if x not in "[]"])
    return d


def accuracy(hyp, ref, S):
    """Best accuracy over permutations of the hypothesis' state labels."""
    h = np.concatenate([hyp[k] for k in sorted(ref)])
    r = np.concatenate([ref[k] for k in sorted(ref)])
    return max(np.mean(np.array(p)[h] == r) for p in itertools.permutations(range(S)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--states", type=int, default=3)
    ap.add_argument("--seqs", type=int, default=30)
    ap.add_argument("--length", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    if a.cmd == "make":
        d = a.args[0]
        m = true_model(a.states, a.seed)
        with kaldiio.WriteHelper("ark,scp:%s/feats.ark,%s/feats.scp" % (d, d)) as w, open(d + "/states.txt", "w") as st:
            for n in range(a.seqs):
                X, Z = m.sample(a.length, random_state=np.random.RandomState(a.seed * 1000 + n))
                key = "seq%03d" % n
                w(key, X.astype(np.float32))
                st.write("%s %s\n" % (key, " ".join(str(z) for z in Z)))
        with open(d + "/true.txt", "w") as f:
            f.write("means %s\ncovars %s\ntransmat %s\n" % (m.means_.tolist(), m.covars_.tolist(), m.transmat_.tolist()))
        return
    if a.cmd != "compare" or len(a.args) != 6:
        sys.exit(__doc__)
    d, init_txt, ours_ll, final_txt, final_hmm, ours_states = a.args
    feats = {k: v for k, v in kaldiio.load_scp(d + "/feats.scp").items()}
    keys = sorted(feats)
    X = np.concatenate([feats[k] for k in keys]).astype(np.float64)
    lengths = [len(feats[k]) for k in keys]
    means0, covars0 = read_model_text(init_txt)
    S = len(means0)
    m = hmm.GaussianHMM(n_components=S, covariance_type="diag", n_iter=a.iters, tol=-np.inf,
                        init_params="", params="stmc")
    m.startprob_ = np.full(S, 1.0 / S)
    m.transmat_ = np.full((S, S), 1.0 / S)
    m.means_, m.covars_ = means0, covars0
    m.fit(X, lengths)
    hist = list(m.monitor_.history)
    ours = [float(l.split()[1]) for l in open(ours_ll) if l.split()]
    T = len(X)
    for k in range(a.iters):
        o = ours[k] if k < len(ours) else float("nan")
        h = hist[k] / T
        print("iteration %d: average log-likelihood per frame ours %.4f hmmlearn %.6f (difference %.2g)" % (k + 1, o, h, o - h))
    means1, covars1 = read_model_text(final_txt)
    start1, trans1 = read_hmm_text(final_hmm, S)
    # match states by means (the same initial model: normally the identity)
    perm = min(itertools.permutations(range(S)), key=lambda p: np.abs(means1[list(p)] - m.means_).sum())
    p = list(perm)
    print("final parameters, largest absolute difference ours - hmmlearn: means %.3g covars %.3g transmat %.3g startprob %.3g"
          % (np.abs(means1[p] - m.means_).max(), np.abs(covars1[p] - m._covars_).max(),
             np.abs(trans1[np.ix_(p, p)] - m.transmat_).max(), np.abs(start1[p] - m.startprob_).max()))
    ref = read_int_text(d + "/states.txt")
    ours_path = read_int_text(ours_states)
    hl_path = {}
    off = 0
    for k, n in zip(keys, lengths):
        hl_path[k] = m.predict(X[off:off + n])
        off += n
    print("state accuracy against the true states (best label permutation): ours %.2f%% hmmlearn %.2f%%"
          % (100 * accuracy(ours_path, ref, S), 100 * accuracy(hl_path, ref, S)))


if __name__ == "__main__":
    main()
