/* gh-base.c -- see gh-base.h. */
#include "gh-base.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *gh_progname = "gmmhmm";
int gh_verbose = 0;
static char gh_errbuf[2048];

struct gh_tmpfile {
  char *path, *tmp;
  FILE *fp;
  struct gh_tmpfile *next;
};
static gh_tmpfile *gh_open_tmpfiles = NULL;

static void gh_abort_all_tmpfiles(void) {
  while (gh_open_tmpfiles) gh_tmpfile_abort(gh_open_tmpfiles);
}

/* On a fatal signal, remove unfinished outputs (unlink is async-signal-safe)
 * and re-raise so the exit status still tells the signal. */
static void gh_on_signal(int sig) {
  for (gh_tmpfile *t = gh_open_tmpfiles; t; t = t->next) unlink(t->tmp);
  signal(sig, SIG_DFL);
  raise(sig);
}

void gh_init(const char *argv0) {
  const char *s = argv0 ? strrchr(argv0, '/') : NULL;
  gh_progname = s ? s + 1 : (argv0 ? argv0 : "gmmhmm");
  signal(SIGINT, gh_on_signal);
  signal(SIGTERM, gh_on_signal);
  signal(SIGPIPE, gh_on_signal);
  signal(SIGHUP, gh_on_signal);
}

static void gh_vmsg(const char *kind, const char *fmt, va_list ap) {
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  /* One line: replace embedded newlines so a message never spans lines. */
  for (char *p = buf; *p; ++p) if (*p == '\n') *p = ' ';
  fprintf(stderr, "%s: %s: %s\n", gh_progname, kind, buf);
  fflush(stderr);
}

void gh_log(const char *fmt, ...) { va_list ap; va_start(ap, fmt); gh_vmsg("LOG", fmt, ap); va_end(ap); }
void gh_warn(const char *fmt, ...) { va_list ap; va_start(ap, fmt); gh_vmsg("WARNING", fmt, ap); va_end(ap); }
void gh_vlog(int level, const char *fmt, ...) {
  if (gh_verbose < level) return;
  char kind[32];
  snprintf(kind, sizeof kind, "VLOG[%d]", level);
  va_list ap; va_start(ap, fmt); gh_vmsg(kind, fmt, ap); va_end(ap);
}

void gh_die(const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); gh_vmsg("ERROR", fmt, ap); va_end(ap);
  gh_abort_all_tmpfiles();
  exit(1);
}

void gh_set_error(const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); vsnprintf(gh_errbuf, sizeof gh_errbuf, fmt, ap); va_end(ap);
}
const char *gh_last_error(void) { return gh_errbuf; }

void *gh_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) gh_die("out of memory (%zu bytes)", n);
  return p;
}
void *gh_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) gh_die("out of memory (%zu x %zu bytes)", n, size);
  return p;
}
void *gh_realloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) gh_die("out of memory (%zu bytes)", n);
  return q;
}
char *gh_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(gh_malloc(n), s, n);
}

gh_tmpfile *gh_tmpfile_open(const char *path) {
  gh_tmpfile *t = gh_calloc(1, sizeof *t);
  size_t n = strlen(path) + 32;
  t->path = gh_strdup(path);
  t->tmp = gh_malloc(n);
  snprintf(t->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  t->fp = fopen(t->tmp, "wb");
  if (!t->fp) {
    int e = errno;
    free(t->path); free(t->tmp); free(t);
    gh_die("cannot open '%s' for writing: %s", path, strerror(e));
  }
  t->next = gh_open_tmpfiles;
  gh_open_tmpfiles = t;
  return t;
}

FILE *gh_tmpfile_fp(gh_tmpfile *t) { return t->fp; }

static void gh_tmpfile_unlink_list(gh_tmpfile *t) {
  for (gh_tmpfile **pp = &gh_open_tmpfiles; *pp; pp = &(*pp)->next)
    if (*pp == t) { *pp = t->next; return; }
}

void gh_tmpfile_commit(gh_tmpfile *t) {
  int bad = ferror(t->fp);
  if (fflush(t->fp) != 0) bad = 1;
  if (fclose(t->fp) != 0) bad = 1;
  t->fp = NULL;
  if (bad) {
    char path[1024];
    snprintf(path, sizeof path, "%s", t->path);
    gh_tmpfile_abort(t);
    gh_die("error writing '%s' (disk full?)", path);
  }
  if (rename(t->tmp, t->path) != 0) {
    int e = errno;
    char path[1024];
    snprintf(path, sizeof path, "%s", t->path);
    gh_tmpfile_abort(t);
    gh_die("cannot rename temporary file onto '%s': %s", path, strerror(e));
  }
  gh_tmpfile_unlink_list(t);
  free(t->path); free(t->tmp); free(t);
}

void gh_tmpfile_abort(gh_tmpfile *t) {
  if (t->fp) fclose(t->fp);
  unlink(t->tmp);
  gh_tmpfile_unlink_list(t);
  free(t->path); free(t->tmp); free(t);
}

double gh_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int gh_isfinite_f(float x) { return isfinite(x); }
