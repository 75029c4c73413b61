"""Running gmmhmm's command-line tools from Python.

A tool is found in $GMMHMM_BIN, else on PATH, else in the bin/ folder of
the prefix this package was installed under by `make install`
(gmmhmm/_prefix.py, written there).  A tool that fails raises ToolError
whose message is the tool's own one-line error (its "ERROR" line, without
the program's prefix) and which keeps the whole stderr in .stderr.
Temporary files live in one directory per call (workdir()), removed when
the call returns or raises.
"""
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager

import numpy as np


class ToolError(ValueError):
    """A gmmhmm tool failed; str() is its one-line error message."""

    def __init__(self, tool, message, stderr=''):
        super().__init__('%s: %s' % (tool, message))
        self.tool = tool
        self.message = message
        self.stderr = stderr


def _prefix_bin():
    try:
        from . import _prefix
        return os.path.join(_prefix.PREFIX, 'bin')
    except ImportError:
        return None


def find_tool(name):
    d = os.environ.get('GMMHMM_BIN')
    if d:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    p = shutil.which(name)
    if p:
        return p
    d = _prefix_bin()
    if d and os.access(os.path.join(d, name), os.X_OK):
        return os.path.join(d, name)
    raise FileNotFoundError('gmmhmm tool %s not found: set GMMHMM_BIN to the folder of the tools (e.g. the '
                            'checkout\'s bin/), put it on PATH, or run make install' % name)


def _message(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    for l in lines:
        m = re.search(r'ERROR[^:]*:\s*(.*)$', l)
        if m:
            return m.group(1).strip()
    return lines[-1].strip() if lines else 'failed without a message'


def _env():
    """The tools' environment: the caller's, with OMP_WAIT_POLICY=passive
    unless it sets OMP_WAIT_POLICY or GOMP_SPINCOUNT.  libgomp's idle
    threads otherwise spin between parallel regions; on a loaded 2-core
    host that took CPU from the working thread: hmm-train on
    bench/RESULTS.md Y3's data 0.88-0.98 s, passive 0.51-0.57 s."""
    if 'OMP_WAIT_POLICY' in os.environ or 'GOMP_SPINCOUNT' in os.environ:
        return None
    env = dict(os.environ)
    env['OMP_WAIT_POLICY'] = 'passive'
    return env


def run(tool, *args, stdin=None, capture=False):
    """Runs tool with args; returns its stdout (bytes) when capture, its
    stderr (str) otherwise; raises ToolError on a non-zero exit."""
    exe = find_tool(tool)
    p = subprocess.run([exe] + [str(a) for a in args], input=stdin, stdout=subprocess.PIPE if capture else
                       subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
    err = p.stderr.decode('utf-8', 'replace')
    if p.returncode != 0:
        raise ToolError(tool, _message(err), err)
    return p.stdout if capture else err


@contextmanager
def workdir():
    d = tempfile.mkdtemp(prefix='gmmhmm-')
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def write_feats(path, X, lengths=None):
    """Writes X (N, D) as a binary feature archive of float32 matrices: one
    utterance, or one per entry of lengths (keys in sorted order: the tools
    process utterances sorted by key).  Returns the keys."""
    X = np.asarray(X)
    if lengths is None:
        lengths = [X.shape[0]]
    keys = ['s%09d' % i for i in range(len(lengths))]
    import struct
    with open(path, 'wb') as f:
        off = 0
        for k, n in zip(keys, lengths):
            x = np.ascontiguousarray(X[off:off + n], dtype='<f4')
            f.write(k.encode() + b' \0BFM \x04' + struct.pack('<i', x.shape[0]) + b'\x04' +
                    struct.pack('<i', x.shape[1]) + x.tobytes())
            off += n
    return keys


def device():
    return os.environ.get('GMMHMM_DEVICE', 'auto')
