/* registry.c — the policy registry and spec parsing ("NAME:key=value,...").
 * The policies are those of replay/meson.build's one list (replay_policies),
 * which meson writes into policy-list.h as RP_POLICY(NAME) items. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-list.h"
#include "policy-private.h"

#define RP_POLICY(name) extern const struct mt_policy_ops rp_policy_##name;
RP_POLICY_LIST
#undef RP_POLICY

static const struct mt_policy_ops *const registry[] = {
#define RP_POLICY(name) &rp_policy_##name,
	RP_POLICY_LIST
#undef RP_POLICY
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

bool mt_policy_spec_offline(const char *spec)
{
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(spec, ":"), spec);
	const struct mt_policy_ops *ops = mt_policy_find(name);
	return ops && (ops->flags & MT_POLICY_OFFLINE);
}
