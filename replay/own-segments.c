/* own-segments.c — the walk of policies that hold one segment per live
 * allocation (native, and async where the pool hides its layout). */
#include "config.h"

#include "policy-private.h"

int rp_policy_walk_own_segments(const struct rp_addrmap *live, mt_policy_walk_fn fn, void *data)
{
	const struct rp_addrmap_slot *s;

	for (size_t i = 0; rp_addrmap_next(live, &i, &s);) {
		struct mt_policy_block blk = { s->key, s->value, 0, false };
		int rc = fn(data, true, &blk);

		blk.allocated = true;
		if (rc || (rc = fn(data, false, &blk)))
			return rc;
	}
	return 0;
}
