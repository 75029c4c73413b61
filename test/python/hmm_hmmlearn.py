"""Reference for test/bats/hmm.bats: hmmlearn (independent implementation).

  prep  DIR --kind gaussian|gmm [--left-right]
        builds an hmmlearn GaussianHMM / GMMHMM with fixed random parameters,
        samples 3 sequences, and writes to DIR:
          hmm.txt     the same HMM in our text format (doc/format.md "HMM sets"):
                      init = log startprob, arcs = log transmat (non-zero entries),
                      final = 0 (Rabiner/hmmlearn: P(O) = sum_j alpha_T(j))
          ll.ark      emission log-likelihoods per state (pdf j = state j), from
                      hmmlearn's own _compute_log_likelihood, as a Kaldi binary
                      archive (kaldiio)
          ref.npz     score (log P per sequence), Viterbi path and its log-prob,
                      and startprob/transmat after one Baum-Welch iteration
                      (fit(n_iter=1, params='st'))
  prep-discrete DIR
        a CategoricalHMM (cuHMM's discrete emissions): writes hmm.txt, B.txt (Kaldi
        text matrix, states x symbols), sym.txt (int32 symbol vectors, text archive)
        and ref.npz (score, Viterbi path and log-prob; no Baum-Welch reference)
  check DIR   compares our outputs in DIR (fwd.txt from hmm-forward, ali.txt from
              hmm-viterbi --write-states, vll.txt its --loglikes-wspecifier,
              out.txt the hmm-bw re-estimated set) with ref.npz; exits 1 on a mismatch.
"""
import sys
import numpy as np
import kaldiio
from hmmlearn import hmm


def read_our_hmm(path):
    """Parses our text HMM set (first HMM): returns startprob, transmat (exp of log-probs)."""
    toks = open(path).read().replace('[', ' [ ').replace(']', ' ] ').split()
    i = toks.index('<NumStates>')
    S = int(toks[i + 1])
    i = toks.index('<InitLogProbs>') + 2
    init = np.exp(np.array([float(t) for t in toks[i:i + S]]))
    i = toks.index('<Arcs>')
    A = int(toks[i + 1])
    trans = np.zeros((S, S))
    for k in range(A):
        f, t, lp = toks[i + 2 + 3 * k:i + 5 + 3 * k]
        trans[int(f), int(t)] = np.exp(float(lp))
    return init, trans


def write_our_hmm(path, start, trans, name='m'):
    S = len(start)
    arcs = [(i, j, np.log(trans[i, j])) for i in range(S) for j in range(S) if trans[i, j] > 0]
    lg = lambda v: '%.9g' % np.log(v) if v > 0 else '-inf'
    with open(path, 'w') as f:
        f.write('<HmmSet> <NumHmms> 1\n<Hmm> %s <NumStates> %d\n' % (name, S))
        f.write('<PdfIds> [ %s ]\n' % ' '.join(str(j) for j in range(S)))
        f.write('<InitLogProbs> [ %s ]\n' % ' '.join(lg(p) for p in start))
        f.write('<Arcs> %d\n' % len(arcs))
        for i, j, lp in arcs:
            f.write('%d %d %.9g\n' % (i, j, lp))
        f.write('<FinalLogProbs> [ %s ]\n</Hmm>\n</HmmSet>\n' % ' '.join(['0'] * S))


def make_model(kind, left_right):
    r = np.random.RandomState(42)
    S, D = (4, 2) if kind == 'gaussian' else (3, 2)
    start = r.dirichlet(np.ones(S) * 2)
    trans = r.dirichlet(np.ones(S) * 1.5, size=S) + 0.05
    if left_right:
        start = np.eye(S)[0]
        trans = np.triu(trans) * (np.tri(S, k=1).T * np.tri(S, k=1))  # self-loop + next only
        trans[-1, -1] = 1.0
    trans /= trans.sum(1, keepdims=True)
    if kind == 'gaussian':
        m = hmm.GaussianHMM(n_components=S, covariance_type='diag', init_params='', params='st', n_iter=1)
        m.startprob_, m.transmat_ = start, trans
        m.means_ = r.randn(S, D) * 3
        m.covars_ = 0.5 + r.rand(S, D)
    else:
        M = 2
        m = hmm.GMMHMM(n_components=S, n_mix=M, covariance_type='diag', init_params='', params='st', n_iter=1)
        m.startprob_, m.transmat_ = start, trans
        m.weights_ = r.dirichlet(np.ones(M), size=S)
        m.means_ = r.randn(S, M, D) * 3
        m.covars_ = 0.5 + r.rand(S, M, D)
    return m


