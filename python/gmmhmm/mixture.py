"""gmmhmm.GaussianMixture: scikit-learn's GaussianMixture over gmm-init,
gmm-train and gmm-score-gpu (doc/python.md maps every argument)."""
import os
import re

import numpy as np

from . import _tools, io
from ._base import BaseEstimator, ConvergenceWarning, DensityMixin, NotFittedError, warnings

_ITER = re.compile(r'iteration (\d+): avg loglike per frame (\S+) over')


def check_X(X, n_features=None, estimator='the model'):
    """X as a C-contiguous float64 2-D array, with scikit-learn's messages
    for what its check_array rejects (NaN and inf are left for the tools to
    report).  TypeError on sparse or non-numeric objects, ValueError on
    complex, 1-D, empty input or a feature count other than n_features."""
    if hasattr(X, 'toarray') or type(X).__module__.startswith('scipy.sparse'):
        raise TypeError('sparse input is not supported; pass a dense array (X.toarray())')
    X = np.asarray(X)
    if X.dtype.kind == 'c':
        raise ValueError('Complex data not supported')
    if X.dtype.kind not in 'biuf':
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError('X of dtype %s: %s' % (X.dtype, e))
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError('Expected 2D array, got %dD array instead. Reshape your data either using '
                         'X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it contains a '
                         'single sample.' % X.ndim)
    if X.shape[0] < 1:
        raise ValueError('Found array with 0 sample(s) (shape=%s) while a minimum of 1 is required.' % (X.shape,))
    if X.shape[1] < 1:
        raise ValueError('Found array with 0 feature(s) (shape=%s) while a minimum of 1 is required.' % (X.shape,))
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError('X has %d features, but %s is expecting %d features as input.'
                         % (X.shape[1], estimator, n_features))
    return X


def _moments(X, resp, reg, cov_type):
    """scikit-learn's _estimate_gaussian_parameters (float64)."""
    nk = resp.sum(0) + 10 * np.finfo(resp.dtype).eps
    means = resp.T @ X / nk[:, None]
    if cov_type == 'diag':
        avg_X2 = resp.T @ (X * X) / nk[:, None]
        cov = avg_X2 - means ** 2 + reg
    else:
        D = X.shape[1]
        cov = np.empty((len(nk), D, D))
        for k in range(len(nk)):
            idx = np.flatnonzero(resp[:, k])  # hard assignments: only the component's rows
            d = X[idx] - means[k]
            cov[k] = (resp[idx, k] * d.T) @ d / nk[k]
            cov[k].flat[::D + 1] += reg
    return nk / nk.sum(), means, cov


def _kmeanspp(X, k, rng):
    n = X.shape[0]
    centers = [X[rng.randint(n)]]
    d2 = ((X - centers[0]) ** 2).sum(1)
    for _ in range(1, k):
        tot = d2.sum()
        i = rng.choice(n, p=d2 / tot) if tot > 0 else rng.randint(n)
        centers.append(X[i])
        d2 = np.minimum(d2, ((X - X[i]) ** 2).sum(1))
    return np.array(centers)


def _as_rng(random_state):
    if isinstance(random_state, np.random.RandomState):
        return random_state
    return np.random.RandomState(random_state)


