// SPDX-License-Identifier: MIT
/*
 * blamer: see what every process on the machine is doing and what it
 * costs, live or after it died. Option parsing, help and dispatch only.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef BLAMER_VERSION
#define BLAMER_VERSION "unknown"
#endif

static const struct command {
	const char *name;
	int (*fn)(struct cli *c);
	uint32_t opts;		/* OPT_* it accepts */
	const char *args;	/* its arguments, for the usage line */
	const char *help;	/* one line, for `blamer --help` */
	const char *more;	/* the rest, for `blamer help NAME` */
} commands[] = {
	{ "list", cmd_list, OPT_JSON, "",
	  "one line per heap: pid, command, state, slabs, heap size and use, health, identity",
	  "Reads only the heaps' headers, so it stays cheap however many dead\n"
	  "heaps there are. HEAP_SIZE is what the heap's slabs take, HEAP_USED\n"
	  "what the heap has allocated in them. HEALTH is what the headers show:\n"
	  "unchecked when they are sound (`blamer dump PID` reads the records).\n"
	  "IDENTITY: kernel (pid, comm, uid and exit are the kernel's facts) or\n"
	  "claimed (the dir backend: they are the heap's word).\n" },
	{ "dump", cmd_dump, OPT_JSON, "[PID...]",
	  "everything the heaps say, readable",
	  "For every process (or the PIDs given): how it runs or ended, its heap,\n"
	  "command line, phase, data, every thread's activity stack with ages,\n"
	  "modules, log, children and attribution. Dead heaps are read in full.\n" },
	{ "blame", cmd_blame, OPT_JSON | OPT_UNIT | OPT_DEAD | OPT_LIVE_ONLY | OPT_BY, "[PID...]",
	  "the attribution tree and the metrics, summed over processes, largest first",
	  "Each line is a path of the attribution graph with its inclusive total\n"
	  "per unit (the path and everything below it) and how many processes\n"
	  "contribute; then each process's share (--by role: each role's), then\n"
	  "the programs' metrics merged over processes (histograms with count,\n"
	  "sum, p50, p90 and p99). Dead processes count (--live-only leaves them\n"
	  "out). PIDs limit all to those processes.\n" },
	{ "top", cmd_top, OPT_JSON | OPT_ONCE | OPT_INTERVAL | OPT_COUNT | OPT_DEAD | OPT_LIVE_ONLY |
	  OPT_BY, "",
	  "live view: phase, current activity, roles, attribution totals and rates",
	  "On a terminal it takes keys:\n"
	  "  q            quit\n"
	  "  space        refresh now\n"
	  "  p            pause or resume\n"
	  "  s            sort processes by the next column (pid, command, state,\n"
	  "               phase, threads, activity age); r reverses the order\n"
	  "  / or f       filter: a pid, or part of a command name (empty: all)\n"
	  "  + or -       refresh less or more often (double or halve the interval)\n"
	  "  h or ?       show the keys\n"
	  "Colour is used on a terminal unless NO_COLOR is set or TERM is dumb.\n" },
	{ "postmortem", cmd_postmortem, OPT_JSON, "[PID...]",
	  "dead processes: how and when they ended, last activities, data, log", NULL },
	{ "release", cmd_release, OPT_ALL, "ID|PID... | --all",
	  "free dead processes' heaps", NULL },
	{ "export", cmd_export, OPT_PROM | OPT_OUTPUT | OPT_DEAD | OPT_INTERVAL | OPT_LISTEN |
	  OPT_PER_PROCESS | OPT_STATE | OPT_KEEP,
	  "[--prometheus]",
	  "metrics for Prometheus: once, as a textfile, or served over HTTP",
	  "With --output FILE the file is replaced atomically (node_exporter's\n"
	  "textfile collector never sees half of it); with --interval S too, every\n"
	  "S seconds. --listen ADDR:PORT serves GET /metrics (ADDR defaults to\n"
	  "127.0.0.1) until SIGTERM; --listen unix:PATH on a socket file of mode\n"
	  "0660 (its owner and group may connect), --listen systemd on the socket\n"
	  "systemd passes. Many clients are served at once, each within fixed\n"
	  "budgets of time and bytes, at most 32 of one peer (a local user, by\n"
	  "uid; else an address), so other clients cannot blind a scraper.\n"
	  "Series are the service's: one per metric, label set, path and uid over\n"
	  "every process, live and dead. A long-lived exporter (or one given\n"
	  "--state) folds each dead heap into a remainder in its state file\n"
	  "(--state, else $STATE_DIRECTORY/fold.state or\n"
	  "/var/lib/blamer/fold-UID.state), durably, then releases the heap but the\n"
	  "--keep-dead N of each uid seen dead last (default 8): so the series stay\n"
	  "as many however many workers come and go, and no counter goes down.\n"
	  "--per-process writes each process's own series instead (labels pid,\n"
	  "start_time_ns, heap, identity), and folds nothing.\n"
	  "--listen and --interval never let a counter go down, whatever a heap\n"
	  "does (held at its highest; blamer_counter_decreases_total counts what\n"
	  "a heap turned back); a one-off export says what the heaps say.\n" },
	{ "load", cmd_load, 0, "[MODULE.ko] [param=value...]", "load the kernel module", NULL },
	{ "unload", cmd_unload, 0, "", "unload the kernel module", NULL },
	{ "status", cmd_status, OPT_JSON, "",
	  "the backend in use: module limits and counts, or the directory's heaps",
	  "The backend is chosen as for every other command: --backend, --dir,\n"
	  "then BLAMER_BACKEND and BLAMER_DIR, then the device if /dev/blamer\n"
	  "exists, else the directory.\n" },
	{ "help", NULL, 0, "[COMMAND]", "this help, or a command's", NULL },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* The options of commands, in the order help lists them. */
static const struct option_help {
	uint32_t bit;
	const char *name;	/* as given, for errors */
	const char *synopsis;	/* for the usage line */
	const char *usage;	/* with its value, for the list */
	const char *help;
} option_help[] = {
	{ OPT_JSON, "--json", "-j|--json", "-j, --json", "one JSON document (blamer(1), JSON OUTPUT)" },
	{ OPT_ONCE, "--once", "--once", "--once", "one frame, then exit" },
	{ OPT_INTERVAL, "--interval", "--interval S", "--interval S",
	  "seconds between frames (default 2); export: between rewrites" },
	{ OPT_COUNT, "--count", "--count N", "--count N", "stop after N frames" },
	{ OPT_UNIT, "--unit", "--unit UNIT", "--unit UNIT",
	  "sort by this unit: cpu, bytes, count or a number" },
	{ OPT_DEAD, "--dead", "--dead", "--dead",
	  "include dead heaps (now always; kept for old scripts)" },
	{ OPT_PROM, "--prometheus", NULL, "--prometheus", "the Prometheus text format (the only one: the default)" },
	{ OPT_OUTPUT, "--output", "--output FILE", "--output FILE",
	  "write to FILE instead of stdout" },
	{ OPT_ALL, "--all", NULL, "--all", "every dead process" },
	{ OPT_LISTEN, "--listen", "--listen ADDR:PORT", "--listen ADDR:PORT",
	  "serve /metrics over HTTP (ADDR default 127.0.0.1; or unix:PATH, systemd)" },
	{ OPT_PER_PROCESS, "--per-process", "--per-process", "--per-process",
	  "each process's own series, not the service's (nothing folded)" },
	{ OPT_STATE, "--state", "--state FILE", "--state FILE",
	  "the fold state (default: $STATE_DIRECTORY/fold.state, /var/lib/blamer)" },
	{ OPT_KEEP, "--keep-dead", "--keep-dead N", "--keep-dead N",
	  "folded dead heaps not released, the last N (default 8)" },
	{ OPT_LIVE_ONLY, "--live-only", "--live-only", "--live-only",
	  "leave dead processes out of the totals (they count by default)" },
	{ OPT_BY, "--by", "--by role", "--by role", "totals by role" },
};

static const char global_help[] =
	"global options:\n"
	"  --backend device|dir  where heaps are (default: $BLAMER_BACKEND, else the\n"
	"                        device if /dev/blamer exists, else dir)\n"
	"  --dir DIR             dir backend directory (default: $BLAMER_DIR, else\n"
	"                        /dev/shm/blamer-UID); implies --backend dir\n"
	"  -h, --help            help (after a command: that command's)\n"
	"  --version             print the version\n";

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: blamer [--backend device|dir] [--dir DIR] COMMAND [options] [args]\n\n"
		"commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n%s\n`blamer help COMMAND` or `blamer COMMAND --help` shows a command's options.\n"
		"See blamer(1).\n", global_help);
}

