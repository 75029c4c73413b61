"""scikit-learn's BaseEstimator when scikit-learn is installed (get_params,
set_params, clone, repr), else a small stand-in with the same two methods."""
import inspect
import warnings

try:
    from sklearn.base import BaseEstimator, DensityMixin
    from sklearn.exceptions import ConvergenceWarning, NotFittedError
except ImportError:  # pragma: no cover - scikit-learn is optional
    class BaseEstimator:
        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p for p in sig.parameters if p != 'self')

        def get_params(self, deep=True):
            return {k: getattr(self, k) for k in self._get_param_names()}

        def set_params(self, **params):
            for k, v in params.items():
                if k not in self._get_param_names():
                    raise ValueError('invalid parameter %r for %s' % (k, type(self).__name__))
                setattr(self, k, v)
            return self

    class DensityMixin:
        pass

    class ConvergenceWarning(UserWarning):
        pass

    class NotFittedError(ValueError, AttributeError):
        pass

__all__ = ['BaseEstimator', 'DensityMixin', 'ConvergenceWarning', 'NotFittedError', 'warnings']