class GaussianMixture(DensityMixin, BaseEstimator):
    """scikit-learn's GaussianMixture, fitted by gmmhmm's tools.

    Arguments as scikit-learn's (doc/python.md says what each becomes):
    n_components, covariance_type ('full' or 'diag'; 'spherical' and 'tied'
    raise ValueError), tol (gmm-train --tol: stop when the mean log-likelihood
    per sample improves by less than tol), reg_covar (the variance floor
    gmm-train --min-variance: scikit-learn adds it to every variance, we
    floor at it), max_iter (--num-iters), n_init, init_params ('kmeans':
    gmm-init's k-means++ and k-means; 'k-means++', 'random',
    'random_from_data' in numpy as scikit-learn), weights_init, means_init,
    precisions_init, random_state, warm_start, verbose, verbose_interval;
    device: the tools' --device ('auto', 'cpu', 'cuda', 'opencl').
    Fitted attributes: weights_, means_, covariances_, precisions_,
    precisions_cholesky_, converged_, n_iter_, lower_bound_ (mean log-likelihood
    per sample of the model before the last update, natural log),
    lower_bounds_ (per iteration), n_features_in_.
    Tool failures raise gmmhmm.ToolError (a ValueError) with the tool's message.
    """

    def __init__(self, n_components=1, *, covariance_type='full', tol=1e-3, reg_covar=1e-6, max_iter=100,
                 n_init=1, init_params='kmeans', weights_init=None, means_init=None, precisions_init=None,
                 random_state=None, warm_start=False, verbose=0, verbose_interval=10, device='auto'):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.device = device

    # ---- parameters ----
    def _check_params(self, X):
        if self.covariance_type not in ('full', 'diag'):
            raise ValueError("covariance_type %r: gmmhmm supports 'full' and 'diag' ('spherical' is 'diag' with "
                             "equal variances, 'tied' one shared covariance: neither is in the tools)"
                             % (self.covariance_type,))
        if not (isinstance(self.n_components, (int, np.integer)) and self.n_components >= 1):
            raise ValueError('n_components must be an integer >= 1, got %r' % (self.n_components,))
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise ValueError('max_iter must be an integer >= 1, got %r' % (self.max_iter,))
        if not (isinstance(self.n_init, (int, np.integer)) and self.n_init >= 1):
            raise ValueError('n_init must be an integer >= 1, got %r' % (self.n_init,))
        if not (self.tol >= 0):
            raise ValueError('tol must be >= 0, got %r' % (self.tol,))
        if not (self.reg_covar >= 0):
            raise ValueError('reg_covar must be >= 0, got %r' % (self.reg_covar,))
        if self.init_params not in ('kmeans', 'k-means++', 'random', 'random_from_data'):
            raise ValueError("init_params must be 'kmeans', 'k-means++', 'random' or 'random_from_data', got %r"
                             % (self.init_params,))

    def _est_opts(self):
        # scikit-learn has no Gaussian removal and no occupancy floor; reg_covar -> the variance floor
        return ['--min-gaussian-occupancy=0', '--min-gaussian-weight=0',
                '--min-variance=%r' % max(float(self.reg_covar), 1e-10)]

    def _initial(self, X, rng, wd):
        G, D, ct = self.n_components, X.shape[1], self.covariance_type
        n = X.shape[0]
        if self.init_params == 'kmeans':
            feats = os.path.join(wd, 'feats.ark')
            if not os.path.exists(feats):
                _tools.write_feats(feats, X)
            seed = int(rng.randint(1, 2 ** 31 - 1))
            _tools.run('gmm-init', '--num-gauss=%d' % G, '--cov-type=%s' % ct, '--num-iters=0',
                       '--seed=%d' % seed, '--min-frames-per-gauss=1', '--device=%s' % self.device,
                       *self._est_opts(), 'ark:' + feats, os.path.join(wd, 'init.mdl'))
            g = io.read_gmm(os.path.join(wd, 'init.mdl'))[0]
            if g.n_components != G:
                raise ValueError('gmm-init made %d Gaussians for n_components=%d' % (g.n_components, G))
            w, mu, cov = g.weights_, g.means_, g.covariances_
        else:
            if G > n:
                raise ValueError('n_components=%d must be <= n_samples=%d' % (G, n))
            if self.init_params == 'random':
                resp = rng.uniform(size=(n, G))
                resp /= resp.sum(1, keepdims=True)
            else:
                if self.init_params == 'k-means++':
                    centers = _kmeanspp(X, G, rng)
                    lab = ((X[:, None, :] - centers[None]) ** 2).sum(2).argmin(1)
                    resp = np.zeros((n, G))
                    resp[np.arange(n), lab] = 1
                else:
                    resp = np.zeros((n, G))
                    resp[rng.choice(n, size=G, replace=False), np.arange(G)] = 1
            w, mu, cov = _moments(X, resp, self.reg_covar, ct)
        if self.weights_init is not None:
            w = np.asarray(self.weights_init, dtype=np.float64)
        if self.means_init is not None:
            mu = np.asarray(self.means_init, dtype=np.float64)
        if self.precisions_init is not None:
            P = np.asarray(self.precisions_init, dtype=np.float64)
            return io.gmm_from_params(w, mu, covariance_type=ct, precisions=P)
        return io.gmm_from_params(w, mu, cov, covariance_type=ct)

    def _set(self, g):
        self._gmm = g
        self.weights_ = g.weights_
        self.means_ = g.means_
        self.covariances_ = g.covariances_
        self.precisions_ = g.precisions_
        self.precisions_cholesky_ = g.precisions_cholesky_

    def _fitted(self):
        if not hasattr(self, '_gmm'):
            raise NotFittedError('This GaussianMixture instance is not fitted yet. Call fit with appropriate '
                                 'arguments before using this estimator.')

    # ---- fit ----
    def fit(self, X, y=None):
        """Fits by EM (gmm-train); returns self."""
        self._fit(check_X(X))
        return self

    def fit_predict(self, X, y=None):
        """Fits, then the most likely component of each sample (N,) int
        under the fitted model (gmm-score-gpu)."""
        X = check_X(X)
        self._fit(X)
        return self.predict(X)

    def _fit(self, X):
        self._check_params(X)
        rng = _as_rng(self.random_state)
        warm = self.warm_start and hasattr(self, '_gmm')
        if warm and self._gmm.n_features != X.shape[1]:
            raise ValueError('X has %d features, but the fitted model has %d' % (X.shape[1], self._gmm.n_features))
        n_init = 1 if warm else self.n_init
        best = None
        with _tools.workdir() as wd:
            feats = os.path.join(wd, 'feats.ark')
            _tools.write_feats(feats, X)
            for k in range(n_init):
                g0 = self._gmm if warm else self._initial(X, rng, wd)
                m0, m1 = os.path.join(wd, '0.mdl'), os.path.join(wd, 'final.mdl')
                io.write_gmm(m0, g0)
                err = _tools.run('gmm-train', '--device=%s' % self.device, '--num-iters=%d' % self.max_iter,
                                 '--tol=%r' % float(self.tol), *self._est_opts(), m0, 'ark:' + feats, m1)
                lbs = [float(v) for _, v in _ITER.findall(err)]
                conv = 'LOG: converged after' in err
                g = io.read_gmm(m1)[0]
                if self.verbose:
                    for i, v in enumerate(lbs, 1):
                        if self.verbose >= 2 or i % self.verbose_interval == 0 or i == len(lbs):
                            print('  Iteration %d\t lower bound %.6f' % (i, v))
                lb = lbs[-1] if lbs else -np.inf
                if best is None or lb > best[0]:
                    best = (lb, g, len(lbs), conv, lbs)
        lb, g, n_iter, conv, lbs = best
        self._set(g)
        self.converged_ = conv
        self.n_iter_ = n_iter
        self.lower_bound_ = lb
        self.lower_bounds_ = lbs
        self.n_features_in_ = X.shape[1]
        if not conv and self.tol > 0:
            warnings.warn('Best performing initialization did not converge. Try different init parameters, or '
                          'increase max_iter, tol, or check for degenerate data.', ConvergenceWarning)

    # ---- scoring ----
    def _comp_loglikes(self, X):
        """(N, G) log(w_g) + log N(x; g) from gmm-score-gpu on the model's
        Gaussians as pdfs (gmm-copy --split-gaussians)."""
        import kaldiio
        with _tools.workdir() as wd:
            m, s, f, o = (os.path.join(wd, x) for x in ('m.mdl', 's.mdl', 'f.ark', 'll.ark'))
            io.write_gmm(m, self._gmm)
            _tools.run('gmm-copy', '--split-gaussians', m, s)
            _tools.write_feats(f, X)
            _tools.run('gmm-score-gpu', '--device=%s' % self.device, s, 'ark:' + f, 'ark:' + o)
            ll = np.concatenate([np.asarray(v, dtype=np.float64) for _, v in kaldiio.load_ark(o)], axis=0)
        with np.errstate(divide='ignore'):
            return ll + np.log(self.weights_)

    def score_samples(self, X):
        """log p(x) per sample (N,), natural log (gmm-score-gpu)."""
        self._fitted()
        X = check_X(X, self._gmm.n_features, type(self).__name__)
        import kaldiio
        with _tools.workdir() as wd:
            m, f, o = (os.path.join(wd, x) for x in ('m.mdl', 'f.ark', 'll.ark'))
            io.write_gmm(m, self._gmm)
            _tools.write_feats(f, X)
            _tools.run('gmm-score-gpu', '--device=%s' % self.device, m, 'ark:' + f, 'ark:' + o)
            return np.concatenate([np.asarray(v, dtype=np.float64)[:, 0] for _, v in kaldiio.load_ark(o)])

    def score(self, X, y=None):
        """Mean log-likelihood per sample (natural log)."""
        return float(self.score_samples(X).mean())

    def predict_proba(self, X):
        """Component posteriors (N, G)."""
        self._fitted()
        X = check_X(X, self._gmm.n_features, type(self).__name__)
        lc = self._comp_loglikes(X)
        m = lc.max(1, keepdims=True)
        p = np.exp(lc - m)
        return p / p.sum(1, keepdims=True)

    def predict(self, X):
        """Most likely component per sample (N,)."""
        self._fitted()
        X = check_X(X, self._gmm.n_features, type(self).__name__)
        return self._comp_loglikes(X).argmax(1)

    def sample(self, n_samples=1):
        """(X (n, D), y (n,)) drawn from the model (numpy, as scikit-learn)."""
        self._fitted()
        if n_samples < 1:
            raise ValueError('n_samples must be >= 1, got %d' % n_samples)
        rng = _as_rng(self.random_state)
        counts = rng.multinomial(n_samples, self.weights_ / self.weights_.sum())
        if self.covariance_type == 'full':
            X = np.vstack([rng.multivariate_normal(m, c, int(k))
                           for m, c, k in zip(self.means_, self.covariances_, counts)])
        else:
            X = np.vstack([m + rng.standard_normal((int(k), len(m))) * np.sqrt(c)
                           for m, c, k in zip(self.means_, self.covariances_, counts)])
        y = np.concatenate([np.full(k, j, dtype=int) for j, k in enumerate(counts)])
        return X, y

    def _n_parameters(self):
        G, D = self.means_.shape
        cov = G * D * (D + 1) / 2.0 if self.covariance_type == 'full' else G * D
        return int(cov + G * D + G - 1)

    def bic(self, X):
        X = check_X(X)
        return -2 * self.score(X) * X.shape[0] + self._n_parameters() * np.log(X.shape[0])

    def aic(self, X):
        X = check_X(X)
        return -2 * self.score(X) * X.shape[0] + 2 * self._n_parameters()

    def save(self, path):
        """Writes the fitted model as a Kaldi global GMM file (gmm-global-* form)."""
        self._fitted()
        io.write_gmm(path, self._gmm)

    @classmethod
    def load(cls, path, **kw):
        """A fitted GaussianMixture from a global GMM file (or a one-pdf set)."""
        s = io.read_gmm(path)
        if len(s) != 1:
            raise ValueError('%s has %d pdfs: a GaussianMixture is one GMM' % (path, len(s)))
        g = s[0]
        est = cls(n_components=g.n_components, covariance_type=g.covariance_type, **kw)
        est._set(g)
        est.n_features_in_ = g.n_features
        return est
