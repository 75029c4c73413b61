/* comm.c -- the trainers' communicator; see comm.h. */
#include "train/comm.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "base/opts.h"
#include "base/dd.h"
#ifdef GH_HAVE_MPI
#include <mpi.h>
#endif
#ifdef GH_HAVE_CUDA
#include "cuda/gh-nccl.h"
#endif

enum { HOST_LEN = 64 };
/* helpers a build without MPI (or CUDA) does not call */
#define MAYBE_UNUSED __attribute__((unused))

struct gh_comm {
  int mpi;                 /* MPI_Init was called */
  int rank, size, local_rank, local_size;
  char (*hosts)[HOST_LEN]; /* [size] */
  char context[512];
  /* watchdog */
  double timeout;
  int wd_started, wd_stop;
  pthread_t wd;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const char *coll;        /* collective in progress (NULL: none) */
  double coll_since;
  /* arrival check before every collective (coll_begin) */
  long long seq;           /* collectives begun by this rank */
#ifdef GH_HAVE_MPI
  MPI_Comm arrive;         /* MPI_COMM_WORLD's duplicate for the arrival messages */
#endif
  /* scratch of gh_comm_sum_f64 */
  double *parts;
  size_t parts_cap;
  void *nccl;              /* NCCL communicator (gh-nccl.h), or NULL */
};

void gh_comm_opts_default(gh_comm_opts *o) {
  o->kind = "auto";
  o->timeout = 600.0;
}

void gh_comm_opts_register(struct gh_opts *po, gh_comm_opts *o) {
  gh_opts_string(po, "comm", &o->kind,
                 "How ranks talk: auto (MPI when started by mpirun/srun, else one plain process; "
                 "NCCL for device reductions when the backend is CUDA and libnccl loads), none, mpi, nccl");
  gh_opts_double(po, "comm-timeout", &o->timeout,
                 "Seconds a collective may take before the whole job is aborted (a dead or hung rank); "
                 "<= 0: wait for ever");
}

int gh_comm_rank(const gh_comm *c) { return c->rank; }
int gh_comm_size(const gh_comm *c) { return c->size; }
int gh_comm_local_rank(const gh_comm *c) { return c->local_rank; }
int gh_comm_local_size(const gh_comm *c) { return c->local_size; }
const char *gh_comm_kind(const gh_comm *c) { return c->nccl ? "nccl" : c->mpi ? "mpi" : "none"; }
const char *gh_comm_host(const gh_comm *c, int r) { return r >= 0 && r < c->size ? c->hosts[r] : "?"; }
int gh_comm_has_nccl(const gh_comm *c) { return c->nccl != NULL; }

void gh_comm_set_context(gh_comm *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->context, sizeof c->context, fmt, ap);
  va_end(ap);
}

/* "rank R of N on host H, <context>" */
static void where(const gh_comm *c, char *buf, size_t n) {
  int k = snprintf(buf, n, "rank %d of %d on host %s", c->rank, c->size, c->hosts[c->rank]);
  if (c->context[0] && k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, ", %s", c->context);
}

static gh_comm *g_comm; /* for the die hook and the watchdog */

/* Ends the job: MPI_Abort in MPI mode, else exit(1).  Never returns. */
static void GH_NORETURN end_job(gh_comm *c) {
  fflush(NULL);
#ifdef GH_HAVE_MPI
  if (c && c->mpi) MPI_Abort(MPI_COMM_WORLD, 1);
#else
  (void)c;
#endif
  _exit(1);
}

/* The error line of a dying rank (one per process, as gh_die). */
static void error_line(gh_comm *c, const char *msg) {
  static atomic_flag dying = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&dying))
    for (;;) pause();
  char w[768];
  where(c, w, sizeof w);
  fprintf(stderr, "%s: ERROR: %s [%s]\n", gh_progname, msg, w);
}

void gh_comm_abort(gh_comm *c, const char *msg) {
  error_line(c, msg);
#ifdef GH_HAVE_CUDA
  if (c->nccl) gh_nccl_abort(c->nccl);
#endif
  end_job(c);
}

