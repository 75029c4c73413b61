"""gmmhmm.GaussianHMM and GMMHMM: hmmlearn's interface over hmm-train (an
ergodic HMM, every sequence trained in one resident process) and the HMM
tools (hmm-forward / hmm-viterbi / hmm-bw --gmm)."""
import os
import re
from collections import deque

import numpy as np

from . import _tools, io
from ._base import BaseEstimator, NotFittedError
from .mixture import _as_rng, check_X

_IT = re.compile(r'iteration (\d+): avg loglike per frame \S+ over \S+ frames; HMM total log-likelihood per '
                 r'frame (\S+) over')


class ConvergenceMonitor:
    """hmmlearn's ConvergenceMonitor: history holds every iteration's total
    log-likelihood (natural log, of the model before that iteration's
    update; rebuilt from hmm-train's log: per frame, 10 significant digits,
    times the frames); converged when the last improved on the one before by
    less than tol, or n_iter iterations ran (hmmlearn's rule)."""

    def __init__(self, tol, n_iter, verbose=False):
        self.tol = tol
        self.n_iter = n_iter
        self.verbose = verbose
        self.history = deque()
        self.iter = 0

    def _reset(self):
        self.iter = 0
        self.history.clear()

    def report(self, logprob):
        if self.verbose:
            delta = logprob - self.history[-1] if self.history else np.nan
            print('%10d %16.8f %16.8f' % (self.iter + 1, logprob, delta))
        self.history.append(logprob)
        self.iter += 1

    @property
    def converged(self):
        return self.iter == self.n_iter or (len(self.history) >= 2 and
                                            self.history[-1] - self.history[-2] < self.tol)


def _check_lengths(X, lengths):
    n = X.shape[0]
    if lengths is None:
        return [n]
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in 'iu' or np.any(lengths < 1):
        raise ValueError('lengths must be a 1-D array of positive integers, got %r' % (lengths,))
    if lengths.sum() != n:
        raise ValueError('lengths sum to %d but X has %d samples' % (lengths.sum(), n))
    return [int(x) for x in lengths]


