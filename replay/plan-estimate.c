/* plan-estimate.c — what a replay of the offline planner holds per request
 * (mt_plan_bytes_estimate), from the structures of the replay driver, the
 * planned policy and planner.c. */
#include "config.h"

#include "memtrace-replay.h"
#include "span-set-private.h"

uint64_t mt_plan_bytes_estimate(uint64_t requests)
{
	/* per request while planner.c places them: the driver's plan record,
	 * the policy's offset, the planner's start rank, end rank and start
	 * order, and two partial-leaf entries (planner.c's struct partial: two
	 * ranks and a span), the most a request has (1.38 on average on a
	 * synthetic training trace). The tree's span sets come on top: 0.5
	 * spans a request there, as requests pack side by side; more where the
	 * addresses in use are fragmented. */
	const uint64_t partial = 2 * sizeof(uint32_t) + sizeof(struct rp_span);
	const uint64_t per_request = sizeof(struct mt_plan_request) + sizeof(uint64_t) +
	                             3 * sizeof(uint32_t) + 2 * partial;

	return requests * per_request;
}
