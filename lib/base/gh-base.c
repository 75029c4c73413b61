/* gh-base.c -- see gh-base.h. */
#include "base/gh-base.h"
#include "base/env.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *gh_progname = "gmmhmm";
int gh_verbose = 0;
static _Thread_local char gh_errbuf[2048]; /* per thread, as errno (gh_backend_create_begin) */

struct gh_tmpfile {
  char *path;    /* as the caller named it (for messages) */
  char *target;  /* symbolic links resolved: the file that is replaced */
  char *tmp;     /* a named temporary file on disk, or NULL */
  int anon;      /* O_TMPFILE: unnamed until commit */
  int direct;    /* not a regular file (device, FIFO, socket): written in place */
  int finished;  /* gh_tmpfile_commit'd, waiting for gh_commit_outputs (fp closed) */
  int fd;        /* finished anon file: the descriptor kept open for linkat; else -1 */
  int err;       /* errno of the first failed write (gh_tf_write) */
  FILE *fp;
  struct gh_tmpfile *next;
};
static gh_tmpfile *gh_open_tmpfiles = NULL;
static int gh_defer_commit = 0;       /* gh_init: 1 */
static int gh_error_printed = 0;      /* an ERROR line was printed */
static pid_t gh_owner_pid = 0;        /* the process that called gh_init */
static int gh_std_was_closed[3];

/* Before main: a closed standard descriptor gets /dev/null (0 write-only, 1
 * read-only: using them fails with EBADF; 2 write-only: messages vanish), so
 * that no file opened later becomes "standard input" by accident. */
__attribute__((constructor)) static void gh_check_std_fds(void) {
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    gh_std_was_closed[fd] = 1;
    int f = open("/dev/null", fd == 1 ? O_RDONLY : O_WRONLY);
    if (f >= 0 && f != fd) { dup2(f, fd); close(f); }
  }
}

int gh_std_closed(int fd) { return fd >= 0 && fd < 3 && gh_std_was_closed[fd]; }

