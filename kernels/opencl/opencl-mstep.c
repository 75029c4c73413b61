/* opencl-mstep.c -- the EM M-step on the device for the opencl backend
 * (backend.h mstep / model_fetch; kernels: mstep.cl).  The same arithmetic,
 * declines and checks as the CUDA version (kernels/cuda/cuda-mstep.cu,
 * doc/kernels.md "M-step on the device"): new parameter rows and weights in
 * scratch, swapped in only when every Gaussian succeeded; the rows are the
 * ones loglikes and accumulate read, so the model stays usable for both. */
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/gh-base.h"
#include "gemm-forms.h"
#include "gmm/gmm-est.h"
#include "opencl.h"

enum { MS_NOT_UPDATED = 1, MS_HOST_REMOVE = 2, MS_HOST_FLOOR = 4, MS_HOST_BAD = 8 };
#define MS_WG 128

/* Runs gh_mstep_diag / gh_mstep_full (mstep.cl) over the rows of one
 * covariance type. */
static void launch_type(ocl_ctx *c, ocl_model *m, int full, const gh_est_opts *o, size_t shm, cl_int jacobi,
                        cl_int r0, cl_mem list, cl_int nlist, cl_mem vfl) {
  const cl_int rows = nlist > 0 ? nlist : full ? m->Gf : m->Gd;
  if (rows == 0) return;
  cl_kernel k = full ? c->k_mstep_full : c->k_mstep_diag;
  const cl_int D = m->D;
  const cl_double min_w = o->min_gaussian_weight;
  const cl_double min_occ = o->min_gaussian_occupancy >= 0 ? o->min_gaussian_occupancy : (full ? 100.0 : 10.0);
  const cl_double min_var = o->variance_floor >= 0 ? o->variance_floor : o->min_variance;
  const cl_double max_cond = o->max_condition;
  const cl_int remove = o->remove_low_count_gaussians;
  cl_uint i = 0;
  if (!full) gh_ocl_arg(k, i++, sizeof rows, &rows);
  gh_ocl_arg(k, i++, sizeof D, &D);
  gh_ocl_arg(k, i++, sizeof(cl_mem), full ? &m->Wf : &m->Wd);
  gh_ocl_arg(k, i++, sizeof(cl_mem), full ? &m->acc_f : &m->acc_d);
  gh_ocl_arg(k, i++, sizeof(cl_mem), full ? &m->gpdf_f : &m->gpdf_d);
  gh_ocl_arg(k, i++, sizeof(cl_mem), &m->gcnt_d);
  gh_ocl_arg(k, i++, sizeof(cl_mem), &m->occ_sum);
  gh_ocl_arg(k, i++, sizeof(cl_mem), full ? &m->wts_f : &m->wts_d);
  gh_ocl_arg(k, i++, sizeof min_w, &min_w);
  gh_ocl_arg(k, i++, sizeof min_occ, &min_occ);
  gh_ocl_arg(k, i++, sizeof min_var, &min_var);
  if (full) gh_ocl_arg(k, i++, sizeof max_cond, &max_cond);
  gh_ocl_arg(k, i++, sizeof remove, &remove);
  gh_ocl_arg(k, i++, sizeof(cl_mem), full ? &m->Wf_new : &m->Wd_new);
  gh_ocl_arg(k, i++, sizeof(cl_mem), full ? &m->wn_f : &m->wn_d);
  gh_ocl_arg(k, i++, sizeof(cl_mem), &m->obj);
  gh_ocl_arg(k, i++, sizeof(cl_mem), &m->flg);
  if (full) {
    const cl_int use_list = nlist > 0;
    gh_ocl_arg(k, i++, sizeof jacobi, &jacobi);
    gh_ocl_arg(k, i++, sizeof r0, &r0);
    gh_ocl_arg(k, i++, sizeof(cl_mem), use_list ? &list : &m->gcnt_d); /* any buffer when unused */
    gh_ocl_arg(k, i++, sizeof use_list, &use_list);
    gh_ocl_arg(k, i++, shm, NULL);
    size_t gl = (size_t)rows * MS_WG, lo = MS_WG;
    gh_ocl_launch(c, k, 1, &gl, &lo, "M-step (full)");
  } else {
    const cl_int use_vfl = vfl != NULL;
    gh_ocl_arg(k, i++, sizeof(cl_mem), use_vfl ? &vfl : &m->occ_sum); /* any buffer when unused */
    gh_ocl_arg(k, i++, sizeof use_vfl, &use_vfl);
    size_t gl = (size_t)rows, lo = 64;
    gh_ocl_launch(c, k, 1, &gl, &lo, "M-step (diag)");
  }
}

