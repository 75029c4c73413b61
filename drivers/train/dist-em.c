/* dist-em.c -- EM of a GMM set over R ranks; see dist-em.h. */
#include "train/dist-em.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/shrink.h"
#include "registry/registry.h"

/* ---------------- flat accumulators ---------------- */
static int64_t var_size(const gh_gmm_accs *a) {
  return a->type == GH_COV_FULL ? (int64_t)a->dim * (a->dim + 1) / 2 : a->dim;
}

size_t gh_accs_flat_size(const gh_accs_set *a, int shrink) {
  size_t n = 0;
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    const gh_gmm_accs *g = &a->pdfs[p];
    if (shrink) n += g->shrink ? (size_t)g->num_gauss * (size_t)gh_shrink_stats_size(g->dim) : 0;
    else n += (size_t)g->num_gauss * (size_t)(1 + g->dim + var_size(g));
  }
  return shrink ? n : n + 2;
}

/* copy between a and flat (to_flat: a -> flat) */
static void flat_copy(gh_accs_set *a, int shrink, double *flat, int to_flat) {
  size_t k = 0;
#define MOVE(ptr, cnt)                                                        \
  do {                                                                        \
    const size_t _n = (size_t)(cnt);                                          \
    if (to_flat) memcpy(flat + k, (ptr), sizeof(double) * _n);                \
    else memcpy((ptr), flat + k, sizeof(double) * _n);                        \
    k += _n;                                                                  \
  } while (0)
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    gh_gmm_accs *g = &a->pdfs[p];
    if (shrink) {
      if (g->shrink) MOVE(g->shrink, (int64_t)g->num_gauss * gh_shrink_stats_size(g->dim));
      continue;
    }
    MOVE(g->occupancy, g->num_gauss);
    MOVE(g->mean_accs, (int64_t)g->num_gauss * g->dim);
    MOVE(g->var_accs, (int64_t)g->num_gauss * var_size(g));
  }
  if (!shrink) {
    MOVE(&a->total_loglike, 1);
    MOVE(&a->total_frames, 1);
  }
#undef MOVE
}

void gh_accs_flatten(const gh_accs_set *a, int shrink, double *out) { flat_copy((gh_accs_set *)a, shrink, out, 1); }
void gh_accs_unflatten(gh_accs_set *a, int shrink, const double *in) { flat_copy(a, shrink, (double *)in, 0); }

uint64_t gh_gmm_set_hash(const gh_gmm_set *s) {
  uint64_t h = gh_hash64(&s->dim, sizeof s->dim, GH_HASH64_INIT);
  h = gh_hash64(&s->num_pdfs, sizeof s->num_pdfs, h);
  for (int32_t p = 0; p < s->num_pdfs; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    const int32_t hdr[3] = {(int32_t)g->type, g->num_gauss, g->dim};
    h = gh_hash64(hdr, sizeof hdr, h);
    h = gh_hash64(g->weights, sizeof(float) * (size_t)g->num_gauss, h);
    h = gh_hash64(g->gconsts, sizeof(float) * (size_t)g->num_gauss, h);
    h = gh_hash64(g->means_invvars, sizeof(float) * (size_t)g->num_gauss * (size_t)g->dim, h);
    h = gh_hash64(g->inv_vars, sizeof(float) * (size_t)g->num_gauss * (size_t)gh_gmm_cov_size(g), h);
  }
  return h;
}

static double *grow_buf(gh_dist_em *em, size_t n) {
  if (n > em->buf_cap) {
    free(em->buf);
    em->buf = gh_malloc(sizeof(double) * (n ? n : 1));
    em->buf_cap = n;
  }
  return em->buf;
}

