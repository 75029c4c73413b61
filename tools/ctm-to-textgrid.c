/* ctm-to-textgrid -- one Praat TextGrid (long format) per utterance from a
 * word CTM and a phone CTM, as the Montreal Forced Aligner writes them: a
 * "words" and a "phones" tier ("<speaker> - words", "<speaker> - phones"
 * with --utt2spk), intervals covering the whole utterance, silence and gaps as
 * empty intervals (lib/io/textgrid.h).  The CTMs are ali-to-word-ctm's and
 * ali-to-phones --ctm-output's (Kaldi's get_train_ctm.sh and ali-to-phones
 * write the same), with text or integer labels (--word-symbol-table,
 * --phone-symbol-table).  Each file is written whole (temp + rename) when
 * it is finished. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "base/strmap.h"
#include "hmm/hmm-utils.h"
#include "io/kaldi-io.h"
#include "io/textgrid.h"

static const char *usage =
    "Write one Praat TextGrid (long format: a words and a phones tier, as the Montreal Forced Aligner)\n"
    "per utterance from a word CTM and a phone CTM, into <textgrid-dir>/<utt>.TextGrid.\n"
    "Usage:  ctm-to-textgrid [options] <word-ctm-rxfilename> <phone-ctm-rxfilename> <textgrid-dir>\n"
    "e.g.: \n"
    " ctm-to-textgrid --utt2dur=data/utt2dur --phone-symbol-table=lang/phones.txt words.ctm phones.ctm textgrid\n"
    "See also: ali-to-word-ctm, ali-to-phones --ctm-output\n";

typedef struct {
  char *utt, *label;
  double start, end;
} ctm_line;

typedef struct {
  ctm_line *v;
  int64_t n, cap;
} ctm_file;

/* "<utt> <channel> <start> <dur> <label> [<conf>]" lines */
static void read_ctm(const char *rx, ctm_file *c, char **syms, int32_t nsyms, const char *syms_rx) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("Could not open CTM %s: %s", rx, gh_last_error());
  int64_t line_no = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *save = NULL;
    line_no++;
    char *f[7];
    int nf = 0;
    for (char *t = strtok_r(line, " \t\r", &save); t && nf < 7; t = strtok_r(NULL, " \t\r", &save)) f[nf++] = t;
    if (nf == 0) continue;
    if (nf < 5 || nf > 6) gh_die("%s: line %lld is not \"utt channel start duration label [confidence]\"", rx,
                                 (long long)line_no);
    char *e1 = NULL, *e2 = NULL;
    const double st = strtod(f[2], &e1), du = strtod(f[3], &e2);
    if (*e1 || *e2 || !(st >= 0.0) || !(du >= 0.0) || st > 1e9 || du > 1e9)
      gh_die("%s: line %lld (utterance %s): start \"%s\" or duration \"%s\" is not a time >= 0", rx,
             (long long)line_no, f[0], f[2], f[3]);
    if (strchr(f[0], '/')) gh_die("%s: line %lld: utterance id %s contains '/', not a file name", rx, (long long)line_no, f[0]);
    const char *label = f[4];
    if (syms) {
      char *end = NULL;
      long id = strtol(label, &end, 10);
      if (*end || id < 0 || id >= nsyms || !syms[id])
        gh_die("%s: line %lld (utterance %s): label \"%s\" is not an id of %s", rx, (long long)line_no, f[0], label,
               syms_rx);
      label = syms[id];
    }
    if (c->n >= c->cap) {
      c->cap = c->cap ? 2 * c->cap : 4096;
      c->v = gh_realloc(c->v, (size_t)c->cap * sizeof(ctm_line));
    }
    /* start + duration rounded to microseconds: 0.59 + 0.06 is 0.65, as written */
    const double en = round((st + du) * 1e6) / 1e6;
    c->v[c->n++] = (ctm_line){gh_strdup(f[0]), gh_strdup(label), st, en};
  }
  gh_istream_close(in);
}

/* "<utt> <value>" file into map utt -> index of vals */
static char **read_utt_map(const char *rx, gh_strmap *m, int64_t *n) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("Could not open %s: %s", rx, gh_last_error());
  char **vals = NULL;
  int64_t cap = 0, line_no = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *save = NULL;
    line_no++;
    char *k = strtok_r(line, " \t\r", &save), *v = k ? strtok_r(NULL, " \t\r", &save) : NULL;
    if (!k) continue;
    if (!v || strtok_r(NULL, " \t\r", &save)) gh_die("%s: line %lld is not \"utterance value\"", rx, (long long)line_no);
    if (*n >= cap) {
      cap = cap ? 2 * cap : 1024;
      vals = gh_realloc(vals, (size_t)cap * sizeof(char *));
    }
    if (!gh_strmap_put(m, k, (int32_t)*n)) gh_die("%s: line %lld: utterance %s listed twice", rx, (long long)line_no, k);
    vals[(*n)++] = gh_strdup(v);
  }
  gh_istream_close(in);
  return vals;
}