/* Per-row results of one type into the per-pdf counts; 1 (with the reason
 * in gh_last_error) when a row needs the host M-step. */
static int collect(const ocl_model *m, int full, const double *obj, const int *flg, double *before,
                   double *after, gh_est_stats *loc, int jacobi, int cpu_device, size_t shm_j) {
  for (int32_t p = 0; p < m->P; ++p) {
    if (m->ptype[p] != full) continue;
    for (int32_t g = 0; g < m->gcnt[p]; ++g) {
      const int32_t r = m->wrow[p] + g, f = flg[2 * r];
      if ((f & MS_HOST_FLOOR) && !(f & (MS_HOST_REMOVE | MS_HOST_BAD)) && full && !jacobi) {
        if (cpu_device)
          gh_set_error("pdf %d, Gaussian %d: an eigenvalue of the covariance may need flooring, and the device "
                       "M-step's eigenvalue floor is not used on CPU OpenCL devices (doc/reliability.md)", p, g);
        else
          gh_set_error("pdf %d, Gaussian %d: an eigenvalue of the covariance may need flooring and dimension %d is "
                       "too large for the device M-step's eigenvalue floor (%zu bytes of local memory)", p, g, m->D,
                       shm_j);
        return 1;
      }
      if (f & (MS_HOST_REMOVE | MS_HOST_FLOOR | MS_HOST_BAD)) {
        gh_set_error("pdf %d, Gaussian %d: %s", p, g,
                     f & MS_HOST_REMOVE ? "too little data: to be removed"
                     : f & MS_HOST_FLOOR ? "an eigenvalue of the covariance may need flooring and the device cannot "
                                           "(Jacobi did not converge)"
                                         : "the re-estimated covariance is not usable");
        return 1;
      }
      if (f & MS_NOT_UPDATED) loc->num_not_updated++;
      loc->num_floored += flg[2 * r + 1];
      before[p] += obj[2 * r];
      after[p] += obj[2 * r + 1];
    }
  }
  return 0;
}

