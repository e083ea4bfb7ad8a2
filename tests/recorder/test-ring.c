/* test-ring.c — the lock-free ring that carries PyTorch allocator events from
 * the allocating threads to the recorder's flushing thread
 * (recorder/inject-ring.c), without CUDA.
 *
 * A small ring keeps filling up, so the path where a producer drains the
 * ring itself runs as often as the consumer's: several producers push
 * numbered records while a consumer drains, and every record must arrive
 * exactly once, whole, and in its producer's order; producers serialized by
 * a lock of their own (as PyTorch's per-device allocator lock serializes
 * the bridge's calls) must see the exact global order; and the single-thread
 * cases pin down full, empty, wrap-around and the capacity rule.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "inject-private.h"
#include "tap.h"

#define PRODUCERS 4
#define PER_PRODUCER 20000
#define CAPACITY 8

/* What the consumers saw; touched only with lock held (the ring's consumer
 * lock). */
struct seen {
	struct rec_ring *ring;
	pthread_mutex_t lock;
	uint64_t next[PRODUCERS]; /* next number expected from each producer */
	uint64_t received;
	uint64_t by_producers; /* records drained by a producer whose push found the ring full */
	uint64_t out_of_order; /* a number other than the next expected: lost, repeated or late */
	uint64_t torn;         /* fields that do not belong together */
	uint64_t *order;       /* serialized case: the numbers in arrival order */
	atomic_int producing;  /* producers not yet finished */
	pthread_mutex_t outer; /* serialized case: the producers' own lock */
	uint64_t counter;      /* serialized case: next number, under outer */
};

/* The consumer's argument: whose drain this is. */
struct drainer {
	struct seen *seen;
	bool producer;
};

static struct rec_ring_record make_record(uint64_t producer, uint64_t number)
{
	struct rec_ring_record rec = { 0 };

	rec.address = producer;
	rec.bytes = number;
	/* the other fields derived from the two, to catch a record read
	 * before its producer finished writing it */
	rec.ts = producer * 1000003 + number * 7 + 1;
	rec.stream = (uint32_t)(number ^ 0x5a5a5a5au);
	rec.site = (uint32_t)producer + 1;
	rec.action = (int)(number % 8);
	return rec;
}

static bool whole(const struct rec_ring_record *rec)
{
	struct rec_ring_record want = make_record(rec->address, rec->bytes);

	return rec->ts == want.ts && rec->stream == want.stream && rec->site == want.site &&
	       rec->action == want.action;
}

static void take(const struct rec_ring_record *rec, void *arg)
{
	struct drainer *d = arg;
	struct seen *s = d->seen;

	if (!whole(rec))
		s->torn++;
	if (rec->address >= PRODUCERS || rec->bytes != s->next[rec->address])
		s->out_of_order++;
	else
		s->next[rec->address]++;
	if (s->order)
		s->order[s->received] = rec->bytes;
	s->received++;
	if (d->producer)
		s->by_producers++;
}

struct producer {
	struct seen *seen;
	uint64_t id;
	uint64_t count;
	bool serialized; /* take seen->outer around each push, numbering globally */
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct drainer self = { p->seen, true };

	for (uint64_t i = 0; i < p->count; i++) {
		struct rec_ring_record rec;

		if (p->serialized) {
			pthread_mutex_lock(&p->seen->outer);
			rec = make_record(0, p->seen->counter++);
			rec_ring_push_wait(p->seen->ring, &rec, &p->seen->lock, take, &self);
			pthread_mutex_unlock(&p->seen->outer);
		} else {
			rec = make_record(p->id, i);
			rec_ring_push_wait(p->seen->ring, &rec, &p->seen->lock, take, &self);
		}
	}
	atomic_fetch_sub(&p->seen->producing, 1);
	return NULL;
}

static void *consume(void *arg)
{
	struct seen *s = arg;
	struct drainer consumer = { s, false };
	bool last = false;

	/* one more drain after the last producer is done: every push has
	 * returned by then, so that drain finds everything left */
	while (!last) {
		size_t n;

		last = atomic_load(&s->producing) == 0;
		pthread_mutex_lock(&s->lock);
		n = rec_ring_drain(s->ring, take, &consumer);
		pthread_mutex_unlock(&s->lock);
		if (!n)
			sched_yield();
	}
	return NULL;
}

