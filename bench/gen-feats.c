/* gen-feats -- synthetic features for the scaling benchmark (bench/multi-gpu.sh):
 * a Kaldi data directory whose frames come from a mixture of K correlated
 * Gaussians (x = mu_k + L_k z, z ~ N(0, I), L_k random lower-triangular), so a
 * full-covariance GMM has something to fit.
 *
 * Usage: gen-feats [--frames=2000000] [--dim=40] [--clusters=512]
 *                  [--utt-frames=1000] [--utts-per-spk=20] [--seed=1] <data-dir>
 * Writes <data-dir>/feats.ark (Kaldi binary float matrices, one per utterance
 * of --utt-frames frames), feats.scp (absolute paths), utt2spk, spk2utt.
 * Build: cc -O2 -o gen-feats bench/gen-feats.c -lm
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) { /* xorshift64*, (0, 1) */
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return ((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
}
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

static void die(const char *what, const char *path) {
  fprintf(stderr, "gen-feats: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

int main(int argc, char **argv) {
  long frames = 2000000, dim = 40, clusters = 512, utt_frames = 1000, utts_per_spk = 20, seed = 1;
  const char *dir = NULL;
  for (int i = 1; i < argc; ++i) {
    long *v = NULL; const char *a = argv[i];
    if (!strncmp(a, "--frames=", 9)) v = &frames; else if (!strncmp(a, "--dim=", 6)) v = &dim;
    else if (!strncmp(a, "--clusters=", 11)) v = &clusters; else if (!strncmp(a, "--utt-frames=", 13)) v = &utt_frames;
    else if (!strncmp(a, "--utts-per-spk=", 15)) v = &utts_per_spk; else if (!strncmp(a, "--seed=", 7)) v = &seed;
    else if (a[0] == '-') { fprintf(stderr, "gen-feats: unknown option %s\n", a); return 1; }
    else if (!dir) { dir = a; continue; }
    else { fprintf(stderr, "gen-feats: one data directory expected\n"); return 1; }
    char *end; *v = strtol(strchr(a, '=') + 1, &end, 10);
    if (*end || *v <= 0) { fprintf(stderr, "gen-feats: bad value in %s\n", a); return 1; }
  }
  if (!dir) { fprintf(stderr, "usage: gen-feats [--frames=N --dim=D --clusters=K --utt-frames=U --utts-per-spk=S --seed=R] <data-dir>\n"); return 1; }
  rng_state ^= (uint64_t)seed * 0x9E3779B97F4A7C15ull;
  if (mkdir(dir, 0777) && errno != EEXIST) die("cannot create", dir);
  char absdir[PATH_MAX], path[PATH_MAX + 32];
  if (!realpath(dir, absdir)) die("cannot resolve", dir);

  double *mu = malloc(sizeof(double) * clusters * dim), *L = malloc(sizeof(double) * clusters * dim * dim);
  float *row = malloc(sizeof(float) * dim); double *z = malloc(sizeof(double) * dim);
  if (!mu || !L || !row || !z) { fprintf(stderr, "gen-feats: out of memory\n"); return 1; }
  for (long k = 0; k < clusters; ++k)
    for (long i = 0; i < dim; ++i) {
      mu[k * dim + i] = 4 * nrand();
      for (long j = 0; j < dim; ++j)
        L[(k * dim + i) * dim + j] = j > i ? 0 : j == i ? 0.5 + urand() : 0.3 * nrand();
    }

  snprintf(path, sizeof path, "%s/feats.ark", absdir);
  FILE *ark = fopen(path, "wb"); if (!ark) die("cannot write", path);
  snprintf(path, sizeof path, "%s/feats.scp", absdir);
  FILE *scp = fopen(path, "w"); if (!scp) die("cannot write", path);
  snprintf(path, sizeof path, "%s/utt2spk", absdir);
  FILE *u2s = fopen(path, "w"); if (!u2s) die("cannot write", path);
  snprintf(path, sizeof path, "%s/spk2utt", absdir);
  FILE *s2u = fopen(path, "w"); if (!s2u) die("cannot write", path);

  long nutt = (frames + utt_frames - 1) / utt_frames;
  for (long u = 0; u < nutt; ++u) {
    long spk = u / utts_per_spk;
    int32_t rows = (int32_t)(u == nutt - 1 ? frames - u * utt_frames : utt_frames), cols = (int32_t)dim;
    char key[64];
    snprintf(key, sizeof key, "spk%05ld-utt%07ld", spk, u);
    fprintf(ark, "%s ", key);
    fprintf(scp, "%s %s/feats.ark:%ld\n", key, absdir, ftell(ark));
    fprintf(u2s, "%s spk%05ld\n", key, spk);
    if (u % utts_per_spk == 0) fprintf(s2u, "%sspk%05ld", u ? "\n" : "", spk);
    fprintf(s2u, " %s", key);
    fwrite("\0BFM \4", 1, 6, ark); fwrite(&rows, 4, 1, ark); fputc(4, ark); fwrite(&cols, 4, 1, ark);
    long k = (long)(urand() * clusters) % clusters;  /* a few clusters per utterance */
    for (int32_t t = 0; t < rows; ++t) {
      if (t % 50 == 0) k = (long)(urand() * clusters) % clusters;
      for (long i = 0; i < dim; ++i) z[i] = nrand();
      for (long i = 0; i < dim; ++i) {
        double x = mu[k * dim + i];
        const double *l = L + (k * dim + i) * dim;
        for (long j = 0; j <= i; ++j) x += l[j] * z[j];
        row[i] = (float)x;
      }
      if (fwrite(row, sizeof(float), dim, ark) != (size_t)dim) die("cannot write", "feats.ark");
    }
  }
  fputc('\n', s2u);
  if (fclose(ark) || fclose(scp) || fclose(u2s) || fclose(s2u)) die("cannot finish writing in", absdir);
  fprintf(stderr, "gen-feats: %s: %ld frames of dimension %ld in %ld utterances, %ld speakers\n", absdir, frames, dim,
          nutt, (nutt + utts_per_spk - 1) / utts_per_spk);
  free(mu); free(L); free(row); free(z);
  return 0;
}
