"""Tests of the Python package gmmhmm (python/) against scikit-learn and
hmmlearn started from the same initial parameters, its file I/O against
Kaldi's own files, and its handling of bad input.  Run by
test/bats/python.bats (pytest, CPU backend: GMMHMM_DEVICE is not used, the
estimators get device='cpu').

Tolerances: per-iteration average log-likelihood within 1e-4
nats/frame, parameters within 1e-4 relative (variances / covariances relative
to the diagonal, means in standard deviations), the same n_iter_ /
converged_ for the same tol.  Our E-step is float32 (the tools' models are
float32), so the agreement is ~1e-6, not 1e-12.
"""
import glob
import os
import tempfile
import warnings

import numpy as np
import pytest

import gmmhmm
from gmmhmm import io, kaldi

FIX = os.path.join(os.environ.get('GH_SHARED', os.path.join(os.path.dirname(__file__), '../../../shared')),
                   'data', 'kaldi-fixtures')
TOL_LL = 1e-4
TOL_PAR = 1e-4


def blobs(seed=0, n=400, D=3):
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-5, 5, size=(4, D))
    scales = rng.uniform(0.5, 1.5, size=(4, D))
    X = np.vstack([c + s * rng.randn(n // 4, D) for c, s in zip(centres, scales)])
    rng.shuffle(X)
    return X


def gmm_temp_files():
    return set(glob.glob(os.path.join(tempfile.gettempdir(), 'gmmhmm-*')))


@pytest.fixture(autouse=True)
def no_temp_left():
    before = gmm_temp_files()
    yield
    left = gmm_temp_files() - before
    assert not left, 'temporary files left: %s' % sorted(left)


# ---------------- GaussianMixture vs scikit-learn ----------------
def param_err(ct, a, b):
    """(weights abs, means in sd, (co)variances relative to the diagonal)"""
    ew = np.abs(a.weights_ - b.weights_).max()
    if ct == 'diag':
        sd = np.sqrt(b.covariances_)
        return ew, (np.abs(a.means_ - b.means_) / sd).max(), (np.abs(a.covariances_ - b.covariances_)
                                                              / b.covariances_).max()
    dg = np.sqrt(np.einsum('gii->gi', b.covariances_))
    return (ew, (np.abs(a.means_ - b.means_) / dg).max(),
            (np.abs(a.covariances_ - b.covariances_) / (dg[:, :, None] * dg[:, None, :])).max())


def sk_from(ours_init, ct, **kw):
    from sklearn.mixture import GaussianMixture as SK
    return SK(n_components=len(ours_init.weights_), covariance_type=ct, weights_init=ours_init.weights_,
              means_init=ours_init.means_, precisions_init=ours_init.precisions_, **kw)


@pytest.mark.parametrize('ct', ['diag', 'full'])
def test_gmm_same_iterations_as_sklearn(ct):
    """Same initial parameters: every iteration's lower bound, the final
    parameters, n_iter_ and converged_ as scikit-learn's."""
    from sklearn.exceptions import ConvergenceWarning
    X = blobs()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ConvergenceWarning)
        init = gmmhmm.GaussianMixture(4, covariance_type=ct, max_iter=1, random_state=3, device='cpu').fit(X)
    init_g = init._gmm  # a model to start both from (float32-exact values)
    kw = dict(reg_covar=1e-6)
    ours = gmmhmm.GaussianMixture(4, covariance_type=ct, max_iter=60, tol=1e-4, device='cpu',
                                  weights_init=init_g.weights_, means_init=init_g.means_,
                                  precisions_init=init_g.precisions_, **kw).fit(X)
    ref = sk_from(init_g, ct, max_iter=60, tol=1e-4, **kw).fit(X)
    print('%s: ours n_iter_ %d converged %s lower bound %.8f; sklearn %d %s %.8f' %
          (ct, ours.n_iter_, ours.converged_, ours.lower_bound_, ref.n_iter_, ref.converged_, ref.lower_bound_))
    assert ours.n_iter_ == ref.n_iter_ and ours.converged_ == ref.converged_
    assert abs(ours.lower_bound_ - ref.lower_bound_) < TOL_LL
    errs = param_err(ct, ours, ref)
    print('  final parameters: weights %.2e, means %.2e sd, covariances %.2e' % errs)
    assert max(errs) < TOL_PAR
    # per iteration: scikit-learn run for k iterations has lower_bound_ = our k-th value
    worst = 0.0
    for k in range(1, ours.n_iter_ + 1):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', ConvergenceWarning)
            r = sk_from(init_g, ct, max_iter=k, tol=0, **kw).fit(X)
        worst = max(worst, abs(r.lower_bound_ - ours.lower_bounds_[k - 1]))
    print('  per-iteration lower bound: largest difference %.2e nats/frame over %d iterations'
          % (worst, ours.n_iter_))
    assert worst < TOL_LL
    # scoring through gmm-score-gpu
    assert abs(ours.score(X) - ref.score(X)) < TOL_LL
    assert np.abs(ours.predict_proba(X) - ref.predict_proba(X)).max() < 1e-3
    assert (ours.predict(X) == ref.predict(X)).mean() > 0.999


def test_gmm_not_converged_like_sklearn():
    from sklearn.exceptions import ConvergenceWarning
    X = blobs(1)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ConvergenceWarning)
        init = gmmhmm.GaussianMixture(4, covariance_type='diag', max_iter=1, random_state=0, device='cpu').fit(X)._gmm
    with pytest.warns(ConvergenceWarning):
        ours = gmmhmm.GaussianMixture(4, covariance_type='diag', max_iter=2, tol=1e-12, device='cpu',
                                      weights_init=init.weights_, means_init=init.means_,
                                      precisions_init=init.precisions_).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ConvergenceWarning)
        ref = sk_from(init, 'diag', max_iter=2, tol=1e-12).fit(X)
    assert (ours.n_iter_, ours.converged_) == (ref.n_iter_, ref.converged_) == (2, False)


