/* memtrace render — draw a timeline, segment map, policy comparison or
 * anatomy of a trace as PNG, SVG or PDF. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-analyze.h"
#include "memtrace-common.h"
#include "memtrace-replay.h"
#include "memtrace-viewer.h"

#define CMD "render"

/* The views that read an option (MT_VIEW_USES_*), "a, b" into buf. */
static const char *views_using(unsigned uses, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < mt_view_count(); i++)
		if (mt_view_at(i)->uses & uses && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
			                      mt_view_at(i)->name);
	return buf;
}

/* The views' names joined by sep ("a|b|c") into buf. */
static const char *view_names(const char *sep, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < mt_view_count() && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? sep : "", mt_view_at(i)->name);
	return buf;
}

static void usage(FILE *out)
{
	char names[256], at[256], window[256], policies[256], devices[256], phases[256];
	char budget[32];
	size_t i;

	mt_size_format(MT_RENDER_PLAN_BUDGET, budget, sizeof(budget));

	fprintf(out,
	        "Usage: memtrace render [TRACE] OUT.png|svg|pdf|html [OPTIONS]\n"
	        "\n"
	        "Draws one view of TRACE (default memtrace.db). The view defaults to OUT's\n"
	        "name when it names one (%s.png, ...), else %s (html for OUT.html).\n"
	        "\n"
	        "OUT.html is one self-contained page (no network): zoom with the wheel or\n"
	        "+ -, pan by dragging or with the arrow keys, hover an allocation for its\n"
	        "size, call site, NVTX range, stream and lifetime, click to pin its call\n"
	        "site; the anatomy and segment maps follow the moment under the cursor.\n"
	        "Its URL keeps the state: view.html#t=835ms&span=20ms&policy=caching.\n"
	        "\n"
	        "Options:\n"
	        "  --view %s\n",
	        mt_view_at(0)->name, mt_view_at(0)->name, view_names("|", names, sizeof(names)));
	for (i = 0; i < mt_view_count(); i++) {
		const struct mt_view_info *v = mt_view_at(i);
		const char *line = v->summary;
		char label[64];

		snprintf(label, sizeof(label), "%s:", v->name);
		while (*line) {
			const char *nl = strchr(line, '\n');
			int len = nl ? (int)(nl - line) : (int)strlen(line);

			fprintf(out, "      %-10s%.*s\n", label, len, line);
			label[0] = '\0';
			line += len + (nl != NULL);
		}
	}
	fprintf(out,
	        "  --policy NAME[,NAME...]  policies to draw: saved replays, else replayed\n"
	        "                           under sim one after the other; NAME may carry\n"
	        "                           :key=value,... (%s)\n"
	        "  --at peak|TIME           the moment (%s; default peak)\n"
	        "  --from TIME, --to TIME   time window (%s)\n"
	        "  --size WxH               picture size (default %ux%u)\n"
	        "  --device N               the CUDA device number the program saw, as report\n"
	        "                           names it (default: the first with allocations;\n"
	        "                           %s: every device)\n"
	        "  --all-ranges             phases include the NVTX ranges libraries open\n"
	        "                           for their own work (cub::, thrust::, cuBLAS,\n"
	        "                           cuDNN), left out by default (%s)\n"
	        "  --compare B.db           draw TRACE (run A) and B.db (run B), one above\n"
	        "                           the other, B stretched so that its NVTX phases\n"
	        "                           line up with A's (see memtrace compare)\n"
	        "  --list-views             the views' names, one a line\n"
	        "  -h, --help               this text\n"
	        "\n"
	        "TIME is since the start of the trace: 1.5 (seconds), 1.5s, 300ms, 20us, 100ns.\n"
	        "\n"
	        "Policies with no saved replay in TRACE are replayed one after the other.\n"
	        "planned plans with every request known and holds about %llu bytes a\n"
	        "request while it replays: when that comes to more than %s, the timeline\n"
	        "and policies views leave it out and say so (memtrace replay saves a\n"
	        "replay of it, which they then draw), and segments refuses it.\n"
	        "\n"
	        "Environment: MEMTRACE_PLAN_BUDGET=SIZE|none sets that limit (default\n"
	        "%s; none: always replay planned).\n",
	        views_using(MT_VIEW_USES_POLICIES, policies, sizeof(policies)),
	        views_using(MT_VIEW_USES_AT, at, sizeof(at)),
	        views_using(MT_VIEW_USES_WINDOW, window, sizeof(window)), MT_RENDER_DEFAULT_WIDTH,
	        MT_RENDER_DEFAULT_HEIGHT,
	        views_using(MT_VIEW_USES_ALL_DEVICES, devices, sizeof(devices)),
	        views_using(MT_VIEW_USES_PHASES, phases, sizeof(phases)),
	        (unsigned long long)mt_plan_bytes_estimate(1), budget, budget);
}