/* gh_die in MPI mode (gh_set_die_hook; the unfinished outputs are already
 * removed): the error line with the rank's place, then the job ends. */
MAYBE_UNUSED static void die_hook(const char *msg) { gh_comm_abort(g_comm, msg); }

/* ---------------- watchdog ---------------- */
MAYBE_UNUSED static void *watchdog_main(void *arg) {
  gh_comm *c = arg;
  pthread_mutex_lock(&c->mu);
  while (!c->wd_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 250 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    if (c->coll && c->timeout > 0 && gh_seconds() - c->coll_since > c->timeout) {
      char msg[256];
      snprintf(msg, sizeof msg, "%s did not finish within %g s (--comm-timeout): a peer rank died or hangs",
               c->coll, c->timeout);
      pthread_mutex_unlock(&c->mu);
      gh_comm_abort(c, msg);
    }
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* Before a collective: every rank tells every other one that it arrived
 * (its count of collectives begun; MPI keeps a pair's messages in order)
 * and waits for their messages, up to the timeout.  A rank that hangs or
 * died is then named by every waiting rank ("rank 1 (host H) never reached
 * it"), which the watchdog, blocked in the collective, cannot know.  Costs
 * 2 (R - 1) messages of 8 bytes per collective. */
MAYBE_UNUSED static void arrive(gh_comm *c, const char *what) {
#ifdef GH_HAVE_MPI
  const int R = c->size;
  if (R < 2) return;
  const long long mine = ++c->seq;
  long long *got = gh_malloc(sizeof(long long) * (size_t)R);
  MPI_Request *rq = gh_malloc(sizeof(MPI_Request) * 2 * (size_t)R);
  int nr = 0;
  for (int r = 0; r < R; ++r) {
    got[r] = mine;
    if (r == c->rank) continue;
    MPI_Irecv(&got[r], 1, MPI_LONG_LONG, r, 0, c->arrive, &rq[nr++]);
  }
  const int nrecv = nr;
  for (int r = 0; r < R; ++r)
    if (r != c->rank) MPI_Isend(&mine, 1, MPI_LONG_LONG, r, 0, c->arrive, &rq[nr++]);
  const double t0 = gh_seconds();
  pthread_mutex_lock(&c->mu);
  const double timeout = c->timeout;
  pthread_mutex_unlock(&c->mu);
  /* poll: a short spin, then sleeps growing from 20 us to 1 ms (a rank
   * still reading its data must not lose its core to the waiting ones) */
  int done = 0;
  useconds_t nap = 20;
  for (long spin = 0;; ++spin) {
    MPI_Testall(nrecv, rq, &done, MPI_STATUSES_IGNORE);
    if (done) break;
    if (timeout > 0 && gh_seconds() - t0 > timeout) break;
    if (spin < 100) continue;
    usleep(nap);
    if (nap < 1000) nap *= 2;
  }
  if (!done) {
    /* which ranks arrived: their messages came */
    char late[384] = "", came[256] = "";
    size_t kl = 0, kc = 0;
    int nl = 0;
    for (int i = 0, r = 0; r < R; ++r) {
      int flag = 1;
      if (r != c->rank) MPI_Test(&rq[i++], &flag, MPI_STATUS_IGNORE);
      if (!flag && kl < sizeof late) {
        kl += (size_t)snprintf(late + kl, sizeof late - kl, "%s%d (host %s)", nl ? ", " : "", r, c->hosts[r]);
        nl++;
      } else if (flag && kc < sizeof came) {
        kc += (size_t)snprintf(came + kc, sizeof came - kc, "%s%d", kc ? ", " : "", r);
      }
    }
    char msg[1024];
    snprintf(msg, sizeof msg, "%s did not finish within %g s (--comm-timeout): rank%s %s never reached it (died or "
             "hangs); ranks that arrived: %s", what, timeout, nl > 1 ? "s" : "", late, came);
    gh_comm_abort(c, msg);
  }
  MPI_Waitall(nr - nrecv, rq + nrecv, MPI_STATUSES_IGNORE);
  for (int r = 0; r < R; ++r)
    if (got[r] != mine) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s: rank %d (host %s) is at collective %lld, this rank at %lld (the ranks run "
               "different schedules)", what, r, c->hosts[r], got[r], mine);
      gh_comm_abort(c, msg);
    }
  free(got);
  free(rq);
#else
  (void)c; (void)what;
#endif
}

MAYBE_UNUSED static void coll_begin(gh_comm *c, const char *what) {
  if (!c->mpi) return;
  arrive(c, what);
  pthread_mutex_lock(&c->mu);
  c->coll = what;
  c->coll_since = gh_seconds();
  pthread_mutex_unlock(&c->mu);
}
MAYBE_UNUSED static void coll_end(gh_comm *c) {
  if (!c->mpi) return;
  pthread_mutex_lock(&c->mu);
  c->coll = NULL;
  pthread_mutex_unlock(&c->mu);
}

void gh_comm_set_timeout(gh_comm *c, double seconds) {
  pthread_mutex_lock(&c->mu);
  c->timeout = seconds;
  pthread_mutex_unlock(&c->mu);
}

/* ---------------- start ---------------- */
/* The world size a launcher announced in the environment (0: none): Open
 * MPI's mpirun, a PMI-2 or PMIx launcher (srun --mpi=pmi2|pmix), or an
 * srun step of several tasks. */
static long launched_size(void) {
  const char *v;
  if ((v = getenv("OMPI_COMM_WORLD_SIZE")) || (v = getenv("PMI_SIZE"))) return strtol(v, NULL, 10);
  if (getenv("PMIX_RANK")) return (v = getenv("SLURM_NTASKS")) ? strtol(v, NULL, 10) : 1;
  const char *st = getenv("SLURM_STEP_ID"), *nt = getenv("SLURM_NTASKS");
  if (st && nt) {
    long s = strtol(st, NULL, 10), n = strtol(nt, NULL, 10);
    if (s >= 0 && s < 4294967290L && n > 1) return n; /* not the batch or extern step */
  }
  return 0;
}

gh_comm *gh_comm_single(void) {
  gh_comm *c = gh_calloc(1, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  c->timeout = 600.0;
  c->size = c->local_size = 1;
  c->hosts = gh_calloc(1, sizeof *c->hosts);
  if (gethostname(c->hosts[0], HOST_LEN - 1) != 0) strcpy(c->hosts[0], "?");
  return c;
}

gh_comm *gh_comm_init(int *argc, char ***argv, const char *kind) {
  if (!kind) kind = "auto";
  if (strcmp(kind, "auto") && strcmp(kind, "none") && strcmp(kind, "mpi") && strcmp(kind, "nccl"))
    gh_die("--comm must be auto, none, mpi or nccl (got '%s')", kind);
  const long world = launched_size();
  int use_mpi = !strcmp(kind, "mpi") || !strcmp(kind, "nccl") || (!strcmp(kind, "auto") && world > 0);
  if (!strcmp(kind, "none") && world > 1)
    gh_die("--comm=none, but the launcher started %ld ranks: each would train alone and write the same files", world);
#ifndef GH_HAVE_MPI
  if (use_mpi && strcmp(kind, "auto"))
    gh_die("--comm=%s: this build has no MPI (rebuild with mpicc/mpi.h present: libopenmpi-dev)", kind);
  if (use_mpi && world > 1)
    gh_die("started as one of %ld ranks by a launcher, but this build has no MPI (rebuild with libopenmpi-dev)",
           world);
  use_mpi = 0;
#endif
  gh_comm *c = gh_comm_single();
  g_comm = c;
  if (!use_mpi) return c;
#ifdef GH_HAVE_MPI
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    gh_die("MPI_Init_thread failed");
  c->mpi = 1;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &c->local_rank);
  MPI_Comm_size(local, &c->local_size);
  MPI_Comm_free(&local);
  MPI_Comm_dup(MPI_COMM_WORLD, &c->arrive);
  char me[HOST_LEN];
  memcpy(me, c->hosts[0], HOST_LEN);
  free(c->hosts);
  c->hosts = gh_calloc((size_t)c->size, sizeof *c->hosts);
  MPI_Allgather(me, HOST_LEN, MPI_CHAR, c->hosts, HOST_LEN, MPI_CHAR, MPI_COMM_WORLD);
  gh_set_die_hook(die_hook);
  if (pthread_create(&c->wd, NULL, watchdog_main, c) == 0) c->wd_started = 1;
  else gh_warn("cannot start the collectives' watchdog thread: --comm-timeout has no effect");
  if (provided < MPI_THREAD_MULTIPLE)
    gh_vlog(1, "MPI provides thread level %d (< MPI_THREAD_MULTIPLE): the watchdog's MPI_Abort may be delayed",
            provided);
#endif
  return c;
}

gh_comm *gh_comm_start(int *argc, char ***argv, const gh_comm_opts *o) {
  gh_comm *c = gh_comm_init(argc, argv, o->kind);
  gh_comm_set_timeout(c, o->timeout);
  return c;
}

void gh_comm_finalize(gh_comm *c) {
  if (!c) return;
  if (c->wd_started) {
    pthread_mutex_lock(&c->mu);
    c->wd_stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->wd, NULL);
  }
#ifdef GH_HAVE_CUDA
  if (c->nccl) gh_nccl_free(c->nccl);
#endif
#ifdef GH_HAVE_MPI
  if (c->mpi) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&c->arrive);
    gh_set_die_hook(NULL);
    MPI_Finalize();
  }
#endif
  if (g_comm == c) g_comm = NULL;
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->parts);
  free(c->hosts);
  free(c);
}

