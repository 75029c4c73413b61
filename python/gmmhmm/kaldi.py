"""Kaldi tables kaldiio does not read right, and alignments.

kaldiio reads feature matrices (FM/DM, compressed CM/CM2/CM3), vectors and
int32 vectors (alignments: an int32 count, then each element with its
size byte, Kaldi's BasicVectorHolder) from ark/scp files.  A Posterior archive (Kaldi's
Posterior, hmm-bw / gmm-global-get-post / ali-to-post output) is per
utterance a list per frame of (index, weight) pairs: binary, an int32 frame
count, then per frame an int32 pair count and per pair an int32 index and a
float32 weight, each with its size byte.  kaldiio has no type for it: it
takes the leading "\\x04" + int32 for an int32 vector and returns garbage
without an error.  read_posteriors reads it (binary or text archives):

    for key, post in gmmhmm.kaldi.read_posteriors('1.post'):
        post[t] -> (idx int32 array, weight float32 array) of frame t

posterior_matrix(post, n) makes the dense (T, n) float64 matrix.
read_alignments / write_alignments: int32 vector archives (same as kaldiio's
read; here so one import covers the tools' outputs).  Archives are files,
"ark:FILE", "ark,t:FILE"; scp lists are not read here (use kaldiio).
Errors: FormatError (ValueError) naming the file, the key and what was wrong.
"""
import os
import struct

import numpy as np

from ._kio import FormatError

__all__ = ['read_posteriors', 'write_posteriors', 'posterior_matrix', 'read_alignments', 'write_alignments',
           'FormatError']


def _path(spec):
    s = os.fspath(spec)
    if ':' in s and s.split(':', 1)[0].startswith('ark'):
        s = s.split(':', 1)[1]
    return s


def _keys(data, name):
    """(key, offset of the object, binary) over an archive's entries; the
    caller parses one object and returns its end."""
    p = 0
    n = len(data)
    while True:
        while p < n and data[p:p + 1] in (b'\n', b' ', b'\t', b'\r'):
            p += 1
        if p >= n:
            return
        e = data.find(b' ', p)
        if e < 0:
            raise FormatError('%s: a key %r without a value at the end of the archive' % (name, data[p:p + 40]))
        key = data[p:e].decode('utf-8', 'replace')
        e += 1
        binary = data[e:e + 2] == b'\0B'
        p = yield key, (e + 2 if binary else e), binary


def _need(data, p, k, name, key):
    if p + k > len(data):
        raise FormatError('%s, key %s: truncated posterior' % (name, key))


def _bin_post(data, p, name, key):
    def i32(p):
        _need(data, p, 5, name, key)
        if data[p] != 4:
            raise FormatError('%s, key %s: not a Posterior (expected a 4-byte int32 at byte %d)' % (name, key, p))
        return struct.unpack_from('<i', data, p + 1)[0], p + 5
    T, p = i32(p)
    if T < 0:
        raise FormatError('%s, key %s: negative frame count %d' % (name, key, T))
    out = []
    for _ in range(T):
        n, p = i32(p)
        if n < 0:
            raise FormatError('%s, key %s: negative pair count %d' % (name, key, n))
        _need(data, p, 10 * n, name, key)
        rec = np.frombuffer(data, dtype=np.dtype([('s1', 'u1'), ('i', '<i4'), ('s2', 'u1'), ('w', '<f4')]),
                            count=n, offset=p)
        if n and (np.any(rec['s1'] != 4) or np.any(rec['s2'] != 4)):
            raise FormatError('%s, key %s: not a Posterior (bad size bytes in its pairs)' % (name, key))
        out.append((rec['i'].copy(), rec['w'].copy()))
        p += 10 * n
    return out, p


def _text_post(data, p, name, key):
    e = data.find(b'\n', p)
    if e < 0:
        e = len(data)
    toks = data[p:e].decode('latin-1').split()
    out, i = [], 0
    while i < len(toks):
        if toks[i] != '[':
            raise FormatError('%s, key %s: expected [ in a text Posterior, found %r' % (name, key, toks[i]))
        j = toks.index(']', i)
        v = toks[i + 1:j]
        if len(v) % 2:
            raise FormatError('%s, key %s: odd number of values in a frame' % (name, key))
        out.append((np.array(v[0::2], dtype=np.int32), np.array(v[1::2], dtype=np.float32)))
        i = j + 1
    return out, e


