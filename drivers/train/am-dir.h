/* am-dir.h -- the directories of the resident acoustic-model trainers
 * (gmm-train-mono, gmm-train-tri; drivers/train/am-train.h): the lang and
 * data directories read as Kaldi's train_mono.sh / train_deltas.sh read them,
 * and the experiment directory written as the scripts write it (final.mdl,
 * final.occs, ali.JOB.gz, num_jobs, cmvn_opts, phones.txt, log/train.log).
 *
 * Errors: every reader dies (gh_die) with one line naming the file, the line
 * and what was wrong; a missing input is reported before anything starts
 * (gh_am_lang_open, gh_am_path with must_exist).  The writers die naming
 * the file they cannot write.
 */
#ifndef GH_AM_DIR_H
#define GH_AM_DIR_H
#include <stdint.h>
#include <stdio.h>
#include "gmm/gmm.h"
#include "hmm/transition.h"
#include "train/am-train.h"
#include "train/comm.h"
#include "tree/context-dep.h"

/* "dir/name" (malloc'd).  must_exist: dies "<path>: cannot read <what>
 * (<dir>): <reason>" unless the file is readable (for inputs). */
char *gh_am_path(const char *dir, const char *name, int must_exist, const char *what);
/* mkdir -p dir (mode 0777 before the umask); dies naming the directory it
 * cannot create. */
void gh_am_mkdir_p(const char *dir);
/* The positive integers of a text file (whitespace or ':' separated: an
 * .int or .csl file): [*n] (malloc'd; NULL when *n = 0), in file order, or
 * ascending when sorted (a set of phones).  Dies naming path, the line and
 * `what` on a token that is not an integer in 1 .. INT32_MAX, or when path
 * cannot be read. */
int32_t *gh_am_read_ints(const char *path, int32_t *n, const char *what, int sorted);

/* The lang directory's files that both trainers read. */
typedef struct {
  /* "lang/<file>", checked readable by gh_am_lang_open */
  char *topo_path;       /* topo */
  char *sets_path;       /* phones/sets.int */
  char *lex_path;        /* L.fst (the caller reads it: gh_am_trainer_new takes it over) */
  char *disambig_path;   /* phones/disambig.int */
  char *words_path;      /* words.txt */
  char *oov_path;        /* oov.int */
  char *silence_path;    /* phones/optional_silence.csl */
  char *phones_path;     /* phones.txt (copied to the experiment directory) */
  /* read by gh_am_lang_read */
  int32_t oov;           /* the OOV word id */
  int32_t *silence;      /* [num_silence] sorted phone ids (boost-silence's phones) */
  int32_t num_silence;
  int32_t *disambig;     /* [num_disambig] disambiguation symbols, file order */
  int32_t num_disambig;
  int32_t nsets;         /* the shared phone sets (Kaldi's ReadSharedPhonesList): */
  int32_t **sets;        /* [nsets][set_sizes[i]], each sorted */
  int32_t *set_sizes;
  gh_transition_model *topo; /* gh_topology_read of topo_path */
} gh_am_lang;

/* Sets l's paths and checks every file is readable (dies naming the first
 * missing one: "<lang>/L.fst: cannot read the lexicon FST of the lang
 * directory ..."); reads nothing else. */
void gh_am_lang_open(gh_am_lang *l, const char *lang);
/* Reads the files of an opened l.  Dies naming the file and line: oov.int
 * not one positive integer, a bad phone id or an empty line in sets.int
 * (ids 1 .. GH_MAX_PHONE), a bad token in the other integer files, a bad
 * topology. */
void gh_am_lang_read(gh_am_lang *l);
void gh_am_lang_free(gh_am_lang *l);

/* data/text through lang/words.txt, words not in it mapped to the OOV
 * (utils/sym2int.pl --map-oov; one log line counts them): the lines with a
 * key, in file order. */
typedef struct {
  int64_t n;
  char **keys;           /* [n] */
  int32_t **words;       /* [n][num_words[i]] word ids */
  int32_t *num_words;    /* [n] */
} gh_am_text;
/* Dies naming the file and line on a words.txt line that is not "<word>
 * <id>" (id 0 .. INT32_MAX), or a file that cannot be read. */
void gh_am_text_read(gh_am_text *t, const char *text, const char *words_txt, int32_t oov);
void gh_am_text_free(gh_am_text *t);

/* The features rspecifier of a data directory: feats_opt when non-empty
 * (--feats), else the scripts' pipeline "apply-cmvn <cmvn_opts>
 * --utt2spk=ark:data/utt2spk scp:data/cmvn.scp scp:data/feats.scp ark:- |
 * add-deltas <delta_opts> ark:- ark:- |" with our apply-cmvn and add-deltas
 * from this program's directory (malloc'd).  Dies naming the data
 * directory's file (feats.scp, cmvn.scp, utt2spk) that cannot be read. */
char *gh_am_feats_rspec(const char *data, const char *feats_opt, const char *cmvn_opts, const char *delta_opts);

/* Rank 0 makes dir and dir/log; every rank waits for it (comm's barrier).
 * Returns dir/log/train.log opened for writing on rank 0 (the caller
 * fcloses it), NULL on the other ranks.  Dies naming what it cannot create. */
FILE *gh_am_exp_dir_begin(const char *dir, gh_comm *comm);
/* dir/mdl_name (binary .mdl) and dir/tree (binary) of model and ctx. */
void gh_am_write_model_tree(const char *dir, const char *mdl_name, const gh_gmm_set *model, const gh_ctx_dep *ctx);
/* Occupancies [n] as gmm-est --write-occs / gmm-init-model --write-occs
 * write them (a Kaldi float vector, binary or text): from d (double) when
 * not NULL, else from f. */
void gh_am_write_occs(const char *path, int binary, const double *d, const float *f, int32_t n);
/* Passes x = from .. to-1 of tr (gh_am_trainer_pass), the model checked the
 * same on every rank after each (gh_comm_check_same of gh_gmm_set_hash of
 * model); rank 0 logs each pass (the realignment and the average
 * log-likelihood per frame, natural log, of the E-step) and writes its
 * line to tlog (when not NULL).  occs: [num_pdfs] the last pass's
 * occupancies.  Adds this rank's alignment, E-step and M-step seconds to
 * *align_s, *estep_s, *mstep_s. */
void gh_am_run_passes(gh_am_trainer *tr, gh_comm *comm, const gh_gmm_set *model, int32_t from, int32_t to,
                      double *occs, FILE *tlog, double *align_s, double *estep_s, double *mstep_s);
/* The scripts' final files of an experiment directory: dir/ali.JOB.gz with
 * JOB = rank + 1 (every rank, this rank's alignments: gh_am_trainer_write_ali),
 * and on rank 0 dir/final.mdl (model, binary), dir/final.occs (occs
 * [num_pdfs], text), dir/num_jobs (the number of ranks), dir/cmvn_opts
 * (cmvn_opts and a newline) and dir/phones.txt (a copy of phones_txt). */
void gh_am_write_final(gh_am_trainer *tr, gh_comm *comm, const char *dir, const gh_gmm_set *model,
                       const double *occs, const char *cmvn_opts, const char *phones_txt);

#endif
