/* bench-args.h -- the benchmarks' --name=value options (bench-em, bench-score,
 * bench-hmm): arg() the integer value of --name=N in argv, sarg() the string
 * value of --name=S, def when absent; the last occurrence wins. */
#ifndef GH_BENCH_ARGS_H
#define GH_BENCH_ARGS_H
#include <stdlib.h>
#include <string.h>

static const char *sarg(int argc, char **argv, const char *name, const char *def) {
  size_t n = strlen(name);
  for (int i = argc - 1; i >= 1; --i) /* the last occurrence wins, as in Kaldi's options */
    if (!strncmp(argv[i], name, n) && argv[i][n] == '=') return argv[i] + n + 1;
  return def;
}
static long arg(int argc, char **argv, const char *name, long def) {
  const char *v = sarg(argc, argv, name, NULL);
  return v ? atol(v) : def;
}

#endif