static int in_list(const char *s, const char *csv) {
  const size_t n = strlen(s);
  for (const char *p = csv; *p;) {
    const char *q = strchr(p, ',');
    const size_t m = q ? (size_t)(q - p) : strlen(p);
    if (m == n && !strncmp(p, s, n)) return 1;
    if (!q) break;
    p = q + 1;
  }
  return 0;
}

static const char *strip_position(const char *s, char *buf, size_t cap) {
  const size_t n = strlen(s);
  if (n > 2 && s[n - 2] == '_' && strchr("BIES", s[n - 1]) && n - 2 < cap) {
    memcpy(buf, s, n - 2);
    buf[n - 2] = '\0';
    return buf;
  }
  return s;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *utt2dur_rx = "", *utt2spk_rx = "", *phone_syms_rx = "", *word_syms_rx = "";
  const char *silence = "<eps>,SIL,sil";
  int strip = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_string(po, "utt2dur", &utt2dur_rx,
                 "Utterance durations in seconds (\"utt seconds\" lines, Kaldi's utt2dur): the TextGrids' end "
                 "(default: the end of the last phone)");
  gh_opts_string(po, "utt2spk", &utt2spk_rx,
                 "Utterance-to-speaker map: tiers named \"<speaker> - words\" and \"<speaker> - phones\" (else "
                 "\"words\" and \"phones\")");
  gh_opts_string(po, "phone-symbol-table", &phone_syms_rx, "Symbol table (lang/phones.txt) for integer phone labels");
  gh_opts_string(po, "word-symbol-table", &word_syms_rx, "Symbol table (lang/words.txt) for integer word labels");
  gh_opts_string(po, "silence-labels", &silence,
                 "Comma-separated labels written as empty intervals (silence), as the Montreal Forced Aligner does");
  gh_opts_bool(po, "strip-word-positions", &strip, "Write phones without their word-position suffix (_B _I _E _S)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *wctm_rx = gh_opts_arg(po, 0), *pctm_rx = gh_opts_arg(po, 1), *dir = gh_opts_arg(po, 2);
  gh_set_deferred_commit(0);

  char **psyms = NULL, **wsyms = NULL;
  int32_t npsyms = 0, nwsyms = 0;
  if (phone_syms_rx[0]) psyms = gh_phone_names_read(phone_syms_rx, &npsyms);
  if (word_syms_rx[0]) wsyms = gh_phone_names_read(word_syms_rx, &nwsyms);
  ctm_file W = {0}, P = {0};
  read_ctm(wctm_rx, &W, wsyms, nwsyms, word_syms_rx);
  read_ctm(pctm_rx, &P, psyms, npsyms, phone_syms_rx);
  gh_strmap dur_map = {0}, spk_map = {0};
  int64_t ndur = 0, nspk = 0;
  char **durs = utt2dur_rx[0] ? read_utt_map(utt2dur_rx, &dur_map, &ndur) : NULL;
  char **spks = utt2spk_rx[0] ? read_utt_map(utt2spk_rx, &spk_map, &nspk) : NULL;

  /* the word lines of each utterance: wfirst[u] .. wlast[u] (CTMs are grouped by utterance) */
  gh_strmap wmap = {0};
  int64_t *wfirst = gh_malloc(((size_t)W.n + 1) * sizeof(int64_t)), *wlast = gh_malloc(((size_t)W.n + 1) * sizeof(int64_t));
  int32_t nwu = 0;
  for (int64_t i = 0; i < W.n; ++i) {
    if (i > 0 && !strcmp(W.v[i].utt, W.v[i - 1].utt)) {
      wlast[nwu - 1] = i + 1;
      continue;
    }
    if (!gh_strmap_put(&wmap, W.v[i].utt, nwu))
      gh_die("%s: the lines of utterance %s are not together (line %lld)", wctm_rx, W.v[i].utt, (long long)i + 1);
    wfirst[nwu] = i;
    wlast[nwu++] = i + 1;
  }
  struct stat st;
  if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) gh_die("Could not create directory %s: %s", dir, gh_last_error());
  gh_strmap seen = {0};
  gh_tg_interval *wiv = NULL, *piv = NULL, *wout = NULL, *pout = NULL;
  char err[512];
  int64_t n_done = 0, n_err = 0, n_seen = 0;
  char *path = NULL, *pbuf = NULL;
  size_t pbuf_cap = 0;
  for (int64_t a = 0; a < P.n;) {
    int64_t b = a + 1;
    const char *utt = P.v[a].utt;
    while (b < P.n && !strcmp(P.v[b].utt, utt)) b++;
    if (!gh_strmap_put(&seen, utt, (int32_t)n_seen++))
      gh_die("%s: the lines of utterance %s are not together (line %lld)", pctm_rx, utt, (long long)a + 1);
    const int32_t wu = gh_strmap_get(&wmap, utt);
    if (wu < 0) {
      gh_warn("%s: no words for utterance %s (its word alignment failed?): no TextGrid", wctm_rx, utt);
      n_err++;
      a = b;
      continue;
    }
    /* phones: labels stripped of their word position, silence empty */
    const int64_t np = b - a, nw = wlast[wu] - wfirst[wu];
    piv = gh_realloc(piv, (size_t)np * sizeof *piv);
    wiv = gh_realloc(wiv, ((size_t)nw + 1) * sizeof *wiv);
    if ((size_t)np * 64 > pbuf_cap) {
      pbuf_cap = (size_t)np * 64;
      pbuf = gh_realloc(pbuf, pbuf_cap);
    }
    int32_t kp = 0, kw = 0;
    size_t used = 0;
    double end = 0.0;
    for (int64_t i = a; i < b; ++i) {
      if (P.v[i].end > end) end = P.v[i].end;
      const char *lab = strip ? strip_position(P.v[i].label, pbuf + used, 63) : P.v[i].label;
      if (lab == pbuf + used) used += strlen(lab) + 1;
      if (in_list(lab, silence) || in_list(P.v[i].label, silence)) continue;
      piv[kp++] = (gh_tg_interval){P.v[i].start, P.v[i].end, lab};
    }
    for (int64_t i = wfirst[wu]; i < wlast[wu]; ++i) {
      if (W.v[i].end > end) end = W.v[i].end;
      if (in_list(W.v[i].label, silence)) continue;
      wiv[kw++] = (gh_tg_interval){W.v[i].start, W.v[i].end, W.v[i].label};
    }
    if (durs) {
      const int32_t d = gh_strmap_get(&dur_map, utt);
      if (d < 0) gh_die("%s: no duration for utterance %s", utt2dur_rx, utt);
      char *e = NULL;
      const double dv = strtod(durs[d], &e);
      if (*e || !(dv > 0.0)) gh_die("%s: utterance %s: duration \"%s\" is not a number > 0", utt2dur_rx, utt, durs[d]);
      if (dv + 0.0051 < end)
        gh_die("%s: utterance %s lasts %g s, but its alignment ends at %g s", utt2dur_rx, utt, dv, end);
      if (dv > end) end = dv;
    }
    int32_t nwo = 0, npo = 0;
    if (!gh_tg_fill(wiv, kw, 0.0, end, &wout, &nwo, err, sizeof err)) gh_die("%s: utterance %s: %s", wctm_rx, utt, err);
    if (!gh_tg_fill(piv, kp, 0.0, end, &pout, &npo, err, sizeof err)) gh_die("%s: utterance %s: %s", pctm_rx, utt, err);
    char wname[512], pname[512];
    const char *spk = NULL;
    if (spks) {
      const int32_t s = gh_strmap_get(&spk_map, utt);
      if (s < 0) gh_die("%s: no speaker for utterance %s", utt2spk_rx, utt);
      spk = spks[s];
    }
    snprintf(wname, sizeof wname, "%s%swords", spk ? spk : "", spk ? " - " : "");
    snprintf(pname, sizeof pname, "%s%sphones", spk ? spk : "", spk ? " - " : "");
    gh_tg_tier tiers[2] = {{wname, nwo, wout}, {pname, npo, pout}};
    path = gh_realloc(path, strlen(dir) + strlen(utt) + 16);
    sprintf(path, "%s/%s.TextGrid", dir, utt);
    gh_tmpfile *t = gh_tmpfile_open(path);
    gh_tg_write(gh_tmpfile_fp(t), 0.0, end, tiers, 2);
    gh_tmpfile_commit(t);
    free(wout);
    free(pout);
    wout = pout = NULL;
    n_done++;
    a = b;
  }
  for (int32_t u = 0; u < nwu; ++u)
    if (gh_strmap_get(&seen, W.v[wfirst[u]].utt) < 0) {
      gh_warn("%s: no phones for utterance %s: no TextGrid", pctm_rx, W.v[wfirst[u]].utt);
      n_err++;
    }
  gh_log("Wrote %lld TextGrids to %s, %lld utterances skipped", (long long)n_done, dir, (long long)n_err);
  for (int64_t i = 0; i < W.n; ++i) free(W.v[i].utt), free(W.v[i].label);
  for (int64_t i = 0; i < P.n; ++i) free(P.v[i].utt), free(P.v[i].label);
  free(W.v);
  free(P.v);
  for (int64_t i = 0; i < ndur; ++i) free(durs[i]);
  for (int64_t i = 0; i < nspk; ++i) free(spks[i]);
  free(durs);
  free(spks);
  for (int32_t i = 0; i < npsyms; ++i) free(psyms[i]);
  for (int32_t i = 0; i < nwsyms; ++i) free(wsyms[i]);
  free(psyms);
  free(wsyms);
  gh_strmap_free(&dur_map);
  gh_strmap_free(&spk_map);
  gh_strmap_free(&wmap);
  gh_strmap_free(&seen);
  free(wfirst);
  free(wlast);
  free(wiv);
  free(piv);
  free(pbuf);
  free(path);
  gh_opts_free(po);
  return n_done != 0 ? 0 : 1;
}