class _BaseHMM(BaseEstimator):
    _n_mix = 1

    def _fitted(self):
        if not hasattr(self, 'transmat_'):
            raise NotFittedError('This %s instance is not fitted yet.' % type(self).__name__)

    # the GMM set of the states (pdf s = state s)
    def _state_gmms(self):
        raise NotImplementedError

    def _write_models(self, wd):
        h = os.path.join(wd, 'm.hmm')
        m = os.path.join(wd, 'm.mdl')
        io.write_hmm_set(h, io.ergodic_hmm(self.startprob_, self.transmat_))
        io.write_gmm(m, io.GmmSet(self._state_gmms(), form='set'))
        return h, m

    def _init(self, X, lengths, wd, feats):
        S, D = self.n_components, X.shape[1]
        rng = _as_rng(self.random_state)
        ip = self.init_params
        if 's' in ip or not hasattr(self, 'startprob_'):
            self.startprob_ = np.full(S, 1.0 / S)
        if 't' in ip or not hasattr(self, 'transmat_'):
            self.transmat_ = np.full((S, S), 1.0 / S)
        G = S * self._n_mix
        if 'm' in ip or not hasattr(self, 'means_'):
            # hmmlearn: k-means of all frames (scikit-learn's KMeans); here gmm-init's k-means++ and k-means
            _tools.run('gmm-init', '--num-gauss=%d' % G, '--num-iters=0', '--cov-type=diag',
                       '--seed=%d' % int(rng.randint(1, 2 ** 31 - 1)), '--min-frames-per-gauss=1',
                       '--device=%s' % self.device, 'ark:' + feats, os.path.join(wd, 'km.mdl'))
            mu = io.read_gmm(os.path.join(wd, 'km.mdl'))[0].means_
            if mu.shape[0] != G:
                raise ValueError('gmm-init made %d centres for %d Gaussians' % (mu.shape[0], G))
            self.means_ = mu if self._n_mix == 1 else mu.reshape(S, self._n_mix, D)
        if 'c' in ip or not hasattr(self, 'covars_'):
            cv = np.atleast_2d(np.cov(X.T)) + self.min_covar * np.eye(D)
            shape = (S,) if self._n_mix == 1 else (S, self._n_mix)
            if self.covariance_type == 'full':
                self.covars_ = np.tile(cv, shape + (1, 1))
            else:
                self.covars_ = np.tile(np.diag(cv), shape + (1,))
        if self._n_mix > 1 and ('w' in ip or not hasattr(self, 'weights_')):
            self.weights_ = np.full((S, self._n_mix), 1.0 / self._n_mix)

    def _check(self):
        if self.covariance_type not in ('diag', 'full'):
            raise ValueError("covariance_type %r: gmmhmm supports 'diag' and 'full'" % (self.covariance_type,))
        need = set('mc' + ('w' if self._n_mix > 1 else ''))
        if not need <= set(self.params):
            raise ValueError('params=%r: hmm-train always re-estimates the state GMMs; params must include %s'
                             % (self.params, ''.join(sorted(need))))

    def fit(self, X, lengths=None):
        """Baum-Welch with hmm-train (one resident process): at most n_iter
        iterations, stopping when the total log-likelihood improves by less
        than tol (hmmlearn's rule); returns self."""
        X = check_X(X)
        lengths = _check_lengths(X, lengths)
        self._check()
        if self.n_components < 1:
            raise ValueError('n_components must be >= 1')
        N = X.shape[0]
        with _tools.workdir() as wd:
            feats = os.path.join(wd, 'feats.ark')
            _tools.write_feats(feats, X, lengths)
            self._init(X, lengths, wd, feats)
            h0, m0 = self._write_models(wd)
            h1, m1 = os.path.join(wd, 'f.hmm'), os.path.join(wd, 'f.mdl')
            # hmmlearn's tol is on the total log-likelihood; hmm-train's on it per frame
            err = _tools.run('hmm-train', '--device=%s' % self.device, '--num-iters=%d' % self.n_iter,
                             '--tol=%r' % (float(self.tol) / N if self.tol > 0 else 0.0),
                             '--update-init=%s' % ('true' if 's' in self.params else 'false'),
                             '--update-transitions=%s' % ('true' if 't' in self.params else 'false'),
                             '--transition-min-count=0', '--transition-floor=0', '--min-post=0',
                             '--min-gaussian-occupancy=0', '--min-gaussian-weight=0',
                             '--min-variance=%r' % max(self.min_covar, 1e-10), '--block-frames=%d' % max(N, 1),
                             h0, m0, 'ark:' + feats, h1, m1)
            hs = io.read_hmm_set(h1)[0]
            gs = io.read_gmm(m1)
        self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
        for _, v in _IT.findall(err):
            self.monitor_.report(float(v) * N)
        self.startprob_ = hs.startprob_
        self.transmat_ = hs.transmat_
        self._from_gmms(gs)
        self.n_features = X.shape[1]
        self.n_features_in_ = X.shape[1]
        return self

    # ---- inference through the tools ----
    def _prep(self, X, lengths):
        self._fitted()
        X = check_X(X, self.n_features_in_, type(self).__name__)
        return X, _check_lengths(X, lengths)

    def score(self, X, lengths=None):
        """Total log-likelihood log P(X) (natural log) over the sequences (hmm-forward)."""
        X, lengths = self._prep(X, lengths)
        import kaldiio
        with _tools.workdir() as wd:
            h, m = self._write_models(wd)
            f, o = os.path.join(wd, 'f.ark'), os.path.join(wd, 'o.ark')
            _tools.write_feats(f, X, lengths)
            _tools.run('hmm-forward', '--device=%s' % self.device, '--gmm=' + m, h, 'ark:' + f, 'ark:' + o)
            return float(sum(np.asarray(v, dtype=np.float64)[0] for _, v in kaldiio.load_ark(o)))

    def _posteriors(self, X, lengths, wd):
        from .kaldi import posterior_matrix, read_posteriors
        h, m = self._write_models(wd)
        f, o = os.path.join(wd, 'f.ark'), os.path.join(wd, 'p.ark')
        _tools.write_feats(f, X, lengths)
        _tools.run('hmm-bw', '--device=%s' % self.device, '--gmm=' + m, '--min-post=0', h, 'ark:' + f, 'ark:' + o)
        return np.vstack([posterior_matrix(p, self.n_components) for _, p in read_posteriors(o)])

    def predict_proba(self, X, lengths=None):
        """State posteriors (N, n_components) (hmm-bw)."""
        X, lengths = self._prep(X, lengths)
        with _tools.workdir() as wd:
            return self._posteriors(X, lengths, wd)

    def score_samples(self, X, lengths=None):
        """(log P(X), state posteriors (N, n_components))."""
        return self.score(X, lengths), self.predict_proba(X, lengths)

    def decode(self, X, lengths=None, algorithm='viterbi'):
        """(log-probability of the best paths, state sequence (N,)) by hmm-viterbi."""
        if algorithm != 'viterbi':
            raise ValueError("algorithm %r: gmmhmm decodes with 'viterbi' only (hmm-viterbi)" % (algorithm,))
        X, lengths = self._prep(X, lengths)
        from .kaldi import read_alignments
        with _tools.workdir() as wd:
            h, m = self._write_models(wd)
            f, o = os.path.join(wd, 'f.ark'), os.path.join(wd, 's.ark')
            _tools.write_feats(f, X, lengths)
            _tools.run('hmm-viterbi', '--device=%s' % self.device, '--gmm=' + m, '--write-states', h, 'ark:' + f,
                       'ark:' + o)
            states = np.concatenate([v for _, v in read_alignments(o)]).astype(int)
        # the path's log-probability, from the parameters (float64)
        lp = 0.0
        off = 0
        ll = self._frame_loglikes(X)
        with np.errstate(divide='ignore'):
            ls, lA = np.log(self.startprob_), np.log(self.transmat_)
        for n in lengths:
            s = states[off:off + n]
            lp += ls[s[0]] + ll[off + np.arange(n), s].sum() + lA[s[:-1], s[1:]].sum()
            off += n
        return float(lp), states

    def predict(self, X, lengths=None):
        return self.decode(X, lengths)[1]

    def _frame_loglikes(self, X):
        gs = self._state_gmms()
        return np.stack([g.score_samples(X) for g in gs], axis=1)

    def sample(self, n_samples=1, random_state=None, currstate=None):
        """(X (n, D), states (n,)) drawn from the model (numpy, as hmmlearn)."""
        self._fitted()
        rng = _as_rng(self.random_state if random_state is None else random_state)
        cs = np.cumsum(self.startprob_)
        ct = np.cumsum(self.transmat_, axis=1)
        s = int((cs > rng.rand()).argmax()) if currstate is None else currstate
        states, X = [], []
        gs = self._state_gmms()
        for t in range(n_samples):
            if t:
                s = int((ct[s] > rng.rand()).argmax())
            states.append(s)
            g = gs[s]
            k = int((np.cumsum(g.weights_) > rng.rand()).argmax())
            if g.covariance_type == 'full':
                X.append(rng.multivariate_normal(g.means_[k], g.covariances_[k]))
            else:
                X.append(g.means_[k] + np.sqrt(g.covariances_[k]) * rng.standard_normal(g.n_features))
        return np.array(X), np.array(states, dtype=int)


