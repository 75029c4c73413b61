/* env.h -- the toolkit's GH_* environment knobs (the table of them:
 * doc/kernels.md "Environment knobs"), read through these functions so
 * that a malformed value is one error line naming the variable (gh_die:
 * "GH_CUDA_NARROW=3: expected one of 0 1 2 4 8 16") instead of a silent
 * default.  A knob that is unset or set to the empty string takes the
 * caller's default.  Values are read at each call (tests set them between
 * cases). */
#ifndef GH_ENV_H
#define GH_ENV_H

/* The value of name, or NULL when it is unset or empty. */
const char *gh_env_str(const char *name);

/* 1 when name is set to a non-empty value (any: a switch such as
 * GH_CUDA_NO_CUBLAS=1), else 0. */
int gh_env_set(const char *name);

/* An integer knob: dflt when name is unset or empty, else its value, a
 * decimal integer in [lo, hi]; anything else dies naming the variable,
 * the value and the range. */
long long gh_env_int(const char *name, long long dflt, long long lo, long long hi);

/* A real knob: dflt when name is unset or empty, else its value, a finite
 * number (strtod's form) in [lo, hi]; anything else dies as gh_env_int. */
double gh_env_double(const char *name, double dflt, double lo, double hi);

/* A word knob: dflt when name is unset or empty, else the index of its
 * value in words (a NULL-terminated list, e.g. {"fused", "gemm", NULL}:
 * 0 or 1); any other value dies naming the variable, the value and the
 * words. */
int gh_env_word(const char *name, int dflt, const char *const *words);

#endif
