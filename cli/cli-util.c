#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli-util.h"
#include "memtrace-common.h"
#include "memtrace-replay.h"

static void vprint_line(const char *cmd, const char *suffix, const char *fmt, va_list ap)
{
	fprintf(stderr, "memtrace %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	if (suffix)
		fputs(suffix, stderr);
	fputc('\n', stderr);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint_line(cmd, NULL, fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char suffix[64];
	va_list ap;
	snprintf(suffix, sizeof(suffix), " (see memtrace %s --help)", cmd);
	va_start(ap, fmt);
	vprint_line(cmd, suffix, fmt, ap);
	va_end(ap);
	return CLI_EXIT_USAGE;
}

int cli_open_trace(const char *cmd, const char *path, struct mt_reader **out)
{
	struct mt_reader *r;
	int rc;

	if (!path)
		path = CLI_DEFAULT_TRACE;
	r = mt_reader_new();
	if (!r) {
		cli_error(cmd, "out of memory");
		return CLI_EXIT_FAILURE;
	}
	rc = mt_reader_open(r, path);
	if (rc < 0) {
		cli_error(cmd, "%s", mt_reader_message(r));
		mt_reader_free(r);
		return CLI_EXIT_FAILURE;
	}
	*out = r;
	return CLI_EXIT_OK;
}

int cli_parse_size(const char *cmd, const char *option, const char *text, uint64_t *bytes)
{
	if (mt_size_parse(text, bytes) < 0)
		return cli_usage_error(cmd, "%s: '%s' is not a size (e.g. 24GiB, 512MB, 1e9)",
		                       option, text);
	return CLI_EXIT_OK;
}

int cli_parse_u64(const char *cmd, const char *option, const char *text, uint64_t *value)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!text || *text < '0' || *text > '9')
		return cli_usage_error(cmd, "%s: '%s' is not a number", option, text ? text : "");
	v = strtoull(text, &end, 10);
	if (errno || *end)
		return cli_usage_error(cmd, "%s: '%s' is not a number", option, text);
	*value = v;
	return CLI_EXIT_OK;
}

int cli_parse_count(const char *cmd, const char *option, const char *text, uint64_t *value)
{
	size_t len = text ? strlen(text) : 0;
	char last = len ? text[len - 1] : 0;

	/* a count is a size without binary units or a B: mt_size_parse's
	 * exact decimal arithmetic, its refusals and its K/M/G/T suffixes */
	if (!len || last == 'b' || last == 'B' || mt_size_parse(text, value) < 0)
		return cli_usage_error(cmd, "%s: '%s' is not a count (e.g. 1000000, 1e6, 10M)",
		                       option, text ? text : "");
	return CLI_EXIT_OK;
}

int cli_parse_time(const char *text, uint64_t *ns)
{
	static const struct {
		const char *suffix;
		double scale;
	} units[] = { { "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 } };
	char *end;
	double v;
	size_t i;

	if (!text || !*text || (*text != '.' && (*text < '0' || *text > '9')))
		return -EINVAL;
	v = strtod(text, &end);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix)) {
			double t = v * units[i].scale;

			if (!isfinite(t) || t < 0 || t > 1.8e19)
				return -EINVAL;
			*ns = (uint64_t)llround(t);
			return 0;
		}
	return -EINVAL;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (c == ':')
		return cli_usage_error(cmd, "option '%s' needs a value", arg);
	if (optopt && optopt != '?' && !(arg[0] == '-' && arg[1] == '-'))
		return cli_usage_error(cmd, "unknown option '-%c'", optopt);
	return cli_usage_error(cmd, "unknown option '%s'", arg);
}

char *cli_command_line(int argc, char **argv)
{
	size_t len = sizeof("memtrace");
	char *line, *p;
	int i;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	line = malloc(len);
	if (!line)
		return NULL;
	p = line + sprintf(line, "memtrace");
	for (i = 0; i < argc; i++)
		p += sprintf(p, " %s", argv[i]);
	return line;
}

int cli_keep_old(const char *cmd, const char *path)
{
	char kept[PATH_MAX + 16], err[PATH_MAX + 256];
	int rc = mt_trace_keep_previous(path, kept, sizeof(kept), err, sizeof(err));

	if (rc < 0) {
		cli_error(cmd, "%s", err);
		return CLI_EXIT_FAILURE;
	}
	if (rc > 0)
		fprintf(stderr, "memtrace %s: kept the existing %s as %s\n", cmd, path, kept);
	return CLI_EXIT_OK;
}

static bool starts_as_sqlite(const char *path)
{
	static const char magic[16] = "SQLite format 3";
	char head[sizeof(magic)];
	FILE *f = fopen(path, "rb");
	bool yes = f && fread(head, 1, sizeof(head), f) == sizeof(head) &&
	           memcmp(head, magic, sizeof(magic)) == 0;

	if (f)
		fclose(f);
	return yes;
}

