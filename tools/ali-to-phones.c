/* ali-to-phones -- convert alignments of transition-ids to phone sequences,
 * per-frame phones, (phone, length) pairs or a CTM (Kaldi
 * bin/ali-to-phones.cc; phone boundaries by Kaldi's SplitToPhones,
 * lib/hmm/hmm-utils.c). */
#include <stdio.h>
#include <stdlib.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/hmm-utils.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"
#include "io/table.h"

static const char *usage =
    "Convert model-level alignments to phone-sequences (in integer, not text, form)\n"
    "Usage:  ali-to-phones  [options] <model> <alignments-rspecifier> "
    "<phone-transcript-wspecifier|ctm-wxfilename>\n"
    "e.g.: \n"
    " ali-to-phones 1.mdl ark:1.ali ark:-\n"
    "or:\n"
    " ali-to-phones --ctm-output 1.mdl ark:1.ali 1.ctm\n"
    "See also: show-alignments\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int per_frame = 0, write_lengths = 0, ctm_output = 0;
  float frame_shift = 0.01f;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "ctm-output", &ctm_output,
               "If true, output the alignments in ctm format (the confidences will be set to 1)");
  gh_opts_float(po, "frame-shift", &frame_shift, "frame shift used to control the times of the ctm output");
  gh_opts_bool(po, "per-frame", &per_frame, "If true, write out the frame-level phone alignment (else phone sequence)");
  gh_opts_bool(po, "write-lengths", &write_lengths, "If true, write the #frames for each phone (different format)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  if (per_frame && write_lengths) gh_die("--per-frame and --write-lengths cannot be used together");
  const char *model_rx = gh_opts_arg(po, 0), *rspec = gh_opts_arg(po, 1), *out_spec = gh_opts_arg(po, 2);

  gh_transition_model *tm = gh_transition_read_file(model_rx);
  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_INT32_VECTOR);
  gh_writer *writer = NULL;
  gh_ostream *ctm = NULL;
  FILE *cfp = NULL;
  int prec = (double)frame_shift >= 0.01 ? 2 : 3; /* Kaldi: float shift compared with 0.01 */
  if (ctm_output) {
    ctm = gh_ostream_open(out_spec);
    cfp = gh_ostream_fp(ctm);
  } else {
    writer = gh_writer_open(out_spec);
  }
  gh_ivector outv = {0, NULL};
  int32_t *ends = NULL, nph = 0;
  int64_t n_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
    const char *key = gh_seq_reader_key(reader);
    const gh_ivector *ali = gh_seq_reader_value(reader);
    gh_transition_check_alignment(tm, ali->data, ali->dim, rspec, key, model_rx);
    gh_split_to_phones(tm, ali->data, ali->dim, &ends, &nph);
    if (ctm_output) {
      float start = 0.0f;
      for (int32_t i = 0, b = 0; i < nph; b = ends[i], ++i) {
        int32_t phone = gh_transition_tid2phone(tm, ali->data[b]), reps = ends[i] - b;
        float dur = frame_shift * (float)reps;
        fprintf(cfp, "%s 1 %.*f %.*f %d\n", key, prec, (double)start, prec, (double)dur, phone);
        start += dur;
      }
    } else {
      int32_t len = write_lengths ? 2 * nph : per_frame ? ali->dim : nph, k = 0;
      gh_ivector_resize(&outv, len);
      for (int32_t i = 0, b = 0; i < nph; b = ends[i], ++i) {
        int32_t phone = gh_transition_tid2phone(tm, ali->data[b]), reps = ends[i] - b;
        if (write_lengths) {
          outv.data[k++] = phone;
          outv.data[k++] = reps;
        } else if (per_frame) {
          for (int32_t j = 0; j < reps; ++j) outv.data[k++] = phone;
        } else {
          outv.data[k++] = phone;
        }
      }
      gh_writer_write(writer, key, write_lengths ? GH_OBJ_INT32_PAIR_VECTOR : GH_OBJ_INT32_VECTOR, &outv);
    }
    n_done++;
  }
  gh_seq_reader_close(reader);
  if (ctm) gh_ostream_close(ctm);
  if (writer) gh_writer_close(writer);
  gh_log("Done %lld utterances.", (long long)n_done);
  free(ends);
  gh_ivector_free(&outv);
  gh_transition_free(tm);
  gh_opts_free(po);
  return 0;
}
