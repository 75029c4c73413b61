"""Model files <-> numpy, in scikit-learn's parametrisation.

GMM files (read_gmm / write_gmm): Kaldi's global <DiagGMM> / <FullGMM>
(gmm-global-*, fgmm-global-*), our GMM sets (<DIMENSION> D <NUMPDFS> P and
P GMMs: one per pdf) and Kaldi's .mdl (a <TransitionModel> followed by such
a set: the transition model is kept as its bytes and written back as read).
Files are stored in the form the likelihood needs (Kaldi's: gconsts,
weights, means times inverse (co)variances, inverse (co)variances, float32);
a Gmm keeps those arrays as read, so write_gmm(read_gmm(f)) gives f's bytes
back (binary files; text files are read, and written in binary).
The numpy view (Gmm.weights_, means_, covariances_, precisions_,
precisions_cholesky_, covariance_type) follows scikit-learn's
GaussianMixture: covariance_type 'diag' -> covariances_ (G, D) variances,
'full' -> (G, D, D); precisions_cholesky_ as scikit-learn computes it
(diag: 1/sqrt(var); full: the upper-triangular U with precision = U U^T).
Values are float64 computed from the float32 file values.

HMM sets (read_hmm_set / write_hmm_set): our <HmmSet> files (hmm-init-topo,
hmm-train): per HMM its name, the pdf id of each state, start log-probs,
arcs (from, to, log-prob), final log-probs; HmmSet.hmms[k].startprob_ /
transmat_ / finalprob give probabilities (numpy float64).

Posterior archives and alignments: gmmhmm.kaldi.
All readers raise FormatError (a ValueError) naming the file and what was
wrong; a path may be a filename or a bytes object (name it with name=).
"""
import os

import numpy as np

from ._kio import BinWriter, FormatError, reader

__all__ = ['Gmm', 'GmmSet', 'Hmm', 'HmmSet', 'FormatError', 'read_gmm', 'write_gmm', 'gmm_from_params',
           'read_hmm_set', 'write_hmm_set', 'ergodic_hmm']

_LOG2PI = np.log(2 * np.pi)


def _unpack(p, D):
    M = np.zeros((D, D), dtype=np.float64)
    il = np.tril_indices(D)
    M[il] = p
    M.T[il] = p
    return M


def _pack(M):
    return M[np.tril_indices(M.shape[0])]


class Gmm:
    """One GMM in Kaldi's stored form (float32 arrays as in the file) with
    scikit-learn's view of it.  gconsts (G,), weights (G,), means_invvars
    (G, D), inv_vars (G, D) diag or (G, D(D+1)/2) packed full."""

    def __init__(self, covariance_type, gconsts, weights, means_invvars, inv_vars):
        self.covariance_type = covariance_type
        self.gconsts = gconsts
        self.weights = weights
        self.means_invvars = means_invvars
        self.inv_vars = inv_vars

    @property
    def n_components(self):
        return self.weights.shape[0]

    @property
    def n_features(self):
        return self.means_invvars.shape[1]

    @property
    def weights_(self):
        return self.weights.astype(np.float64)

    @property
    def precisions_(self):
        if self.covariance_type == 'diag':
            return self.inv_vars.astype(np.float64)
        D = self.n_features
        return np.array([_unpack(p.astype(np.float64), D) for p in self.inv_vars])

    @property
    def covariances_(self):
        P = self.precisions_
        return 1.0 / P if self.covariance_type == 'diag' else np.linalg.inv(P)

    @property
    def means_(self):
        mi = self.means_invvars.astype(np.float64)
        if self.covariance_type == 'diag':
            return mi / self.inv_vars.astype(np.float64)
        return np.einsum('gij,gj->gi', self.covariances_, mi)

    @property
    def precisions_cholesky_(self):
        if self.covariance_type == 'diag':
            return np.sqrt(self.precisions_)
        out = []
        for C in self.covariances_:
            L = np.linalg.cholesky(C)
            out.append(np.linalg.inv(L).T)
        return np.array(out)

    def score_samples(self, X):
        """log p(x) per row of X (N, D), natural log, float64, from the
        numpy parameters (not the stored gconsts)."""
        X = np.asarray(X, dtype=np.float64)
        return _logsumexp(self._log_comp(X), axis=1)

    def _log_comp(self, X):
        w, mu, D = self.weights_, self.means_, self.n_features
        out = np.empty((X.shape[0], self.n_components))
        if self.covariance_type == 'diag':
            P = self.precisions_
            for g in range(self.n_components):
                d = X - mu[g]
                out[:, g] = -0.5 * (D * _LOG2PI - np.log(P[g]).sum() + (d * d * P[g]).sum(1))
        else:
            for g, U in enumerate(self.precisions_cholesky_):
                z = (X - mu[g]) @ U
                out[:, g] = -0.5 * (D * _LOG2PI + (z * z).sum(1)) + np.log(np.diag(U)).sum()
        with np.errstate(divide='ignore'):
            return out + np.log(w)


