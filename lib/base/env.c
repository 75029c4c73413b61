/* env.c -- the GH_* environment knobs (env.h). */
#include "base/env.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

const char *gh_env_str(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

int gh_env_set(const char *name) { return gh_env_str(name) != NULL; }

long long gh_env_int(const char *name, long long dflt, long long lo, long long hi) {
  const char *v = gh_env_str(name);
  if (!v) return dflt;
  char *end;
  errno = 0;
  const long long x = strtoll(v, &end, 10);
  if (end == v || *end || errno || x < lo || x > hi)
    gh_die("%s=%s: expected an integer in %lld..%lld (doc/kernels.md \"Environment knobs\")", name, v, lo, hi);
  return x;
}

double gh_env_double(const char *name, double dflt, double lo, double hi) {
  const char *v = gh_env_str(name);
  if (!v) return dflt;
  char *end;
  const double x = strtod(v, &end);
  if (end == v || *end || !isfinite(x) || x < lo || x > hi)
    gh_die("%s=%s: expected a number in %g..%g (doc/kernels.md \"Environment knobs\")", name, v, lo, hi);
  return x;
}

int gh_env_word(const char *name, int dflt, const char *const *words) {
  const char *v = gh_env_str(name);
  if (!v) return dflt;
  char list[256] = "";
  for (int i = 0; words[i]; ++i) {
    if (!strcmp(v, words[i])) return i;
    if (strlen(list) + strlen(words[i]) + 2 < sizeof list) {
      if (i) strcat(list, " ");
      strcat(list, words[i]);
    }
  }
  gh_die("%s=%s: expected one of %s (doc/kernels.md \"Environment knobs\")", name, v, list);
}
