"""Kaldi's binary and text object syntax, read and written exactly.

Binary: "\\0B", tokens followed by one space, basic types as a size byte and
little-endian bytes (int32 "\\x04" + 4 bytes; float "\\x04" + 4 bytes),
float vectors "FV " + int32 n + n float32, matrices "FM " + int32 rows +
int32 cols + data, packed symmetric matrices "FP " + int32 n + n(n+1)/2
values (row i holds columns 0..i), integer vectors "\\x04" + int32 n + n
raw int32 (Kaldi's WriteIntegerVector).  Double forms (DV, DM, DP) are read
as float64 and written back as such.  Text: whitespace-separated tokens,
"[ ... ]" for vectors and matrices (Kaldi's text form); read only here.
"""
import struct

import numpy as np


class FormatError(ValueError):
    """A file that is not what the reader expected: the message names the
    file and what was found."""


class BinReader:
    def __init__(self, data, name):
        self.d = data
        self.p = 0
        self.name = name

    def fail(self, what):
        raise FormatError('%s: %s (at byte %d)' % (self.name, what, self.p))

    def eof(self):
        return self.p >= len(self.d)

    def peek_token(self):
        e = self.d.find(b' ', self.p)
        if e < 0:
            return ''
        return self.d[self.p:e].decode('latin-1')

    def token(self):
        e = self.d.find(b' ', self.p)
        if e < 0:
            self.fail('expected a token, found the end of the file')
        t = self.d[self.p:e].decode('latin-1')
        self.p = e + 1
        return t

    def expect(self, tok):
        t = self.token()
        if t != tok:
            self.fail('expected %s, found %r' % (tok, t[:40]))

    def int32(self):
        if self.d[self.p:self.p + 1] != b'\x04':
            self.fail('expected a 4-byte integer')
        v = struct.unpack_from('<i', self.d, self.p + 1)[0]
        self.p += 5
        return v

    def float32(self):
        if self.d[self.p:self.p + 1] != b'\x04':
            self.fail('expected a 4-byte float')
        v = struct.unpack_from('<f', self.d, self.p + 1)[0]
        self.p += 5
        return v

    def _arr(self, n, dt):
        nb = n * np.dtype(dt).itemsize
        if self.p + nb > len(self.d):
            self.fail('truncated array of %d values' % n)
        a = np.frombuffer(self.d, dtype=dt, count=n, offset=self.p).copy()
        self.p += nb
        return a

    def vector(self):
        t = self.token()
        if t not in ('FV', 'DV'):
            self.fail('expected a vector (FV/DV), found %r' % t[:40])
        n = self.int32()
        return self._arr(n, '<f4' if t == 'FV' else '<f8')

    def matrix(self):
        t = self.token()
        if t not in ('FM', 'DM'):
            self.fail('expected a matrix (FM/DM), found %r' % t[:40])
        r = self.int32()
        c = self.int32()
        return self._arr(r * c, '<f4' if t == 'FM' else '<f8').reshape(r, c)

    def packed(self):
        t = self.token()
        if t not in ('FP', 'DP'):
            self.fail('expected a packed matrix (FP/DP), found %r' % t[:40])
        n = self.int32()
        return self._arr(n * (n + 1) // 2, '<f4' if t == 'FP' else '<f8')

    def int_vector(self):
        if self.d[self.p:self.p + 1] != b'\x04':
            self.fail('expected an int32 vector')
        n = struct.unpack_from('<i', self.d, self.p + 1)[0]
        self.p += 5
        return self._arr(n, '<i4')


class BinWriter:
    def __init__(self):
        self.parts = [b'\0B']

    def raw(self, b):
        self.parts.append(b)

    def token(self, t):
        self.parts.append(t.encode('latin-1') + b' ')

    def int32(self, v):
        self.parts.append(b'\x04' + struct.pack('<i', int(v)))

    def float32(self, v):
        self.parts.append(b'\x04' + struct.pack('<f', float(v)))

    def vector(self, a):
        a = np.asarray(a)
        dbl = a.dtype == np.float64
        self.parts.append(b'DV ' if dbl else b'FV ')
        self.int32(a.size)
        self.parts.append(np.ascontiguousarray(a, dtype='<f8' if dbl else '<f4').tobytes())

    def matrix(self, a):
        a = np.asarray(a)
        dbl = a.dtype == np.float64
        self.parts.append(b'DM ' if dbl else b'FM ')
        self.int32(a.shape[0])
        self.int32(a.shape[1])
        self.parts.append(np.ascontiguousarray(a, dtype='<f8' if dbl else '<f4').tobytes())

    def packed(self, a, n):
        a = np.asarray(a)
        dbl = a.dtype == np.float64
        self.parts.append(b'DP ' if dbl else b'FP ')
        self.int32(n)
        self.parts.append(np.ascontiguousarray(a, dtype='<f8' if dbl else '<f4').tobytes())

    def int_vector(self, a):
        a = np.ascontiguousarray(a, dtype='<i4')
        self.parts.append(b'\x04' + struct.pack('<i', a.size) + a.tobytes())

    def getvalue(self):
        return b''.join(self.parts)


class TextReader:
    """Kaldi's text form, as tokens; vectors and matrices between [ ]."""

    def __init__(self, data, name):
        self.t = data.decode('latin-1').split()
        self.i = 0
        self.name = name

    def fail(self, what):
        raise FormatError('%s: %s (at token %d)' % (self.name, what, self.i))

    def eof(self):
        return self.i >= len(self.t)

    def peek_token(self):
        return self.t[self.i] if self.i < len(self.t) else ''

    def token(self):
        if self.i >= len(self.t):
            self.fail('unexpected end of file')
        self.i += 1
        return self.t[self.i - 1]

    def expect(self, tok):
        t = self.token()
        if t != tok:
            self.fail('expected %s, found %r' % (tok, t[:40]))

    def int32(self):
        try:
            return int(self.token())
        except ValueError:
            self.fail('expected an integer')

    def float32(self):
        try:
            return float(self.token())
        except ValueError:
            self.fail('expected a number')

    def _rows(self):
        self.expect('[')
        rows, cur = [], []
        while True:
            t = self.token()
            if t == ']':
                break
            cur.append(float(t))
        return cur

    def vector(self):
        return np.array(self._rows(), dtype=np.float32)

    def matrix(self):
        # rows end at a newline in Kaldi's text; the tokens lost them: the caller reshapes
        return np.array(self._rows(), dtype=np.float32)

    def packed(self):
        return np.array(self._rows(), dtype=np.float32)

    def int_vector(self):
        self.expect('[')
        out = []
        while True:
            t = self.token()
            if t == ']':
                break
            out.append(int(t))
        return np.array(out, dtype=np.int32)


def reader(data, name):
    if data[:2] == b'\0B':
        r = BinReader(data, name)
        r.p = 2
        return r, True
    return TextReader(data, name), False
