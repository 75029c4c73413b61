/* bench-lines.c -- reading lines of text (scp lists, text archives): the
 * library's gh_read_line (lib/io/kaldi-io.c, memchr over the buffer) against
 * the byte-at-a-time loop it replaced (gh_istream_getc per byte, kept here),
 * CPU time of --reps passes over FILE each.
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Ilib -Ikernels -fopenmp -o /tmp/bench-lines bench/bench-lines.c \
 *     build/libgmmhmm.a build/libgmmhmm-kernels.a $(make -s print-ldlibs)
 *   /tmp/bench-lines FILE [REPS]
 * Prints "<reader>: <s> s cpu for <reps> passes (<lines> lines, <chars> chars)". */
#include "base/gh-base.h"
#include "io/kaldi-io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *old_line;
static size_t old_cap;
/* the byte loop gh_read_line was before memchr (bench/RESULTS.md D33) */
static char *getc_read_line(gh_istream *s) {
  size_t n = 0;
  int c;
  while ((c = gh_istream_getc(s)) >= 0 && c != '\n') {
    if (c == 0) gh_istream_fail(s, "NUL byte in a line of text");
    if (n + 2 > old_cap) old_line = gh_realloc(old_line, old_cap = old_cap ? 2 * old_cap : 256);
    old_line[n++] = (char)c;
  }
  if (c < 0 && n == 0) gh_istream_fail(s, "unexpected end of file (expected a line of text)");
  if (n + 1 > old_cap) old_line = gh_realloc(old_line, old_cap = old_cap ? 2 * old_cap : 256);
  if (n > 0 && old_line[n - 1] == '\r') --n;
  old_line[n] = '\0';
  return old_line;
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: bench-lines FILE [REPS]\n"); return 1; }
  const int reps = argc > 2 ? atoi(argv[2]) : 10;
  for (int v = 0; v < 2; ++v) {
    const double t0 = cpu_seconds();
    long long chars = 0, lines = 0;
    for (int r = 0; r < reps; ++r) {
      gh_istream *in = gh_istream_open(argv[1]);
      if (!in) gh_die("cannot open %s: %s", argv[1], gh_last_error());
      while (!gh_istream_eof(in)) {
        const char *l = v ? gh_read_line(in) : getc_read_line(in);
        chars += (long long)strlen(l);
        ++lines;
      }
      gh_istream_close(in);
    }
    printf("%s: %.3f s cpu for %d passes (%lld lines, %lld chars)\n", v ? "gh_read_line" : "byte loop (getc)",
           cpu_seconds() - t0, reps, lines, chars);
  }
  free(old_line);
  return 0;
}