/* ---------------- collectives ---------------- */
void gh_comm_bcast(gh_comm *c, void *buf, size_t bytes, int root) {
  if (!c->mpi) return;
#ifdef GH_HAVE_MPI
  coll_begin(c, "broadcast");
  for (size_t off = 0; off < bytes; off += (size_t)1 << 30) {
    size_t n = bytes - off < ((size_t)1 << 30) ? bytes - off : ((size_t)1 << 30);
    MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
  }
  coll_end(c);
#else
  (void)buf; (void)bytes; (void)root;
#endif
}

void gh_comm_allgather(gh_comm *c, const void *mine, size_t bytes, void *all) {
  if (!c->mpi) {
    if (bytes) memmove(all, mine, bytes);
    return;
  }
#ifdef GH_HAVE_MPI
  if (bytes > (size_t)1 << 30) gh_die("gh_comm_allgather: %zu bytes per rank is more than 1 GiB", bytes);
  coll_begin(c, "all-gather");
  MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
  coll_end(c);
#endif
}

void gh_comm_barrier(gh_comm *c) {
  if (!c->mpi) return;
#ifdef GH_HAVE_MPI
  coll_begin(c, "barrier");
  MPI_Barrier(MPI_COMM_WORLD);
  coll_end(c);
#endif
}