const char *gh_wait_status_str(int st, char *buf, size_t n) {
  if (st == -1) {
    snprintf(buf, n, "could not be waited for (%s)", strerror(errno));
  } else if (WIFEXITED(st)) {
    const int c = WEXITSTATUS(st);
    if (c == 127) snprintf(buf, n, "exited with status 127 (command not found)");
    else if (c == 126) snprintf(buf, n, "exited with status 126 (command not executable)");
    else if (c > 128 && c < 128 + 65)
      snprintf(buf, n, "exited with status %d (a command killed by signal %d, %s)", c, c - 128, strsignal(c - 128));
    else snprintf(buf, n, "exited with status %d", c);
  } else if (WIFSIGNALED(st)) {
    snprintf(buf, n, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  } else {
    snprintf(buf, n, "ended with wait status %d", st);
  }
  return buf;
}

static void gh_abort_all_tmpfiles(void) {
  while (gh_open_tmpfiles) gh_tmpfile_abort(gh_open_tmpfiles);
}

/* On a fatal signal, remove unfinished outputs (unlink is async-signal-safe)
 * and re-raise so the exit status still tells the signal. */
static void gh_on_signal(int sig) {
  for (gh_tmpfile *t = gh_open_tmpfiles; t; t = t->next)
    if (t->tmp) unlink(t->tmp);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void gh_at_exit(int status, void *arg);
static void gh_account_write(int status);
static double gh_start_seconds;

void gh_init(const char *argv0) {
  const char *s = argv0 ? strrchr(argv0, '/') : NULL;
  gh_progname = s ? s + 1 : (argv0 ? argv0 : "gmmhmm");
  gh_start_seconds = gh_seconds();
  signal(SIGINT, gh_on_signal);
  signal(SIGTERM, gh_on_signal);
  signal(SIGPIPE, gh_on_signal);
  signal(SIGHUP, gh_on_signal);
  if (!gh_owner_pid) {
    gh_owner_pid = getpid();
    on_exit(gh_at_exit, NULL);
  }
  gh_defer_commit = 1;
}

static void gh_vmsg(const char *kind, const char *fmt, va_list ap) {
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  /* One line: replace embedded newlines so a message never spans lines. */
  for (char *p = buf; *p; ++p) if (*p == '\n') *p = ' ';
  fprintf(stderr, "%s: %s: %s\n", gh_progname, kind, buf);
  fflush(stderr);
}

/* As Kaldi: --verbose=-1 silences LOG lines, --verbose=-2 WARNING lines too. */
void gh_log(const char *fmt, ...) { if (gh_verbose < 0) return; va_list ap; va_start(ap, fmt); gh_vmsg("LOG", fmt, ap); va_end(ap); }
void gh_warn(const char *fmt, ...) { if (gh_verbose < -1) return; va_list ap; va_start(ap, fmt); gh_vmsg("WARNING", fmt, ap); va_end(ap); }
void gh_vlog(int level, const char *fmt, ...) {
  if (gh_verbose < level) return;
  char kind[32];
  snprintf(kind, sizeof kind, "VLOG[%d]", level);
  va_list ap; va_start(ap, fmt); gh_vmsg(kind, fmt, ap); va_end(ap);
}

static gh_die_hook_fn gh_die_hook = NULL;
void gh_set_die_hook(gh_die_hook_fn hook) { gh_die_hook = hook; }

void gh_die(const char *fmt, ...) {
  if (gh_die_hook) {
    char buf[4096];
    va_list ap; va_start(ap, fmt); vsnprintf(buf, sizeof buf, fmt, ap); va_end(ap);
    gh_abort_all_tmpfiles();
    gh_die_hook(buf);
    abort(); /* a hook that returns is a bug in the harness */
  }
  /* One error per process: a second thread dying at the same time (the
   * tools' reader/writer threads) waits here until the first has exited. */
  static atomic_flag dying = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&dying))
    for (;;) pause();
  gh_error_printed = 1;
  va_list ap; va_start(ap, fmt); gh_vmsg("ERROR", fmt, ap); va_end(ap);
  /* Only the names are removed (unnamed O_TMPFILE files vanish at _exit):
   * nothing is closed or freed, because another thread (a tool's writer)
   * may still be writing to the streams until _exit. */
  for (gh_tmpfile *t = gh_open_tmpfiles; t; t = t->next)
    if (t->tmp) unlink(t->tmp);
  /* Flush stdio, then _exit: no atexit handlers, so a fatal error mid-way
   * (objects still open, pointers on a stack being abandoned) is not
   * reported as a leak by LeakSanitizer; leaks on normal exits still are. */
  fflush(NULL);
  gh_account_write(1);
  _exit(1);
}

void gh_die_dim(const char *file, const char *key, const char *what, int64_t got, int64_t want,
                const char *against) {
  char where[1200] = "";
  if (file && key) snprintf(where, sizeof where, "%s, key '%s': ", file, key);
  else if (file || key) snprintf(where, sizeof where, file ? "%s: " : "key '%s': ", file ? file : key);
  char from[600] = "";
  if (against && *against) snprintf(from, sizeof from, " (%s)", against);
  gh_die("%s%s of dimension %lld, expected %lld%s", where, what, (long long)got, (long long)want, from);
}

void gh_die_no_key(const char *table, const char *key, const char *what, const char *note) {
  if (note && *note) gh_die("%s: no %s for key '%s' (%s)", table, what, key, note);
  gh_die("%s: no %s for key '%s'", table, what, key);
}

void gh_die_type(const char *file, const char *want, const char *expected, const char *got) {
  gh_die("%s: not %s: expected %s, got %s", file, want, expected, got);
}