/* ---------------- the loop ---------------- */
void gh_dist_em_init(gh_dist_em *em, gh_comm *comm, gh_backend *b, gh_gmm_set *model, const gh_shard_data *sd,
                     int64_t max_device_bytes) {
  memset(em, 0, sizeof *em);
  em->comm = comm;
  em->b = b;
  em->model = model;
  em->sd = sd;
  const int32_t nb = sd->num_blocks;
  em->dd = gh_calloc((size_t)(nb ? nb : 1), sizeof *em->dd);
  em->streamed = gh_calloc((size_t)(nb ? nb : 1), 1);
  const int can_stream = max_device_bytes > 0 && gh_backend_supports(b, GH_CAP_RESIDENT);
  if (max_device_bytes > 0 && !can_stream)
    gh_log("--max-device-memory: the %s backend keeps its data in host memory; nothing to stream", b->ops->name);
  /* an upper bound of each block's device bytes, for the plan made before
   * uploading (frames padded to 4 floats, 12 bytes a pair) */
  int64_t total = 0, largest = 0;
  for (int32_t k = 0; k < nb; ++k) {
    const gh_data *d = &sd->blocks[k];
    const int64_t est = (int64_t)d->num_frames * ((d->dim + 3) / 4 * 4) * 4 + d->num_pairs * 12;
    total += est;
    if (est > largest) largest = est;
  }
  const int stream = can_stream && total > max_device_bytes;
  if (stream && max_device_bytes < 2 * largest)
    gh_die("--max-device-memory=%lld bytes cannot hold two blocks of up to %lld bytes: lower --block-frames",
           (long long)max_device_bytes, (long long)largest);
  const int64_t budget = stream ? max_device_bytes - 2 * largest : INT64_MAX;
  for (int32_t k = 0; k < nb; ++k) {
    em->dd[k] = gh_data_upload(b, &sd->blocks[k]);
    if (!stream) continue;
    const int64_t bytes = b->ops->resident->data_bytes(b, em->dd[k]);
    if (em->num_streamed == 0 && em->resident_bytes + bytes <= budget) {
      em->resident_bytes += bytes;
    } else { /* this and every later block: streamed */
      b->ops->resident->data_evict(b, em->dd[k]);
      em->streamed[k] = 1;
      em->num_streamed++;
    }
  }
  if (em->num_streamed)
    gh_log("--max-device-memory=%lld: %d of %d blocks resident (%.3g MB), %d streamed from page-locked host memory",
           (long long)max_device_bytes, nb - em->num_streamed, nb, em->resident_bytes / 1e6, em->num_streamed);
  const char *e = getenv("GH_MSTEP");
  em->device_mstep = !(e && !strcmp(e, "host"));
  em->reduce_path = "none";
}

void gh_dist_em_sync(gh_dist_em *em) {
  if (!em->host_stale) return;
  em->b->ops->mstep->model_fetch(em->b, em->dm, em->model);
  em->host_stale = 0;
}

uint64_t gh_dist_em_model_hash(gh_dist_em *em) {
  uint64_t h;
  if (em->host_stale && gh_backend_supports(em->b, GH_CAP_HASH) && em->b->ops->hash->model_hash(em->b, em->dm, &h) == 0) return h;
  gh_dist_em_sync(em);
  return gh_gmm_set_hash(em->model);
}

void gh_dist_em_model_changed(gh_dist_em *em) {
  if (em->dm) em->b->ops->gmm->model_free(em->b, em->dm);
  em->dm = NULL;
  em->host_stale = 0;
}

void gh_dist_em_free(gh_dist_em *em) {
  gh_dist_em_model_changed(em);
  for (int32_t k = 0; k < em->sd->num_blocks; ++k)
    if (em->dd[k]) em->b->ops->gmm->data_free(em->b, em->dd[k]);
  free(em->dd);
  free(em->streamed);
  if (em->have_own) gh_accs_free(&em->own);
  if (em->have_blk) gh_accs_free(&em->blk);
  if (em->hdd.hi) gh_dd_acc_free(&em->hdd);
  free(em->buf);
  memset(em, 0, sizeof *em);
}

/* The reduced accumulators on the host, from the device, where they are
 * (device_reduced), with the reduced totals. */
static void fetch_reduced(gh_dist_em *em, gh_accs_set *a) {
  gh_dist_em_sync(em);
  gh_accs_init(a, em->model);
  em->b->ops->gmm->acc_fetch(em->b, em->dm, a);
  a->total_loglike = em->total_loglike;
  a->total_frames = em->total_weight;
}

static void accs_zero(gh_accs_set *a) {
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    gh_gmm_accs *g = &a->pdfs[p];
    memset(g->occupancy, 0, sizeof(double) * (size_t)g->num_gauss);
    memset(g->mean_accs, 0, sizeof(double) * (size_t)g->num_gauss * (size_t)g->dim);
    memset(g->var_accs, 0, sizeof(double) * (size_t)g->num_gauss * (size_t)var_size(g));
  }
}

