/* opts.c -- see opts.h.  Kaldi ParseOptions semantics, C edition. */
#include "base/opts.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

typedef enum { OPT_BOOL, OPT_INT, OPT_INT64, OPT_DOUBLE, OPT_FLOAT, OPT_STRING } opt_kind;

typedef struct {
  char *name;
  opt_kind kind;
  void *ptr;
  char *help;
  char *deflt; /* default value as text, for --help */
  char *owned; /* string options: the value we allocated (freed by gh_opts_free) */
} opt_entry;

struct gh_opts {
  char *usage;
  opt_entry *opts;
  int num_opts, cap;
  char **args;
  int num_args;
  int32_t verbose;
  const char *config;
  int help;
  int config_depth; /* --config files being read (nested through --config lines) */
  void (*check[8])(void *); /* gh_opts_check's validators, run at the end of gh_opts_parse */
  void *check_ctx[8];
  int num_checks;
};

/* Config files may name further config files; deeper nesting than this is
 * a file that includes itself (directly or through others). */
#define GH_MAX_CONFIG_DEPTH 16

static void value_to_text(const opt_entry *e, char *buf, size_t n) {
  switch (e->kind) {
    case OPT_BOOL: snprintf(buf, n, "%s", *(int *)e->ptr ? "true" : "false"); break;
    case OPT_INT: snprintf(buf, n, "%d", (int)*(int32_t *)e->ptr); break;
    case OPT_INT64: snprintf(buf, n, "%lld", (long long)*(int64_t *)e->ptr); break;
    case OPT_DOUBLE: snprintf(buf, n, "%g", *(double *)e->ptr); break;
    case OPT_FLOAT: snprintf(buf, n, "%g", (double)*(float *)e->ptr); break;
    case OPT_STRING: {
      const char *s = *(const char **)e->ptr;
      snprintf(buf, n, "\"%s\"", s ? s : "");
      break;
    }
  }
}

size_t gh_opts_values(const gh_opts *o, const char *const *skip, char *buf, size_t n) {
  size_t k = 0;
  if (n > 0) buf[0] = 0;
  for (int i = 0; i < o->num_opts; ++i) {
    const opt_entry *e = &o->opts[i];
    int skipped = 0;
    for (const char *const *q = skip; q && *q && !skipped; ++q) skipped = !strcmp(*q, e->name);
    if (skipped) continue;
    char v[64];
    const char *val = v; /* strings whole, however long */
    switch (e->kind) {
      case OPT_DOUBLE: snprintf(v, sizeof v, "%.17g", *(double *)e->ptr); break;
      case OPT_FLOAT: snprintf(v, sizeof v, "%.9g", (double)*(float *)e->ptr); break;
      case OPT_STRING: val = *(const char **)e->ptr ? *(const char **)e->ptr : ""; break;
      default: value_to_text(e, v, sizeof v);
    }
    const int w = snprintf(k < n ? buf + k : NULL, k < n ? n - k : 0, "--%s=%s\n", e->name, val);
    k += (size_t)(w > 0 ? w : 0);
  }
  return k;
}

static void add(gh_opts *o, const char *name, opt_kind kind, void *ptr, const char *help) {
  if (o->num_opts == o->cap) {
    o->cap = o->cap ? 2 * o->cap : 16;
    o->opts = gh_realloc(o->opts, o->cap * sizeof *o->opts);
  }
  opt_entry *e = &o->opts[o->num_opts++];
  e->name = gh_strdup(name);
  e->kind = kind;
  e->ptr = ptr;
  e->help = gh_strdup(help);
  e->owned = NULL;
  char buf[256];
  value_to_text(e, buf, sizeof buf);
  e->deflt = gh_strdup(buf);
}

gh_opts *gh_opts_new(const char *usage) {
  gh_opts *o = gh_calloc(1, sizeof *o);
  o->usage = gh_strdup(usage);
  o->verbose = 0;
  add(o, "verbose", OPT_INT, &o->verbose, "Verbose level (higher->more logging)");
  add(o, "config", OPT_STRING, &o->config, "Configuration file to read (this option may be repeated)");
  add(o, "help", OPT_BOOL, &o->help, "Print out usage message");
  return o;
}

void gh_opts_bool(gh_opts *o, const char *n, int *v, const char *h) { add(o, n, OPT_BOOL, v, h); }
void gh_opts_int(gh_opts *o, const char *n, int32_t *v, const char *h) { add(o, n, OPT_INT, v, h); }
void gh_opts_int64(gh_opts *o, const char *n, int64_t *v, const char *h) { add(o, n, OPT_INT64, v, h); }
void gh_opts_double(gh_opts *o, const char *n, double *v, const char *h) { add(o, n, OPT_DOUBLE, v, h); }
void gh_opts_float(gh_opts *o, const char *n, float *v, const char *h) { add(o, n, OPT_FLOAT, v, h); }
void gh_opts_string(gh_opts *o, const char *n, const char **v, const char *h) { add(o, n, OPT_STRING, v, h); }