@pytest.mark.parametrize('init_params', ['kmeans', 'k-means++', 'random', 'random_from_data'])
def test_gmm_fit_as_good_as_sklearn(init_params):
    """Own initialisation: a fit as good as scikit-learn's (mean log-likelihood within 0.05 nats)."""
    from sklearn.mixture import GaussianMixture as SK
    X = blobs(2)
    ours = gmmhmm.GaussianMixture(4, covariance_type='full', init_params=init_params, n_init=2, random_state=0,
                                  device='cpu').fit(X)
    ref = SK(4, covariance_type='full', init_params=init_params, n_init=2, random_state=0).fit(X)
    print('%s: ours %.5f (%d iterations), sklearn %.5f' % (init_params, ours.score(X), ours.n_iter_, ref.score(X)))
    assert ours.score(X) > ref.score(X) - 0.05
    Xs, ys = ours.sample(50)
    assert Xs.shape == (50, 3) and ys.shape == (50,)
    assert np.isfinite(ours.bic(X)) and ours.aic(X) < ours.bic(X)


def test_gmm_warm_start_and_save_load(tmp_path):
    X = blobs(3)
    g = gmmhmm.GaussianMixture(4, covariance_type='diag', max_iter=3, tol=0, warm_start=True, random_state=0,
                               device='cpu')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        g.fit(X)
        lb1 = g.lower_bound_
        g.fit(X)  # continues from the fitted model
    assert g.lower_bounds_[0] >= lb1 - 1e-6
    g.save(tmp_path / 'g.dubm')
    h = gmmhmm.GaussianMixture.load(tmp_path / 'g.dubm', device='cpu')
    assert np.allclose(h.score_samples(X), g.score_samples(X))
    assert (tmp_path / 'g.dubm').read_bytes() == io.gmm_bytes(io.read_gmm(tmp_path / 'g.dubm'))


