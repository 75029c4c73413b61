/* opts.h -- Kaldi-style command-line options (util/parse-options.h).
 *
 * Options are "--name=value" (also "--name value" is NOT accepted, as in
 * Kaldi; booleans accept "--flag", "--flag=true|false").  They may appear
 * anywhere before "--"; the rest are positional arguments.  Every tool has
 * --help, --verbose=N, --config=FILE (lines "--name=value", '#' comments).
 * Unknown options and bad values die with the usage printed.
 */
#ifndef GH_OPTS_H
#define GH_OPTS_H
#include <stddef.h>
#include <stdint.h>

typedef struct gh_opts gh_opts;

gh_opts *gh_opts_new(const char *usage);
void gh_opts_bool(gh_opts *o, const char *name, int *v, const char *help);
void gh_opts_int(gh_opts *o, const char *name, int32_t *v, const char *help);
void gh_opts_int64(gh_opts *o, const char *name, int64_t *v, const char *help);
void gh_opts_double(gh_opts *o, const char *name, double *v, const char *help);
void gh_opts_float(gh_opts *o, const char *name, float *v, const char *help);
/* *v points to a string that the parser replaces (with a malloc'd copy). */
void gh_opts_string(gh_opts *o, const char *name, const char **v, const char *help);
/* A validator of option values: gh_opts_parse calls fn(ctx) once every
 * option is parsed (before it returns; not on --help), in registration
 * order, so a bad value ends the tool with fn's one error line before any
 * input is read.  fn dies (gh_die) on a bad value.  At most 8 per parser
 * (dies otherwise: an internal error). */
void gh_opts_check(gh_opts *o, void (*fn)(void *ctx), void *ctx);
/* Parse argv; returns the number of positional args; gh_opts_arg(o, i)
 * (0-based) gives them.  Prints usage and exits 0 on --help. */
int gh_opts_parse(gh_opts *o, int argc, char **argv);
const char *gh_opts_arg(gh_opts *o, int i);
int gh_opts_num_args(gh_opts *o);
/* The registered options' current values as "--name=value\n" lines in
 * registration order (booleans true/false, numbers exactly: doubles with
 * 17 digits, strings as given), leaving out those named in skip (a
 * NULL-terminated list of names without "--"; may be NULL).  Writes at
 * most n bytes to buf (NUL-terminated when n > 0) and returns the length
 * of the whole text (without the NUL), as snprintf.  For processes that
 * must run with the same options (comm.h gh_comm_check_options). */
size_t gh_opts_values(const gh_opts *o, const char *const *skip, char *buf, size_t n);
/* Print usage + options on stderr and exit 1 (wrong argument count). */
void gh_opts_usage_exit(gh_opts *o);
void gh_opts_free(gh_opts *o);
/* A size in bytes as options give it: a positive number with an optional
 * K, M or G suffix (powers of 1024), e.g. 20G, 512M or 1000000.  Returns 0
 * and sets *bytes, or -1 (nothing set) for anything else or a size above
 * 9e18. */
int gh_parse_size(const char *s, int64_t *bytes);

#endif
