/* policies.c — the policy registry, spec parsing ("NAME:key=value,...")
 * and parameter parsing for the policies. To add a policy: one extern line
 * and one array line below (stable order: the order of tables and --help). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "policy-private.h"

extern const struct mt_policy_ops mt_policy_native;
extern const struct mt_policy_ops mt_policy_bestfit;
extern const struct mt_policy_ops mt_policy_firstfit;
extern const struct mt_policy_ops mt_policy_caching;
extern const struct mt_policy_ops mt_policy_expandable;
extern const struct mt_policy_ops mt_policy_bfc;
extern const struct mt_policy_ops mt_policy_async;
extern const struct mt_policy_ops mt_policy_stitch;
extern const struct mt_policy_ops mt_policy_buddy;
extern const struct mt_policy_ops mt_policy_planned;

static const struct mt_policy_ops *const registry[] = {
	&mt_policy_native,
	&mt_policy_caching,
	&mt_policy_expandable,
	&mt_policy_bfc,
	&mt_policy_bestfit,
	&mt_policy_firstfit,
	&mt_policy_buddy,
	&mt_policy_async,
	&mt_policy_stitch,
	&mt_policy_planned,
	NULL,
};

const struct mt_policy_ops *const *mt_policy_list(void)
{
	return registry;
}

const struct mt_policy_ops *mt_policy_find(const char *name)
{
	for (size_t i = 0; registry[i]; i++)
		if (!strcmp(registry[i]->name, name))
			return registry[i];
	return NULL;
}

int mt_policy_create(struct mt_policy **out, const char *spec, struct mt_backend *b, char *err,
                     size_t errlen)
{
	char name[64];
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	if (len == 0 || len >= sizeof(name)) {
		snprintf(err, errlen, "bad policy spec '%s'", spec);
		return -EINVAL;
	}
	memcpy(name, spec, len);
	name[len] = '\0';
	const struct mt_policy_ops *ops = mt_policy_find(name);
	if (!ops) {
		int n = snprintf(err, errlen, "unknown policy '%s' (valid:", name);
		for (size_t i = 0; registry[i] && n >= 0 && (size_t)n < errlen; i++)
			n += snprintf(err + n, errlen - n, " %s", registry[i]->name);
		if (n >= 0 && (size_t)n < errlen)
			snprintf(err + n, errlen - n, ")");
		return -EINVAL;
	}
	return ops->create(out, b, colon ? colon + 1 : NULL, err, errlen);
}

void mt_policy_destroy(struct mt_policy *p)
{
	if (p)
		p->ops->destroy(p);
}

static int parse_value(const struct mt_param *d, const char *text)
{
	char *end;
	switch (d->type) {
	case MT_PARAM_SIZE:
		return mt_size_parse(text, d->value);
	case MT_PARAM_UINT:
		if (*text < '0' || *text > '9')
			return -EINVAL;
		errno = 0;
		*(uint64_t *)d->value = strtoull(text, &end, 10);
		return errno || *end ? -EINVAL : 0;
	case MT_PARAM_DOUBLE:
		errno = 0;
		*(double *)d->value = strtod(text, &end);
		return errno || end == text || *end ? -EINVAL : 0;
	}
	return -EINVAL;
}

static void valid_keys(char *buf, size_t len, const struct mt_param *defs, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", defs[i].key);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (!n)
		snprintf(buf, len, "none");
}

int mt_params_parse(const char *policy, const char *params, const struct mt_param *defs, size_t n,
                    char *err, size_t errlen)
{
	char item[256], keys[256];
	const char *p = params;
	while (p && *p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len >= sizeof(item))
			len = sizeof(item) - 1;
		memcpy(item, p, len);
		item[len] = '\0';
		p = comma ? comma + 1 : NULL;
		char *eq = strchr(item, '=');
		size_t i = 0;
		if (eq) {
			*eq = '\0';
			for (; i < n && strcmp(defs[i].key, item); i++)
				;
		}
		if (!eq || i == n) {
			valid_keys(keys, sizeof(keys), defs, n);
			snprintf(err, errlen, "policy %s: unknown parameter '%s' (valid: %s)",
			         policy, item, keys);
			return -EINVAL;
		}
		if (parse_value(&defs[i], eq + 1) < 0) {
			snprintf(err, errlen, "policy %s: bad value '%s' for %s", policy, eq + 1,
			         item);
			return -EINVAL;
		}
	}
	return 0;
}

int mt_policy_walk_own_segments(const struct mt_addrmap *live, mt_policy_walk_fn fn, void *data)
{
	const struct mt_addrmap_slot *s;

	for (size_t i = 0; mt_addrmap_next(live, &i, &s);) {
		struct mt_policy_block blk = { s->key, s->value, 0, false };
		int rc = fn(data, true, &blk);

		blk.allocated = true;
		if (rc || (rc = fn(data, false, &blk)))
			return rc;
	}
	return 0;
}