# ---------------- GaussianHMM / GMMHMM vs hmmlearn ----------------
def hmm_data(seed=1, n_seq=15, D=2):
    from hmmlearn import hmm
    ref = hmm.GaussianHMM(3, covariance_type='diag')
    ref.startprob_ = np.array([.6, .3, .1])
    ref.transmat_ = np.array([[.8, .1, .1], [.1, .8, .1], [.2, .2, .6]])
    ref.means_ = np.array([[0, 0], [3, 3], [0, 4]])[:, :D]
    ref.covars_ = np.array([[1, 1], [.5, .5], [1, .3]])[:, :D]
    rng = np.random.RandomState(seed)
    Xs, L = [], []
    for _ in range(n_seq):
        n = rng.randint(40, 150)
        x, _ = ref.sample(n, random_state=rng)
        Xs.append(x)
        L.append(n)
    return np.vstack(Xs), L


def our_init(est, X, L):
    from gmmhmm import _tools
    with _tools.workdir() as wd:
        f = os.path.join(wd, 'f.ark')
        _tools.write_feats(f, X, L)
        est._init(X, L, wd, f)
    return est


def hmm_err(a, b, ct):
    bc = b.covars_  # hmmlearn's covars_ is (S, D, D) for 'diag' too
    sd = np.sqrt(np.einsum('...ii->...i', bc))
    em = (np.abs(a.means_ - b.means_) / sd).max()
    if ct == 'diag':
        ev = (np.abs(a.covars_ - sd ** 2) / sd ** 2).max()
    else:
        ev = (np.abs(a.covars_ - b.covars_) / (sd[..., :, None] * sd[..., None, :])).max()
    return (np.abs(a.startprob_ - b.startprob_).max(), np.abs(a.transmat_ - b.transmat_).max(), em, ev)


@pytest.mark.parametrize('ct', ['diag', 'full'])
def test_hmm_same_iterations_as_hmmlearn(ct):
    from hmmlearn import hmm
    X, L = hmm_data()
    N = X.shape[0]
    ours = gmmhmm.GaussianHMM(3, covariance_type=ct, n_iter=40, tol=1e-2, random_state=0, device='cpu')
    our_init(ours, X, L)
    m0, c0 = ours.means_.copy(), ours.covars_.copy()
    ours.init_params = ''
    ours.fit(X, L)

    def ref_fit(n_iter, tol):
        r = hmm.GaussianHMM(3, covariance_type=ct, n_iter=n_iter, tol=tol, init_params='', covars_prior=0)
        r.startprob_ = np.full(3, 1 / 3)
        r.transmat_ = np.full((3, 3), 1 / 3)
        r.means_ = m0
        r.covars_ = c0 if ct == 'diag' else c0
        return r.fit(X, L)
    ref = ref_fit(40, 1e-2)
    print('%s: ours %d iterations converged %s, hmmlearn %d %s' %
          (ct, ours.monitor_.iter, ours.monitor_.converged, ref.monitor_.iter, ref.monitor_.converged))
    assert ours.monitor_.iter == ref.monitor_.iter and ours.monitor_.converged == ref.monitor_.converged
    # every iteration's total log-likelihood (hmmlearn 0.3 keeps them all in monitor_.history)
    assert len(ours.monitor_.history) == len(ref.monitor_.history) == ours.monitor_.iter
    dl = max(abs(a - b) for a, b in zip(ours.monitor_.history, ref.monitor_.history)) / N
    errs = hmm_err(ours, ref, ct)
    print('  per-iteration log-likelihood: largest difference %.2e nats/frame over %d iterations; final '
          'parameters: start %.2e, transitions %.2e, means %.2e sd, covariances %.2e'
          % ((dl, ours.monitor_.iter) + errs))
    assert dl < TOL_LL and max(errs) < TOL_PAR
    # the tools' inference against hmmlearn's on the fitted model
    assert abs(ours.score(X, L) - ref.score(X, L)) / N < TOL_LL
    lp, s = ours.decode(X, L)
    lp2, s2 = ref.decode(X, L)
    assert abs(lp - lp2) / N < TOL_LL and (s == s2).mean() > 0.999
    assert np.abs(ours.predict_proba(X, L) - ref.predict_proba(X, L)).max() < 1e-3
    Xs, ss = ours.sample(30, random_state=0)
    assert Xs.shape == (30, 2) and ss.shape == (30,)