void gh_warn_no_key(const char *table, const char *key, const char *what, const char *then) {
  gh_warn("%s: no %s for key '%s'%s%s", table, what, key, then && *then ? "; " : "", then && *then ? then : "");
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
uint64_t gh_hash64(const void *bytes, size_t n, uint64_t h) {
  const unsigned char *p = bytes;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

char *gh_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(gh_malloc(n), s, n);
}

/* The file a write to `path` lands in: symbolic links followed (at most 40),
 * relative link targets taken relative to the link's directory.  A dangling
 * link resolves to the file it names (which the write then creates).
 * Returns a malloc'd path. */
static char *gh_resolve_links(const char *path) {
  char *cur = gh_strdup(path);
  for (int hop = 0; hop < 40; ++hop) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
    char buf[PATH_MAX];
    ssize_t n = readlink(cur, buf, sizeof buf - 1);
    if (n < 0) return cur;
    buf[n] = '\0';
    char *slash = strrchr(cur, '/');
    char *next;
    if (buf[0] == '/' || !slash) {
      next = gh_strdup(buf);
    } else {
      size_t dl = (size_t)(slash - cur) + 1;
      next = gh_malloc(dl + (size_t)n + 1);
      memcpy(next, cur, dl);
      memcpy(next + dl, buf, (size_t)n + 1);
    }
    free(cur);
    cur = next;
  }
  free(cur);
  gh_die("cannot open '%s' for writing: too many levels of symbolic links", path);
}

/* Directory part of a path ("." if none), malloc'd. */
static char *gh_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return gh_strdup(".");
  if (slash == path) return gh_strdup("/");
  char *d = gh_strdup(path);
  d[slash - path] = '\0';
  return d;
}

/* Removes "<base>.tmp.<pid>" files in dir left by processes that no longer
 * exist (a tool killed by SIGKILL between creating its named temporary file
 * and renaming it).  Files of live processes and of this one are kept. */
static void gh_clean_stale_tmpfiles(const char *dir, const char *base) {
  DIR *d = opendir(dir);
  if (!d) return;
  size_t bl = strlen(base);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *n = e->d_name;
    if (strncmp(n, base, bl) != 0 || strncmp(n + bl, ".tmp.", 5) != 0) continue;
    const char *digits = n + bl + 5;
    char *end;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    if (!*digits || *end || errno || pid <= 0 || pid > INT32_MAX || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    size_t m = strlen(dir) + strlen(n) + 2;
    char *full = gh_malloc(m);
    snprintf(full, m, "%s/%s", dir, n);
    if (unlink(full) == 0) gh_vlog(1, "removed stale temporary file '%s' (process %ld is gone)", full, pid);
    free(full);
  }
  closedir(d);
}

/* "<target>.tmp.<pid>", malloc'd. */
static char *gh_tmp_name(const char *target) {
  size_t n = strlen(target) + 32;
  char *tmp = gh_malloc(n);
  snprintf(tmp, n, "%s.tmp.%ld", target, (long)getpid());
  return tmp;
}

static void gh_tmpfile_free(gh_tmpfile *t) {
  free(t->path); free(t->target); free(t->tmp); free(t);
}

/* The tmpfile's stdio stream writes through these (fopencookie), so that
 * the first write error's errno is kept (t->err) for the message at commit:
 * stdio keeps only a flag, and a buffer flushed mid-run loses errno.
 * glibc's contract for a cookie write function (<bits/types/
 * cookie_io_functions_t.h>, fopencookie(3)): return the number of bytes
 * written, 0 on error, never a negative value.  glibc passes the value on
 * as the byte count of its own write: a -1 there makes fwrite of a block
 * larger than the stdio buffer copy from past the end of the caller's data
 * (a SIGSEGV in _IO_default_xsputn when the disk filled mid-model).  After
 * the first error nothing more is written (the output is lost anyway) and
 * every call returns 0, so the stream's error flag stays set. */
