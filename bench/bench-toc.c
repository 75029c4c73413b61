/* bench-toc.c -- the table of contents a resident trainer reads before its
 * first iteration (hmm-train's read_plan, drivers/train/hmm-train.c; gmm-est-gpu's
 * shard loader, drivers/train/shard.c): the feature index of an scp
 * (gh_feat_toc_open: the list, one header pread per entry, the key order),
 * one transcript lookup per utterance in a text archive (gh_rand_reader_has_key,
 * as hmm-train), and the plan (gh_shard_plan_make: sorted keys, blocks,
 * shards).  Wall time of each step, the best of --reps passes (the files in
 * the page cache after the first).
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Ilib -Ikernels -fopenmp -o /tmp/bench-toc bench/bench-toc.c \
 *     build/libgmmhmm.a build/libgmmhmm-kernels.a $(make -s print-ldlibs)
 *   /tmp/bench-toc FEATS_RSPEC TEXT_RSPEC [REPS]
 * e.g. on bench/hmm-train.sh's work directory (200,000 utterances, 8 M frames):
 *   /tmp/bench-toc scp:data/rep/feats.scp ark,t:data/rep/text 5
 * Prints "index <s> s  transcripts <s> s  plan <s> s  (<n> utterances)". */
#include "base/gh-base.h"
#include "io/table.h"
#include "train/shard.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FEATS_RSPEC TEXT_RSPEC [REPS]\n", argv[0]);
    return 1;
  }
  const int reps = argc > 3 ? atoi(argv[3]) : 3;
  double best[3] = {1e30, 1e30, 1e30};
  int64_t n = 0;
  for (int r = 0; r < reps; ++r) {
    const double t0 = gh_seconds();
    gh_feat_toc *toc = gh_feat_toc_open(argv[1]);
    const double t1 = gh_seconds();
    n = gh_feat_toc_size(toc);
    gh_rand_reader *tr = gh_rand_reader_open(argv[2], GH_OBJ_TOKEN_VECTOR);
    const char **keys = gh_malloc(sizeof(char *) * (size_t)(n ? n : 1));
    int32_t *frames = gh_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!gh_rand_reader_has_key(tr, gh_feat_toc_key(toc, i))) continue;
      keys[m] = gh_feat_toc_key(toc, i);
      frames[m++] = gh_feat_toc_rows(toc, i);
    }
    const double t2 = gh_seconds();
    gh_shard_plan p;
    gh_shard_plan_make(&p, keys, frames, m, 262144, 1, argv[1]);
    const double t3 = gh_seconds();
    gh_shard_plan_free(&p);
    free(keys);
    free(frames);
    gh_rand_reader_close(tr);
    gh_feat_toc_close(toc);
    const double d[3] = {t1 - t0, t2 - t1, t3 - t2};
    for (int k = 0; k < 3; ++k)
      if (d[k] < best[k]) best[k] = d[k];
  }
  printf("index %.4f s  transcripts %.4f s  plan %.4f s  (%lld utterances, best of %d)\n", best[0], best[1], best[2],
         (long long)n, reps);
  return 0;
}