class GaussianHMM(_BaseHMM):
    """hmmlearn's GaussianHMM (covariance_type 'diag' or 'full'), fitted by
    hmm-train.  Arguments as hmmlearn's (doc/python.md): n_components,
    covariance_type, min_covar (initial covars = cov(X) + min_covar, and the
    variance floor of every update: hmm-train --min-variance), startprob_prior
    and transmat_prior (1 only: maximum likelihood), algorithm ('viterbi'),
    random_state, n_iter (--num-iters), tol (--tol, per frame: tol / frames),
    verbose, params, init_params ('s', 't', 'm', 'c'), implementation (ignored);
    device: the tools' --device.  covars_prior is 0 here (hmmlearn's 1e-2 adds
    1e-2 / occupancy to each variance)."""

    def __init__(self, n_components=1, covariance_type='diag', min_covar=1e-3, startprob_prior=1.0,
                 transmat_prior=1.0, algorithm='viterbi', random_state=None, n_iter=10, tol=1e-2,
                 verbose=False, params='stmc', init_params='stmc', implementation='log', device='auto'):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.min_covar = min_covar
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.device = device

    def _state_gmms(self):
        out = []
        for s in range(self.n_components):
            cov = self.covars_[s][None]
            out.append(io.gmm_from_params([1.0], self.means_[s][None], cov, self.covariance_type))
        return out

    def _from_gmms(self, gs):
        self.means_ = np.array([g.means_[0] for g in gs])
        self.covars_ = np.array([g.covariances_[0] for g in gs])


class GMMHMM(_BaseHMM):
    """hmmlearn's GMMHMM: n_mix Gaussians per state (covariance_type 'diag' or
    'full'), fitted by hmm-train.  weights_ (S, n_mix), means_ (S, n_mix, D),
    covars_ (S, n_mix, D) or (S, n_mix, D, D).  Initial means: gmm-init's
    k-means of all frames into S * n_mix centres, n_mix per state in order;
    initial covars as GaussianHMM's; params / init_params add 'w'."""

    def __init__(self, n_components=1, n_mix=1, min_covar=1e-3, startprob_prior=1.0, transmat_prior=1.0,
                 covariance_type='diag', algorithm='viterbi', random_state=None, n_iter=10, tol=1e-2,
                 verbose=False, params='stmcw', init_params='stmcw', implementation='log', device='auto'):
        self.n_components = n_components
        self.n_mix = n_mix
        self.min_covar = min_covar
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.covariance_type = covariance_type
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.device = device

    @property
    def _n_mix(self):
        return self.n_mix

    def _state_gmms(self):
        return [io.gmm_from_params(self.weights_[s], self.means_[s], self.covars_[s], self.covariance_type)
                for s in range(self.n_components)]

    def _from_gmms(self, gs):
        self.weights_ = np.array([g.weights_ for g in gs])
        self.means_ = np.array([g.means_ for g in gs])
        self.covars_ = np.array([g.covariances_ for g in gs])
