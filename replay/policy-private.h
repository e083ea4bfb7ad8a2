/* policy-private.h — helpers shared by the policies in replay/policies/:
 * parameter parsing for specs like "caching:max_split_size=256MiB,
 * roundup_power2_divisions=4", the registry's declarations, and the walk
 * of policies that hold one segment per allocation. */
#ifndef MEMTRACE_POLICY_PRIVATE_H
#define MEMTRACE_POLICY_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "addrmap-private.h"
#include "memtrace-replay.h"

enum rp_param_type {
	RP_PARAM_SIZE = 0,   /* uint64_t, units accepted (mt_size_parse) */
	RP_PARAM_UINT = 1,   /* uint64_t, plain integer */
	RP_PARAM_DOUBLE = 2, /* double */
};

struct rp_param {
	const char *key;
	enum rp_param_type type;
	void *value; /* uint64_t * or double *, holding the default on entry */
};

/* Parses "key=value,key=value" (NULL or "" = nothing to set) into the
 * values of defs[0..n). An unknown key or a malformed value is -EINVAL with
 * a one-line message naming the policy, the key and the valid keys. */
int rp_params_parse(const char *policy, const char *params, const struct rp_param *defs, size_t n,
                    char *err, size_t errlen);

/* walk for policies whose every live allocation is a segment of its own
 * (`live` maps address to bytes): each is reported as a segment holding one
 * allocated block of the same extent. Returns what walk returns. */
int rp_policy_walk_own_segments(const struct rp_addrmap *live, mt_policy_walk_fn fn, void *data);

static inline uint64_t rp_round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

#endif /* MEMTRACE_POLICY_PRIVATE_H */
