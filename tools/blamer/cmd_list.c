// SPDX-License-Identifier: MIT
/*
 * blamer list: one line per heap. Reads headers only (and the process
 * record), so listing stays cheap however many dead heaps there are; a
 * heap's records are left unchecked (dump checks them).
 */
#include <stdlib.h>

#include "cli.h"
#include "term.h"

int cmd_list(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	size_t i;
	int ret;

	if (c->nargs)
		return usage_err("list takes no arguments (did you mean `blamer dump %s`?)",
				 c->args[0]);
	ret = take(c, BLAMER_READ_HEADERS_ONLY, &r, &s);
	if (ret)
		return ret;
	if (c->json) {
		blamer_snapshot_write_json(s, stdout, BLAMER_JSON_SUMMARY | BLAMER_JSON_NO_ATTRIB,
					   NULL, 0);
	} else {
		/* sizes of the heap: its slabs, and what it allocated in them;
		 * HEALTH is what its headers show (records are not read here:
		 * "unchecked"); IDENTITY who says pid, comm and state */
		printf("%7s %-16s %-16s %-14s %5s %9s %9s %-10s %s\n", "PID", "COMM", "ROLE",
		       "STATE", "SLABS", "HEAP_SIZE", "HEAP_USED", "HEALTH", "IDENTITY");
		for (i = 0; i < s->nprocs; i++) {
			const struct blamer_snap_process *p = &s->procs[i];
			char size[16], used[16], st[32], role[72];

			fmt_bytes(size, sizeof(size), p->size);
			fmt_bytes(used, sizeof(used), p->used);
			tty_printf(stdout, "%7d %-16s %-16s %-14s %5u %9s %9s %-10s %s\n", p->pid,
				   proc_comm(p), proc_role(p, role, sizeof(role)),
				   state_short(p, st, sizeof(st)), p->nslabs, size, used,
				   proc_health(p), proc_identity(p));
		}
	}
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return EX_OK;
}
