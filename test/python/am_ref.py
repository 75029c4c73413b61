"""Independent numpy (float64) reference for one pass of Kaldi's monophone
training: gmm-acc-stats-ali (E-step on alignments of transition-ids) and
gmm-est (MleDiagGmmUpdate per pdf, TransitionModel::MleUpdate), following
Kaldi's gmm/mle-diag-gmm.cc and hmm/transition-model.cc.

  am_ref.py MODEL_TXT FEATS_ARK ALI_ARK AVG NEW_MODEL_TXT [--min-gaussian-occupancy=X]

MODEL_TXT / NEW_MODEL_TXT: the model before and after the update, as Kaldi
text (.mdl: TransitionModel + AmDiagGmm); FEATS_ARK: binary FM archive;
ALI_ARK: Kaldi int32-vector archive (binary or text) (transition-ids); AVG: the
"Overall avg like per frame (Gaussian only)" value the tool logged.
Checks, each max |a - r| / (1 + |r|) over the values (1e-4 allowed), and
exits non-zero with a message on the first failure:
  avg like per frame; weights, means, variances of every pdf; transition
  log-probabilities."""
import struct
import sys
import numpy as np

sys.path.insert(0, __import__('os').path.dirname(__file__))
from kaldi_text import read_ark_fm, read_text_gmm_set  # noqa: E402

TOL = 1e-4


def read_ali_ark(path):
    data = open(path, 'rb').read()
    out, pos = {}, 0
    while pos < len(data):
        sp = data.index(b' ', pos)
        key = data[pos:sp].decode()
        pos = sp + 1
        if data[pos:pos + 2] != b'\0B':  # text: "key t1 t2 ...\n"
            nl = data.index(b'\n', pos)
            out[key] = np.array([int(t) for t in data[pos:nl].split()], dtype=np.int64)
            pos = nl + 1
            continue
        pos += 2
        assert data[pos] == 4
        n = struct.unpack('<i', data[pos + 1:pos + 5])[0]
        pos += 5
        a = np.frombuffer(data, dtype=np.uint8, count=5 * n, offset=pos).reshape(n, 5)
        assert n == 0 or (a[:, 0] == 4).all()
        out[key] = a[:, 1:].copy().view('<i4').reshape(n).astype(np.int64)
        pos += 5 * n
    return out


def read_text_trans(path):
    """tid -> (pdf, transition-state, is_self_loop), and the log-probs."""
    toks = open(path).read().split()
    i = toks.index('<Topology>') + 1
    phone2entry, entries = {}, []
    while toks[i] != '</Topology>':
        assert toks[i] == '<TopologyEntry>'
        i += 2  # <ForPhones>
        phones = []
        while toks[i] != '</ForPhones>':
            phones.append(int(toks[i]))
            i += 1
        i += 1
        states = []
        while toks[i] != '</TopologyEntry>':
            assert toks[i] == '<State>'
            i += 2
            dsts = []
            while toks[i] != '</State>':
                if toks[i] == '<PdfClass>':
                    i += 2
                elif toks[i] == '<Transition>':
                    dsts.append(int(toks[i + 1]))
                    i += 3
                else:
                    raise ValueError('unexpected token %s' % toks[i])
            states.append(dsts)
            i += 1
        i += 1
        for p in phones:
            phone2entry[p] = len(entries)
        entries.append(states)
    i += 1
    assert toks[i] == '<Triples>', 'HMM topologies only'
    n = int(toks[i + 1])
    i += 2
    tid_pdf, tid_state, tid_loop = [None], [None], [None]
    for ts in range(n):
        phone, hs, pdf = int(toks[i]), int(toks[i + 1]), int(toks[i + 2])
        i += 3
        for d in entries[phone2entry[phone]][hs]:
            tid_pdf.append(pdf)
            tid_state.append(ts)
            tid_loop.append(d == hs)
    i = toks.index('<LogProbs>') + 2
    j = toks.index(']', i)
    lp = np.array([float(t) for t in toks[i:j]])
    assert len(lp) == len(tid_pdf), 'log-probs %d vs %d transition-ids + 1' % (len(lp), len(tid_pdf))
    return np.array([-1] + tid_pdf[1:]), np.array([-1] + tid_state[1:]), lp


def gauss_loglikes(pdf, X):
    w, mu, var = pdf['weights'], pdf['means'], pdf['covs']
    ll = (np.log(w)[None, :] - 0.5 * np.sum(np.log(2 * np.pi * var), axis=1)[None, :]
          - 0.5 * (((X[:, None, :] - mu[None, :, :]) ** 2) / var[None, :, :]).sum(axis=2))
    return ll


