/* gh-test.h -- minimal TAP-style unit-test helpers for C tests.
 * Each test binary prints "ok N - name" / "not ok N - name" lines and a
 * final "# N passed, M failed", and exits non-zero if anything failed.
 * Paths: GH_SHARED (env, default "../shared") is the shared data folder. */
#ifndef GH_TEST_H
#define GH_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int gh_t_pass = 0, gh_t_fail = 0, gh_t_n = 0;
#define GH_TEST_OK(cond, ...) do { ++gh_t_n; if (cond) { ++gh_t_pass; printf("ok %d - ", gh_t_n); } \
  else { ++gh_t_fail; printf("not ok %d - ", gh_t_n); } printf(__VA_ARGS__); printf("\n"); fflush(stdout); } while (0)
/* |a-b| <= tol (absolute); prints both on failure. */
#define GH_TEST_NEAR(a, b, tol, ...) do { double _a = (a), _b = (b); int _ok = fabs(_a - _b) <= (tol) && !isnan(_a) && !isnan(_b); \
  GH_TEST_OK(_ok, __VA_ARGS__); if (!_ok) printf("#   got %.9g expected %.9g (tol %g)\n", _a, _b, (double)(tol)); } while (0)
static inline const char *gh_test_shared(void) { const char *s = getenv("GH_SHARED"); return s ? s : "../shared"; }
static inline int gh_test_done(void) { printf("# %d passed, %d failed\n", gh_t_pass, gh_t_fail); return gh_t_fail ? 1 : 0; }
#endif
