// SPDX-License-Identifier: MIT
/*
 * blamer export --prometheus [--output FILE]: the text exposition format.
 * With --output the file is written next to FILE and renamed over it, so
 * node_exporter's textfile collector never reads a half-written file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_export(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	char tmp[4096];
	FILE *f = stdout;
	int ret;

	if (!(c->seen & OPT_PROM))
		return usage_err("export needs a format: `blamer export --prometheus`");
	if (c->nargs)
		return usage_err("export takes no arguments (use --output FILE)");
	ret = take(c, READ_FOR_EXPORT | (c->dead ? BLAMER_READ_DEAD_FULL : 0), &r, &s);
	if (ret)
		return ret;
	if (c->output) {
		if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", c->output, (int)getpid()) >=
		    (int)sizeof(tmp)) {
			ret = usage_err("--output path too long");
			goto out;
		}
		f = fopen(tmp, "w");
		if (!f) {
			ret = err("cannot write %s: %s", tmp, strerror(errno));
			goto out;
		}
	}
	if (blamer_snapshot_write_prometheus(s, f) || fflush(f)) {
		ret = err("writing the exposition failed: %s", strerror(errno));
		if (c->output) {
			fclose(f);
			unlink(tmp);
		}
		goto out;
	}
	if (c->output) {
		if (fclose(f) || rename(tmp, c->output)) {
			ret = err("cannot write %s: %s", c->output, strerror(errno));
			unlink(tmp);
		}
	}
out:
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return ret;
}