/* The host double-double master of n values, zeroed. */
static void hdd_start(gh_dist_em *em, size_t n) {
  if (em->hdd.hi && em->hdd.n == n) {
    gh_dd_acc_zero(&em->hdd);
  } else {
    if (em->hdd.hi) gh_dd_acc_free(&em->hdd);
    gh_dd_acc_init(&em->hdd, n);
  }
}

/* After one block's accumulate(): its double accumulators added into the
 * double-double master (dist-em.h, step 1), then zeroed. */
static void commit_block(gh_dist_em *em, int mode) {
  gh_backend *b = em->b;
  if (mode == 0) {
    b->ops->dist->acc_commit(b, em->dm, GH_ACC_COMMIT);
    return;
  }
  double *buf = grow_buf(em, em->hdd.n);
  if (mode == 1) {
    b->ops->dist->acc_raw_get(b, em->dm, buf);
  } else {
    accs_zero(&em->blk);
    b->ops->gmm->acc_fetch(b, em->dm, &em->blk);
    gh_accs_flatten(&em->blk, 0, buf); /* totals: 0 (acc_fetch leaves them) */
  }
  gh_dd_acc_add(&em->hdd, buf);
  b->ops->gmm->acc_zero(b, em->dm);
}

double gh_dist_em_estep(gh_dist_em *em, gh_accs_set *accs) {
  gh_backend *b = em->b;
  const gh_backend_ops *ops = b->ops;
  const gh_shard_data *sd = em->sd;
  const int R = gh_comm_size(em->comm);
  const double t0 = gh_seconds();
  if (!em->dm) {
    em->dm = ops->gmm->model_upload(b, em->model);
    gh_vlog(1, "model uploaded in %.4f s", gh_seconds() - t0);
  }
  /* where the blocks are combined: 0 on the device (acc_commit), 1 on the
   * host from the raw device array, 2 on the host from acc_fetch */
  const int raw = gh_backend_supports(b, GH_CAP_DIST);
  int mode = raw ? 0 : 2;
  /* test hook: the host fallbacks on a backend that has the ops */
  const char *force = getenv("GH_TRAIN_COMMIT");
  if (force && !strcmp(force, "host-raw") && raw) mode = 1;
  if (force && !strcmp(force, "host-accs")) mode = 2;
  const char *cp = mode == 0 ? "device" : mode == 1 ? "host-raw" : "host-accs";
  if ((!em->commit_path || strcmp(em->commit_path, cp)) && gh_comm_rank(em->comm) == 0)
    gh_log("the blocks' accumulators are combined in double-double %s", mode == 0 ? "on the device (acc_commit)"
           : mode == 1 ? "on the host (acc_raw_get after each block)" : "on the host (acc_fetch after each block)");
  em->commit_path = cp;
  if (em->have_blk) { gh_accs_free(&em->blk); em->have_blk = 0; }
  ops->gmm->acc_zero(b, em->dm);
  if (mode == 0) {
    ops->dist->acc_commit(b, em->dm, GH_ACC_MASTER_ZERO);
  } else if (mode == 1) {
    hdd_start(em, (size_t)ops->dist->acc_raw_size(b, em->dm));
  } else {
    gh_accs_init(&em->blk, em->model);
    em->have_blk = 1;
    hdd_start(em, gh_accs_flat_size(&em->blk, 0));
  }
  double tot_hi[2] = {0, 0}, tot_lo[2] = {0, 0}; /* log-likelihood, weight */
  /* streamed blocks: the next one is uploaded while the current one's
   * E-step runs; at most two of them on the device */
  int32_t next = 0, loaded = 0;
  for (int32_t k = 0; k < sd->num_blocks; ++k) {
    if (em->model->dim != sd->blocks[k].dim)
      gh_die_dim(NULL, NULL, "features", sd->blocks[k].dim, em->model->dim, "the model");
    if (em->num_streamed) {
      if (next <= k) next = k;
      while (loaded < 2 && next < sd->num_blocks) {
        if (em->streamed[next]) {
          ops->resident->data_reload(b, em->dd[next]);
          loaded++;
        }
        next++;
      }
    }
    gh_dd_add(&tot_hi[0], &tot_lo[0], ops->gmm->accumulate(b, em->dm, em->dd[k]));
    gh_dd_add(&tot_hi[1], &tot_lo[1], sd->blocks[k].total_weight);
    commit_block(em, mode);
    if (em->streamed[k]) {
      ops->resident->data_evict(b, em->dd[k]);
      loaded--;
    }
  }
  const double t1 = gh_seconds();
  if (em->have_own) { gh_accs_free(&em->own); em->have_own = 0; }
  em->reduce_path = R > 1 ? "host-raw" : "none";
  double tot[2];
  gh_comm_sum_dd(em->comm, tot_hi, tot_lo, 2, tot);
  em->total_loglike = tot[0];
  em->total_weight = tot[1];
  em->device_reduced = mode != 2;
  if (mode == 0) {
    const int64_t n = ops->dist->acc_raw_size(b, em->dm);
    if (R == 1) {
      ops->dist->acc_commit(b, em->dm, GH_ACC_MASTER_ROUND);
    } else if (gh_comm_has_nccl(em->comm) && gh_backend_supports(b, GH_CAP_NCCL) &&
               ops->nccl->acc_master_device(b, em->dm) && ops->nccl->acc_raw_device(b, em->dm)) {
      const double *m = ops->nccl->acc_master_device(b, em->dm);
      gh_comm_sum_dd_device(em->comm, m, m + n, ops->nccl->acc_raw_device(b, em->dm), (size_t)n);
      em->reduce_path = "nccl";
    } else {
      double *buf = grow_buf(em, 2 * (size_t)n);
      ops->dist->acc_master_get(b, em->dm, buf, buf + n);
      gh_comm_sum_dd(em->comm, buf, buf + n, (size_t)n, buf);
      ops->dist->acc_raw_set(b, em->dm, buf);
    }
  } else {
    double *buf = grow_buf(em, em->hdd.n);
    gh_dd_acc_reduce(&em->hdd, em->comm, buf);
    if (mode == 1) {
      ops->dist->acc_raw_set(b, em->dm, buf);
    } else {
      gh_accs_set *a = accs ? accs : &em->own;
      gh_accs_init(a, em->model);
      gh_accs_unflatten(a, 0, buf);
      a->total_loglike = em->total_loglike;
      a->total_frames = em->total_weight;
      if (!accs) em->have_own = 1;
      if (R > 1) em->reduce_path = "host-accs";
    }
  }
  if (accs && em->device_reduced) fetch_reduced(em, accs);
  const double t2 = gh_seconds();
  em->estep_seconds = t1 - t0;
  em->reduce_seconds = t2 - t1;
  return em->total_weight > 0 ? em->total_loglike / em->total_weight : 0.0;
}

