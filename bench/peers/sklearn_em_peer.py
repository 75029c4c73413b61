"""scikit-learn GaussianMixture (all CPU cores through its BLAS) on the EM shapes of bench/run.sh: time of one EM
iteration = (fit with max_iter=4 - fit with max_iter=1) / 3, tol=0 so every iteration runs, the same data as
gemm_em_peer.py's generator (randn + 2 x one of 64 random centres; numpy, seed 0).
Usage: sklearn_em_peer.py full|diag N D M   -> prints "sklearn-em full N=.. D=.. M=..: <ms> ms/iter" """
import sys, time, warnings
import numpy as np
from sklearn.mixture import GaussianMixture
warnings.filterwarnings("ignore")
cov, N, D, M = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
X = (rng.standard_normal((N, D)) + 2 * rng.standard_normal((64, D))[rng.integers(0, 64, N)]).astype(np.float64)
def fit(iters):
    gm = GaussianMixture(M, covariance_type=cov, max_iter=iters, tol=0, init_params="random_from_data",
                         random_state=0, reg_covar=1e-3)
    t = time.time(); gm.fit(X); return time.time() - t
t1 = fit(1); t4 = fit(4)
print("sklearn-em %s N=%d D=%d M=%d: %.1f ms/iter" % (cov, N, D, M, (t4 - t1) / 3 * 1e3), flush=True)
