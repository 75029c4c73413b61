/* fuzz_models.c -- libFuzzer harness: the model and accumulator readers.
 * Input: byte 0 picks the reader (value mod 6), the rest is the file:
 *   0 gh_gmm_set_read (our GMM sets, Kaldi .mdl with its TransitionModel,
 *     Kaldi global <DiagGMM>/<FullGMM>; binary or text), then a write-back
 *     round trip: binary write, read, binary write must give the same bytes,
 *     and text write, read, binary write the same bytes again;
 *   1 gh_accs_read (GMM accumulators, Kaldi's gmm-acc-stats layout), written
 *     back and read again;
 *   2 gh_hmm_set_read (HMM sets), written back and read again;
 *   3 gh_hmm_accs_read (HMM transition accumulators), written back, re-read;
 *   4 gh_hmm_read_discrete (discrete emission matrices);
 *   5 gh_gmm_set_table_read (an archive of models, gmm-adapt-map --spk2utt's),
 *     each model written back, read again and written the same. */
#include "fuzz-common.h"
#include "gmm/gmm.h"
#include "hmm/hmm.h"

static void same_files(const char *a, const char *b) {
  size_t na, nb;
  uint8_t *x = fz_slurp(a, &na), *y = fz_slurp(b, &nb);
  if (na != nb || memcmp(x, y, na)) abort();
  free(x); free(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int which = data[0] % 6;
  FUZZ_BEGIN();
  fz_write_file("in.mdl", data + 1, size - 1);
  switch (which) {
    case 0: {
      gh_gmm_set s;
      memset(&s, 0, sizeof s);
      gh_gmm_set_read("in.mdl", &s);
      gh_gmm_set_write("b1.mdl", 1, &s);
      gh_gmm_set_write("t1.mdl", 0, &s);
      gh_gmm_set_free(&s);
      gh_gmm_set_read("b1.mdl", &s);
      gh_gmm_set_write("b2.mdl", 1, &s);
      gh_gmm_set_free(&s);
      same_files("b1.mdl", "b2.mdl");
      gh_gmm_set_read("t1.mdl", &s);
      gh_gmm_set_write("b3.mdl", 1, &s);
      gh_gmm_set_free(&s);
      same_files("b1.mdl", "b3.mdl");
      break;
    }
    case 1: {
      gh_accs_set a;
      memset(&a, 0, sizeof a);
      gh_accs_read("in.mdl", &a);
      gh_accs_write("a1.acc", 1, &a);
      gh_accs_free(&a);
      gh_accs_read("a1.acc", &a);
      gh_accs_write("a2.acc", 1, &a);
      gh_accs_free(&a);
      same_files("a1.acc", "a2.acc");
      break;
    }
    case 2: {
      gh_hmm_set s;
      memset(&s, 0, sizeof s);
      gh_hmm_set_read("in.mdl", &s);
      gh_hmm_set_write("h1.hmm", 1, &s);
      gh_hmm_set_free(&s);
      gh_hmm_set_read("h1.hmm", &s);
      gh_hmm_set_write("h2.hmm", 1, &s);
      gh_hmm_set_free(&s);
      same_files("h1.hmm", "h2.hmm");
      break;
    }
    case 3: {
      gh_hmm_accs a;
      memset(&a, 0, sizeof a);
      gh_hmm_accs_read("in.mdl", &a);
      gh_hmm_accs_write("h1.acc", 1, &a);
      gh_hmm_accs_free(&a);
      gh_hmm_accs_read("h1.acc", &a);
      gh_hmm_accs_write("h2.acc", 1, &a);
      gh_hmm_accs_free(&a);
      same_files("h1.acc", "h2.acc");
      break;
    }
    case 4: {
      gh_matrix m = {0, 0, NULL};
      gh_hmm_read_discrete("in.mdl", &m);
      gh_matrix_free(&m);
      break;
    }
    case 5: {
      char **keys = NULL;
      gh_gmm_set *sets = NULL;
      const int32_t n = gh_gmm_set_table_read("ark:in.mdl", &keys, &sets);
      for (int32_t i = 0; i < n; ++i) {
        gh_gmm_set s;
        gh_gmm_set_write("b1.mdl", 1, &sets[i]);
        gh_gmm_set_read("b1.mdl", &s);
        gh_gmm_set_write("b2.mdl", 1, &s);
        gh_gmm_set_free(&s);
        same_files("b1.mdl", "b2.mdl");
        free(keys[i]);
        gh_gmm_set_free(&sets[i]);
      }
      free(keys);
      free(sets);
      break;
    }
  }
  FUZZ_END();
}