/* Slice r of n elements over R ranks: [n r / R, n (r+1) / R). */
MAYBE_UNUSED static size_t slice_at(size_t n, int r, int R) { return (size_t)((unsigned __int128)n * (unsigned)r / (unsigned)R); }

void gh_comm_sum_f64(gh_comm *c, double *buf, size_t n) {
  if (!c->mpi || c->size == 1) return;
#ifdef GH_HAVE_MPI
  const int R = c->size, me = c->rank;
  /* every rank must bring the same n */
  uint64_t mine = n, *all = gh_malloc(sizeof(uint64_t) * (size_t)R);
  gh_comm_allgather(c, &mine, sizeof mine, all);
  for (int r = 0; r < R; ++r)
    if (all[r] != mine)
      gh_die("gh_comm_sum_f64: rank %d brings %llu values, rank %d %llu (ranks out of step)", r,
             (unsigned long long)all[r], me, (unsigned long long)mine);
  free(all);
  int *scount = gh_malloc(sizeof(int) * (size_t)R * 4), *sdispl = scount + R, *rcount = scount + 2 * R,
      *rdispl = scount + 3 * R;
  coll_begin(c, "sum of the accumulators (all-to-all)");
  /* pieces of at most 2^27 doubles, so that counts fit an int */
  const size_t piece = (size_t)1 << 27;
  for (size_t p0 = 0; p0 < n; p0 += piece) {
    const size_t m = n - p0 < piece ? n - p0 : piece;
    double *b = buf + p0;
    const size_t lo = slice_at(m, me, R), len = slice_at(m, me + 1, R) - lo;
    if ((size_t)R * len > c->parts_cap) {
      free(c->parts);
      c->parts_cap = (size_t)R * len;
      c->parts = gh_malloc(sizeof(double) * (c->parts_cap ? c->parts_cap : 1));
    }
    for (int r = 0; r < R; ++r) {
      scount[r] = (int)(slice_at(m, r + 1, R) - slice_at(m, r, R));
      sdispl[r] = (int)slice_at(m, r, R);
      rcount[r] = (int)len;
      rdispl[r] = (int)((size_t)r * len);
    }
    MPI_Alltoallv(b, scount, sdispl, MPI_DOUBLE, c->parts, rcount, rdispl, MPI_DOUBLE, MPI_COMM_WORLD);
    /* the owner adds the parts in rank order */
    for (size_t i = 0; i < len; ++i) {
      double s = c->parts[i];
      for (int r = 1; r < R; ++r) s += c->parts[(size_t)r * len + i];
      b[lo + i] = s;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, scount, sdispl, MPI_DOUBLE, MPI_COMM_WORLD);
  }
  coll_end(c);
  free(scount);
#endif
}

