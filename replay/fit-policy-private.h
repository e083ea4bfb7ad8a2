/* fit-policy-private.h — the engine of the bestfit and firstfit policies:
 * an arena (arena-private.h) over segments from plain device memory, with
 * free-cache-and-retry on OOM. The two policy files differ only in the fit. */
#ifndef MEMTRACE_FIT_POLICY_PRIVATE_H
#define MEMTRACE_FIT_POLICY_PRIVATE_H

#include "arena-private.h"
#include "memtrace-replay.h"

int rp_fit_policy_create(struct mt_policy **out, const struct mt_policy_ops *ops,
                         enum rp_arena_fit fit, struct mt_backend *b, const char *params, char *err,
                         size_t errlen);
int rp_fit_policy_alloc(struct mt_policy *p, uint64_t bytes, uint64_t stream, size_t index,
                        uint64_t *address);
int rp_fit_policy_free(struct mt_policy *p, uint64_t address, uint64_t stream);
int rp_fit_policy_empty_cache(struct mt_policy *p);
int rp_fit_policy_walk(struct mt_policy *p, mt_policy_walk_fn fn, void *data);
void rp_fit_policy_stats(struct mt_policy *p, struct mt_policy_stats *stats);
void rp_fit_policy_destroy(struct mt_policy *p);

#endif /* MEMTRACE_FIT_POLICY_PRIVATE_H */