static ssize_t gh_tf_write(void *c, const char *buf, size_t n) {
  gh_tmpfile *t = c;
  if (t->err) return 0;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(t->fd, buf + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      t->err = w < 0 ? errno : EIO;
      return 0;
    }
    done += (size_t)w;
  }
  return (ssize_t)n;
}
static int gh_tf_seek(void *c, off64_t *off, int whence) {
  gh_tmpfile *t = c;
  off_t r = lseek(t->fd, (off_t)*off, whence);
  if (r < 0) return -1;
  *off = r;
  return 0;
}
static int gh_tf_close(void *c) { (void)c; return 0; } /* t->fd is closed by its owner */

gh_tmpfile *gh_tmpfile_open(const char *path) {
  gh_tmpfile *t = gh_calloc(1, sizeof *t);
  t->path = gh_strdup(path);
  t->target = gh_resolve_links(path);
  t->fd = -1;
  /* A finished output of the same file still waiting for the deferred commit
   * (a tool that writes a file again, e.g. a per-iteration dump) is
   * superseded: dropped now, so that the commit renames only the newest (two
   * would share the name "<target>.tmp.<pid>", and the second rename fail). */
  for (gh_tmpfile *p = gh_open_tmpfiles, *nx; p; p = nx) {
    nx = p->next;
    if (p->finished && !strcmp(p->target, t->target)) gh_tmpfile_abort(p);
  }
  struct stat st;
  int exists = stat(t->target, &st) == 0;
  int fd = -1, e = 0;
  if (exists && S_ISDIR(st.st_mode)) {
    gh_tmpfile_free(t);
    gh_die("cannot open '%s' for writing: it is a directory", path);
  }
  if (exists && !S_ISREG(st.st_mode)) {
    /* /dev/null, a FIFO, a terminal, a socket: written in place, as Kaldi
     * does; renaming a file over it would replace the device. */
    t->direct = 1;
    fd = open(t->target, O_WRONLY | O_CLOEXEC);
    e = errno;
  } else {
    char *dir = gh_dirname(t->target);
    const char *base = strrchr(t->target, '/');
    gh_clean_stale_tmpfiles(dir, base ? base + 1 : t->target);
#ifdef O_TMPFILE
    /* An unnamed file in the target's directory: nothing is left on disk if
     * the process dies, whatever the signal.  linkat() through /proc names it
     * at commit time. */
    if (access("/proc/self/fd", X_OK) == 0) {
      fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
      if (fd >= 0) {
        /* O_TMPFILE ignores the umask on some kernels; apply it as open would. */
        mode_t um = umask(0);
        umask(um);
        fchmod(fd, exists ? (st.st_mode & 07777) : (0666 & ~um));
        t->anon = 1;
      }
    }
#endif
    free(dir);
    if (fd < 0) {
      t->tmp = gh_tmp_name(t->target);
      fd = open(t->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      e = errno;
      if (fd >= 0 && exists) fchmod(fd, st.st_mode & 07777);
    }
  }
  if (fd >= 0) {
    t->fd = fd;
    t->fp = fopencookie(t, "wb", (cookie_io_functions_t){NULL, gh_tf_write, gh_tf_seek, gh_tf_close});
    if (!t->fp) { e = errno; close(fd); t->fd = -1; }
  }
  if (!t->fp) {
    if (t->tmp) unlink(t->tmp);
    gh_tmpfile_free(t);
    gh_die("cannot open '%s' for writing: %s", path, strerror(e));
  }
  t->next = gh_open_tmpfiles;
  gh_open_tmpfiles = t;
  return t;
}

FILE *gh_tmpfile_fp(gh_tmpfile *t) { return t->fp; }
int gh_tmpfile_errno(const gh_tmpfile *t) { return t->err; }

static void gh_tmpfile_unlink_list(gh_tmpfile *t) {
  for (gh_tmpfile **pp = &gh_open_tmpfiles; *pp; pp = &(*pp)->next)
    if (*pp == t) { *pp = t->next; return; }
}

/* Aborts t and dies with "<what> '<path>'[: <errno text>]". */
static void gh_tmpfile_fail(gh_tmpfile *t, const char *what, int e) {
  char path[1024];
  snprintf(path, sizeof path, "%s", t->path);
  gh_tmpfile_abort(t);
  if (e) gh_die("%s '%s': %s", what, path, strerror(e));
  gh_die("%s '%s'", what, path);
}

/* Names a finished anonymous file "<target>.tmp.<pid>" (t->tmp); 0 or errno. */
static int gh_tmpfile_name(gh_tmpfile *t) {
  if (!t->anon || t->tmp) return 0;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", t->fd);
  char *tmp = gh_tmp_name(t->target);
  unlink(tmp);
  t->tmp = tmp; /* first, so that a signal in between removes the name */
  if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) != 0) {
    int e = errno;
    t->tmp = NULL;
    free(tmp);
    return e;
  }
  return 0;
}

