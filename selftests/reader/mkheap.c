// SPDX-License-Identifier: MIT
/*
 * Write fixture heaps into a dir-backend directory, for the CLI tests:
 *   mkheap DIR dead PID START SCALE     a standard heap of a dead process
 *   mkheap DIR corrupt PID START        a standard heap whose list loops
 *   mkheap DIR live SCALE               a heap for this process; prints
 *                                       the pid, then waits to be killed
 *   mkheap - device-status              the JSON of a device's status, made
 *                                       up, as blamer status --json writes it
 *                                       (the host has no device to ask)
 *   mkheap DIR end CODE|abort           a real writer (the library) that
 *                                       pushes, logs, prints its pid, then
 *                                       exit(CODE)s without blamer_close()
 *                                       or abort()s
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

/* Exits rather than write a heap no reader would take for this process. */
static uint64_t my_start(void)
{
	uint64_t st = fx_self_start_ns();

	if (!st)
		exit(1);
	return st;
}

int main(int argc, char **argv)
{
	struct fx_heap h;

	if (argc >= 6 && !strcmp(argv[2], "dead")) {
		fx_standard(&h, atoll(argv[3]), atoll(argv[4]), strtoull(argv[5], NULL, 0));
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	if (argc >= 5 && !strcmp(argv[2], "corrupt")) {
		fx_standard(&h, atoll(argv[3]), atoll(argv[4]), 1);
		/* the 5th record points back at the 2nd */
		{
			blamer_ref r = ((struct blamer_block *)fx_at(&h, BLAMER_LIST_HEAD_REF))->next;
			blamer_ref second;
			int i;

			r = ((struct blamer_block *)fx_at(&h, r))->next;
			second = r;
			for (i = 0; i < 3; i++)
				r = ((struct blamer_block *)fx_at(&h, r))->next;
			((struct blamer_block *)fx_at(&h, r))->next = second;
		}
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	if (argc >= 4 && !strcmp(argv[2], "live")) {
		fx_standard(&h, getpid(), (int64_t)my_start(), strtoull(argv[3], NULL, 0));
		if (fx_write_dir(&h, argv[1], getpid(), my_start()))
			return 1;
		printf("%d\n", (int)getpid());
		fflush(stdout);
		pause();
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[2], "end")) {
		struct blamer_config cfg = { .backend = BLAMER_BACKEND_DIR, .dir = argv[1],
					     .flags = BLAMER_OPEN_NO_MODULES };
		struct blamer *b;

		if (blamer_open(&cfg, &b)) {
			fprintf(stderr, "mkheap: %s\n", blamer_errmsg());
			return 1;
		}
		blamer_push(b, BLAMER_ACTIVITY_TASK, "last-task", 0, 0);
		blamer_log(b, "about to end");
		printf("%d\n", (int)getpid());
		fflush(stdout);
		if (!strcmp(argv[3], "abort"))
			abort();
		exit(atoi(argv[3]));
	}
	if (argc >= 3 && !strcmp(argv[2], "device-status")) {
		struct blamer_backend_status st = {
			.backend = BLAMER_BACKEND_DEVICE, .source = "/dev/blamer",
			.user_slabs = 3, .user_orphans = 1, .user_bytes = 1 << 20,
			.device_totals = true, .slabs = 12, .orphans = 2, .bytes = 3 << 20,
			.max_slab_bytes = 64 << 20, .max_user_bytes = 256 << 20,
			.max_total_bytes = 1 << 30, .max_user_orphans = 64,
			.params = { { "max_user_orphans", "64" }, { "reader_gid", "-1" },
				    { "odd \"name\"", "tab\there\x01" } },
			.nparams = 3,
		};

		return blamer_status_write_json(&st, stdout) ? 1 : 0;
	}
	fprintf(stderr, "usage: mkheap DIR dead PID START SCALE | corrupt PID START | live SCALE"
		" | - device-status | DIR end CODE|abort\n");
	return 2;
}
