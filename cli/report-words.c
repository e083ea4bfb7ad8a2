/* report-words.c — what memtrace report's text and JSON say alike: times
 * since the device's first event, and the frame that names an allocation.
 */
#include "config.h"

#include "report-print.h"

uint64_t cli_report_since(const struct mt_report *rep, uint64_t ts)
{
	return ts > rep->data.t0 ? ts - rep->data.t0 : 0;
}

const char *cli_report_site(const struct mt_report *rep, uint32_t site, bool shorten, char *buf,
                            size_t len)
{
	const char *stack = site ? mt_reader_string(rep->data.r, site) : NULL;
	size_t i = mt_site_display_index(stack);
	char frame[1024];

	if (i == (size_t)-1)
		return NULL;
	if (!shorten)
		return mt_site_frame(stack, i, buf, len);
	mt_site_frame(stack, i, frame, sizeof(frame));
	return mt_site_shorten(frame, rep->program_dir, buf, len);
}
