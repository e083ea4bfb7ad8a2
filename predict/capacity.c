/* capacity.c — the memory the allocator may take on the card of the
 * largest input: analyze's recorded capacity (the device total less the
 * CUDA context and libraries, the libraries' own driver allocations and the
 * memory outside the process) at the reference's peak of live bytes. */
#include "config.h"

#include "memtrace-analyze.h"
#include "predict-private.h"

int pr_capacity(struct mt_predictor *p, char *err, size_t errlen)
{
	const struct pr_input *ref = &p->in[p->ref];
	struct mt_predict_summary *s = &p->summary;
	struct mt_capacity c;
	char why[256];
	int rc = mt_capacity_recorded(ref->reader, ref->device, ref->peak_ts, &c, why, sizeof(why));
	if (rc < 0)
		return mt_fail(err, errlen, rc, "%s: the anatomy: %s", ref->name, why);
	s->device_total = c.device_total;
	s->capacity_sampled = c.from_reading;
	s->context_bytes = c.context_bytes;
	s->outside_bytes = c.outside_bytes;
	s->library_bytes = c.library_bytes;
	s->capacity = c.bytes;
	return 0;
}
