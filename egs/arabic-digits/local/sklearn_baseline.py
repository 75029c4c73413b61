#!/usr/bin/env python3
"""Peer baseline: scikit-learn GaussianMixture, one GMM per digit, on the same
speaker split and with the same model sizes as run.sh; classifies each dev
utterance by the digit whose GMM gives the highest total log-likelihood.

Reads the UCI text file directly (independently of our tools).
Usage: local/sklearn_baseline.py [--seeds="1 2 3"] <Train_Arabic_Digit.txt[.gz]> <dev-speakers-file> <configs...>
       configs like diag:8 full:4 ; prints one accuracy line per config and seed
       (random_state = seed: k-means initialisation differs per seed).
"""
import gzip
import sys
import time

import numpy as np
from sklearn.mixture import GaussianMixture


def read_uci(path):
    utts, cur = [], []
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            if line.strip() == "":
                if cur:
                    utts.append(np.array(cur, dtype=np.float64))
                cur = []
            else:
                cur.append([float(v) for v in line.split()])
    if cur:
        utts.append(np.array(cur, dtype=np.float64))
    assert len(utts) == 6600, len(utts)
    keys = []
    for b in range(6600):
        d, w = divmod(b, 660)
        g = "m" if w < 330 else "f"
        keys.append(("tr_%s%02d" % (g, (w % 330) // 10), d))
    return utts, keys


def main():
    args, seeds = sys.argv[1:], [1]
    if args and args[0].startswith("--seeds="):
        seeds = [int(v) for v in args.pop(0).split("=", 1)[1].split()]
    path, dev_file, configs = args[0], args[1], args[2:]
    dev_spk = set(open(dev_file).read().split())
    utts, keys = read_uci(path)
    train = [[] for _ in range(10)]
    dev = []
    for x, (spk, d) in zip(utts, keys):
        (dev.append((x, d)) if spk in dev_spk else train[d].append(x))
    train = [np.vstack(t) for t in train]
    for cfg in configs:
        cov, ng = cfg.split(":")
        for seed in seeds:
            t0 = time.time()
            # scikit-learn's defaults (k-means init, max_iter=100, tol=1e-3,
            # reg_covar=1e-6) apart from the seed.
            gmms = [GaussianMixture(n_components=int(ng), covariance_type=cov,
                                    random_state=seed).fit(t) for t in train]
            correct = 0
            for x, d in dev:
                scores = [g.score_samples(x).sum() for g in gmms]
                correct += int(np.argmax(scores) == d)
            print("sklearn %s seed %d: dev accuracy: %.2f%% (%d/%d) [%.1f s]"
                  % (cfg, seed, 100.0 * correct / len(dev), correct, len(dev), time.time() - t0),
                  flush=True)


if __name__ == "__main__":
    main()
