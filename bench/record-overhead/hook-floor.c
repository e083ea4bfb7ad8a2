/* hook-floor.c — do-nothing stand-ins for the recorder's three entry points
 * (memtrace_torch_event, memtrace_intern_site, memtrace_torch_clock), so that hook_floor.py can
 * attach the PyTorch bridge to PyTorch's allocator hook with no recorder
 * behind it: what the hook (and the bridge's Python frame walk) costs by
 * itself, the floor under request capture. */
#include <stdint.h>

void mt_bench_event(int action, int device, uint64_t address, uint64_t bytes, uint64_t stream,
                    uint32_t site, uint64_t ticks);
uint32_t mt_bench_intern(const char *site);
void mt_bench_clock(uint64_t (*ticks_now)(void));

/* Takes an event as memtrace_torch_event does, and drops it. */
void mt_bench_event(int action, int device, uint64_t address, uint64_t bytes, uint64_t stream,
                    uint32_t site, uint64_t ticks)
{
	(void)action;
	(void)device;
	(void)address;
	(void)bytes;
	(void)stream;
	(void)site;
	(void)ticks;
}

/* Takes PyTorch's clock as memtrace_torch_clock does, and keeps nothing. */
void mt_bench_clock(uint64_t (*ticks_now)(void))
{
	(void)ticks_now;
}

/* Names every call site 1, as memtrace_intern_site would name it some id. */
uint32_t mt_bench_intern(const char *site)
{
	(void)site;
	return 1;
}
