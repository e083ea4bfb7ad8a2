/* params.c — the policies' parameters: "key=value,key=value" parsed into
 * typed values with one-line messages (policy-private.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "policy-private.h"

static int parse_value(const struct rp_param *d, const char *text)
{
	char *end;
	switch (d->type) {
	case RP_PARAM_SIZE:
		return mt_size_parse(text, d->value);
	case RP_PARAM_UINT:
		if (*text < '0' || *text > '9')
			return -EINVAL;
		errno = 0;
		*(uint64_t *)d->value = strtoull(text, &end, 10);
		return errno || *end ? -EINVAL : 0;
	case RP_PARAM_DOUBLE:
		errno = 0;
		*(double *)d->value = strtod(text, &end);
		return errno || end == text || *end ? -EINVAL : 0;
	}
	return -EINVAL;
}

static void valid_keys(char *buf, size_t len, const struct rp_param *defs, size_t n)
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

int rp_params_parse(const char *policy, const char *params, const struct rp_param *defs, size_t n,
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
