/* replay-capacity.c — the capacity of memtrace replay and its words. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "replay-capacity.h"

static const char *const source_names[] = { "limit", "recorded", "none" };

int cli_capacity_choose(struct mt_reader *r, uint32_t device, const char *limit_arg, uint64_t limit,
                        bool cuda, struct cli_capacity *c, char *err, size_t errlen)
{
	const char *bound = cuda ? "the GPU's own memory" : "unlimited";
	uint64_t t1;
	char what[256];
	int rc;

	*c = (struct cli_capacity){ .source = CLI_CAPACITY_NONE };
	if ((rc = mt_analyze_span(r, device, &c->t0, &t1)) < 0) {
		snprintf(err, errlen, "%s", mt_reader_message(r));
		return rc;
	}
	if (limit_arg && limit) {
		c->source = CLI_CAPACITY_LIMIT;
		c->bytes = limit;
		snprintf(c->why, sizeof(c->why), "--limit %.64s: %llu bytes", limit_arg,
		         (unsigned long long)limit);
		return 0;
	}
	if (limit_arg) {
		snprintf(c->why, sizeof(c->why), "--limit none: %s", bound);
		return 0;
	}
	if ((rc = mt_capacity_recorded(r, device, MT_TIME_UNKNOWN, &c->recorded, err, errlen)) < 0)
		return rc;
	if (!c->recorded.bytes) {
		snprintf(c->why, sizeof(c->why), "%s: %s",
		         mt_capacity_describe(&c->recorded, c->t0, what, sizeof(what)), bound);
		return 0;
	}
	c->source = CLI_CAPACITY_RECORDED;
	c->bytes = c->recorded.bytes;
	mt_capacity_describe(&c->recorded, c->t0, c->why, sizeof(c->why));
	return 0;
}

json_t *cli_capacity_json(const struct cli_capacity *c)
{
	const struct mt_capacity *m = &c->recorded;
	bool reading = c->source == CLI_CAPACITY_RECORDED && m->from_reading;
	json_t *j = json_object();

	json_object_set_new(j, "bytes",
	                    c->source == CLI_CAPACITY_NONE ? json_null()
	                                                   : json_integer((json_int_t)c->bytes));
	json_object_set_new(j, "source", json_string(source_names[c->source]));
	json_object_set_new(j, "description", json_string(c->why));
	if (c->source != CLI_CAPACITY_RECORDED)
		return j;
	json_object_set_new(j, "device_total", json_integer((json_int_t)m->device_total));
	json_object_set_new(j, "context_bytes", json_integer((json_int_t)m->context_bytes));
	json_object_set_new(j, "outside_bytes", json_integer((json_int_t)m->outside_bytes));
	json_object_set_new(j, "library_bytes", json_integer((json_int_t)m->library_bytes));
	json_object_set_new(j, "driver_reserved_bytes",
	                    m->driver_reserved_bytes
	                            ? json_integer((json_int_t)m->driver_reserved_bytes)
	                            : json_null());
	json_object_set_new(
	        j, "reading_at_ns",
	        reading ? json_integer((json_int_t)(m->anatomy.sample_ts > c->t0
	                                                    ? m->anatomy.sample_ts - c->t0
	                                                    : 0))
	                : json_null());
	return j;
}

static void *capacity_thread(void *arg)
{
	struct cli_capacity_job *j = arg;
	struct mt_reader *r = mt_reader_new();
	j->rc = r ? mt_reader_open(r, j->path) : -1;
	if (j->rc < 0)
		snprintf(j->err, sizeof(j->err), "%s", r ? mt_reader_message(r) : "out of memory");
	else
		j->rc = cli_capacity_choose(r, j->device, j->limit_arg, j->limit, j->cuda, &j->c,
		                            j->err, sizeof(j->err));
	mt_reader_free(r);
	return NULL;
}

int cli_capacity_start(struct cli_capacity_job *j, const char *path, uint32_t device,
                       const char *limit_arg, uint64_t limit, bool cuda)
{
	*j = (struct cli_capacity_job){
		.path = path, .limit_arg = limit_arg, .device = device, .limit = limit, .cuda = cuda
	};
	return pthread_create(&j->thread, NULL, capacity_thread, j) == 0 ? 0 : -1;
}

int cli_capacity_finish(struct cli_capacity_job *j, struct cli_capacity *c, char *err,
                        size_t errlen)
{
	pthread_join(j->thread, NULL);
	*c = j->c;
	if (j->rc < 0)
		snprintf(err, errlen, "%s", j->err);
	return j->rc;
}
