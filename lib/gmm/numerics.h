/* numerics.h -- the numerical contract's checks (doc/reliability.md,
 * "Numerical contract").  Every backend agrees with the float64 reference
 * (kernels/gemm-forms.h gh_gauss_exact) within 1e-3 nats + 1e-5 relative
 * per frame inside the contract's range: variances in [1e-30, 1e30], full
 * condition numbers <= 1e4, frames within 1e4 standard deviations of some
 * Gaussian.  Outside it these functions warn once per file, or stop with
 * one error line where no number would be right. */
#ifndef GH_NUMERICS_H
#define GH_NUMERICS_H
#include <stdint.h>
#include "gmm/gmm.h"

/* The range of the contract. */
#define GH_CONTRACT_MIN_VAR 1e-30
#define GH_CONTRACT_MAX_VAR 1e30
#define GH_CONTRACT_MAX_COND 1e4
#define GH_CONTRACT_MAX_SIGMAS 1e4
/* Largest --max-condition the float parameter storage can honour: the
 * inverse covariance is stored as float, so its relative rounding (6e-8)
 * times the condition number perturbs the Gaussian; above 1e6 that is
 * 6% (tools refuse, gh_max_condition_check). */
#define GH_FLOAT_MAX_CONDITION 1e6

/* (Defined in kernels/gemm-forms.c, next to the exact form it uses.)
 * Warns (once for the file: the first offending Gaussian, and how many)
 * about Gaussians of s outside the contract's range: a variance (full: a
 * diagonal covariance element) below 1e-30 or above 1e30, a full
 * covariance of condition number above 1e4, or a dead Gaussian (weight 0,
 * inverse covariance not positive definite in double: it scores -inf).
 * name: the model file, for the message. */
void gh_gmm_set_contract_check(const gh_gmm_set *s, const char *name);

/* Checks one utterance's log-likelihoods ll [T x P] (row-major, natural
 * log, as a backend's loglikes writes them): dies naming rspec, key, frame
 * (and pdf) on a NaN, or on a frame that is -inf under every pdf (no
 * Gaussian of the model can produce it); warns once per *warned (the
 * caller's flag, one per file) when a frame's best log-likelihood is below
 * -0.5 (1e4)^2, i.e. the frame is beyond the contract's 1e4 standard
 * deviations from every Gaussian (accurate to 1e-5 relative only). */
void gh_loglikes_check(const char *rspec, const char *key, const float *ll, int64_t T, int32_t P, int *warned);

/* Dies with one line when max_condition exceeds GH_FLOAT_MAX_CONDITION
 * (option name given for the message); warns (once per process) when it
 * exceeds the contract's 1e4. */
void gh_max_condition_check(double max_condition, const char *option);

#endif