def _logsumexp(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def gmm_from_params(weights, means, covariances=None, covariance_type='diag', precisions=None):
    """A Gmm from scikit-learn's parameters: weights (G,), means (G, D),
    covariances (G, D) diag or (G, D, D) full, or precisions of the same
    shape instead.  Stored as Kaldi stores them (float32; gconsts computed
    in float64 then rounded, as log w - (D log 2 pi + log det C + mu' C^-1 mu) / 2).
    Raises ValueError on shapes that disagree or non-positive variances."""
    w = np.asarray(weights, dtype=np.float64)
    mu = np.asarray(means, dtype=np.float64)
    if mu.ndim != 2 or w.shape != (mu.shape[0],):
        raise ValueError('weights (G,) and means (G, D) disagree: %s, %s' % (w.shape, mu.shape))
    G, D = mu.shape
    if covariance_type == 'diag':
        P = 1.0 / np.asarray(covariances, dtype=np.float64) if precisions is None else \
            np.asarray(precisions, dtype=np.float64)
        if P.shape != (G, D) or not np.all(P > 0) or not np.all(np.isfinite(P)):
            raise ValueError('diag covariances must be (G, D) = %s of positive finite values' % ((G, D),))
        iv = P.astype(np.float32)
        Pd = iv.astype(np.float64)
        mi = (mu * Pd).astype(np.float32)
        logdet = np.log(Pd).sum(1)
        quad = (mu * mu * Pd).sum(1)
        inv = iv
    elif covariance_type == 'full':
        if precisions is None:
            C = np.asarray(covariances, dtype=np.float64)
            if C.shape != (G, D, D):
                raise ValueError('full covariances must be (G, D, D) = %s' % ((G, D, D),))
            P = np.linalg.inv(C)
        else:
            P = np.asarray(precisions, dtype=np.float64)
            if P.shape != (G, D, D):
                raise ValueError('full precisions must be (G, D, D) = %s' % ((G, D, D),))
        inv = np.array([_pack(0.5 * (p + p.T)) for p in P], dtype=np.float32)
        Pd = np.array([_unpack(p.astype(np.float64), D) for p in inv])
        sign, logdet = np.linalg.slogdet(Pd)
        if not np.all(sign > 0):
            raise ValueError('full covariances must be positive definite')
        mi = np.einsum('gij,gj->gi', Pd, mu).astype(np.float32)
        quad = np.einsum('gi,gij,gj->g', mu, Pd, mu)
    else:
        raise ValueError("covariance_type must be 'diag' or 'full' (got %r)" % (covariance_type,))
    with np.errstate(divide='ignore'):
        gc = np.log(w) - 0.5 * (D * _LOG2PI - logdet + quad)
    return Gmm(covariance_type, gc.astype(np.float32), w.astype(np.float32), mi, inv)


class GmmSet:
    """A GMM file: form 'global' (a bare <DiagGMM>/<FullGMM>), 'set'
    (<DIMENSION> D <NUMPDFS> P ...) or 'mdl' (transition model bytes + set);
    pdfs: list of Gmm; transition_model: the bytes of Kaldi's
    <TransitionModel> ... </TransitionModel> (binary .mdl) or None."""

    def __init__(self, pdfs, form='set', transition_model=None):
        self.pdfs = list(pdfs)
        self.form = form
        self.transition_model = transition_model

    @property
    def n_features(self):
        return self.pdfs[0].n_features

    def __len__(self):
        return len(self.pdfs)

    def __getitem__(self, k):
        return self.pdfs[k]


def _data(path, name):
    if isinstance(path, (bytes, bytearray)):
        return bytes(path), name or '<bytes>'
    with open(path, 'rb') as f:
        return f.read(), name or os.fspath(path)


def _read_one_gmm(r, binary):
    tok = r.token()
    if tok not in ('<DiagGMM>', '<FullGMM>', '<DiagGMMBegin>', '<FullGMMBegin>'):
        r.fail('expected <DiagGMM> or <FullGMM>, found %r' % tok[:40])
    full = tok.startswith('<Full')
    gc = w = mi = iv = None
    while True:
        t = r.token()
        if t in ('</DiagGMM>', '</FullGMM>', '<DiagGMMEnd>', '<FullGMMEnd>'):
            break
        if t == '<GCONSTS>':
            gc = r.vector()
        elif t == '<WEIGHTS>':
            w = r.vector()
        elif t in ('<MEANS_INVVARS>', '<MEANS_INVCOVARS>'):
            mi = r.matrix()
        elif t == '<INV_VARS>':
            iv = r.matrix()
        elif t == '<INV_COVARS>':
            G = w.shape[0]
            iv = np.array([r.packed() for _ in range(G)])
        else:
            r.fail('unexpected token %r in a GMM' % t[:40])
    if w is None or mi is None or iv is None:
        r.fail('a GMM without <WEIGHTS>, means or inverse (co)variances')
    G = w.shape[0]
    mi = mi.reshape(G, -1)
    if not full:
        iv = iv.reshape(G, -1)
    if gc is None:
        gc = np.zeros(G, dtype=w.dtype)
    return Gmm('full' if full else 'diag', gc, w, mi, iv)


def read_gmm(path, name=None):
    """Reads a GMM file (global, set or .mdl; binary or text) -> GmmSet.
    Raises FormatError naming the file on anything else (e.g. an HMM set)."""
    data, name = _data(path, name)
    r, binary = reader(data, name)
    tok = r.peek_token()
    if tok in ('<DiagGMM>', '<FullGMM>', '<DiagGMMBegin>', '<FullGMMBegin>'):
        return GmmSet([_read_one_gmm(r, binary)], form='global')
    tm = None
    form = 'set'
    if tok == '<TransitionModel>':
        form = 'mdl'
        if not binary:
            raise FormatError('%s: a text .mdl: convert it with gmm-copy (binary) first' % name)
        end = data.find(b'</TransitionModel> ', r.p)
        if end < 0:
            r.fail('<TransitionModel> without </TransitionModel>')
        tm = data[r.p:end + len(b'</TransitionModel> ')]
        r.p = end + len(b'</TransitionModel> ')
        tok = r.peek_token()
    if tok != '<DIMENSION>':
        r.fail('not a GMM model: expected <DiagGMM>, <FullGMM>, <DIMENSION> or <TransitionModel>, found %r'
               % tok[:40])
    r.expect('<DIMENSION>')
    D = r.int32()
    r.expect('<NUMPDFS>')
    P = r.int32()
    if P <= 0 or D <= 0:
        r.fail('bad <DIMENSION> %d or <NUMPDFS> %d' % (D, P))
    pdfs = [_read_one_gmm(r, binary) for _ in range(P)]
    for p, g in enumerate(pdfs):
        if g.n_features != D:
            r.fail('pdf %d has dimension %d, <DIMENSION> is %d' % (p, g.n_features, D))
    return GmmSet(pdfs, form=form, transition_model=tm)


def _write_one_gmm(w, g):
    full = g.covariance_type == 'full'
    w.token('<FullGMM>' if full else '<DiagGMM>')
    w.token('<GCONSTS>')
    w.vector(g.gconsts)
    w.token('<WEIGHTS>')
    w.vector(g.weights)
    w.token('<MEANS_INVCOVARS>' if full else '<MEANS_INVVARS>')
    w.matrix(g.means_invvars)
    if full:
        w.token('<INV_COVARS>')
        for p in g.inv_vars:
            w.packed(p, g.n_features)
    else:
        w.token('<INV_VARS>')
        w.matrix(g.inv_vars)
    w.token('</FullGMM>' if full else '</DiagGMM>')


def gmm_bytes(s):
    """The binary file of a GmmSet (or of one Gmm: a global GMM)."""
    if isinstance(s, Gmm):
        s = GmmSet([s], form='global')
    w = BinWriter()
    if s.form == 'global' and len(s.pdfs) == 1 and s.transition_model is None:
        _write_one_gmm(w, s.pdfs[0])
        return w.getvalue()
    if s.transition_model is not None:
        w.raw(s.transition_model)
    w.token('<DIMENSION>')
    w.int32(s.n_features)
    w.token('<NUMPDFS>')
    w.int32(len(s.pdfs))
    for g in s.pdfs:
        _write_one_gmm(w, g)
    return w.getvalue()


def write_gmm(path, s):
    """Writes a GmmSet or a Gmm (binary, Kaldi's form) to path, atomically."""
    _atomic_write(path, gmm_bytes(s))


def _atomic_write(path, data):
    path = os.fspath(path)
    tmp = '%s.tmp%d' % (path, os.getpid())
    try:
        with open(tmp, 'wb') as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class Hmm:
    """One HMM of a set: name, pdf (S,) int32 pdf id per state, init (S,)
    start log-probs, arcs [(from, to, logp)], final (S,) final log-probs,
    words (S,) or None; float32 as stored."""

    def __init__(self, name, pdf, init, arcs, final, words=None):
        self.name, self.pdf, self.init, self.arcs, self.final, self.words = name, pdf, init, arcs, final, words

    @property
    def n_states(self):
        return self.pdf.shape[0]

    @property
    def startprob_(self):
        return np.exp(self.init.astype(np.float64))

    @property
    def transmat_(self):
        S = self.n_states
        A = np.zeros((S, S))
        for f, t, lp in self.arcs:
            A[f, t] += np.exp(np.float64(lp))
        return A

    @property
    def finalprob(self):
        return np.exp(self.final.astype(np.float64))


class HmmSet:
    def __init__(self, hmms):
        self.hmms = list(hmms)

    def __len__(self):
        return len(self.hmms)

    def __getitem__(self, k):
        return self.hmms[k]


def ergodic_hmm(startprob, transmat, name='m', pdfs=None):
    """A fully connected HMM (every arc of transmat > 0 kept, states ending
    anywhere with log-prob 0: hmmlearn's model) as an HmmSet of one HMM;
    pdfs: the pdf id of each state (default 0..S-1)."""
    sp = np.asarray(startprob, dtype=np.float64)
    A = np.asarray(transmat, dtype=np.float64)
    S = sp.shape[0]
    if A.shape != (S, S):
        raise ValueError('transmat must be (S, S) = %s, got %s' % ((S, S), A.shape))
    pdf = np.arange(S, dtype=np.int32) if pdfs is None else np.asarray(pdfs, dtype=np.int32)
    with np.errstate(divide='ignore'):
        init = np.log(sp).astype(np.float32)
        arcs = [(i, j, np.float32(np.log(A[i, j]))) for i in range(S) for j in range(S) if A[i, j] > 0]
    return HmmSet([Hmm(name, pdf, init, arcs, np.zeros(S, dtype=np.float32))])


def read_hmm_set(path, name=None):
    """Reads an <HmmSet> file (binary or text) -> HmmSet; FormatError otherwise."""
    data, name = _data(path, name)
    r, binary = reader(data, name)
    tok = r.token()
    if tok != '<HmmSet>':
        r.fail('not an HMM set: expected <HmmSet>, found %r' % tok[:40])
    r.expect('<NumHmms>')
    N = r.int32()
    hmms = []
    for _ in range(N):
        r.expect('<Hmm>')
        nm = r.token()
        r.expect('<NumStates>')
        S = r.int32()
        r.expect('<PdfIds>')
        pdf = r.int_vector()
        r.expect('<InitLogProbs>')
        init = r.vector()
        r.expect('<Arcs>')
        A = r.int32()
        arcs = []
        for _ in range(A):
            arcs.append((r.int32(), r.int32(), np.float32(r.float32())))
        r.expect('<FinalLogProbs>')
        final = r.vector()
        t = r.token()
        words = None
        if t == '<Words>':
            words = [r.token() for _ in range(S)]
            t = r.token()
        if t != '</Hmm>':
            r.fail('expected </Hmm>, found %r' % t[:40])
        if pdf.shape[0] != S or init.shape[0] != S or final.shape[0] != S:
            r.fail('HMM %s: %d states but vectors of other lengths' % (nm, S))
        hmms.append(Hmm(nm, pdf, init, arcs, final, words))
    r.expect('</HmmSet>')
    return HmmSet(hmms)


def hmm_set_bytes(s):
    w = BinWriter()
    w.token('<HmmSet>')
    w.token('<NumHmms>')
    w.int32(len(s.hmms))
    for h in s.hmms:
        w.token('<Hmm>')
        w.token(h.name)
        w.token('<NumStates>')
        w.int32(h.n_states)
        w.token('<PdfIds>')
        w.int_vector(h.pdf)
        w.token('<InitLogProbs>')
        w.vector(np.asarray(h.init, dtype=np.float32))
        w.token('<Arcs>')
        w.int32(len(h.arcs))
        for f, t, lp in h.arcs:
            w.int32(f)
            w.int32(t)
            w.float32(lp)
        w.token('<FinalLogProbs>')
        w.vector(np.asarray(h.final, dtype=np.float32))
        if h.words is not None:
            w.token('<Words>')
            for x in h.words:
                w.token(x)
        w.token('</Hmm>')
    w.token('</HmmSet>')
    return w.getvalue()


def write_hmm_set(path, s):
    """Writes an HmmSet (binary) to path, atomically."""
    _atomic_write(path, hmm_set_bytes(s))