/* Runs N producers and one consumer over a fresh ring of CAPACITY. */
static void run(struct seen *s, unsigned n, uint64_t count, bool serialized)
{
	pthread_t producers[PRODUCERS], consumer;
	struct producer p[PRODUCERS];

	s->ring = rec_ring_new(CAPACITY);
	REQUIRE(s->ring != NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->outer, NULL);
	atomic_store(&s->producing, (int)n);
	for (unsigned i = 0; i < n; i++) {
		p[i] = (struct producer){ s, i, count, serialized };
		pthread_create(&producers[i], NULL, produce, &p[i]);
	}
	pthread_create(&consumer, NULL, consume, s);
	for (unsigned i = 0; i < n; i++)
		pthread_join(producers[i], NULL);
	pthread_join(consumer, NULL);
	rec_ring_free(s->ring);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->outer);
}

static void test_producers(void)
{
	struct seen s = { 0 };

	run(&s, PRODUCERS, PER_PRODUCER, false);
	CHECK(s.received == (uint64_t)PRODUCERS * PER_PRODUCER);
	CHECK(s.out_of_order == 0);
	CHECK(s.torn == 0);
	for (unsigned i = 0; i < PRODUCERS; i++)
		CHECK(s.next[i] == PER_PRODUCER);
	/* both ways of draining ran */
	CHECK(s.by_producers > 0);
	CHECK(s.by_producers < s.received);
}

/* One producer at a time, as under PyTorch's per-device lock: the ring's
 * order is the order the producers took the lock in, across threads. */
static void test_serialized(unsigned n)
{
	uint64_t total = (uint64_t)n * PER_PRODUCER;
	struct seen s = { 0 };
	uint64_t wrong = 0;

	s.order = calloc(total, sizeof(*s.order));
	CHECK(s.order != NULL);
	if (!s.order)
		return;
	run(&s, n, PER_PRODUCER, true);
	CHECK(s.received == total);
	CHECK(s.torn == 0);
	CHECK(s.out_of_order == 0);
	CHECK(s.next[0] == total);
	for (uint64_t i = 0; i < total && i < s.received; i++)
		if (s.order[i] != i)
			wrong++;
	CHECK(wrong == 0);
	CHECK(s.by_producers > 0);
	free(s.order);
}

/* Full, empty and wrap-around on one thread. */
static void test_one_thread(void)
{
	uint64_t order[16];
	struct seen s = { .order = order };
	struct drainer d = { &s, false };
	struct rec_ring_record rec;
	struct rec_ring *r = rec_ring_new(4);

	CHECK(r != NULL);
	if (!r)
		return;
	s.ring = r;
	pthread_mutex_init(&s.lock, NULL);
	CHECK(rec_ring_drain(r, take, &d) == 0);
	for (uint64_t i = 0; i < 4; i++) {
		rec = make_record(0, i);
		CHECK(rec_ring_push(r, &rec) == 0);
	}
	rec = make_record(0, 4);
	CHECK(rec_ring_push(r, &rec) == -EAGAIN);
	CHECK(rec_ring_drain(r, take, &d) == 4);
	CHECK(rec_ring_drain(r, take, &d) == 0);
	CHECK(s.received == 4);
	/* the second lap reuses the slots */
	for (uint64_t i = 4; i < 7; i++) {
		rec = make_record(0, i);
		CHECK(rec_ring_push(r, &rec) == 0);
	}
	CHECK(rec_ring_drain(r, take, &d) == 3);
	/* no consumer: the producer drains the ring itself when it is full
	 * (7..10 fill it, 11 drains 7..10, 12..14 fit beside 11) */
	d.producer = true;
	for (uint64_t i = 7; i < 15; i++) {
		rec = make_record(0, i);
		rec_ring_push_wait(r, &rec, &s.lock, take, &d);
	}
	CHECK(s.received == 11);
	CHECK(s.by_producers == 4);
	d.producer = false;
	CHECK(rec_ring_drain(r, take, &d) == 4);
	CHECK(s.received == 15);
	CHECK(s.out_of_order == 0);
	CHECK(s.torn == 0);
	for (uint64_t i = 0; i < 15; i++)
		CHECK(order[i] == i);
	rec_ring_free(r);
	pthread_mutex_destroy(&s.lock);
}

static void test_capacity(void)
{
	struct rec_ring *r = rec_ring_new(2);

	CHECK(rec_ring_new(0) == NULL);
	CHECK(rec_ring_new(1) == NULL);
	CHECK(rec_ring_new(6) == NULL);
	CHECK(r != NULL);
	rec_ring_free(r);
	rec_ring_free(NULL);
}

static void test_serialized_one(void)
{
	test_serialized(1);
}

static void test_serialized_three(void)
{
	test_serialized(3);
}

int main(void)
{
	TEST(test_capacity);
	TEST(test_one_thread);
	TEST(test_producers);
	TEST(test_serialized_one);
	TEST(test_serialized_three);
	return check_done();
}