def test_gmmhmm_fits():
    from hmmlearn import hmm
    X, L = hmm_data(2)
    ours = gmmhmm.GMMHMM(3, n_mix=2, n_iter=20, random_state=0, device='cpu').fit(X, L)
    assert ours.weights_.shape == (3, 2) and ours.means_.shape == (3, 2, 2) and ours.covars_.shape == (3, 2, 2)
    # same parameters in hmmlearn: the same log-likelihood
    r = hmm.GMMHMM(3, n_mix=2, covariance_type='diag', init_params='')
    r.startprob_, r.transmat_, r.weights_, r.means_, r.covars_ = (ours.startprob_, ours.transmat_, ours.weights_,
                                                                   ours.means_, ours.covars_)
    N = X.shape[0]
    assert abs(ours.score(X, L) - r.score(X, L)) / N < TOL_LL
    g = gmmhmm.GaussianHMM(3, n_iter=20, random_state=0, device='cpu').fit(X, L)
    assert ours.score(X, L) > g.score(X, L) - 1e-3 * N


# ---------------- sklearn's estimator checks ----------------
# All of check_estimator's checks run (scikit-learn 1.9: 41 for this
# estimator); none is expected to fail.  scikit-learn itself skips one:
# check_array_api_input (it needs SCIPY_ARRAY_API=1 and an array API
# library; we convert every input to numpy float64 anyway).
EXPECTED_FAILED = {}


def test_sklearn_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator
    est = gmmhmm.GaussianMixture(n_components=2, max_iter=20, random_state=0, device='cpu')
    res = check_estimator(est, on_fail=None, expected_failed_checks=EXPECTED_FAILED)
    failed = [(r['check_name'], str(r['exception'])[:200]) for r in res if r['status'] == 'failed']
    skipped = [(r['check_name'], r['exception']) for r in res if r['status'] == 'skipped']
    print('%d checks: %d passed, %d failed, %d skipped' % (len(res), sum(r['status'] == 'passed' for r in res),
                                                           len(failed), len(skipped)))
    for f in failed:
        print('FAILED', f)
    for s in skipped:
        print('skipped', s)
    assert not failed


# ---------------- io round trips ----------------
KALDI_FILES = ['ami-diag16.gmm', 'ami-full16.fgmm', 'ubm/final.dubm', 'ubm/final.ubm', 'ubm/init16.dubm',
               'ubm/to-fgmm.ubm', 'ubm/to-gmm.dubm', 'ubm/diag-est.dubm', 'ubm/full-est.ubm',
               'align/mono/0.mdl', 'align/mono/final.mdl', 'align/tri1/1.mdl']


@pytest.mark.parametrize('name', KALDI_FILES)
def test_io_kaldi_files_byte_identical(name):
    path = os.path.join(FIX, name)
    data = open(path, 'rb').read()
    s = io.read_gmm(path)
    assert io.gmm_bytes(s) == data
    g = s[0]
    # the numpy view agrees with the independent text reader of the tests
    if os.path.exists(path + '.txt'):
        import sys
        sys.path.insert(0, os.path.dirname(__file__))
        from kaldi_text import read_text_gmm_set
        t = read_text_gmm_set(path + '.txt')[0]
        if g.covariance_type == 'diag':
            assert np.allclose(g.means_, t['means'], rtol=1e-5, atol=1e-5)
            assert np.allclose(g.covariances_, t['covs'], rtol=1e-5, atol=1e-8)
        else:  # the text's 7 digits of the inverse covariances: compare those
            assert np.allclose(g.precisions_, t['precisions'], rtol=1e-5, atol=1e-6 * np.abs(t['precisions']).max())
    # scikit-learn's parametrisation back to the file's arrays
    h = io.gmm_from_params(g.weights_, g.means_, g.covariances_, g.covariance_type)
    assert np.allclose(h.inv_vars, g.inv_vars, rtol=1e-5) and np.allclose(h.gconsts, g.gconsts, rtol=1e-5)
    if g.covariance_type == 'full':
        U = g.precisions_cholesky_
        assert np.allclose(np.einsum('gij,gkj->gik', U, U), g.precisions_, rtol=1e-6)


