/* synth.c — a request stream from an input's recorded events with chosen
 * sizes: the input's own (its recorded stream), or the fitted sizes at a
 * target N (the prediction). Order, streams, addresses, timestamps and
 * reuse delays stay as recorded, so the lifetimes are the recorded ones. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "predict-private.h"

int pr_stream_build(const struct pr_input *pi, const uint64_t *bytes, struct mt_event *ev,
                    struct mt_request_stream **out, char *err, size_t errlen)
{
	size_t n = 0;
	for (size_t i = 0; i < pi->nev; i++) {
		const struct pr_event *e = &pi->ev[i];
		if (!bytes[e->request])
			continue; /* a size that fell to 0: the request is left out */
		struct mt_event *m = &ev[n++];
		m->kind = e->is_free ? MT_EVENT_FREE : MT_EVENT_ALLOC;
		m->ts = e->ts;
		m->seq = i;
		m->process = 1;
		m->device = pi->device;
		m->alloc = (struct mt_alloc_event){ .address = ((uint64_t)e->request + 1) << 8,
			                            .bytes = bytes[e->request],
			                            .stream = pi->stream[e->request],
			                            .reuse_delay = e->reuse_delay,
			                            .layer = (uint8_t)pi->layer };
	}
	return mt_request_stream_from_events(out, ev, n, pi->layer, err, errlen);
}

uint64_t pr_peak_live(const struct pr_input *pi, const uint64_t *bytes, const bool *marked,
                      uint64_t *ts, uint64_t *marked_at_peak)
{
	uint64_t live = 0, peak = 0, in_marked = 0;
	*ts = 0;
	if (marked_at_peak)
		*marked_at_peak = 0;
	for (size_t i = 0; i < pi->nev; i++) {
		const struct pr_event *e = &pi->ev[i];
		uint64_t b = bytes[e->request];
		bool m = marked && marked[e->request];
		if (e->is_free) {
			live -= b;
			in_marked -= m ? b : 0;
			continue;
		}
		live += b;
		in_marked += m ? b : 0;
		if (live > peak) {
			peak = live;
			*ts = e->ts;
			if (marked_at_peak)
				*marked_at_peak = in_marked;
		}
	}
	return peak;
}

int pr_scratch(struct mt_predictor *p, size_t n, char *err, size_t errlen)
{
	if (n <= p->scratch_len)
		return 0;
	struct mt_event *ev = realloc(p->scratch, n * sizeof(*ev));
	if (!ev)
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	p->scratch = ev;
	p->scratch_len = n;
	return 0;
}

int mt_predict_stream(struct mt_predictor *p, uint64_t size, struct mt_request_stream **out,
                      char *err, size_t errlen)
{
	const struct pr_input *ref = &p->in[p->ref];
	int rc;
	if (size < 1)
		return mt_fail(err, errlen, -EINVAL, "the size must be at least 1");
	if ((rc = pr_scratch(p, ref->nev, err, errlen)) < 0)
		return rc;
	for (size_t r = 0; r < ref->nreq; r++)
		p->bytes[r] = pr_fit_eval(&p->fit[r], size);
	return pr_stream_build(ref, p->bytes, p->scratch, out, err, errlen);
}