int gh_ocl_mstep(gh_backend *b, gh_dev_model *dm, const gh_est_opts *o, gh_est_stats *st) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  if (!c->fp64) { gh_set_error("the OpenCL device has no double precision"); return 1; }
  /* rows and statistics about a centre, or the model on the host (the
   * numerical contract, opencl.c model_upload): the host M-step */
  if (m->host_m) { gh_set_error("the model is evaluated on the host (numerical contract)"); return 1; }
  if (m->centred) { gh_set_error("the model's rows are centred (features with a large offset)"); return 1; }
  if (o->shrink) { gh_set_error("covariance shrinkage runs on the host"); return 1; }
  const int32_t D = m->D, P = m->P, rows = m->Gd > m->Gf ? m->Gd : m->Gf;
  if (P == 0 || m->Gd + m->Gf == 0) return 0;
  /* full rows, two passes: all rows with C / L, mu, b in local memory;
   * then the rows whose floor test failed with the Jacobi work too (its
   * A overlays C / L; V, rotations), when that fits (else they decline) */
  const int64_t N = D + (D & 1), r0j = (int64_t)D * (D + 1) > N * N ? (int64_t)D * (D + 1) : N * N;
  const size_t shm = (size_t)((int64_t)D * (D + 1) + 2 * D) * sizeof(double);
  const size_t shm_j = (size_t)(r0j + 2 * D + N * N + 2 * N) * sizeof(double);
  cl_ulong local_mem = 0;
  clGetDeviceInfo(c->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, NULL);
  int jacobi = shm_j + MS_WG * sizeof(double) + 64 <= local_mem;
  /* The Jacobi floor pass is not used on CPU OpenCL devices (PoCL): there it gave a
   * different model in about 1 of 100 repeated M-steps from the same statistics when PoCL
   * ran several threads, never with one (test_kernels mstep-repeat; doc/reliability.md);
   * the kernel's work-groups share nothing, and a CPU device gains nothing over the host
   * M-step.  GH_OPENCL_JACOBI=1 uses it anyway (to investigate). */
  cl_device_type dtype = 0;
  clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof dtype, &dtype, NULL);
  static const char *const words[] = {"0", "1", NULL};
  const int cpu_device = (dtype & CL_DEVICE_TYPE_CPU) && gh_env_word("GH_OPENCL_JACOBI", 0, words) == 0;
  if (cpu_device) jacobi = 0;
  if (m->Gf && shm + MS_WG * sizeof(double) + 64 > local_mem) {
    gh_set_error("dimension %d is too large for the device M-step (%zu bytes of local memory)", D, shm);
    return 1;
  }
  if (!m->occ_sum) { /* scratch on first use */
    m->Wd_new = gh_ocl_buffer(c, ((size_t)m->Gd * m->Kd + 1) * sizeof(float), NULL, "M-step");
    m->Wf_new = gh_ocl_buffer(c, ((size_t)m->Gf * m->Kf + 1) * sizeof(float), NULL, "M-step");
    m->wn_d = gh_ocl_buffer(c, (m->Gd + 1) * sizeof(float), NULL, "M-step");
    m->wn_f = gh_ocl_buffer(c, (m->Gf + 1) * sizeof(float), NULL, "M-step");
    m->occ_sum = gh_ocl_buffer(c, (P + 1) * sizeof(double), NULL, "M-step");
    m->obj = gh_ocl_buffer(c, (2 * (size_t)rows + 1) * sizeof(double), NULL, "M-step");
    m->flg = gh_ocl_buffer(c, (2 * (size_t)rows + 1) * sizeof(int), NULL, "M-step");
  }
  {
    cl_kernel k = c->k_mstep_occ;
    const cl_int Kd = m->Kd, Kf = m->Kf;
    cl_uint i = 0;
    gh_ocl_arg(k, i++, sizeof Kd, &Kd);
    gh_ocl_arg(k, i++, sizeof Kf, &Kf);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->acc_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->acc_f);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->ptype_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->wrow_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->gcnt_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->occ_sum);
    size_t gl = (size_t)P * MS_WG, lo = MS_WG;
    gh_ocl_launch(c, k, 1, &gl, &lo, "M-step occupancies");
  }
  cl_mem vfl = NULL; /* --rel-variance-floor: per-pdf floors of the diagonal rows */
  if (o->rel_variance_floor > 0 && m->Gd) {
    cl_kernel k = c->k_mstep_relfloor;
    const cl_int cD = D;
    const cl_double rel = o->rel_variance_floor, min_var = o->variance_floor >= 0 ? o->variance_floor : o->min_variance;
    vfl = gh_ocl_buffer(c, (size_t)P * D * sizeof(double), NULL, "M-step variance floors");
    cl_uint i = 0;
    gh_ocl_arg(k, i++, sizeof cD, &cD);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->acc_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->ptype_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->wrow_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->gcnt_d);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &m->occ_sum);
    gh_ocl_arg(k, i++, sizeof rel, &rel);
    gh_ocl_arg(k, i++, sizeof min_var, &min_var);
    gh_ocl_arg(k, i++, sizeof(cl_mem), &vfl);
    size_t gl = (size_t)P * MS_WG, lo = MS_WG;
    gh_ocl_launch(c, k, 1, &gl, &lo, "M-step variance floors");
  }
  double *occ = gh_malloc((P + 1) * sizeof(double));
  double *before = gh_calloc(P + 1, sizeof(double)), *after = gh_calloc(P + 1, sizeof(double));
  double *obj = gh_malloc((2 * (size_t)rows + 1) * sizeof(double));
  int *flg = gh_malloc((2 * (size_t)rows + 1) * sizeof(int));
  gh_est_stats loc;
  memset(&loc, 0, sizeof loc);
  gh_ocl_read(c, m->occ_sum, 0, P * sizeof(double), occ);
  int declined = 0;
  for (int full = 0; full < 2 && !declined; ++full) { /* one type at a time: obj / flg are shared */
    const int32_t n = full ? m->Gf : m->Gd;
    if (n == 0) continue;
    launch_type(c, m, full, o, shm, 0, (cl_int)((int64_t)D * (D + 1)), NULL, 0, full ? NULL : vfl);
    gh_ocl_read(c, m->obj, 0, 2 * (size_t)n * sizeof(double), obj);
    gh_ocl_read(c, m->flg, 0, 2 * (size_t)n * sizeof(int), flg);
    if (full && jacobi) { /* the second pass: the rows whose floor test failed */
      int32_t nf = 0, other = 0;
      int *list = gh_malloc(sizeof(int) * (size_t)(n + 1));
      for (int32_t r = 0; r < n; ++r) {
        if (flg[2 * r] & (MS_HOST_REMOVE | MS_HOST_BAD)) other = 1;
        else if (flg[2 * r] & MS_HOST_FLOOR) list[nf++] = r;
      }
      if (nf > 0 && !other) { /* (with a row to remove or a bad one the host M-step runs anyway) */
        cl_mem lb = gh_ocl_buffer(c, sizeof(int) * (size_t)nf, list, "M-step floor list");
        launch_type(c, m, 1, o, shm_j, 1, (cl_int)r0j, lb, nf, NULL);
        gh_ocl_read(c, m->obj, 0, 2 * (size_t)n * sizeof(double), obj);
        gh_ocl_read(c, m->flg, 0, 2 * (size_t)n * sizeof(int), flg);
        gh_ocl_release(lb);
      }
      free(list);
    }
    declined = collect(m, full, obj, flg, before, after, &loc, jacobi, cpu_device, shm_j);
  }
  if (!declined) {
    for (int32_t p = 0; p < P; ++p) {
      if (!(occ[p] > 0)) { loc.num_pdfs_no_data++; continue; }
      loc.objf_change += after[p] - before[p];
      loc.count += occ[p];
    }
    /* complete: the new rows and weights become the model's */
    cl_mem t = m->Wd; m->Wd = m->Wd_new; m->Wd_new = t;
    t = m->Wf; m->Wf = m->Wf_new; m->Wf_new = t;
    t = m->wts_d; m->wts_d = m->wn_d; m->wn_d = t;
    t = m->wts_f; m->wts_f = m->wn_f; m->wn_f = t;
    *st = loc;
  }
  if (vfl) gh_ocl_release(vfl);
  free(occ); free(before); free(after); free(obj); free(flg);
  return declined;
}