def prep(d, kind, left_right):
    m = make_model(kind, left_right)
    r = np.random.RandomState(7)
    seqs = []
    for k, T in enumerate([60, 45, 80]):
        X, _ = m.sample(T, random_state=r)
        seqs.append(X)
    write_our_hmm(d + '/hmm.txt', m.startprob_, m.transmat_)
    ref = {}
    with kaldiio.WriteHelper('ark:%s/ll.ark' % d) as w:
        for k, X in enumerate(seqs):
            w('u%d' % k, m._compute_log_likelihood(X).astype(np.float32))
            ref['score_u%d' % k] = m.score(X)
            lp, path = m.decode(X, algorithm='viterbi')
            ref['vit_u%d' % k], ref['path_u%d' % k] = lp, path
    X = np.concatenate(seqs)
    lengths = [len(s) for s in seqs]
    m.fit(X, lengths)
    ref['start'], ref['trans'] = m.startprob_, m.transmat_
    np.savez(d + '/ref.npz', **ref)


def prep_discrete(d):
    r = np.random.RandomState(3)
    S, V = 3, 5
    m = hmm.CategoricalHMM(n_components=S, init_params='', params='st', n_iter=1)
    m.startprob_ = r.dirichlet(np.ones(S) * 2)
    m.transmat_ = r.dirichlet(np.ones(S) * 1.5, size=S)
    m.emissionprob_ = r.dirichlet(np.ones(V), size=S)
    write_our_hmm(d + '/hmm.txt', m.startprob_, m.transmat_)
    with open(d + '/B.txt', 'w') as f:
        f.write(' [\n' + '\n'.join('  ' + ' '.join('%.9g' % v for v in row) for row in m.emissionprob_) + ' ]\n')
    ref = {}
    seqs = []
    with open(d + '/sym.txt', 'w') as f:
        for k, T in enumerate([30, 50, 20]):
            X, _ = m.sample(T, random_state=r)
            seqs.append(X)
            f.write('u%d %s \n' % (k, ' '.join(str(int(x)) for x in X[:, 0])))
            ref['score_u%d' % k] = m.score(X)
            lp, path = m.decode(X, algorithm='viterbi')
            ref['vit_u%d' % k], ref['path_u%d' % k] = lp, path
    np.savez(d + '/ref.npz', **ref)


def read_text_table(path):
    out = {}
    for line in open(path):
        parts = line.replace('[', ' ').replace(']', ' ').split()
        if parts:
            out[parts[0]] = np.array([float(x) for x in parts[1:]])
    return out


def check(d):
    ref = np.load(d + '/ref.npz')
    fwd, ali, vll = (read_text_table(d + '/' + f) for f in ('fwd.txt', 'ali.txt', 'vll.txt'))
    bad = 0
    for k in range(3):
        u = 'u%d' % k
        s, e = fwd[u][0], ref['score_' + u]
        if abs(s - e) > 1e-4 * max(1, abs(e)):
            print('forward %s: ours %.6f hmmlearn %.6f' % (u, s, e)); bad = 1
        if not np.array_equal(ali[u].astype(int), ref['path_' + u]):
            print('viterbi path %s differs:\n ours %s\n ref  %s' % (u, ali[u].astype(int), ref['path_' + u])); bad = 1
        if abs(vll[u][0] - ref['vit_' + u]) > 1e-4 * max(1, abs(ref['vit_' + u])):
            print('viterbi log-prob %s: ours %.6f hmmlearn %.6f' % (u, vll[u][0], ref['vit_' + u])); bad = 1
    import os
    if not os.path.exists(d + '/out.txt'):
        return bad
    start, trans = read_our_hmm(d + '/out.txt')
    es, et = np.abs(start - ref['start']).max(), np.abs(trans - ref['trans']).max()
    print('one Baum-Welch update: max |diff| startprob %.2e, transmat %.2e' % (es, et))
    if es > 1e-5 or et > 1e-5:
        print('ours:\n%s\n%s\nhmmlearn:\n%s\n%s' % (start, trans, ref['start'], ref['trans'])); bad = 1
    return bad


if __name__ == '__main__':
    if sys.argv[1] == 'prep':
        kind = sys.argv[sys.argv.index('--kind') + 1] if '--kind' in sys.argv else 'gaussian'
        prep(sys.argv[2], kind, '--left-right' in sys.argv)
    elif sys.argv[1] == 'prep-discrete':
        prep_discrete(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
