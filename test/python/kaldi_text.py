"""Small independent readers for the tests (numpy float64):
  read_ark_fm(path)      -> dict key -> (T x D) array, Kaldi binary 'FM' archives
  read_text_gmm_set(path)-> list of pdfs {type, weights, means, covs} from a
                            Kaldi-text GMM set (<DIMENSION> D <NUMPDFS> P <DiagGMM>/<FullGMM> ...)
                            or a bare text <DiagGMM>/<FullGMM>.
  loglike(pdf, X)        -> per-frame log p(x) (natural log) of one GMM.
Independent of the C code on purpose: parses the text layout written by Kaldi's
DiagGmm::Write / FullGmm::Write (diag-gmm.cc, full-gmm.cc)."""
import struct
import numpy as np


def read_ark_fm(path):
    out = {}
    with open(path, 'rb') as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        sp = data.index(b' ', pos)
        key = data[pos:sp].decode()
        pos = sp + 1
        assert data[pos:pos + 2] == b'\0B', 'binary archives only'
        pos += 2
        tok = data[pos:pos + 3]
        assert tok == b'FM ', 'FM matrices only, got %r' % tok
        pos += 3
        rows = struct.unpack('<i', data[pos + 1:pos + 5])[0]
        cols = struct.unpack('<i', data[pos + 6:pos + 10])[0]
        pos += 10
        n = rows * cols
        out[key] = np.frombuffer(data, dtype='<f4', count=n, offset=pos).reshape(rows, cols).astype(np.float64)
        pos += 4 * n
    return out


def _bracket(toks, i):
    assert toks[i] == '[', 'expected [ at token %d, got %s' % (i, toks[i])
    j = toks.index(']', i)
    return np.array([float(t) for t in toks[i + 1:j]]), j + 1


def _unpack(p, D):
    M = np.zeros((D, D))
    k = 0
    for r in range(D):
        for c in range(r + 1):
            M[r, c] = M[c, r] = p[k]
            k += 1
    return M


def read_text_gmm_set(path):
    toks = open(path).read().split()
    pdfs = []
    i = 0
    cur = None
    while i < len(toks):
        t = toks[i]
        if t in ('<DiagGMM>', '<FullGMM>'):
            cur = {'type': 'diag' if t == '<DiagGMM>' else 'full'}
            i += 1
        elif t in ('<GCONSTS>', '<WEIGHTS>', '<MEANS_INVVARS>', '<INV_VARS>', '<MEANS_INVCOVARS>'):
            cur[t], i = _bracket(toks, i + 1)
        elif t == '<INV_COVARS>':
            G = len(cur['<WEIGHTS>'])
            mats = []
            i += 1
            for _ in range(G):
                p, i = _bracket(toks, i)
                mats.append(p)
            cur[t] = mats
        elif t in ('</DiagGMM>', '</FullGMM>'):
            G = len(cur['<WEIGHTS>'])
            if cur['type'] == 'diag':
                mi = cur['<MEANS_INVVARS>'].reshape(G, -1)
                iv = cur['<INV_VARS>'].reshape(G, -1)
                var = 1.0 / iv
                pdf = {'type': 'diag', 'weights': cur['<WEIGHTS>'], 'means': mi * var, 'covs': var,
                       'gconsts': cur['<GCONSTS>']}
            else:
                mi = cur['<MEANS_INVCOVARS>'].reshape(G, -1)
                D = mi.shape[1]
                P = np.array([_unpack(p, D) for p in cur['<INV_COVARS>']])
                C = np.linalg.inv(P)
                pdf = {'type': 'full', 'weights': cur['<WEIGHTS>'], 'means': np.einsum('gij,gj->gi', C, mi),
                       'covs': C, 'precisions': P, 'gconsts': cur['<GCONSTS>']}
            pdfs.append(pdf)
            cur = None
            i += 1
        else:
            i += 1
    return pdfs


def loglike(pdf, X):
    """log sum_g w_g N(x; mu_g, C_g) per row of X (natural log)."""
    G, D = pdf['means'].shape
    comp = np.empty((X.shape[0], G))
    for g in range(G):
        d = X - pdf['means'][g]
        if pdf['type'] == 'diag':
            v = pdf['covs'][g]
            comp[:, g] = -0.5 * (D * np.log(2 * np.pi) + np.log(v).sum() + (d * d / v).sum(1))
        else:
            C = pdf['covs'][g]
            L = np.linalg.cholesky(C)
            z = np.linalg.solve(L, d.T)
            comp[:, g] = -0.5 * (D * np.log(2 * np.pi) + 2 * np.log(np.diag(L)).sum() + (z * z).sum(0))
        comp[:, g] += np.log(pdf['weights'][g])
    m = comp.max(1, keepdims=True)
    return (m + np.log(np.exp(comp - m).sum(1, keepdims=True)))[:, 0]