static void command_help(FILE *f, const struct command *cmd)
{
	size_t i;

	fprintf(f, "usage: blamer [global options] %s", cmd->name);
	for (i = 0; i < sizeof(option_help) / sizeof(option_help[0]); i++)
		if ((cmd->opts & option_help[i].bit) && option_help[i].synopsis)
			fprintf(f, " [%s]", option_help[i].synopsis);
	fprintf(f, "%s%s\n\n%c%s.\n", cmd->args[0] ? " " : "", cmd->args,
		cmd->help[0] - 'a' + 'A', cmd->help + 1);
	if (cmd->more)
		fprintf(f, "\n%s", cmd->more);
	if (cmd->opts) {
		fprintf(f, "\noptions:\n");
		for (i = 0; i < sizeof(option_help) / sizeof(option_help[0]); i++)
			if (cmd->opts & option_help[i].bit)
				fprintf(f, "  %-21s %s\n", option_help[i].usage, option_help[i].help);
	}
	fprintf(f, "\n%s\nSee blamer(1).\n", global_help);
}

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static const char *opt_name(uint32_t bit)
{
	size_t i;

	for (i = 0; i < sizeof(option_help) / sizeof(option_help[0]); i++)
		if (option_help[i].bit == bit)
			return option_help[i].name;
	return "?";
}

