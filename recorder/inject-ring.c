/* inject-ring.c — a bounded lock-free queue of raw PyTorch allocator
 * records: many producers, one consumer at a time.
 *
 * Models: Dmitry Vyukov's bounded MPMC queue, with the consumer side reduced
 * to one reader. A producer reserves an index by compare-and-swap on head
 * (after checking against tail that the ring has room), writes the slot, and
 * publishes it with a release store of the slot's sequence number, index + 1.
 * The consumer (whoever holds the lock the callers agree on) reads slots in
 * index order while their sequence says they are written, and gives each
 * slot back with a release store of tail, which a producer of the index one
 * lap later reads before writing the slot again. So the records come out in
 * the order their indices were reserved, each exactly once. A slot reserved
 * but not yet written stops the reader there; what follows it waits for the
 * next drain.
 *
 * Needs nothing from CUDA: tests/recorder/test-ring.c links this file alone.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "inject-private.h"

#define CACHE_LINE 64

struct slot {
	atomic_size_t seq; /* index + 1 once the record of that index is written */
	struct rec_ring_record rec;
};

struct rec_ring {
	size_t mask; /* capacity - 1 */
	/* head and tail on lines of their own: producers write head, the
	 * consumer writes tail */
	char pad0[CACHE_LINE];
	atomic_size_t head; /* next index to reserve */
	char pad1[CACHE_LINE - sizeof(atomic_size_t)];
	atomic_size_t tail; /* next index to read */
	char pad2[CACHE_LINE - sizeof(atomic_size_t)];
	struct slot slots[];
};

struct rec_ring *rec_ring_new(size_t capacity)
{
	struct rec_ring *r;

	if (capacity < 2 || (capacity & (capacity - 1)))
		return NULL;
	r = calloc(1, sizeof(*r) + capacity * sizeof(r->slots[0]));
	if (!r)
		return NULL;
	r->mask = capacity - 1;
	return r;
}

void rec_ring_free(struct rec_ring *r)
{
	free(r);
}

struct rec_ring *rec_ring_once(_Atomic(struct rec_ring *) *slot, size_t capacity)
{
	struct rec_ring *r = atomic_load_explicit(slot, memory_order_acquire);
	struct rec_ring *none = NULL;

	if (r)
		return r;
	r = rec_ring_new(capacity);
	if (r && !atomic_compare_exchange_strong_explicit(slot, &none, r, memory_order_acq_rel,
	                                                  memory_order_acquire)) {
		rec_ring_free(r); /* another thread's came first */
		r = none;
	}
	return r;
}

int rec_ring_push(struct rec_ring *r, const struct rec_ring_record *rec)
{
	size_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
	struct slot *s;

	for (;;) {
		/* acquire: the consumer's reads of the slot one lap back happen
		 * before the write below */
		size_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);

		if (pos - tail > r->mask) {
			/* Full, or pos was read before tail moved past it: only
			 * a fresh head tells which. */
			size_t now = atomic_load_explicit(&r->head, memory_order_relaxed);
			if (now == pos)
				return -EAGAIN;
			pos = now;
			continue;
		}
		if (atomic_compare_exchange_weak_explicit(
		            &r->head, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed))
			break;
	}
	s = &r->slots[pos & r->mask];
	s->rec = *rec;
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	return 0;
}

void rec_ring_push_wait(struct rec_ring *r, const struct rec_ring_record *rec,
                        pthread_mutex_t *lock,
                        void (*fn)(const struct rec_ring_record *rec, void *arg), void *arg)
{
	while (rec_ring_push(r, rec) < 0) {
		size_t n;

		pthread_mutex_lock(lock);
		n = rec_ring_drain(r, fn, arg);
		pthread_mutex_unlock(lock);
		if (!n)
			sched_yield(); /* the oldest slot is still being written */
	}
}

size_t rec_ring_drain(struct rec_ring *r, void (*fn)(const struct rec_ring_record *rec, void *arg),
                      void *arg)
{
	size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	/* what was reserved before this call: producers that keep pushing
	 * cannot keep the consumer here */
	size_t end = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t n = 0;

	while (tail != end) {
		struct slot *s = &r->slots[tail & r->mask];
		struct rec_ring_record rec;

		if (atomic_load_explicit(&s->seq, memory_order_acquire) != tail + 1)
			break;
		rec = s->rec;
		/* the slot is free before fn runs, however long that takes */
		atomic_store_explicit(&r->tail, ++tail, memory_order_release);
		fn(&rec, arg);
		n++;
	}
	return n;
}