void gh_ocl_model_fetch(gh_backend *b, gh_dev_model *dm, gh_gmm_set *s) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  if (m->orig) { gh_model_fetch_copy(m->orig, s); return; }
  const int32_t D = m->D;
  if (s->num_pdfs != m->P || s->dim != D)
    gh_die("model fetch: the set has %d pdfs of dimension %d, the device model %d of dimension %d", s->num_pdfs,
           s->dim, m->P, D);
  for (int32_t p = 0; p < m->P; ++p)
    if (s->pdfs[p].num_gauss != m->gcnt[p] || (s->pdfs[p].type == GH_COV_FULL) != (m->ptype[p] != 0))
      gh_die("model fetch: pdf %d has %d Gaussians (%s), the device model %d (%s)", p, s->pdfs[p].num_gauss,
             s->pdfs[p].type == GH_COV_FULL ? "full" : "diag", m->gcnt[p], m->ptype[p] ? "full" : "diag");
  float *wd = gh_malloc(((size_t)m->Gd * m->Kd + 1) * sizeof(float));
  float *wf = gh_malloc(((size_t)m->Gf * m->Kf + 1) * sizeof(float));
  float *vd = gh_malloc((m->Gd + 1) * sizeof(float)), *vf = gh_malloc((m->Gf + 1) * sizeof(float));
  gh_ocl_read(c, m->Wd, 0, (size_t)m->Gd * m->Kd * sizeof(float), wd);
  gh_ocl_read(c, m->Wf, 0, (size_t)m->Gf * m->Kf * sizeof(float), wf);
  gh_ocl_read(c, m->wts_d, 0, m->Gd * sizeof(float), vd);
  gh_ocl_read(c, m->wts_f, 0, m->Gf * sizeof(float), vf);
  for (int32_t p = 0; p < m->P; ++p) {
    gh_gmm *g = &s->pdfs[p];
    const int full = m->ptype[p];
    const int32_t K = full ? m->Kf : m->Kd;
    for (int32_t k = 0; k < g->num_gauss; ++k) {
      const int32_t r = m->wrow[p] + k;
      const float *row = (full ? wf : wd) + (size_t)r * K;
      g->weights[k] = (full ? vf : vd)[r];
      gh_gemm_row_to_gmm(row, 1, g, k);
    }
  }
  free(wd); free(wf); free(vd); free(vf);
}