/* blamer help [COMMAND] */
static int help(const struct cli *c)
{
	const struct command *cmd;

	if (c->nargs == 0) {
		usage(stdout);
		return EX_OK;
	}
	if (c->nargs > 1)
		return usage_err("help takes one command (see `blamer help`)");
	cmd = find_command(c->args[0]);
	if (!cmd)
		return usage_err("unknown command '%s' (see `blamer help`)", c->args[0]);
	command_help(stdout, cmd);
	return EX_OK;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "dir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "once", no_argument, NULL, '1' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "all", no_argument, NULL, 'a' },
		{ "unit", required_argument, NULL, 'u' },
		{ "dead", no_argument, NULL, 'D' },
		{ "listen", required_argument, NULL, 'L' },
		{ "per-process", no_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 's' },
		{ "keep-dead", required_argument, NULL, 'k' },
		{ "live-only", no_argument, NULL, 'l' },
		{ "by", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = { .backend = BLAMER_BACKEND_AUTO, .interval = 2.0, .keep = 8 };
	enum blamer_backend env;
	char why[128];
	const struct command *cmd = NULL;
	bool want_help = false;
	unsigned long long num;
	char *end;
	size_t i;
	int o;

	/* Past RLIMIT_FSIZE (systemd's LimitFSIZE=) a write fails with EFBIG,
	 * which every writer here reports and cleans up after: SIGXFSZ's
	 * default action ended an exporter at its first fold, in a loop
	 * under Restart=, and left the temporaries. */
	signal(SIGXFSZ, SIG_IGN);
	opterr = 0;
	while ((o = getopt_long(argc, argv, "+:hj", lopts, NULL)) != -1 || optind < argc) {
		if (o == -1) {
			/* a positional argument: the command, or one of its args */
			if (!c.cmd)
				c.cmd = argv[optind];
			else
				argv[c.nargs++] = argv[optind];	/* reuse argv storage */
			optind++;
			continue;
		}
		switch (o) {
		case 'b':
			if (!strcmp(optarg, "device"))
				c.backend = BLAMER_BACKEND_DEVICE;
			else if (!strcmp(optarg, "dir"))
				c.backend = BLAMER_BACKEND_DIR;
			else
				return usage_err("unknown backend '%s': use --backend device or --backend dir",
						 optarg);
			break;
		case 'd':
			if (!*optarg)
				return usage_err("bad --dir '': give a directory");
			c.dir = optarg;
			if (c.backend == BLAMER_BACKEND_AUTO)
				c.backend = BLAMER_BACKEND_DIR;
			break;
		case 'j': c.seen |= OPT_JSON; c.json = true; break;
		case '1': c.seen |= OPT_ONCE; c.once = true; break;
		case 'i':
			c.seen |= OPT_INTERVAL;
			c.interval = strtod(optarg, &end);
			if (*end || !(c.interval >= 0.01 && c.interval <= 86400))
				return usage_err("bad --interval '%s': give seconds between 0.01 and 86400",
						 optarg);
			break;
		case 'n':
			c.seen |= OPT_COUNT;
			if (!parse_number(optarg, LONG_MAX, &num) || num < 1)
				return usage_err("bad --count '%s': give a number of frames >= 1",
						 optarg);
			c.count = (long)num;
			break;
		case 'P': c.seen |= OPT_PROM; break;
		case 'o':
			if (!*optarg)
				return usage_err("bad --output '': give a file");
			c.seen |= OPT_OUTPUT;
			c.output = optarg;
			break;
		case 'a': c.seen |= OPT_ALL; break;
		case 'u': c.seen |= OPT_UNIT; c.unit = optarg; break;
		case 'D': c.seen |= OPT_DEAD; c.dead = true; break;
		case 'L': c.seen |= OPT_LISTEN; c.listen = optarg; break;
		case 'p': c.seen |= OPT_PER_PROCESS; c.per_process = true; break;
		case 's':
			if (!*optarg)
				return usage_err("bad --state '': give a file");
			c.seen |= OPT_STATE;
			c.state = optarg;
			break;
		case 'k':
			c.seen |= OPT_KEEP;
			if (!parse_number(optarg, 100000, &num))
				return usage_err("bad --keep-dead '%s': give a number of heaps, 0 to 100000",
						 optarg);
			c.keep = (unsigned int)num;
			break;
		case 'l': c.seen |= OPT_LIVE_ONLY; c.live_only = true; break;
		case 'B':
			c.seen |= OPT_BY;
			if (strcmp(optarg, "role"))
				return usage_err("bad --by '%s': totals go by role (--by role)", optarg);
			c.by_role = true;
			break;
		case 'h': want_help = true; break;
		case 'V':
			printf("blamer %s (JSON schema version %d)\n", BLAMER_VERSION,
			       BLAMER_JSON_SCHEMA_VERSION);
			return EX_OK;
		case ':':
			return usage_err("option '%s' needs a value (see `blamer --help`)",
					 argv[optind - 1]);
		default:
			return usage_err("unknown option '%s' (see `blamer --help`)",
					 argv[optind - 1]);
		}
	}
	c.args = argv;
	if (!c.cmd) {
		usage(want_help ? stdout : stderr);
		return want_help ? EX_OK : EX_USAGE;
	}
	cmd = find_command(c.cmd);
	if (!cmd)
		return usage_err("unknown command '%s' (see `blamer help`)", c.cmd);
	if (want_help) {
		command_help(stdout, cmd);
		return EX_OK;
	}
	if (!cmd->fn)
		return help(&c);
	for (i = 0; i < 32; i++) {
		uint32_t bit = 1u << i;

		if ((c.seen & bit) && !(cmd->opts & bit))
			return usage_err("%s does not apply to `blamer %s` (see `blamer help %s`)",
					 opt_name(bit), cmd->name, cmd->name);
	}
	/* A writer in this environment would fail on it: say so here too,
	 * even where an option overrides it. */
	if (cmd->fn != cmd_load && cmd->fn != cmd_unload &&
	    blamer_backend_from_env(&env, why, sizeof(why)))
		return err("%s", why);
	return cmd->fn(&c);
}
