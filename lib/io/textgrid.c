/* textgrid.c -- Praat TextGrid files, long format (textgrid.h). */
#include "io/textgrid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

int gh_tg_fill(const gh_tg_interval *in, int32_t n, double xmin, double xmax, gh_tg_interval **out, int32_t *nout,
               char *err, size_t errlen) {
  gh_tg_interval *o = gh_malloc((2 * (size_t)n + 1) * sizeof *o);
  int32_t k = 0;
  double t = xmin;
  const double eps = 1e-9;
  for (int32_t i = 0; i < n; ++i) {
    double a = in[i].xmin, b = in[i].xmax;
    if (a < xmin - eps || b > xmax + eps) {
      snprintf(err, errlen, "interval %d (\"%s\", %g .. %g) lies outside %g .. %g", i + 1, in[i].text, a, b, xmin,
               xmax);
      free(o);
      return 0;
    }
    if (a < t) a = t; /* rounded CTM times: clip to the previous end */
    if (b > xmax) b = xmax;
    if (b < a - eps) {
      snprintf(err, errlen, "interval %d (\"%s\") ends at %g, before %g", i + 1, in[i].text, b, a);
      free(o);
      return 0;
    }
    if (b - a <= eps) continue;
    if (a - t > eps) o[k++] = (gh_tg_interval){t, a, ""};
    o[k++] = (gh_tg_interval){a, b, in[i].text};
    t = b;
  }
  if (xmax - t > eps || k == 0) o[k++] = (gh_tg_interval){t, xmax, ""};
  *out = o;
  *nout = k;
  return 1;
}

/* shortest "%.*g" that reads back to v */
static void put_num(FILE *fp, double v) {
  char buf[40];
  if (v == 0.0) v = 0.0; /* no "-0" */
  for (int p = 1; p <= 17; ++p) {
    snprintf(buf, sizeof buf, "%.*g", p, v);
    if (strtod(buf, NULL) == v) break;
  }
  fputs(buf, fp);
}

static void put_str(FILE *fp, const char *s) {
  fputc('"', fp);
  for (; *s; ++s) {
    if (*s == '"') fputc('"', fp);
    fputc(*s, fp);
  }
  fputc('"', fp);
}

int gh_tg_write(FILE *fp, double xmin, double xmax, const gh_tg_tier *tiers, int32_t ntiers) {
  fputs("File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\nxmin = ", fp);
  put_num(fp, xmin);
  fputs(" \nxmax = ", fp);
  put_num(fp, xmax);
  fprintf(fp, " \ntiers? <exists> \nsize = %d \nitem []: \n", ntiers);
  for (int32_t t = 0; t < ntiers; ++t) {
    const gh_tg_tier *T = &tiers[t];
    fprintf(fp, "    item [%d]:\n        class = \"IntervalTier\" \n        name = ", t + 1);
    put_str(fp, T->name);
    fputs(" \n        xmin = ", fp);
    put_num(fp, xmin);
    fputs(" \n        xmax = ", fp);
    put_num(fp, xmax);
    fprintf(fp, " \n        intervals: size = %d \n", T->n);
    for (int32_t i = 0; i < T->n; ++i) {
      fprintf(fp, "        intervals [%d]:\n            xmin = ", i + 1);
      put_num(fp, T->iv[i].xmin);
      fputs(" \n            xmax = ", fp);
      put_num(fp, T->iv[i].xmax);
      fputs(" \n            text = ", fp);
      put_str(fp, T->iv[i].text);
      fputs(" \n", fp);
    }
  }
  return ferror(fp) ? -1 : 0;
}
