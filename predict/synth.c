/* synth.c — a request stream from an input's recorded events with chosen
 * sizes: the input's own (its recorded stream), or the fitted sizes at a
 * target N (the prediction). Order, streams, addresses, timestamps and
 * reuse delays stay as recorded, so the lifetimes are the recorded ones. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "predict-private.h"

int pr_stream_build(const struct pr_input *pi, const uint64_t *bytes,
                    struct mt_request_stream **out, char *err, size_t errlen)
{
	struct mt_event *ev = malloc((pi->nev ? pi->nev : 1) * sizeof(*ev));
	size_t n = 0;
	if (!ev)
		return pr_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < pi->nev; i++) {
		const struct pr_event *e = &pi->ev[i];
		if (!bytes[e->request])
			continue; /* a size that fell to 0: the request is left out */
		struct mt_event *m = &ev[n++];
		memset(m, 0, sizeof(*m));
		m->kind = e->is_free ? MT_EVENT_FREE : MT_EVENT_ALLOC;
		m->ts = e->ts;
		m->seq = i;
		m->process = e->process;
		m->device = pi->device;
		m->alloc.address = e->address;
		m->alloc.bytes = bytes[e->request];
		m->alloc.stream = pi->stream[e->request];
		m->alloc.reuse_delay = e->reuse_delay;
		m->alloc.layer = (uint8_t)pi->layer;
	}
	int rc = mt_request_stream_from_events(out, ev, n, pi->layer, err, errlen);
	free(ev);
	return rc;
}

int mt_predict_stream(const struct mt_predictor *p, uint64_t size, struct mt_request_stream **out,
                      char *err, size_t errlen)
{
	const struct pr_input *ref = &p->in[p->ref];
	if (size < 1)
		return pr_fail(err, errlen, -EINVAL, "the size must be at least 1");
	uint64_t *bytes = malloc((ref->nreq ? ref->nreq : 1) * sizeof(*bytes));
	if (!bytes)
		return pr_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t r = 0; r < ref->nreq; r++)
		bytes[r] = pr_fit_eval(&p->fit[r], size);
	int rc = pr_stream_build(ref, bytes, out, err, errlen);
	free(bytes);
	return rc;
}