def read_posteriors(spec):
    """Yields (key, post) of a Posterior archive, in file order: post is a
    list per frame of (indices int32 array, weights float32 array)."""
    name = os.fspath(spec)
    with open(_path(spec), 'rb') as f:
        data = f.read()
    g = _keys(data, name)
    try:
        key, p, binary = next(g)
        while True:
            post, p = (_bin_post if binary else _text_post)(data, p, name, key)
            yield key, post
            key, p, binary = g.send(p)
    except StopIteration:
        return


def write_posteriors(spec, items):
    """Writes (key, post) pairs as a binary Posterior archive (post as
    read_posteriors gives it, or a list per frame of (index, weight)
    tuples), atomically."""
    parts = []
    for key, post in items:
        parts.append(key.encode() + b' \0B\x04' + struct.pack('<i', len(post)))
        for fr in post:
            if isinstance(fr, tuple) and len(fr) == 2 and hasattr(fr[0], '__len__'):
                idx, w = fr
            else:
                idx = [a for a, _ in fr]
                w = [b for _, b in fr]
            idx = np.asarray(idx, dtype='<i4')
            w = np.asarray(w, dtype='<f4')
            rec = np.empty(idx.size, dtype=np.dtype([('s1', 'u1'), ('i', '<i4'), ('s2', 'u1'), ('w', '<f4')]))
            rec['s1'] = 4
            rec['s2'] = 4
            rec['i'] = idx
            rec['w'] = w
            parts.append(b'\x04' + struct.pack('<i', idx.size) + rec.tobytes())
    _atomic(spec, b''.join(parts))


def posterior_matrix(post, n):
    """Dense (T, n) float64 from one utterance's posterior."""
    M = np.zeros((len(post), n))
    for t, (idx, w) in enumerate(post):
        np.add.at(M[t], idx, w)
    return M


def read_alignments(spec):
    """Yields (key, int32 array) of an int32 vector archive (binary or text)."""
    name = os.fspath(spec)
    with open(_path(spec), 'rb') as f:
        data = f.read()
    g = _keys(data, name)
    try:
        key, p, binary = next(g)
        while True:
            if binary:
                if data[p:p + 1] != b'\x04':
                    raise FormatError('%s, key %s: not an int32 vector' % (name, key))
                n = struct.unpack_from('<i', data, p + 1)[0]
                if n < 0 or p + 5 + 5 * n > len(data):
                    raise FormatError('%s, key %s: truncated int32 vector' % (name, key))
                # Kaldi's BasicVectorHolder: each element with its size byte
                rec = np.frombuffer(data, dtype=np.dtype([('s', 'u1'), ('v', '<i4')]), count=n, offset=p + 5)
                if n and np.any(rec['s'] != 4):
                    raise FormatError('%s, key %s: not an int32 vector (bad size bytes)' % (name, key))
                v = rec['v'].copy()
                p += 5 + 5 * n
            else:
                e = data.find(b'\n', p)
                e = len(data) if e < 0 else e
                try:
                    v = np.array(data[p:e].split(), dtype=np.int32)
                except ValueError:
                    raise FormatError('%s, key %s: not an int32 vector' % (name, key))
                p = e
            yield key, v
            key, p, binary = g.send(p)
    except StopIteration:
        return


def write_alignments(spec, items):
    """Writes (key, int vector) pairs as a binary int32 vector archive, atomically."""
    parts = []
    for key, v in items:
        v = np.asarray(v, dtype='<i4').ravel()
        rec = np.empty(v.size, dtype=np.dtype([('s', 'u1'), ('v', '<i4')]))
        rec['s'] = 4
        rec['v'] = v
        parts.append(key.encode() + b' \0B\x04' + struct.pack('<i', v.size) + rec.tobytes())
    _atomic(spec, b''.join(parts))


def _atomic(spec, data):
    path = _path(spec)
    tmp = '%s.tmp%d' % (path, os.getpid())
    try:
        with open(tmp, 'wb') as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
