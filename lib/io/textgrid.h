/* textgrid.h -- Praat TextGrid files, long ("ooTextFile") format, interval
 * tiers only: what the Montreal Forced Aligner writes for each sound file
 * (through praatio): a "words" and a "phones" tier (named "<speaker> -
 * words" and "<speaker> - phones" when speakers are named), whose intervals
 * cover the whole file, gaps as intervals with an empty label.
 *
 * Units: seconds. */
#ifndef GH_TEXTGRID_H
#define GH_TEXTGRID_H
#include <stdint.h>
#include <stdio.h>

typedef struct {
  double xmin, xmax;
  const char *text; /* UTF-8; "" = unlabelled (silence) */
} gh_tg_interval;

typedef struct {
  const char *name;
  int32_t n;
  gh_tg_interval *iv; /* [n], in time order, xmin < xmax, not overlapping */
} gh_tg_tier;

/* Fills the gaps of `in` (n labelled intervals in time order, within
 * [xmin, xmax]) with empty intervals so that the result covers [xmin, xmax]
 * exactly; *out (malloc'd, caller frees) gets *nout intervals.  Intervals of
 * zero length are dropped; an interval that starts before the previous one
 * ends is clipped to start there (CTM times are rounded).  Returns 1, or 0
 * if an interval lies outside [xmin, xmax] or ends before it starts after
 * clipping (a message in err[errlen]). */
int gh_tg_fill(const gh_tg_interval *in, int32_t n, double xmin, double xmax, gh_tg_interval **out, int32_t *nout,
               char *err, size_t errlen);

/* Writes a long-format TextGrid with ntiers interval tiers over [xmin, xmax]
 * to fp (Praat's layout: tier and interval headers, numbers in shortest form
 * that reads back to the same double, strings in double quotes with '"'
 * doubled).  Returns 0, or -1 on a write error (ferror). */
int gh_tg_write(FILE *fp, double xmin, double xmax, const gh_tg_tier *tiers, int32_t ntiers);

#endif
