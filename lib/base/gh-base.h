/* gh-base.h -- logging, fatal errors, checked allocation, safe output files.
 *
 * Error model (one mechanism for the whole toolkit): a condition the program
 * cannot recover from calls gh_die(), which prints ONE line
 *   "<program>: ERROR: <message>"
 * on stderr, removes every output file still being written (see
 * gh_tmpfile_*), and exits with status 1.  Messages name the file, the key
 * and what was wrong, e.g. "ark:feats.ark, key 'utt3': NaN at row 4, col 2".
 * Library parsers that a caller may want to recover from return a status and
 * leave the message in gh_last_error().
 */
#ifndef GH_BASE_H
#define GH_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define GH_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define GH_NORETURN __attribute__((noreturn))
#else
#define GH_PRINTF(a, b)
#define GH_NORETURN
#endif

/* Program name used as log prefix; set once by gh_init(argv[0]). */
extern const char *gh_progname;
/* Verbosity: 0 = warnings/errors/summary logs (default), >0 more detail;
 * as in Kaldi, -1 silences LOG lines and -2 WARNING lines too. */
extern int gh_verbose;

/* Call first in every main(): sets the program name (basename of argv0),
 * installs the fatal-signal handlers, turns on the deferred commit of output
 * files (gh_commit_outputs) and installs the exit check below.
 *
 * At exit (on_exit, in this process only, not in forked children):
 *  - standard output is flushed and closed; a write or close error (a full
 *    disk, /dev/full, a closed descriptor) is an ERROR naming the cause
 *    ("write error on standard output: No space left on device") and the
 *    exit status becomes 1;
 *  - with exit status 0 (and stdout good) every output file the tool
 *    finished (gh_tmpfile_commit) is committed, all together
 *    (gh_commit_outputs); with any other status none is: they are removed,
 *    and when the tool printed no ERROR line one is printed, naming the
 *    outputs not written.
 * gh_die removes them all too.  Pipes and standard output cannot be taken
 * back: there a failure is the non-zero exit and its one ERROR line. */
void gh_init(const char *argv0);

/* Standard descriptors closed at process start (`tool <&-`): a constructor
 * in gh-base.c puts /dev/null on each closed descriptor 0, 1 or 2 before
 * main (so that no later open() lands on it; descriptor 0 is opened write-only
 * and 1 read-only, so that reading or writing them fails with EBADF) and
 * remembers it here.  gh_istream_open("-") and gh_ostream_open("-") then die
 * with "standard input is closed" / "standard output is closed".
 * fd: 0, 1 or 2; returns 1 if it was closed. */
int gh_std_closed(int fd);

/* A wait status (pclose, waitpid) in words, into buf[n]: "exited with status
 * 3", "exited with status 127 (command not found)", "was killed by signal 9
 * (Killed)"; never the raw status (768).  Returns buf. */
const char *gh_wait_status_str(int status, char *buf, size_t n);

/* Log lines on stderr, prefixed "<prog>: LOG: ", "<prog>: WARNING: ",
 * "<prog>: VLOG[n]: " (printed only when gh_verbose >= n). */
void gh_log(const char *fmt, ...) GH_PRINTF(1, 2);
void gh_warn(const char *fmt, ...) GH_PRINTF(1, 2);
void gh_vlog(int level, const char *fmt, ...) GH_PRINTF(2, 3);

/* Fatal error: prints "<prog>: ERROR: <msg>", removes unfinished output
 * files, exits 1.  Never returns. */
void gh_die(const char *fmt, ...) GH_PRINTF(1, 2) GH_NORETURN;

/* One wording per kind of error, shared by every tool (tests pin them:
 * test/bats/messages.bats).
 *
 * A dimension that differs from the one something else fixes:
 *   "<file>, key '<key>': <what> of dimension <got>, expected <want> (<against>)"
 * e.g. "ark:feats.ark, key 'u1': features of dimension 39, expected 13 (the
 * model final.mdl)".  file: the table or file read, key: the entry (either
 * NULL when there is none); what: the object ("features", "CMVN stats");
 * against: what fixes want ("the model final.mdl", "the earlier
 * utterances"), NULL for none.  Never returns. */
void gh_die_dim(const char *file, const char *key, const char *what, int64_t got, int64_t want,
                const char *against) GH_NORETURN;
/* A key a random-access table lacks:
 *   "<table>: no <what> for key '<key>'[ (<note>)]"   (gh_die_no_key, never
 *   returns; note, e.g. where the key came from, may be NULL)
 *   "<table>: no <what> for key '<key>'; <then>"   (gh_warn_no_key: a warning;
 *   then says what the tool does instead, e.g. "utterance skipped")
 * e.g. "ark:vad.ark: no VAD vector for key 'u3'; utterance skipped". */
void gh_die_no_key(const char *table, const char *key, const char *what, const char *note) GH_NORETURN;
void gh_warn_no_key(const char *table, const char *key, const char *what, const char *then);
/* An object of another kind than the one expected, found after it was read
 * (the stream's own check is gh_istream_fail_type, io/kaldi-io.h, in the
 * same words):
 *   "<file>: not <want>: expected <expected>, got <got>"
 * e.g. "f.ubm: not a diagonal-covariance GMM: expected <DiagGMM>, got
 * <FullGMM> (that is a full-covariance GMM)".  Never returns. */
void gh_die_type(const char *file, const char *want, const char *expected, const char *got) GH_NORETURN;

/* For fuzzing harnesses and unit tests of error paths: when a hook is set,
 * gh_die() removes unfinished outputs, then calls hook(message) instead of
 * printing and exiting.  The hook must not return (it longjmps back to the
 * harness); NULL restores the default. */