def test_io_our_files_byte_identical(tmp_path):
    from gmmhmm import _tools
    X, L = hmm_data(3)
    f = tmp_path / 'f.ark'
    _tools.write_feats(f, X, L)
    (tmp_path / 'h.txt').write_text('m\n')
    _tools.run('hmm-init-topo', '--topology=ergodic', '--num-states=3', tmp_path / 'h.txt', tmp_path / '0.hmm')
    for ct in ('diag', 'full'):
        _tools.run('gmm-init', '--num-gauss=3', '--cov-type=' + ct, '--num-iters=0', '--device=cpu',
                   'ark:%s' % f, tmp_path / 'km.mdl')
        _tools.run('gmm-copy', '--split-gaussians', tmp_path / 'km.mdl', tmp_path / '0.mdl')
        _tools.run('hmm-train', '--device=cpu', '--num-iters=2', tmp_path / '0.hmm', tmp_path / '0.mdl',
                   'ark:%s' % f, tmp_path / '2.hmm', tmp_path / '2.mdl')
        for m in ('km.mdl', '0.mdl', '2.mdl'):
            d = (tmp_path / m).read_bytes()
            assert io.gmm_bytes(io.read_gmm(tmp_path / m)) == d, m
        for h in ('0.hmm', '2.hmm'):
            d = (tmp_path / h).read_bytes()
            assert io.hmm_set_bytes(io.read_hmm_set(tmp_path / h)) == d, h
        hs = io.read_hmm_set(tmp_path / '2.hmm')[0]
        assert np.allclose(hs.transmat_.sum(1), 1, atol=1e-5) and abs(hs.startprob_.sum() - 1) < 1e-5
        # posteriors and alignments of the tools, read and rewritten byte-identically
        _tools.run('gmm-score-gpu', '--device=cpu', tmp_path / '2.mdl', 'ark:%s' % f, 'ark:%s' % (tmp_path / 'll'))
        _tools.run('hmm-bw', '--device=cpu', tmp_path / '2.hmm', 'ark:%s' % (tmp_path / 'll'),
                   'ark:%s' % (tmp_path / 'p.ark'))
        _tools.run('hmm-viterbi', '--device=cpu', tmp_path / '2.hmm', 'ark:%s' % (tmp_path / 'll'),
                   'ark:%s' % (tmp_path / 'a.ark'))
        post = list(kaldi.read_posteriors(tmp_path / 'p.ark'))
        assert len(post) == len(L) and [len(p) for _, p in post] == L
        for _, p in post:
            assert np.allclose(kaldi.posterior_matrix(p, 3).sum(1), 1, atol=1e-4)
        kaldi.write_posteriors(tmp_path / 'p2.ark', post)
        assert (tmp_path / 'p2.ark').read_bytes() == (tmp_path / 'p.ark').read_bytes()
        ali = list(kaldi.read_alignments(tmp_path / 'a.ark'))
        assert [len(a) for _, a in ali] == L
        kaldi.write_alignments(tmp_path / 'a2.ark', ali)
        assert (tmp_path / 'a2.ark').read_bytes() == (tmp_path / 'a.ark').read_bytes()
        # text forms read to the same values
        _tools.run('copy-post', 'ark:%s' % (tmp_path / 'p.ark'), 'ark,t:%s' % (tmp_path / 'p.txt'))
        for (k1, a), (k2, b) in zip(post, kaldi.read_posteriors(tmp_path / 'p.txt')):
            assert k1 == k2 and all(np.array_equal(x[0], y[0]) and np.allclose(x[1], y[1], rtol=1e-5)
                                    for x, y in zip(a, b))