static int parse_size(const char *text, unsigned *w, unsigned *h)
{
	char tail;

	if (sscanf(text, "%ux%u%c", w, h, &tail) != 2 || *w < MT_RENDER_MIN_SIDE ||
	    *h < MT_RENDER_MIN_SIDE || *w > MT_RENDER_MAX_SIDE || *h > MT_RENDER_MAX_SIDE)
		return -EINVAL;
	return 0;
}

/* o->plan_budget from MEMTRACE_PLAN_BUDGET, when set. */
static int plan_budget(struct mt_render_options *o)
{
	const char *text = getenv("MEMTRACE_PLAN_BUDGET");

	if (!text || !*text)
		return CLI_EXIT_OK;
	if (!strcmp(text, "none"))
		o->plan_budget = UINT64_MAX;
	else if (mt_size_parse(text, &o->plan_budget) < 0 || !o->plan_budget)
		return cli_usage_error(CMD,
		                       "MEMTRACE_PLAN_BUDGET: '%s' is not a size > 0 "
		                       "(256MiB) or none",
		                       text);
	return CLI_EXIT_OK;
}

/* Every policy named in specs exists. */
static int check_policies(const char *specs)
{
	char *copy = strdup(specs), *tok, *save = NULL;
	int rc = CLI_EXIT_OK;

	if (!copy)
		return CLI_EXIT_FAILURE;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		if (strchr(tok, '=') && !colon)
			continue; /* parameters of the previous policy */
		if (colon)
			*colon = '\0';
		if (!mt_policy_find(tok)) {
			rc = cli_usage_error(CMD, "--policy: unknown policy '%s'", tok);
			break;
		}
	}
	free(copy);
	return rc;
}

/* The view named by OUT's file name without extension, if it writes OUT's
 * format (NULL: mt_render takes the first view that does). */
static const char *view_from_stem(const char *out, enum mt_image_format format)
{
	char stem[256];
	const char *base = strrchr(out, '/');
	const struct mt_view_info *view;
	char *dot;

	snprintf(stem, sizeof(stem), "%s", base ? base + 1 : out);
	dot = strrchr(stem, '.');
	if (dot)
		*dot = '\0';
	view = mt_view_find(stem);
	return view && view->formats & 1u << format ? view->name : NULL;
}

static int writable_folder(const char *out)
{
	char *copy = strdup(out);
	int ok;

	if (!copy)
		return 0;
	ok = access(dirname(copy), W_OK) == 0;
	free(copy);
	return ok;
}

