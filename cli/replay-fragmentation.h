/* replay-fragmentation.h — fragmentation of a replayed policy, for
 * memtrace replay's table and --json, by memtrace's one definition
 * (analyze: mt_segmap_fragmentation, free bytes inside segments that hold
 * a live block) at the peak of live bytes, the moment report's anatomy and
 * the segment map show by default. */
#ifndef MEMTRACE_CLI_REPLAY_FRAGMENTATION_H
#define MEMTRACE_CLI_REPLAY_FRAGMENTATION_H

#include <stdbool.h>
#include <stdint.h>

#include "memtrace-replay.h"

/* What the probe saw. known: the policy was walked at the peak (false
 * when it cannot list its segments, or ran out of memory before). */
struct cli_fragmentation {
	bool known;
	uint64_t bytes;    /* fragmentation */
	uint64_t reserved; /* bytes the policy reserved then */
};

/* Sets opt's at_peak hook so that the replay itself fills *f: no second
 * replay. *f is zeroed here and complete once the replay has returned. */
void cli_fragmentation_probe(struct mt_replay_options *opt, struct cli_fragmentation *f);

#endif