def test_kaldiio_misreads_posteriors(tmp_path):
    """Why gmmhmm.kaldi.read_posteriors exists: kaldiio (2.18) returns the
    first utterance of a Posterior archive as a wrong int32 vector, without
    an error, and fails on the next key."""
    import kaldiio
    post = [[(0, 0.25), (2, 0.75)], [(1, 1.0)], [(0, 0.5), (1, 0.5)]]
    kaldi.write_posteriors(tmp_path / 'p.ark', [('u1', post), ('u2', [[(3, 1.0)]])])
    ours = dict(kaldi.read_posteriors(tmp_path / 'p.ark'))
    assert [list(zip(i.tolist(), w.tolist())) for i, w in ours['u1']] == post
    assert [list(zip(i.tolist(), w.tolist())) for i, w in ours['u2']] == [[(3, 1.0)]]
    it = kaldiio.load_ark(str(tmp_path / 'p.ark'))
    key, theirs = next(it)
    print('kaldiio reads u1 as %r' % (theirs,))
    assert key == 'u1' and isinstance(theirs, np.ndarray) and theirs.dtype.kind == 'i'
    assert theirs.tolist() == [2, 0, 1048576000]  # frame 0: 2 pairs, index 0, weight 0.25's bits


# ---------------- bad input ----------------
def test_bad_input_nan_inf():
    X = blobs()
    for bad in (np.nan, np.inf):
        Y = X.copy()
        Y[7, 1] = bad
        with pytest.raises(gmmhmm.ToolError) as e:
            gmmhmm.GaussianMixture(2, device='cpu').fit(Y)
        print(e.value)
        assert ('NaN' in str(e.value) or 'inf' in str(e.value)) and 'row 7' in str(e.value)
        with pytest.raises(gmmhmm.ToolError):
            gmmhmm.GaussianHMM(2, device='cpu').fit(Y, [100, 300])
    g = gmmhmm.GaussianMixture(2, device='cpu', random_state=0).fit(X)
    Y = X.copy()
    Y[3, 0] = np.nan
    with pytest.raises(gmmhmm.ToolError) as e:
        g.score_samples(Y)
    print(e.value)


def test_bad_input_n_components_over_samples():
    X = blobs()[:5]
    with pytest.raises(gmmhmm.ToolError) as e:
        gmmhmm.GaussianMixture(8, device='cpu').fit(X)
    print(e.value)
    assert 'gmm-init' in str(e.value) and '--num-gauss=8' in str(e.value)


def test_bad_input_lengths():
    X, L = hmm_data()
    with pytest.raises(ValueError, match='lengths sum to'):
        gmmhmm.GaussianHMM(3, device='cpu').fit(X, L[:-1])
    with pytest.raises(ValueError, match='lengths must be'):
        gmmhmm.GaussianHMM(3, device='cpu').fit(X, [0] + L)


def test_bad_input_wrong_model_type(tmp_path):
    X = blobs()
    g = gmmhmm.GaussianMixture(2, device='cpu', random_state=0).fit(X)
    g.save(tmp_path / 'g.dubm')
    with pytest.raises(io.FormatError, match='not an HMM set'):
        io.read_hmm_set(tmp_path / 'g.dubm')
    (tmp_path / 'h.txt').write_text('m\n')
    from gmmhmm import _tools
    _tools.run('hmm-init-topo', '--topology=ergodic', '--num-states=2', tmp_path / 'h.txt', tmp_path / 'h.hmm')
    with pytest.raises(io.FormatError, match='not a GMM model'):
        io.read_gmm(tmp_path / 'h.hmm')
    with pytest.raises(io.FormatError):
        gmmhmm.GaussianMixture.load(tmp_path / 'h.hmm')
    # a tool given the wrong type: its message in the exception
    f = tmp_path / 'f.ark'
    _tools.write_feats(f, X)
    with pytest.raises(gmmhmm.ToolError) as e:
        _tools.run('gmm-score-gpu', '--device=cpu', tmp_path / 'h.hmm', 'ark:%s' % f, 'ark:/dev/null')
    print(e.value)
    assert '<HmmSet>' in str(e.value)
    with pytest.raises(ValueError, match='tied'):
        gmmhmm.GaussianMixture(2, covariance_type='tied').fit(X)