void gh_opts_check(gh_opts *o, void (*fn)(void *ctx), void *ctx) {
  if (o->num_checks == (int)(sizeof o->check / sizeof o->check[0]))
    gh_die("internal error: more than %d option validators", o->num_checks);
  o->check[o->num_checks] = fn;
  o->check_ctx[o->num_checks++] = ctx;
}

static void print_usage(gh_opts *o) {
  fprintf(stderr, "\n%s\n", o->usage);
  fprintf(stderr, "Options:\n");
  for (int i = 3; i < o->num_opts; ++i)
    fprintf(stderr, "  --%-28s: %s (%s, default = %s)\n", o->opts[i].name, o->opts[i].help,
            o->opts[i].kind == OPT_BOOL ? "bool" : o->opts[i].kind == OPT_STRING ? "string"
            : o->opts[i].kind == OPT_DOUBLE || o->opts[i].kind == OPT_FLOAT ? "float" : "int",
            o->opts[i].deflt);
  fprintf(stderr, "\nStandard options:\n");
  for (int i = 0; i < 3; ++i)
    fprintf(stderr, "  --%-28s: %s (default = %s)\n", o->opts[i].name, o->opts[i].help, o->opts[i].deflt);
  fprintf(stderr, "\n");
}

void gh_opts_usage_exit(gh_opts *o) {
  print_usage(o);
  exit(1);
}

/* Names compare with '-' and '_' equal, as Kaldi normalises them. */
static int name_eq(const char *a, const char *b, size_t blen) {
  size_t i = 0;
  for (; a[i] && i < blen; ++i) {
    char x = a[i] == '_' ? '-' : a[i], y = b[i] == '_' ? '-' : b[i];
    if (x != y) return 0;
  }
  return a[i] == '\0' && i == blen;
}

static void set_value(gh_opts *o, opt_entry *e, const char *val, int has_val, const char *where) {
  char *end = NULL;
  errno = 0;
  switch (e->kind) {
    case OPT_BOOL:
      if (!has_val || !strcmp(val, "true") || !strcmp(val, "1")) *(int *)e->ptr = 1;
      else if (!strcmp(val, "false") || !strcmp(val, "0")) *(int *)e->ptr = 0;
      else gh_die("%s: invalid value '%s' for boolean option --%s (use true or false)", where, val, e->name);
      return;
    case OPT_STRING:
      if (!has_val) gh_die("%s: option --%s needs a value (--%s=VALUE)", where, e->name, e->name);
      free(e->owned);
      e->owned = gh_strdup(val);
      *(const char **)e->ptr = e->owned;
      return;
    default: break;
  }
  if (!has_val || !*val) gh_die("%s: option --%s needs a value (--%s=VALUE)", where, e->name, e->name);
  if (e->kind == OPT_INT || e->kind == OPT_INT64) {
    long long v = strtoll(val, &end, 10);
    if (*end || errno || (e->kind == OPT_INT && (v < INT32_MIN || v > INT32_MAX)))
      gh_die("%s: invalid integer '%s' for option --%s", where, val, e->name);
    if (e->kind == OPT_INT) *(int32_t *)e->ptr = (int32_t)v;
    else *(int64_t *)e->ptr = v;
  } else {
    double v = strtod(val, &end);
    if (*end || errno == ERANGE) gh_die("%s: invalid number '%s' for option --%s", where, val, e->name);
    if (!isfinite(v) || (e->kind == OPT_FLOAT && !isfinite((float)v)))
      gh_die("%s: option --%s must be a finite number, got '%s'", where, e->name, val);
    if (e->kind == OPT_DOUBLE) *(double *)e->ptr = v;
    else *(float *)e->ptr = (float)v;
  }
  (void)o;
}

static void parse_one(gh_opts *o, const char *arg, const char *where);

static void read_config(gh_opts *o, const char *file) {
  if (o->config_depth >= GH_MAX_CONFIG_DEPTH)
    gh_die("config file '%s': config files nested more than %d deep (a file that includes itself?)", file,
           GH_MAX_CONFIG_DEPTH);
  FILE *f = fopen(file, "r");
  if (!f) gh_die("cannot open config file '%s'", file);
  o->config_depth++;
  char line[4096];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    ++lineno;
    char *h = strchr(line, '#');
    if (h) *h = '\0';
    char *s = line;
    while (*s == ' ' || *s == '\t') ++s;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
    if (!*s) continue;
    char where[1200];
    snprintf(where, sizeof where, "config file '%s', line %d", file, lineno);
    if (strncmp(s, "--", 2) != 0) gh_die("%s: expected --name=value, got '%s'", where, s);
    parse_one(o, s, where);
  }
  fclose(f);
  o->config_depth--;
}

