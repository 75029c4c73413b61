/* queue.h -- a bounded blocking queue of pointers between threads, for the
 * tools' pipelines (read / compute / write overlapped; bench/RESULTS.md
 * B12): one producer and one consumer per queue, FIFO order, so a
 * pipeline keeps its input order.  Built on POSIX threads.
 *
 * gh_queue_push blocks while the queue holds `capacity` items; gh_queue_pop
 * blocks while it is empty.  Items are opaque pointers; NULL is allowed
 * and is what the stages push to say "no more".  Errors: dies (out of
 * memory, a pthread call failing). */
#ifndef GH_QUEUE_H
#define GH_QUEUE_H

typedef struct gh_queue gh_queue;

gh_queue *gh_queue_new(int capacity); /* capacity >= 1 */
void gh_queue_push(gh_queue *q, void *item);
void *gh_queue_pop(gh_queue *q);
void gh_queue_free(gh_queue *q);      /* the queue must be empty of live items */

#endif