void gh_dist_em_acc_shrink(gh_dist_em *em, gh_accs_set *accs) {
  const gh_shard_data *sd = em->sd;
  /* as the E-step's accumulators: each block's statistics (added in double
   * to zeroed arrays) combined in double-double, reduced, rounded once */
  const size_t n = gh_accs_flat_size(accs, 1);
  double *buf = grow_buf(em, n);
  gh_dd_acc dd;
  gh_dd_acc_init(&dd, n);
  for (int32_t k = 0; k < sd->num_blocks; ++k) {
    const gh_data *d = &sd->blocks[k];
    memset(buf, 0, sizeof(double) * n);
    gh_accs_unflatten(accs, 1, buf);
    gh_backend_acc_shrink(em->b, em->model, d->feats, d->num_frames, d->pairs, d->num_pairs, accs);
    gh_accs_flatten(accs, 1, buf);
    gh_dd_acc_add(&dd, buf);
  }
  gh_dd_acc_reduce(&dd, em->comm, buf);
  gh_accs_unflatten(accs, 1, buf);
  gh_dd_acc_free(&dd);
}

void gh_dist_em_mstep(gh_dist_em *em, const gh_est_opts *eo, const gh_accs_set *accs, gh_est_stats *st) {
  gh_backend *b = em->b;
  const double t0 = gh_seconds();
  em->mstep_on_device = 0;
  if (!accs && em->device_reduced && em->device_mstep && gh_backend_supports(b, GH_CAP_MSTEP) && em->dm) {
    gh_est_stats local;
    memset(&local, 0, sizeof local);
    if (b->ops->mstep->mstep(b, em->dm, eo, &local) == 0) {
      gh_est_stats_finish(&local, em->model->num_pdfs, st);
      em->host_stale = 1;
      em->mstep_on_device = 1;
      em->mstep_seconds = gh_seconds() - t0;
      return;
    }
    gh_vlog(1, "M-step on the host: %s", gh_last_error());
  }
  if (!accs) {
    if (!em->have_own) {
      /* the device declined: its accumulators are the reduced ones */
      fetch_reduced(em, &em->own);
      em->have_own = 1;
    }
    accs = &em->own;
  }
  gh_dist_em_sync(em);
  gh_gmm_set_update(em->model, accs, eo, st);
  if (em->have_own) { gh_accs_free(&em->own); em->have_own = 0; }
  gh_dist_em_model_changed(em); /* the next E-step uploads the new model */
  em->mstep_seconds = gh_seconds() - t0;
}

