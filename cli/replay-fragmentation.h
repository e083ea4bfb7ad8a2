/* replay-fragmentation.h — fragmentation of a replayed policy, for
 * memtrace replay's table and --json. */
#ifndef MEMTRACE_CLI_REPLAY_FRAGMENTATION_H
#define MEMTRACE_CLI_REPLAY_FRAGMENTATION_H

#include <stdint.h>

#include "memtrace-replay.h"

/* The fragmentation (bytes, analyze's definition) of the policy of opt
 * when its replay of s first holds the peak of live bytes, and the bytes
 * it reserves then. Returns 0, -ENOTSUP (the policy cannot list its
 * segments), -ENOENT (it ran out of memory before the peak), or what the
 * replay returned, with a message. */
int cli_replay_fragmentation(const struct mt_request_stream *s, const struct mt_replay_options *opt,
                             uint64_t *bytes, uint64_t *reserved, char *err, size_t errlen);

#endif
