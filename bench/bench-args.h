/* bench-args.h -- the benchmarks' --name=value options (bench-em, bench-score,
 * bench-hmm): arg() the integer value of --name=N in argv, sarg() the string
 * value of --name=S, def when absent. */
#ifndef GH_BENCH_ARGS_H
#define GH_BENCH_ARGS_H
#include <stdlib.h>
#include <string.h>

static long arg(int argc, char **argv, const char *name, long def) {
  size_t n = strlen(name);
  for (int i = 1; i < argc; ++i)
    if (!strncmp(argv[i], name, n) && argv[i][n] == '=') return atol(argv[i] + n + 1);
  return def;
}
static const char *sarg(int argc, char **argv, const char *name, const char *def) {
  size_t n = strlen(name);
  for (int i = 1; i < argc; ++i)
    if (!strncmp(argv[i], name, n) && argv[i][n] == '=') return argv[i] + n + 1;
  return def;
}

#endif
