// SPDX-License-Identifier: MIT
/*
 * blamer status: what the backend says about itself (the module's
 * account, limits and parameters, or the directory's heaps) and the
 * writes every heap dropped.
 */
#include <stdio.h>

#include "cli.h"
#include "term.h"

/* The writes every heap could not record in full, summed by reason. */
static void print_all_drops(const struct blamer_backend_status *st)
{
	if (st->dropped)
		printf("heaps that dropped writes: %llu\n", (unsigned long long)st->dropping_heaps);
	print_drops(stdout, "", st->drops, st->dropped);
	if (!st->dropped)
		printf("dropped: nothing (every write was recorded in full)\n");
}

int cmd_status(struct cli *c)
{
	struct blamer_reader_opts o = { .backend = c->backend, .dir = c->dir };
	struct blamer_backend_status st;
	struct blamer_reader *r;
	char e[512], b1[32], b2[32], b3[32], b4[32];
	size_t i;
	int ret;

	if (c->nargs)
		return usage_err("status takes no arguments");
	/* the backend every other command would use */
	r = blamer_reader_open(&o, e, sizeof(e));
	if (!r)
		return err("%s", e);
	ret = check_source(c, r);
	if (!ret && blamer_reader_status(r, &st, e, sizeof(e)))
		ret = err("%s", e);
	if (!ret && !c->json && st.backend == BLAMER_BACKEND_DIR && !dir_asked(c))
		fprintf(stderr, "blamer: %s: showing the dir backend\n", module_loaded() ?
			"the module is loaded but /dev/blamer is missing" :
			"/dev/blamer is absent (the module is not loaded: `blamer load` loads it)");
	blamer_reader_close(r);
	if (ret)
		return ret;
	if (c->json) {
		blamer_status_write_json(&st, stdout);
		return EX_OK;
	}
	print_all_drops(&st);
	if (st.backend == BLAMER_BACKEND_DIR) {
		fmt_bytes(b1, sizeof(b1), st.bytes);
		tty_printf(stdout, "backend: dir %s\n", st.source);
		printf("heaps: %llu (%llu dead)\nbytes: %s\n", (unsigned long long)st.heaps,
		       (unsigned long long)st.dead, b1);
		printf("identity: claimed (each heap's pid, uid, start time, state and command line are its files' word)\n");
		return EX_OK;
	}
	fmt_bytes(b1, sizeof(b1), st.user_bytes);
	fmt_bytes(b2, sizeof(b2), st.max_slab_bytes);
	fmt_bytes(b3, sizeof(b3), st.max_user_bytes);
	fmt_bytes(b4, sizeof(b4), st.max_total_bytes);
	tty_printf(stdout, "module: loaded, %s\n", st.source);
	printf("identity: kernel (pid, uid, start time, comm and exit status are the kernel's facts)\n");
	printf("your slabs: %llu (%llu orphaned, at most %llu kept), %s of %s\n",
	       (unsigned long long)st.user_slabs, (unsigned long long)st.user_orphans,
	       (unsigned long long)st.max_user_orphans, b1, b3);
	/* Device-wide counts only for those who may read every slab. */
	if (st.device_totals) {
		fmt_bytes(b1, sizeof(b1), st.bytes);
		printf("all slabs: %llu (%llu orphaned), %s of %s\n",
		       (unsigned long long)st.slabs, (unsigned long long)st.orphans, b1, b4);
	}
	printf("limits: %s per slab, %s per user, %s in all\nparameters:\n", b2, b3, b4);
	for (i = 0; i < st.nparams; i++)
		tty_printf(stdout, "  %-20s %s\n", st.params[i].name, st.params[i].value);
	return EX_OK;
}