int cli_keep_trace_before_picture(const char *cmd, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0 || (S_ISREG(st.st_mode) && !starts_as_sqlite(path)))
		return CLI_EXIT_OK; /* nothing there, or a plain file to replace */
	return cli_keep_old(cmd, path);
}

int cli_incomplete_note(struct mt_reader *r, char *line, size_t len)
{
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	uint64_t until, start = MT_TIME_UNKNOWN;
	char at[32];

	line[0] = '\0';
	if (mt_reader_incomplete(r, &until) != 1)
		return 0;
	if (mt_reader_kind_stats(r, NULL, stats) == 0)
		for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++)
			if (stats[k].events && stats[k].first_ts < start)
				start = stats[k].first_ts;
	if (start == MT_TIME_UNKNOWN)
		snprintf(line, len,
		         "incomplete: a writer stopped without closing the trace before "
		         "it committed any event");
	else
		snprintf(line, len,
		         "incomplete: a writer stopped without closing the trace; only the events "
		         "before +%s are used",
		         mt_duration_format(until - start, at, sizeof(at)));
	return 1;
}

int cli_print_json(json_t *value)
{
	int rc;

	if (!value)
		return CLI_EXIT_FAILURE;
	rc = json_dumpf(value, stdout,
	                JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	json_decref(value);
	if (rc < 0 || fputc('\n', stdout) == EOF || fflush(stdout) == EOF)
		return CLI_EXIT_FAILURE;
	return CLI_EXIT_OK;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cli_progress_start(struct cli_progress *p, const char *what, uint64_t total)
{
	p->what = what;
	p->total = total;
	p->last_draw_ns = 0;
	p->enabled = isatty(STDERR_FILENO);
}

void cli_progress_update(struct cli_progress *p, uint64_t done)
{
	uint64_t now;

	if (!p->enabled)
		return;
	now = now_ns();
	if (now - p->last_draw_ns < 100000000u)
		return;
	p->last_draw_ns = now;
	if (p->total)
		fprintf(stderr, "\r%s: %3.0f%%", p->what, 100.0 * (double)done / (double)p->total);
	else
		fprintf(stderr, "\r%s: %" PRIu64, p->what, done);
	fflush(stderr);
}

void cli_progress_callback(void *arg, uint64_t done, uint64_t total)
{
	struct cli_progress *p = arg;

	p->total = total;
	cli_progress_update(p, done);
}

void cli_progress_done(struct cli_progress *p)
{
	if (p->enabled && p->last_draw_ns)
		fputs("\r\033[K", stderr);
	p->enabled = false;
}

int cli_not_built(const char *cmd, const char *why)
{
	cli_error(cmd, "not built yet (%s)", why);
	return CLI_EXIT_FAILURE;
}

/* Splits "a,b:k=v,k=v,c" into specs: a token starts a new spec when it has
 * a ':' or no '='; else it is one more parameter of the spec before it. */
static int split_policies(const char *arg, char specs[][CLI_POLICY_SPEC], size_t max, size_t *n)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", arg);
	*n = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		bool param = strchr(tok, '=') && !strchr(tok, ':');
		if (param && *n) {
			size_t len = strlen(specs[*n - 1]);
			snprintf(specs[*n - 1] + len, CLI_POLICY_SPEC - len, ",%s", tok);
			continue;
		}
		if (*n == max)
			return -E2BIG;
		snprintf(specs[(*n)++], CLI_POLICY_SPEC, "%s", tok);
	}
	return 0;
}

static int check_policy(const char *cmd, const char *spec)
{
	char name[CLI_POLICY_SPEC], valid[512] = "";
	snprintf(name, sizeof(name), "%s", spec);
	name[strcspn(name, ":")] = '\0';
	if (mt_policy_find(name))
		return CLI_EXIT_OK;
	size_t used = 0;
	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++)
		used += (size_t)snprintf(valid + used, sizeof(valid) - used, "%s%s",
		                         used ? ", " : "", (*p)->name);
	return cli_usage_error(cmd, "unknown policy '%s' (valid: %s, all)", name, valid);
}

int cli_policy_specs(const char *cmd, const char *arg, char specs[][CLI_POLICY_SPEC], size_t max,
                     size_t *n)
{
	int rc;
	*n = 0;
	if (!strcmp(arg, "all")) {
		for (const struct mt_policy_ops *const *p = mt_policy_list(); *p && *n < max; p++)
			snprintf(specs[(*n)++], CLI_POLICY_SPEC, "%s", (*p)->name);
		return CLI_EXIT_OK;
	}
	if (split_policies(arg, specs, max, n) < 0 || *n == 0)
		return cli_usage_error(cmd, "--policy: bad list '%s'", arg);
	for (size_t i = 0; i < *n; i++)
		if ((rc = check_policy(cmd, specs[i])) != CLI_EXIT_OK)
			return rc;
	return CLI_EXIT_OK;
}