/* Edit distance (insertions, deletions, substitutions, each 1; '_' = '-',
 * case folded) between option name a and the first blen bytes of b, capped
 * at 99 for names longer than 63. */
static int name_distance(const char *a, const char *b, size_t blen) {
  size_t alen = strlen(a);
  if (alen > 63 || blen > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= blen; ++j) row[j] = (int)j;
  for (size_t i = 1; i <= alen; ++i) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= blen; ++j) {
      char x = a[i - 1] == '_' ? '-' : (char)(a[i - 1] | 0x20), y = b[j - 1] == '_' ? '-' : (char)(b[j - 1] | 0x20);
      int best = diag + (x != y);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = row[j];
      row[j] = best;
    }
  }
  return row[blen];
}

/* The registered option nearest to the unknown name (name, nlen): edit
 * distance at most max(2, nlen / 3), or the unknown name a prefix of it
 * (at least 3 characters); NULL if none is that near. */
static const char *nearest_option(const gh_opts *o, const char *name, size_t nlen) {
  const char *best = NULL;
  int best_d = (int)(nlen / 3 > 2 ? nlen / 3 : 2) + 1;
  for (int i = 0; i < o->num_opts; ++i) {
    const char *n = o->opts[i].name;
    int d = name_distance(n, name, nlen);
    size_t k = 0;
    while (k < nlen && n[k] && (n[k] == name[k] || (n[k] == '_' && name[k] == '-') || (n[k] == '-' && name[k] == '_')))
      ++k;
    if (nlen >= 3 && k == nlen && n[k] && d > 1)
      d = 1; /* a prefix: --num-it for --num-iters */
    if (d < best_d) { best_d = d; best = n; }
  }
  return best;
}

static void parse_one(gh_opts *o, const char *arg, const char *where) {
  const char *name = arg + 2;
  const char *eq = strchr(name, '=');
  size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
  for (int i = 0; i < o->num_opts; ++i) {
    opt_entry *e = &o->opts[i];
    if (!name_eq(e->name, name, nlen)) continue;
    set_value(o, e, eq ? eq + 1 : "", eq != NULL, where);
    if (e->ptr == &o->config && o->config) {
      /* The name is copied: a nested --config line replaces o->config. */
      char *file = gh_strdup(o->config);
      read_config(o, file);
      free(file);
    }
    return;
  }
  /* The error first, on one line, with the nearest option's name (no usage:
   * 40 lines of it buried the message); --help prints the usage. */
  const char *near = nearest_option(o, name, nlen);
  if (near)
    gh_die("%s: unknown option '%.*s' (did you mean --%s? --help lists the options)", where, (int)(nlen + 2), arg,
           near);
  gh_die("%s: unknown option '%.*s' (--help lists the options)", where, (int)(nlen + 2), arg);
}

int gh_opts_parse(gh_opts *o, int argc, char **argv) {
  o->args = gh_calloc(argc + 1, sizeof *o->args);
  o->num_args = 0;
  int only_args = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!only_args && !strcmp(a, "--")) { only_args = 1; continue; }
    if (!only_args && a[0] == '-' && a[1] == '-' && a[2]) {
      parse_one(o, a, "command line");
      continue;
    }
    o->args[o->num_args++] = argv[i];
  }
  gh_verbose = o->verbose;
  if (o->help) { print_usage(o); exit(0); }
  for (int i = 0; i < o->num_checks; ++i) o->check[i](o->check_ctx[i]);
  return o->num_args;
}

const char *gh_opts_arg(gh_opts *o, int i) {
  if (i < 0 || i >= o->num_args) gh_die("internal error: positional argument %d of %d requested", i, o->num_args);
  return o->args[i];
}
int gh_opts_num_args(gh_opts *o) { return o->num_args; }

void gh_opts_free(gh_opts *o) {
  for (int i = 0; i < o->num_opts; ++i) {
    free(o->opts[i].name); free(o->opts[i].help); free(o->opts[i].deflt); free(o->opts[i].owned);
  }
  free(o->opts); free(o->args); free(o->usage); free(o);
}

int gh_parse_size(const char *s, int64_t *bytes) {
  if (!s || !*s) return -1;
  char *end = NULL;
  const double v = strtod(s, &end);
  double mult = 1;
  if (end && (*end == 'K' || *end == 'k')) mult = 1024.0, ++end;
  else if (end && (*end == 'M' || *end == 'm')) mult = 1024.0 * 1024, ++end;
  else if (end && (*end == 'G' || *end == 'g')) mult = 1024.0 * 1024 * 1024, ++end;
  if (!end || end == s || *end || !(v > 0) || v * mult > 9e18) return -1;
  *bytes = (int64_t)(v * mult);
  return 0;
}