/* ---------------- stopping by tolerance ---------------- */
void gh_em_monitor_init(gh_em_monitor *m, double tol) {
  memset(m, 0, sizeof *m);
  m->tol = tol;
}

int gh_em_monitor_report(gh_em_monitor *m, double avg) {
  m->iters++;
  m->change = m->have_prev ? avg - m->prev : 0.0;
  if (m->tol > 0 && m->have_prev && m->change < m->tol) m->converged = 1;
  m->prev = avg;
  m->have_prev = 1;
  return m->converged;
}

void gh_em_monitor_describe(const gh_em_monitor *m, char *buf, size_t n) {
  if (m->tol <= 0)
    snprintf(buf, n, "not converged after %d iterations (no --tol: --num-iters iterations)", m->iters);
  else if (m->converged)
    snprintf(buf, n, "converged after %d iterations (change per frame %.3g < --tol=%g)", m->iters, m->change, m->tol);
  else
    snprintf(buf, n, "not converged after %d iterations (last change per frame %.3g, --tol=%g; --num-iters reached)",
             m->iters, m->change, m->tol);
}

void gh_em_tool_opts_register(struct gh_opts *po, gh_em_tool_opts *o) {
  o->tol = 0;
  o->mix_up = 0;
  o->power = 0.2;
  o->min_count = 20.0;
  o->perturb = 0.01;
  o->seed = 0;
  gh_opts_double(po, "tol", &o->tol,
                 "Stop after the iteration whose average log-likelihood per frame (of the model before its "
                 "update) improved on the previous one's by less than this (0 = run --num-iters); scikit-learn's "
                 "GaussianMixture tol: |change of the mean per-sample lower bound_| < tol, the same number "
                 "(EM does not decrease it); hmmlearn's tol is on the total log-likelihood: divide by the frames");
  gh_opts_int64(po, "mix-up", &o->mix_up,
                "Increase the total number of Gaussians to this after iteration 1's M-step (0 = no)");
  gh_opts_double(po, "power", &o->power, "Mix-up: Gaussians per pdf proportional to occupancy^power");
  gh_opts_double(po, "min-count", &o->min_count, "Mix-up: minimum occupancy per Gaussian");
  gh_opts_double(po, "perturb-factor", &o->perturb, "Mix-up: mean perturbation in standard deviations");
  gh_opts_int(po, "seed", &o->seed, "Random seed for mix-up perturbations (the same on every rank)");
}

void gh_dist_em_mixup(gh_dist_em *em, const gh_em_tool_opts *o, const gh_accs_set *accs, gh_rng *rng) {
  gh_gmm_set *model = em->model;
  const int64_t before = gh_gmm_set_total_gauss(model);
  if (o->mix_up <= before) {
    gh_warn("--mix-up=%lld is not more than the current %lld Gaussians: not mixing up", (long long)o->mix_up,
            (long long)before);
    return;
  }
  double *occs = gh_malloc(sizeof(double) * (size_t)model->num_pdfs);
  gh_accs_pdf_occs(accs, occs);
  const int64_t after = gh_gmm_set_mixup(model, o->mix_up, occs, o->power, o->min_count, o->perturb, rng);
  gh_dist_em_model_changed(em);
  gh_log("mixed up from %lld to %lld Gaussians", (long long)before, (long long)after);
  free(occs);
}
