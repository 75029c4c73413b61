/* test_shard.c -- drivers/train/shard.h: sorted order, fixed blocks that do not
 * depend on the number of shards, contiguous shards balanced by frames. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh-test.h"
#include "train/shard.h"

/* the same plan cut by brute force: the block boundaries of a greedy pass,
 * independent of the code under test */
static int check_plan(const gh_shard_plan *p, const int32_t *sorted_frames, int64_t n, int64_t B, int R) {
  int ok = p->num_utts == n && p->num_shards == R && p->block_utt[0] == 0 && p->block_utt[p->num_blocks] == n;
  for (int32_t b = 0; b < p->num_blocks && ok; ++b) {
    int64_t f = 0;
    for (int64_t u = p->block_utt[b]; u < p->block_utt[b + 1]; ++u) f += sorted_frames[u];
    ok = p->block_utt[b + 1] > p->block_utt[b];
    /* a block over B frames is one utterance; else the next utterance would not fit */
    if (ok && f > B) ok = p->block_utt[b + 1] - p->block_utt[b] == 1;
    if (ok && b + 1 < p->num_blocks && f <= B) ok = f + sorted_frames[p->block_utt[b + 1]] > B;
  }
  for (int r = 0; r < R && ok; ++r) ok = p->shard_block[r] <= p->shard_block[r + 1];
  return ok && p->shard_block[0] == 0 && p->shard_block[R] == p->num_blocks;
}

int main(void) {
  enum { N = 500 };
  char *keys[N];
  int32_t frames[N];
  srand(7);
  for (int i = 0; i < N; ++i) {
    keys[i] = malloc(32);
    snprintf(keys[i], 32, "spk%02d-utt%04d", rand() % 50, i); /* unsorted */
    frames[i] = 1 + rand() % 400;
    if (i % 97 == 0) frames[i] = 5000; /* longer than a block */
  }
  const int64_t B = 2000;
  gh_shard_plan p1, pr;
  gh_shard_plan_make(&p1, (const char *const *)keys, frames, N, B, 1, "test");
  int sorted = 1;
  for (int i = 1; i < N; ++i) sorted &= strcmp(p1.keys[i - 1], p1.keys[i]) < 0;
  GH_TEST_OK(sorted, "keys in strcmp order");
  int fr_ok = 1;
  for (int i = 0; i < N; ++i) {
    int j = 0;
    while (strcmp(keys[j], p1.keys[i])) ++j;
    fr_ok &= frames[j] == p1.frames[i];
  }
  GH_TEST_OK(fr_ok, "frames follow their keys");
  GH_TEST_OK(check_plan(&p1, p1.frames, N, B, 1), "blocks cut at utterance boundaries, about %lld frames", (long long)B);
  for (int R = 2; R <= 7; ++R) {
    gh_shard_plan_make(&pr, (const char *const *)keys, frames, N, B, R, "test");
    int same = pr.num_blocks == p1.num_blocks;
    for (int32_t b = 0; same && b <= p1.num_blocks; ++b) same = pr.block_utt[b] == p1.block_utt[b];
    GH_TEST_OK(same, "R=%d: the same %d blocks as R=1", R, p1.num_blocks);
    GH_TEST_OK(check_plan(&pr, pr.frames, N, B, R), "R=%d: shards contiguous, cover all blocks", R);
    /* balance: each shard within one block's frames (the largest) of total/R */
    const double target = (double)pr.frame_off[N] / R;
    int64_t maxblock = 0;
    for (int32_t b = 0; b < pr.num_blocks; ++b) {
      int64_t f = pr.frame_off[pr.block_utt[b + 1]] - pr.frame_off[pr.block_utt[b]];
      if (f > maxblock) maxblock = f;
    }
    int bal = 1;
    for (int r = 0; r < R; ++r) bal &= fabs((double)gh_shard_frames(&pr, r) - target) <= maxblock;
    GH_TEST_OK(bal, "R=%d: shard frames within one block (%lld) of %.0f", R, (long long)maxblock, target);
    gh_shard_plan_free(&pr);
  }
  /* more shards than blocks: empty shards, nothing lost */
  int32_t f3[3] = {10, 10, 10};
  const char *k3[3] = {"c", "a", "b"};
  gh_shard_plan_make(&pr, k3, f3, 3, 15, 5, "test");
  int64_t tot = 0;
  for (int r = 0; r < 5; ++r) tot += gh_shard_frames(&pr, r);
  GH_TEST_OK(pr.num_blocks == 3 && tot == 30, "5 shards of 3 one-utterance blocks: %d blocks, %lld frames",
             pr.num_blocks, (long long)tot);
  GH_TEST_OK(!strcmp(pr.keys[0], "a") && !strcmp(pr.keys[2], "c"), "sorted a, b, c");
  char desc[256];
  gh_shard_describe(&pr, 0, desc, sizeof desc);
  printf("# %s\n", desc);
  GH_TEST_OK(strstr(desc, "'a'") != NULL, "describe names the keys");
  gh_shard_plan_free(&pr);
  /* one utterance, two shards: shard 0 gets it, shard 1 is empty */
  const char *k1[1] = {"only"};
  int32_t f1[1] = {100};
  gh_shard_plan_make(&pr, k1, f1, 1, 10, 2, "test");
  GH_TEST_OK(gh_shard_frames(&pr, 0) == 100 && gh_shard_frames(&pr, 1) == 0 && pr.num_blocks == 1,
             "one utterance, 2 shards: shard 0 has it");
  gh_shard_plan_free(&pr);
  gh_shard_plan_free(&p1);
  for (int i = 0; i < N; ++i) free(keys[i]);
  return gh_test_done();
}
