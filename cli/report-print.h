/* report-print.h — memtrace report's two outputs (report-text.c, people;
 * report-json.c, scripts) of an analyze report, and the words they share.
 */
#ifndef MEMTRACE_CLI_REPORT_PRINT_H
#define MEMTRACE_CLI_REPORT_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "memtrace-analyze.h"

/* One device's report as text on stdout. */
void cli_report_text(const struct mt_report *rep, const struct mt_report_options *opt);
/* One device's report as a JSON object (NULL when out of memory). */
json_t *cli_report_json(const struct mt_report *rep, const struct mt_report_options *opt);

/* Nanoseconds from the device's first event to ts (0 before it). */
uint64_t cli_report_since(const struct mt_report *rep, uint64_t ts);
/* The frame that names an allocation made at site, into buf (shortened
 * against the program's directory when asked); NULL when it has none. */
const char *cli_report_site(const struct mt_report *rep, uint32_t site, bool shorten, char *buf,
                            size_t len);

#endif
