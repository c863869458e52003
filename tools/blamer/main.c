// SPDX-License-Identifier: MIT
/*
 * blamer: see what every process on the machine is doing and what it
 * costs, live or after it died. Option parsing and dispatch only.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct command {
	const char *name;
	int (*fn)(struct cli *c);
	uint32_t opts;		/* OPT_* it accepts */
	const char *help;
} commands[] = {
	{ "list", cmd_list, OPT_JSON, "one line per heap: pid, comm, state, slabs, size, used" },
	{ "dump", cmd_dump, OPT_JSON, "[PID...] everything the heaps say, readable" },
	{ "blame", cmd_blame, OPT_JSON | OPT_UNIT | OPT_DEAD,
	  "the attribution tree summed over processes, largest first" },
	{ "top", cmd_top, OPT_JSON | OPT_ONCE | OPT_INTERVAL | OPT_COUNT | OPT_DEAD,
	  "live view: phase, current activity, attribution totals and rates" },
	{ "postmortem", cmd_postmortem, OPT_JSON,
	  "[PID...] dead processes: how they ended, last activities, data, log" },
	{ "release", cmd_release, OPT_ALL, "ID|PID... | --all  free dead processes' heaps" },
	{ "export", cmd_export, OPT_PROM | OPT_OUTPUT | OPT_DEAD,
	  "--prometheus [--output FILE]  text exposition for node_exporter" },
	{ "load", cmd_load, 0, "[MODULE.ko] [param=value...]  load the kernel module" },
	{ "unload", cmd_unload, 0, "unload the kernel module" },
	{ "status", cmd_status, OPT_JSON, "module parameters, slab count, bytes and limits" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: blamer [--backend device|dir] [--dir DIR] COMMAND [options] [args]\n\n"
		"commands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\noptions:\n"
		"  --backend device|dir  where heaps are (default: device if /dev/blamer exists)\n"
		"  --dir DIR             dir backend directory (default $BLAMER_DIR or /dev/shm/blamer-UID)\n"
		"  --json                JSON output (schema: Documentation/blamer-json-schema.json)\n"
		"  --once, --interval S, --count N   top: one frame, refresh period, frames\n"
		"  --unit NAME           blame: sort by this unit (cpu_ns, bytes, count, N)\n"
		"  --dead                blame, top, export: include dead heaps of the dir backend\n"
		"See blamer(1).\n");
}

static const char *opt_name(uint32_t bit)
{
	switch (bit) {
	case OPT_JSON: return "--json";
	case OPT_ONCE: return "--once";
	case OPT_INTERVAL: return "--interval";
	case OPT_PROM: return "--prometheus";
	case OPT_OUTPUT: return "--output";
	case OPT_COUNT: return "--count";
	case OPT_ALL: return "--all";
	case OPT_UNIT: return "--unit";
	case OPT_DEAD: return "--dead";
	}
	return "?";
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = { .backend = BLAMER_BACKEND_AUTO, .interval = 2.0 };
	const struct command *cmd = NULL;
	char *end;
	size_t i;
	int o;

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
			c.count = strtol(optarg, &end, 10);
			if (*end || c.count < 1)
				return usage_err("bad --count '%s': give a number of frames >= 1",
						 optarg);
			break;
		case 'P': c.seen |= OPT_PROM; break;
		case 'o': c.seen |= OPT_OUTPUT; c.output = optarg; break;
		case 'a': c.seen |= OPT_ALL; break;
		case 'u': c.seen |= OPT_UNIT; c.unit = optarg; break;
		case 'D': c.seen |= OPT_DEAD; c.dead = true; break;
		case 'h':
			usage(stdout);
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
		usage(stderr);
		return EX_USAGE;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, c.cmd))
			cmd = &commands[i];
	if (!cmd)
		return usage_err("unknown command '%s' (see `blamer --help`)", c.cmd);
	for (i = 0; i < 32; i++) {
		uint32_t bit = 1u << i;

		if ((c.seen & bit) && !(cmd->opts & bit))
			return usage_err("%s does not apply to `blamer %s` (see `blamer --help`)",
					 opt_name(bit), cmd->name);
	}
	return cmd->fn(&c);
}
