/* queue.c -- bounded blocking queue (queue.h). */
#include "base/queue.h"
#include "base/gh-base.h"

#include <pthread.h>
#include <stdlib.h>

struct gh_queue {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  void **items;
  int cap, head, count;
};

gh_queue *gh_queue_new(int capacity) {
  if (capacity < 1) gh_die("gh_queue_new: capacity %d < 1", capacity);
  gh_queue *q = gh_calloc(1, sizeof *q);
  q->items = gh_calloc((size_t)capacity, sizeof(void *));
  q->cap = capacity;
  if (pthread_mutex_init(&q->mu, NULL) || pthread_cond_init(&q->not_empty, NULL) ||
      pthread_cond_init(&q->not_full, NULL))
    gh_die("gh_queue_new: cannot initialise a mutex or condition variable");
  return q;
}

void gh_queue_push(gh_queue *q, void *item) {
  pthread_mutex_lock(&q->mu);
  while (q->count == q->cap) pthread_cond_wait(&q->not_full, &q->mu);
  q->items[(q->head + q->count) % q->cap] = item;
  q->count++;
  pthread_cond_signal(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
}

void *gh_queue_pop(gh_queue *q) {
  pthread_mutex_lock(&q->mu);
  while (q->count == 0) pthread_cond_wait(&q->not_empty, &q->mu);
  void *item = q->items[q->head];
  q->head = (q->head + 1) % q->cap;
  q->count--;
  pthread_cond_signal(&q->not_full);
  pthread_mutex_unlock(&q->mu);
  return item;
}

void gh_queue_free(gh_queue *q) {
  if (!q) return;
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->not_empty);
  pthread_cond_destroy(&q->not_full);
  free(q->items);
  free(q);
}