typedef void (*gh_die_hook_fn)(const char *msg);
void gh_set_die_hook(gh_die_hook_fn hook);

/* Recoverable-error message buffer (per thread, as errno). gh_set_error
 * formats the message; gh_last_error returns the calling thread's ("" if
 * none). */
void gh_set_error(const char *fmt, ...) GH_PRINTF(1, 2);
const char *gh_last_error(void);

/* Checked allocation: die with "out of memory (N bytes)" on failure.
 * gh_calloc zero-fills.  Sizes are in elements * element size. */
void *gh_malloc(size_t nbytes);
void *gh_calloc(size_t n, size_t size);
void *gh_realloc(void *p, size_t nbytes);
char *gh_strdup(const char *s);

/* 64-bit FNV-1a hash of bytes[n], continuing from h (GH_HASH64_INIT to
 * start): model checksums in logs and checks (drivers/train/comm.h), the
 * string map's keys (base/strmap.h). */
uint64_t gh_hash64(const void *bytes, size_t n, uint64_t h);
#define GH_HASH64_INIT 0xcbf29ce484222325ULL

/* Safe output files.  gh_tmpfile_open(path) opens a temporary file for
 * writing and registers it; gh_tmpfile_commit() flushes, closes and checks
 * the write status (dies on any I/O error, with strerror: "error writing
 * 'o.ark': No space left on device"); the file is renamed onto <path> at once
 * when the commit is not deferred, else later by gh_commit_outputs() (tools:
 * gh_init defers; the exit check commits at exit status 0).
 * gh_tmpfile_abort() closes and removes it.  gh_die() and the fatal signals
 * (SIGINT, SIGTERM, SIGHUP, SIGPIPE) abort all registered files, so a failing
 * tool never leaves a truncated model or archive; the old file stays intact.
 *  - Symbolic links are followed first: the file they point to is replaced,
 *    the link stays a link.
 *  - Temp + rename is used only when the target is a regular file or does not
 *    exist.  The temporary file is unnamed (Linux O_TMPFILE in the target's
 *    directory, named by linkat() at commit, so nothing is left even after
 *    SIGKILL), or where that is not supported "<target>.tmp.<pid>"; stale
 *    "<target>.tmp.<pid>" files of processes that no longer exist are removed
 *    when the target is next opened.  An existing target's permissions are
 *    kept.
 *  - Anything else (a character or block device such as /dev/null, a FIFO, a
 *    socket) is opened and written in place, as Kaldi does; on failure it is
 *    only closed.  A directory is an error. */
typedef struct gh_tmpfile gh_tmpfile;
gh_tmpfile *gh_tmpfile_open(const char *path);
FILE *gh_tmpfile_fp(gh_tmpfile *t);
void gh_tmpfile_commit(gh_tmpfile *t);
void gh_tmpfile_abort(gh_tmpfile *t);
/* errno of t's first failed write (0 if none): for messages of callers that
 * see ferror() on gh_tmpfile_fp(t) mid-way. */
int gh_tmpfile_errno(const gh_tmpfile *t);

/* Commits every output file finished so far (gh_tmpfile_commit'd and not
 * yet renamed), all together: first every temporary file is given its name
 * ("<target>.tmp.<pid>"; any failure there dies and removes them all), then
 * each is renamed onto its target.  Outputs still being written are left
 * alone; an output opened again for the same file before the commit
 * supersedes its finished earlier version (only the newest is renamed).
 * Tools need not call it (the exit check does, at status 0); a
 * long-running tool calls it where a finished checkpoint must appear on
 * disk at once.  Dies on an I/O error, naming the file and strerror. */
void gh_commit_outputs(void);
/* 1 (gh_init's default): gh_tmpfile_commit only checks and closes, the rename
 * waits for gh_commit_outputs; 0 (the default without gh_init; unit tests
 * that read back what they wrote): gh_tmpfile_commit renames at once. */
void gh_set_deferred_commit(int on);

/* Monotonic wall clock in seconds (for frames/s logs). */
double gh_seconds(void);

/* Accounting, for finding where a recipe's time goes: with
 * $GH_ACCOUNTING=FILE every tool that called gh_init appends one line to
 * FILE when it exits (normally or through gh_die):
 *   <tool> status=<exit status> wall=<s> user=<s> sys=<s> [<key>=<s> ...]
 * wall: seconds since gh_init; user, sys: the process's CPU seconds
 * (getrusage); the keys are those given to gh_account (e.g. device_start,
 * the seconds that creating the compute backend took; device=<name>).
 * One write(2) with O_APPEND, so concurrent jobs' lines do not mix.
 * bench/recipe-profile.sh sums the lines per tool.  An unwritable FILE is
 * ignored (accounting never fails a tool). */
void gh_account(const char *key, double seconds);
/* The same with a word value (device=cuda:0). */
void gh_account_str(const char *key, const char *value);

/* Helpers for float checks. */
int gh_isfinite_f(float x);

/* Makes a threaded OpenBLAS (when it is the BLAS/LAPACK the process loaded)
 * run single-threaded, through openblas_set_num_threads(1) found at run
 * time (dlsym; nothing happens with another BLAS).  The host M-step calls
 * LAPACK on many small matrices (D x D per Gaussian, D <= ~100), where a
 * threaded BLAS spends more time waking its threads than computing: on the
 * 16-core H200 machine the M-step of 128 full Gaussians (D=36) took 13.7 ms
 * threaded (bench/RESULTS.md D1); the CPU BLAS backend (kernels/cpu/cpu-blas.c)
 * threads around its BLAS calls.  Returns 1 if OpenBLAS was found. */
int gh_host_blas_serial(void);

#endif
