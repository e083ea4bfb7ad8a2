/* feed.c — one pass over a request stream shared by concurrent replays (see
 * feed-private.h). One lock guards the ring's bookkeeping; the reader
 * copies a chunk into its ring slot without it, since no consumer reads a
 * slot before it is published nor after every consumer has passed it. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "feed-private.h"

struct chunk {
	struct rp_step *steps;
	size_t n, cap;
};

struct rp_feed {
	const struct mt_request_stream *s;
	volatile int *interrupted;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more;  /* a chunk was published, or the reading ended */
	pthread_cond_t space; /* a consumer passed a chunk, or left */
	struct chunk ring[RP_FEED_CHUNKS];
	uint64_t produced; /* chunks published */
	bool done;         /* the last chunk (n = 0) is published */
	int rc;            /* the reader's error, when done with one */
	char err[256];
	unsigned n;
	uint64_t *passed; /* per consumer: chunks it has given back */
	bool *holding;    /* per consumer: it has chunk passed[c] */
	bool *left;
	double seconds;
};

double rp_thread_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Whether the slot of chunk k is free: every consumer still reading has
 * given back chunk k - RP_FEED_CHUNKS. False also when none is reading. */
static bool room_for(const struct rp_feed *f, uint64_t k, bool *anyone)
{
	*anyone = false;
	for (unsigned c = 0; c < f->n; c++) {
		if (f->left[c])
			continue;
		*anyone = true;
		if (f->passed[c] + RP_FEED_CHUNKS <= k)
			return false;
	}
	return *anyone;
}

static int copy_into(struct chunk *ch, const struct rp_step *steps, size_t n)
{
	if (n > ch->cap) {
		struct rp_step *v = realloc(ch->steps, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ch->steps = v;
		ch->cap = n;
	}
	if (n) /* the last chunk is empty, and ch->steps may still be NULL */
		memcpy(ch->steps, steps, n * sizeof(*steps));
	ch->n = n;
	return 0;
}

static void *reader(void *arg)
{
	struct rp_feed *f = arg;
	struct rp_cursor *cursor = NULL;
	char err[256] = "";
	int rc = rp_cursor_open(f->s, &cursor, err, sizeof(err));
	for (uint64_t k = 0; rc == 0; k++) {
		const struct rp_step *steps;
		size_t n = 0;
		bool anyone;
		pthread_mutex_lock(&f->lock);
		while (!room_for(f, k, &anyone) && anyone)
			pthread_cond_wait(&f->space, &f->lock);
		pthread_mutex_unlock(&f->lock);
		if (!anyone)
			break; /* every consumer has left */
		if (f->interrupted && *f->interrupted) {
			rc = -EINTR;
			snprintf(err, sizeof(err), "interrupted");
		} else if ((rc = rp_cursor_next(cursor, &steps, &n, err, sizeof(err))) == 0 &&
		           (rc = copy_into(&f->ring[k % RP_FEED_CHUNKS], steps, n)) < 0) {
			snprintf(err, sizeof(err), "out of memory");
		}
		pthread_mutex_lock(&f->lock);
		if (rc == 0)
			f->produced = k + 1;
		if (rc < 0 || n == 0) {
			f->done = true;
			f->rc = rc;
			snprintf(f->err, sizeof(f->err), "%s", err);
		}
		pthread_cond_broadcast(&f->more);
		pthread_mutex_unlock(&f->lock);
		if (n == 0)
			break;
	}
	if (rc < 0 && !f->done) { /* the cursor did not open */
		pthread_mutex_lock(&f->lock);
		f->done = true;
		f->rc = rc;
		snprintf(f->err, sizeof(f->err), "%s", err);
		pthread_cond_broadcast(&f->more);
		pthread_mutex_unlock(&f->lock);
	}
	rp_cursor_close(cursor);
	f->seconds = rp_thread_seconds();
	return NULL;
}

static void feed_free(struct rp_feed *f)
{
	for (size_t i = 0; i < RP_FEED_CHUNKS; i++)
		free(f->ring[i].steps);
	free(f->passed);
	free(f->holding);
	free(f->left);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->more);
	pthread_cond_destroy(&f->space);
	free(f);
}

int rp_feed_start(struct rp_feed **out, const struct mt_request_stream *s, unsigned n,
                  volatile int *interrupted, char *err, size_t errlen)
{
	struct rp_feed *f = calloc(1, sizeof(*f));
	if (!f || !(f->passed = calloc(n, sizeof(*f->passed))) ||
	    !(f->holding = calloc(n, sizeof(*f->holding))) ||
	    !(f->left = calloc(n, sizeof(*f->left)))) {
		if (f) {
			free(f->passed);
			free(f->holding);
			free(f);
		}
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->s = s;
	f->n = n;
	f->interrupted = interrupted;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->more, NULL);
	pthread_cond_init(&f->space, NULL);
	int rc = pthread_create(&f->thread, NULL, reader, f);
	if (rc) {
		feed_free(f);
		snprintf(err, errlen, "cannot start the reading thread: %s", strerror(rc));
		return -rc;
	}
	*out = f;
	return 0;
}

int rp_feed_next(struct rp_feed *f, unsigned c, const struct rp_step **steps, size_t *n, char *err,
                 size_t errlen)
{
	int rc = 0;
	pthread_mutex_lock(&f->lock);
	if (f->holding[c]) {
		f->passed[c]++;
		f->holding[c] = false;
		pthread_cond_signal(&f->space);
	}
	while (f->produced <= f->passed[c] && !f->done)
		pthread_cond_wait(&f->more, &f->lock);
	if (f->produced > f->passed[c]) {
		const struct chunk *ch = &f->ring[f->passed[c] % RP_FEED_CHUNKS];
		*steps = ch->steps;
		*n = ch->n;
		f->holding[c] = ch->n > 0;
		if (!ch->n) /* the end: nothing held, nothing to give back */
			f->passed[c]++;
	} else { /* done with an error */
		*steps = NULL;
		*n = 0;
		rc = f->rc;
		snprintf(err, errlen, "%s", f->err);
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void rp_feed_leave(struct rp_feed *f, unsigned c)
{
	pthread_mutex_lock(&f->lock);
	f->left[c] = true;
	pthread_cond_signal(&f->space);
	pthread_mutex_unlock(&f->lock);
}

double rp_feed_stop(struct rp_feed *f)
{
	if (!f)
		return 0.0;
	for (unsigned c = 0; c < f->n; c++)
		rp_feed_leave(f, c);
	pthread_join(f->thread, NULL);
	double seconds = f->seconds;
	feed_free(f);
	return seconds;
}