/* Renames a finished, named t onto its target and forgets it; dies on failure. */
static void gh_tmpfile_finish(gh_tmpfile *t) {
  if (t->fd >= 0) {
    int fd = t->fd;
    t->fd = -1;
    if (close(fd) != 0) gh_tmpfile_fail(t, "error writing", errno);
  }
  if (rename(t->tmp, t->target) != 0) gh_tmpfile_fail(t, "cannot rename temporary file onto", errno);
  gh_tmpfile_unlink_list(t);
  gh_tmpfile_free(t);
}

void gh_tmpfile_commit(gh_tmpfile *t) {
  int bad = ferror(t->fp) || t->err, e = t->err;
  if (fflush(t->fp) != 0) { bad = 1; if (!e) e = t->err ? t->err : errno; }
  if (bad) gh_tmpfile_fail(t, "error writing", e);
  FILE *fp = t->fp;
  t->fp = NULL;
  /* the cookie's close does nothing (the descriptor is t->fd); fclose can
   * still fail on a write of its own: checked, as everything before the rename */
  if (fclose(fp) != 0 || t->err) gh_tmpfile_fail(t, "error writing", t->err ? t->err : errno);
  if (t->direct || !t->anon) { /* devices, FIFOs and named temporary files: close now */
    int fd = t->fd;
    t->fd = -1;
    if (close(fd) != 0) gh_tmpfile_fail(t, "error writing", errno);
    if (t->direct) {
      gh_tmpfile_unlink_list(t);
      gh_tmpfile_free(t);
      return;
    }
  }
  t->finished = 1;
  if (gh_defer_commit) return;
  int err = gh_tmpfile_name(t);
  if (err) gh_tmpfile_fail(t, "cannot create the temporary file for", err);
  gh_tmpfile_finish(t);
}

void gh_commit_outputs(void) {
  /* in the order they were opened (the list is newest first) */
  size_t n = 0;
  for (gh_tmpfile *t = gh_open_tmpfiles; t; t = t->next) n += t->finished;
  if (!n) return;
  gh_tmpfile **v = gh_malloc(n * sizeof *v);
  size_t i = n;
  for (gh_tmpfile *t = gh_open_tmpfiles; t; t = t->next)
    if (t->finished) v[--i] = t;
  for (i = 0; i < n; ++i) { /* every name first: a failure here leaves no output behind */
    int err = gh_tmpfile_name(v[i]);
    if (err) {
      char path[1024];
      snprintf(path, sizeof path, "%s", v[i]->path);
      free(v);
      gh_die("cannot create the temporary file for '%s': %s", path, strerror(err));
    }
  }
  for (i = 0; i < n; ++i) gh_tmpfile_finish(v[i]);
  free(v);
}

void gh_set_deferred_commit(int on) { gh_defer_commit = on; }