void gh_comm_sum_f64_device(gh_comm *c, double *dbuf, size_t n) {
  if (!c->nccl) gh_die("gh_comm_sum_f64_device: NCCL is not started (gh_comm_nccl_start)");
#ifdef GH_HAVE_CUDA
  coll_begin(c, "sum of the accumulators (NCCL)");
  gh_nccl_sum_f64(c->nccl, dbuf, n);
  coll_end(c);
#else
  (void)dbuf; (void)n;
#endif
}

void gh_comm_sum_dd(gh_comm *c, const double *hi, const double *lo, size_t n, double *out) {
  if (!c->mpi || c->size == 1) {
    for (size_t i = 0; i < n; ++i) out[i] = hi[i] + lo[i];
    return;
  }
#ifdef GH_HAVE_MPI
  const int R = c->size, me = c->rank;
  uint64_t mine = n, *all = gh_malloc(sizeof(uint64_t) * (size_t)R);
  gh_comm_allgather(c, &mine, sizeof mine, all);
  for (int r = 0; r < R; ++r)
    if (all[r] != mine)
      gh_die("gh_comm_sum_dd: rank %d brings %llu values, rank %d %llu (ranks out of step)", r,
             (unsigned long long)all[r], me, (unsigned long long)mine);
  free(all);
  int *scount = gh_malloc(sizeof(int) * (size_t)R * 4), *sdispl = scount + R, *rcount = scount + 2 * R,
      *rdispl = scount + 3 * R;
  coll_begin(c, "double-double sum of the accumulators (all-to-all)");
  const size_t piece = (size_t)1 << 27;
  for (size_t p0 = 0; p0 < n; p0 += piece) {
    const size_t m = n - p0 < piece ? n - p0 : piece;
    const size_t lo0 = slice_at(m, me, R), len = slice_at(m, me + 1, R) - lo0;
    if (2 * (size_t)R * len > c->parts_cap) {
      free(c->parts);
      c->parts_cap = 2 * (size_t)R * len;
      c->parts = gh_malloc(sizeof(double) * (c->parts_cap ? c->parts_cap : 1));
    }
    double *phi = c->parts, *plo = c->parts + (size_t)R * len;
    for (int r = 0; r < R; ++r) {
      scount[r] = (int)(slice_at(m, r + 1, R) - slice_at(m, r, R));
      sdispl[r] = (int)slice_at(m, r, R);
      rcount[r] = (int)len;
      rdispl[r] = (int)((size_t)r * len);
    }
    MPI_Alltoallv(hi + p0, scount, sdispl, MPI_DOUBLE, phi, rcount, rdispl, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoallv(lo + p0, scount, sdispl, MPI_DOUBLE, plo, rcount, rdispl, MPI_DOUBLE, MPI_COMM_WORLD);
    /* the owner adds the pairs in rank order, then rounds once */
    double *o = out + p0;
    for (size_t i = 0; i < len; ++i) {
      double h = phi[i], l = plo[i];
      for (int r = 1; r < R; ++r) gh_dd_add_dd(&h, &l, phi[(size_t)r * len + i], plo[(size_t)r * len + i]);
      o[lo0 + i] = h + l;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, o, scount, sdispl, MPI_DOUBLE, MPI_COMM_WORLD);
  }
  coll_end(c);
  free(scount);
#endif
}

void gh_comm_sum_dd_device(gh_comm *c, const double *dhi, const double *dlo, double *dout, size_t n) {
  if (!c->nccl) gh_die("gh_comm_sum_dd_device: NCCL is not started (gh_comm_nccl_start)");
#ifdef GH_HAVE_CUDA
  coll_begin(c, "double-double sum of the accumulators (NCCL)");
  gh_nccl_sum_dd(c->nccl, dhi, dlo, dout, n);
  coll_end(c);
#else
  (void)dhi; (void)dlo; (void)dout; (void)n;
#endif
}

void gh_comm_check_same(gh_comm *c, const void *bytes, size_t n, const char *what) {
  if (!c->mpi || c->size == 1) return;
  uint64_t mine[2] = {gh_hash64(bytes, n, GH_HASH64_INIT), n};
  uint64_t *all = gh_malloc(sizeof mine * (size_t)c->size);
  gh_comm_allgather(c, mine, sizeof mine, all);
  char msg[1024];
  int k = 0, bad = 0;
  for (int r = 1; r < c->size; ++r) {
    if (all[2 * r] == all[0] && all[2 * r + 1] == all[1]) continue;
    if (!bad)
      k += snprintf(msg + k, sizeof msg - (size_t)k, "ranks differ in %s: rank 0 (host %s) has %016llx (%llu bytes)",
                    what, c->hosts[0], (unsigned long long)all[0], (unsigned long long)all[1]);
    bad = 1;
    if (k > 0 && (size_t)k < sizeof msg - 128)
      k += snprintf(msg + k, sizeof msg - (size_t)k, ", rank %d (host %s) %016llx (%llu bytes)", r, c->hosts[r],
                    (unsigned long long)all[2 * r], (unsigned long long)all[2 * r + 1]);
  }
  free(all);
  if (!bad) return;
  /* every rank knows: rank 0 says it once, all end with status 1 */
  if (c->rank == 0) fprintf(stderr, "%s: ERROR: %s\n", gh_progname, msg);
  fflush(NULL);
#ifdef GH_HAVE_MPI
  gh_comm_barrier(c);
  gh_set_die_hook(NULL);
  MPI_Finalize();
#endif
  _exit(1);
}

/* Line `i` of text t ("--name=value\n" lines) as name and value, into
 * name[nn] / val[nv]; 0 if t has fewer lines. */
static int opt_line(const char *t, int i, char *name, size_t nn, char *val, size_t nv) {
  for (; i > 0 && *t; --i) {
    const char *nl = strchr(t, '\n');
    if (!nl) return 0;
    t = nl + 1;
  }
  if (!*t) return 0;
  const char *nl = strchr(t, '\n'), *eq = strchr(t, '=');
  if (!nl) nl = t + strlen(t);
  if (!eq || eq > nl) eq = nl;
  snprintf(name, nn, "%.*s", (int)(eq - t), t);
  snprintf(val, nv, "%.*s", (int)(eq < nl ? nl - eq - 1 : 0), eq < nl ? eq + 1 : eq);
  return 1;
}

void gh_comm_check_options(gh_comm *c, const struct gh_opts *po, const char *const *skip) {
  if (!c->mpi || c->size == 1) return;
  const char *never[64];
  int ns = 0;
  for (const char *const *q = (const char *const[]){"verbose", "config", "help", "comm", "comm-timeout", NULL}; *q;)
    never[ns++] = *q++;
  for (const char *const *q = skip; q && *q && ns < 63;) never[ns++] = *q++;
  never[ns] = NULL;
  const size_t n = gh_opts_values(po, never, NULL, 0);
  char *opts = gh_malloc(n + 1);
  gh_opts_values(po, never, opts, n + 1);
  uint64_t mine[2] = {gh_hash64(opts, n, GH_HASH64_INIT), n};
  uint64_t *all = gh_malloc(sizeof mine * (size_t)c->size);
  gh_comm_allgather(c, mine, sizeof mine, all);
  int bad = -1;
  uint64_t maxn = 0;
  for (int r = 0; r < c->size; ++r) {
    if (all[2 * r + 1] > maxn) maxn = all[2 * r + 1];
    if (bad < 0 && r > 0 && (all[2 * r] != all[0] || all[2 * r + 1] != all[1])) bad = r;
  }
  free(all);
  if (bad < 0) { free(opts); return; }
  /* they differ: every rank's text (every rank takes part), rank 0 names the option */
  const size_t L = (size_t)maxn + 1;
  char *mine_t = gh_calloc(L, 1), *texts = gh_malloc(L * (size_t)c->size);
  memcpy(mine_t, opts, n);
  gh_comm_allgather(c, mine_t, L, texts);
  char msg[1024] = "";
  const char *t0 = texts, *tb = texts + (size_t)bad * L;
  for (int i = 0;; ++i) {
    char n0[128], v0[256], nb[128], vb[256];
    const int h0 = opt_line(t0, i, n0, sizeof n0, v0, sizeof v0), hb = opt_line(tb, i, nb, sizeof nb, vb, sizeof vb);
    if (!h0 && !hb) break; /* equal texts of different hash: cannot happen */
    if (h0 && hb && !strcmp(n0, nb) && !strcmp(v0, vb)) continue;
    if (h0 && hb && !strcmp(n0, nb))
      snprintf(msg, sizeof msg, "ranks differ in option %s: rank 0 (host %s) has %s, rank %d (host %s) has %s", n0,
               c->hosts[0], *v0 ? v0 : "\"\"", bad, c->hosts[bad], *vb ? vb : "\"\"");
    else
      snprintf(msg, sizeof msg, "ranks differ in their options: rank 0 (host %s) has %s, rank %d (host %s) has %s",
               c->hosts[0], h0 ? n0 : "no more options", bad, c->hosts[bad], hb ? nb : "no more options");
    break;
  }
  if (!*msg)
    snprintf(msg, sizeof msg, "ranks differ in their options: rank 0 and rank %d (host %s)", bad, c->hosts[bad]);
  free(mine_t);
  free(texts);
  free(opts);
  if (c->rank == 0) fprintf(stderr, "%s: ERROR: %s\n", gh_progname, msg);
  fflush(NULL);
#ifdef GH_HAVE_MPI
  gh_comm_barrier(c);
  gh_set_die_hook(NULL);
  MPI_Finalize();
#endif
  _exit(1);
}

void gh_comm_check_build(gh_comm *c) {
  if (!c->mpi || c->size == 1) return;
  uint64_t h = GH_HASH64_INIT;
  FILE *f = fopen("/proc/self/exe", "rb");
  if (f) {
    unsigned char buf[1 << 16];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) h = gh_hash64(buf, k, h);
    fclose(f);
  }
  gh_comm_check_same(c, &h, sizeof h, "build (their executables differ)");
}