def relerr(a, r):
    a, r = np.asarray(a, float), np.asarray(r, float)
    if a.shape != r.shape:
        return np.inf
    return float(np.max(np.abs(a - r) / (1 + np.abs(r)))) if a.size else 0.0


def fail(msg):
    print('am_ref: FAIL: ' + msg)
    sys.exit(1)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    min_occ = 10.0
    for a in sys.argv[1:]:
        if a.startswith('--min-gaussian-occupancy='):
            min_occ = float(a.split('=', 1)[1])
    model_txt, feats_ark, ali_ark, avg_s, new_txt = args
    pdfs = read_text_gmm_set(model_txt)
    tid_pdf, tid_state, logp = read_text_trans(model_txt)
    feats = read_ark_fm(feats_ark)
    ali = read_ali_ark(ali_ark)
    P = len(pdfs)
    D = pdfs[0]['means'].shape[1]
    # frames of every pdf
    frames = [[] for _ in range(P)]
    tcount = np.zeros(len(logp))
    nfr = 0
    for key, X in feats.items():
        if key not in ali or len(ali[key]) != X.shape[0]:
            continue
        a = ali[key]
        np.add.at(tcount, a, 1.0)
        pdf_of = tid_pdf[a]
        for p in np.unique(pdf_of):
            frames[p].append(X[pdf_of == p])
        nfr += X.shape[0]
    tot_like = 0.0
    stats = []
    for p in range(P):
        X = np.concatenate(frames[p]) if frames[p] else np.zeros((0, D))
        if X.shape[0]:
            ll = gauss_loglikes(pdfs[p], X)
            m = ll.max(axis=1, keepdims=True)
            tot = m[:, 0] + np.log(np.exp(ll - m).sum(axis=1))
            tot_like += tot.sum()
            post = np.exp(ll - tot[:, None])
        else:
            post = np.zeros((0, len(pdfs[p]['weights'])))
        stats.append((post.sum(axis=0), post.T @ X, post.T @ (X * X)))
    avg = tot_like / nfr
    e = abs(avg - float(avg_s)) / abs(avg)
    print('am_ref: avg like per frame: reference %.6f, tool %s over %d frames (relative difference %.2e)'
          % (avg, avg_s, nfr, e))
    if e > TOL:
        fail('avg like per frame differs by %.2e relative' % e)

    # M-step (Kaldi MleDiagGmmUpdate, defaults: min weight 1e-5, min variance 1e-3)
    new = read_text_gmm_set(new_txt)
    if len(new) != P:
        fail('%d pdfs in the new model, %d expected' % (len(new), P))
    worst = 0.0
    for p in range(P):
        occ, macc, vacc = stats[p]
        old = pdfs[p]
        G = len(occ)
        occ_sum = occ.sum()
        w = old['weights'].copy()
        mu = old['means'].copy()
        var = old['covs'].copy()
        remove = []
        for g in range(G):
            prob = occ[g] / occ_sum if occ_sum > 0 else 1.0 / G
            if occ[g] > min_occ and prob > 1e-5:
                w[g] = prob
                mu[g] = macc[g] / occ[g]
                var[g] = np.maximum(vacc[g] / occ[g] - mu[g] ** 2, 1e-3)
            elif len(remove) < G - 1:
                remove.append(g)
            else:
                w[g] = max(prob, 1e-5)
        keep = [g for g in range(G) if g not in remove]
        w, mu, var = w[keep], mu[keep], var[keep]
        w = w / w.sum()
        q = new[p]
        for name, ref, got in (('weights', w, q['weights']), ('means', mu, q['means']), ('variances', var, q['covs'])):
            err = relerr(got, ref)
            worst = max(worst, err)
            if err > TOL:
                fail('pdf %d %s differ by %.2e (shapes %s vs %s)' % (p, name, err, np.shape(got), np.shape(ref)))
    print('am_ref: GMM parameters of %d pdfs within %.2e of the reference' % (P, worst))

    # transitions (Kaldi MleUpdate: floor 0.01, min count 5)
    new_tid_pdf, _, new_logp = read_text_trans(new_txt)
    ref_logp = logp.copy()
    for ts in range(tid_state.max() + 1):
        tids = np.nonzero(tid_state == ts)[0]
        if len(tids) <= 1:
            continue
        c = tcount[tids]
        tot = c.sum()
        if tot < 5.0:
            continue
        pr = c / tot
        for _ in range(3):
            pr = pr / pr.sum()
            pr = np.maximum(pr, 0.01)
        ref_logp[tids] = np.log(pr)
    err = relerr(new_logp[1:], ref_logp[1:])
    if err > TOL:
        fail('transition log-probabilities differ by %.2e' % err)
    print('am_ref: %d transition log-probabilities within %.2e of the reference' % (len(ref_logp) - 1, err))


if __name__ == '__main__':
    main()