void gh_tmpfile_abort(gh_tmpfile *t) {
  if (t->fp) fclose(t->fp);
  if (t->fd >= 0) close(t->fd);
  if (t->tmp) unlink(t->tmp);
  gh_tmpfile_unlink_list(t);
  gh_tmpfile_free(t);
}

/* The exit check of gh_init (gh-base.h). */
static void gh_at_exit(int status, void *arg) {
  (void)arg;
  if (getpid() != gh_owner_pid) return; /* a forked child's exit is not the tool's */
  gh_account_write(status);
  int bad = 0, e = 0;
  if (fflush(stdout) != 0) { bad = 1; e = errno; }
  if (ferror(stdout)) bad = 1;
  if (fclose(stdout) != 0 && !bad) { bad = 1; e = errno; }
  if (bad) {
    if (gh_std_closed(1)) gh_die("cannot write to standard output: it was closed when the program started");
    if (e) gh_die("write error on standard output: %s", strerror(e));
    gh_die("write error on standard output");
  }
  if (status == 0) {
    gh_commit_outputs();
    gh_abort_all_tmpfiles(); /* outputs never closed (a tool's bug): not written, as before */
    return;
  }
  if (!gh_error_printed) {
    char names[2048];
    size_t k = 0;
    names[0] = '\0';
    for (gh_tmpfile *t = gh_open_tmpfiles; t && k < sizeof names - 64; t = t->next)
      k += (size_t)snprintf(names + k, sizeof names - k, "%s'%s'", k ? ", " : "", t->path);
    if (k) {
      gh_error_printed = 1;
      fprintf(stderr, "%s: ERROR: exiting with status %d; output%s %s not written\n", gh_progname, status,
              strchr(names, ',') ? "s" : "", names);
      fflush(stderr);
    }
  }
  gh_abort_all_tmpfiles();
}

/* gh_account's entries: a few, set by the library (the backend's start). */
#define GH_ACCOUNT_MAX 8
static struct { char key[32]; char value[64]; } gh_accounts[GH_ACCOUNT_MAX];
static int gh_naccounts;

void gh_account_str(const char *key, const char *value) {
  int i = 0;
  while (i < gh_naccounts && strcmp(gh_accounts[i].key, key)) ++i;
  if (i == GH_ACCOUNT_MAX) return;
  if (i == gh_naccounts) ++gh_naccounts;
  snprintf(gh_accounts[i].key, sizeof gh_accounts[i].key, "%s", key);
  snprintf(gh_accounts[i].value, sizeof gh_accounts[i].value, "%s", value);
  for (char *p = gh_accounts[i].value; *p; ++p)
    if (*p == ' ' || *p == '\n' || *p == '\t') *p = '_'; /* one field */
}

void gh_account(const char *key, double seconds) {
  char v[32];
  snprintf(v, sizeof v, "%.3f", seconds);
  gh_account_str(key, v);
}

static void gh_account_write(int status) {
  const char *file = gh_env_str("GH_ACCOUNTING");
  if (!file || !*file || !gh_start_seconds) return;
  static int written;
  if (written++) return;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  getrusage(RUSAGE_SELF, &ru);
  char line[1024];
  int n = snprintf(line, sizeof line, "%s status=%d wall=%.3f user=%.3f sys=%.3f", gh_progname, status,
                   gh_seconds() - gh_start_seconds, ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec,
                   ru.ru_stime.tv_sec + 1e-6 * ru.ru_stime.tv_usec);
  for (int i = 0; i < gh_naccounts && n < (int)sizeof line - 2; ++i)
    n += snprintf(line + n, sizeof line - n, " %s=%s", gh_accounts[i].key, gh_accounts[i].value);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  const int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) < 0) { /* accounting never fails a tool */ }
  close(fd);
}

double gh_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int gh_isfinite_f(float x) { return isfinite(x); }

int gh_host_blas_serial(void) {
  void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  if (!set) return 0;
  set(1);
  return 1;
}