/* ---------------- NCCL ---------------- */
int gh_comm_use_nccl(gh_comm *c, const gh_comm_opts *o, gh_backend *be) {
  const int forced = !strcmp(o->kind, "nccl");
  if (forced && !gh_backend_supports(be, GH_CAP_NCCL))
    gh_die("--comm=nccl needs the CUDA backend (--device=cuda; this run uses %s)", be->device_name);
  if (!forced && !(!strcmp(o->kind, "auto") && c->size > 1 && gh_backend_supports(be, GH_CAP_NCCL))) return 0;
  gh_cuda_thread_attach(be);
  if (gh_comm_nccl_start(c) == 0) return 1;
  if (forced) {
    /* every rank knows the outcome: rank 0 says it once and ends the job */
    if (c->rank != 0) gh_comm_barrier(c);
    gh_die("--comm=nccl: %s", gh_last_error());
  }
  gh_log("NCCL not used (%s): the accumulators are summed through MPI on the host", gh_last_error());
  return 0;
}

int gh_comm_nccl_start(gh_comm *c) {
#if defined(GH_HAVE_MPI) && defined(GH_HAVE_CUDA)
  if (!c->mpi) {
    gh_set_error("NCCL needs MPI to start (run under mpirun or srun, or --comm=nccl)");
    return -1;
  }
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  char err[512] = "";
  int ok = gh_nccl_load() == 0;
  if (!ok) snprintf(err, sizeof err, "%s", gh_last_error());
  /* agree: every rank loaded it */
  int *oks = gh_malloc(sizeof(int) * (size_t)c->size);
  gh_comm_allgather(c, &ok, sizeof ok, oks);
  int all = 1, first_bad = -1;
  for (int r = 0; r < c->size; ++r)
    if (!oks[r]) { all = 0; if (first_bad < 0) first_bad = r; }
  if (!all) {
    free(oks);
    gh_set_error("libnccl did not load on rank %d%s%s", first_bad, first_bad == c->rank ? ": " : "",
                 first_bad == c->rank ? err : "");
    return -1;
  }
  unsigned char id[GH_NCCL_ID_BYTES];
  memset(id, 0, sizeof id);
  ok = c->rank != 0 || gh_nccl_get_id(id) == 0;
  if (!ok) snprintf(err, sizeof err, "%s", gh_last_error());
  gh_comm_bcast(c, &ok, sizeof ok, 0);
  if (!ok) {
    free(oks);
    gh_set_error("ncclGetUniqueId failed on rank 0%s%s", c->rank == 0 ? ": " : "", c->rank == 0 ? err : "");
    return -1;
  }
  gh_comm_bcast(c, id, sizeof id, 0);
  coll_begin(c, "ncclCommInitRank");
  void *h = gh_nccl_init(c->size, id, c->rank);
  coll_end(c);
  ok = h != NULL;
  if (!ok) snprintf(err, sizeof err, "%s", gh_last_error());
  gh_comm_allgather(c, &ok, sizeof ok, oks);
  all = 1;
  for (int r = 0; r < c->size; ++r)
    if (!oks[r]) { all = 0; if (first_bad < 0) first_bad = r; }
  free(oks);
  if (!all) {
    if (h) gh_nccl_free(h);
    gh_set_error("ncclCommInitRank failed on rank %d%s%s", first_bad, first_bad == c->rank ? ": " : "",
                 first_bad == c->rank ? err : "");
    return -1;
  }
  c->nccl = h;
  return 0;
#elif defined(GH_HAVE_MPI)
  gh_set_error("this build has no CUDA: NCCL cannot be used");
  return -1;
#else
  gh_set_error("this build has no MPI: NCCL cannot be started");
  return -1;
#endif
}

void gh_dd_acc_reduce(const gh_dd_acc *a, gh_comm *c, double *out) {
  if (c) {
    gh_comm_sum_dd(c, a->hi, a->lo, a->n, out);
    return;
  }
  for (size_t i = 0; i < a->n; ++i) out[i] = a->hi[i] + a->lo[i];
}