int cli_cmd_render(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "view", required_argument, NULL, 'v' },
		{ "policy", required_argument, NULL, 'p' },
		{ "at", required_argument, NULL, 'a' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "device", required_argument, NULL, 'd' },
		{ "list-views", no_argument, NULL, 'l' },
		{ "all-ranges", no_argument, NULL, 'r' },
		{ "compare", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_render_options o = { .width = MT_RENDER_DEFAULT_WIDTH,
		                       .height = MT_RENDER_DEFAULT_HEIGHT };
	const char *trace = NULL, *out, *slash, *compare = NULL;
	struct mt_reader *r = NULL, *b = NULL;
	char names[256];
	unsigned device = 0;
	bool device_set = false;
	char err[512];
	uint64_t v;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			if (!mt_view_find(optarg))
				return cli_usage_error(CMD, "--view: unknown view '%s' (%s)",
				                       optarg,
				                       view_names(", ", names, sizeof(names)));
			o.view = optarg;
			break;
		case 'l':
			for (size_t i = 0; i < mt_view_count(); i++)
				printf("%s\n", mt_view_at(i)->name);
			return fflush(stdout) == EOF ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
		case 'p':
			o.policies = optarg;
			break;
		case 'r':
			o.all_ranges = true;
			break;
		case 'a':
			if (!strcmp(optarg, "peak")) {
				o.at_set = false;
				break;
			}
			if (cli_parse_time(optarg, &o.at) < 0)
				return cli_usage_error(
				        CMD, "--at: '%s' is not peak or a time (1.5s, 300ms)",
				        optarg);
			o.at_set = true;
			break;
		case 'f':
		case 't':
			if (cli_parse_time(optarg, c == 'f' ? &o.from : &o.to) < 0)
				return cli_usage_error(CMD,
				                       "--%s: '%s' is not a time (1.5s, 300ms)",
				                       c == 'f' ? "from" : "to", optarg);
			break;
		case 's':
			if (parse_size(optarg, &o.width, &o.height) < 0)
				return cli_usage_error(
				        CMD, "--size: '%s' is not WxH between %dx%d and %dx%d",
				        optarg, MT_RENDER_MIN_SIDE, MT_RENDER_MIN_SIDE,
				        MT_RENDER_MAX_SIDE, MT_RENDER_MAX_SIDE);
			break;
		case 'd':
			rc = cli_parse_u64(CMD, "--device", optarg, &v);
			if (rc != CLI_EXIT_OK)
				return rc;
			if (v > UINT32_MAX)
				return cli_usage_error(CMD, "--device: '%s' is not a device",
				                       optarg);
			device = (unsigned)v;
			device_set = true;
			break;
		case 'c':
			compare = optarg;
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option(CMD, c, argv);
		}
	}
	if (argc - optind == 1) {
		out = argv[optind];
	} else if (argc - optind == 2) {
		trace = argv[optind];
		out = argv[optind + 1];
	} else {
		return cli_usage_error(
		        CMD, argc - optind
		                     ? "too many arguments"
		                     : "name the picture to write (OUT.png, .svg, .pdf or .html)");
	}
	if (o.to && o.to <= o.from)
		return cli_usage_error(CMD, "--to must be after --from");
	if (mt_image_format_from_path(out, &o.format) < 0) {
		const char *dot = strrchr(out, '.');
		slash = strrchr(out, '/');
		return cli_usage_error(
		        CMD, "%s: cannot write '%s' pictures (use .png, .svg, .pdf or .html)", out,
		        dot && (!slash || dot > slash) ? dot : "extension-less");
	}
	if (compare && o.format == MT_IMAGE_HTML)
		return cli_usage_error(CMD, "--compare draws a picture (.png, .svg or .pdf)");
	if (!o.view)
		o.view = view_from_stem(out, o.format);
	else if (!(mt_view_find(o.view)->formats & 1u << o.format))
		return cli_usage_error(CMD, "the %s view cannot write %s", o.view, out);
	if (o.policies && (rc = check_policies(o.policies)) != CLI_EXIT_OK)
		return rc;
	if ((rc = plan_budget(&o)) != CLI_EXIT_OK)
		return rc;
	if (!writable_folder(out)) {
		cli_error(CMD, "cannot write %s: %s", out,
		          errno == ENOENT ? "no such folder" : "folder not writable");
		return CLI_EXIT_FAILURE;
	}
	if ((rc = cli_keep_trace_before_picture(CMD, out)) != CLI_EXIT_OK)
		return rc;
	rc = cli_open_trace(CMD, trace, &r);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (device_set &&
	    mt_analyze_device_by_ordinal(r, device, &o.device, err, sizeof(err)) < 0) {
		mt_reader_free(r);
		return cli_usage_error(CMD, "--device: %s", err);
	}
	if (compare) {
		rc = cli_open_trace(CMD, compare, &b);
		if (rc != CLI_EXIT_OK) {
			mt_reader_free(r);
			return rc;
		}
		slash = strrchr(compare, '/');
		o.compare = b;
		o.compare_name = slash ? slash + 1 : compare;
	}
	slash = strrchr(trace ? trace : CLI_DEFAULT_TRACE, '/');
	o.trace_name = slash ? slash + 1 : trace ? trace : CLI_DEFAULT_TRACE;
	rc = mt_render(r, &o, out, err, sizeof(err));
	mt_reader_free(r);
	mt_reader_free(b);
	if (rc < 0) {
		cli_error(CMD, "%s", err);
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}
