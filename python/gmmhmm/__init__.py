"""gmmhmm: scikit-learn's GaussianMixture and hmmlearn's GaussianHMM /
GMMHMM over gmmhmm's command-line tools, and Kaldi model files as numpy
(gmmhmm.io, gmmhmm.kaldi).  See doc/python.md."""
from ._tools import ToolError, find_tool
from .mixture import GaussianMixture
from .hmm import GaussianHMM, GMMHMM, ConvergenceMonitor
from . import io, kaldi

__version__ = '0.1.0'
__all__ = ['GaussianMixture', 'GaussianHMM', 'GMMHMM', 'ConvergenceMonitor', 'ToolError', 'find_tool', 'io',
           'kaldi']
