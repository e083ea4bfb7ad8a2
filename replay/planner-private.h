/* planner-private.h — the offline planner behind the `planned` policy:
 * greedy-by-size offset assignment over requests whose whole lifetimes are
 * known (TensorFlow Lite's arena planner; Pisarchyk & Lee, "Efficient Memory
 * Management for Deep Neural Net Inference", 2020). Requests are taken
 * largest first (earlier start first among equals, then lower index) and
 * each goes at the lowest offset where it overlaps no request already
 * placed that is live at the same time.
 *
 * Time is the requests' start order: two requests overlap exactly when
 * their ranges of start ranks [rank of start, number of starts before end)
 * meet. A segment tree over those ranks (leaves of 256 ranks)
 * holds in each node the coalesced address ranges of the placed requests
 * that cover the node (`full`) and of every placed request inside its
 * subtree (`sub`); requests that cover only part of a leaf are listed
 * there by address, and the search reads those live over the request's
 * ranks as it passes them. The busy addresses over a request's
 * lifetime are then the union of O(log n) such sets, and its offset their
 * lowest common gap (span-set-private.h), instead of a sort of every placed
 * request it overlaps.
 *
 * A request depends only on the larger ones it overlaps, so those on either
 * side of the leaf boundary nearest the middle rank are placed on two
 * threads at once, segment by segment of the size order, and each request
 * over the boundary alone between two segments: the same placements as one
 * thread makes, in about half the time on two free cores.
 */
#ifndef MEMTRACE_PLANNER_PRIVATE_H
#define MEMTRACE_PLANNER_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace-replay.h"

/* Plans reqs[0..n) (start < end for each, as the driver builds them; n <
 * 2^31) with offsets and sizes in multiples of align (> 0): offset[i] for
 * each request (the caller's array of n), *arena the bytes the plan spans.
 * *placed (NULL: none) follows the requests placed so far, every 1024 (an
 * atomic store, for another thread to read), and is n at the end. Returns
 * 0, -ENOMEM, or -EINTR soon after *interrupted (NULL: never) becomes
 * non-zero, the sorts before the placements included. */
int rp_plan_greedy_by_size(const struct mt_plan_request *reqs, size_t n, uint64_t align,
                           volatile int *interrupted, uint64_t *placed, uint64_t *offset,
                           uint64_t *arena);

#endif /* MEMTRACE_PLANNER_PRIVATE_H */
