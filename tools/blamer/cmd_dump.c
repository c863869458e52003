// SPDX-License-Identifier: MIT
/*
 * blamer dump [PID...]: everything the snapshot holds, readable. Dead
 * heaps are read in full here (on demand), unlike in list or top.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "term.h"

static void dump_process(const struct blamer_snapshot *s, const struct blamer_snap_process *p)
{
	char b1[64], b2[64], b3[160], role[72];
	size_t i, j;

	fmt_bytes(b1, sizeof(b1), p->size);
	fmt_bytes(b2, sizeof(b2), p->used);
	fmt_end(b3, sizeof(b3), p);
	/* a dir heap's pid, uid and state are its claims: said on the line */
	tty_printf(stdout, "pid %d (%s) uid %u%s: %s\n", p->pid, proc_comm(p), p->uid, proc_tag(p), b3);
	print_end_time(stdout, s, p);
	tty_printf(stdout, "  heap: %u slab%s, %s, %s used, health %s%s%s\n", p->nslabs,
		   p->nslabs == 1 ? "" : "s", b1, b2, proc_health(p),
		   p->problem[0] ? ": " : "", p->problem);
	if (p->cmdline[0])
		tty_printf(stdout, "  cmdline: %s\n", p->cmdline);
	if (p->role[0])
		tty_printf(stdout, "  role: %s\n", proc_role(p, role, sizeof(role)));
	if (p->have_record)
		printf("  phase: %s\n", phase_str(p->phase, b1, sizeof(b1)));
	print_drops(stdout, "  ", p->drops, p->dropped);
	if (p->user_data.n) {
		printf("  process data:\n");
		print_fields(stdout, "    ", &p->user_data);
	}
	if (p->global_data.n) {
		printf("  global data:\n");
		print_fields(stdout, "    ", &p->global_data);
	}
	for (i = 0; i < p->nthreads; i++) {
		const struct blamer_snap_thread *t = &p->threads[i];

		tty_printf(stdout, "  thread %lld \"%s\": depth %u%s", (long long)t->tid, t->name,
			   t->depth, t->torn ? " (stack kept changing, not shown)" : "");
		if (t->overflows)
			printf(", %u pushes beyond %u slots dropped", t->overflows, t->stack_slots);
		putchar('\n');
		for (j = t->nacts; j-- > 0;)
			print_activity(stdout, "    ", s, p, j, &t->acts[j], "since");
	}
	if (p->nmodules) {
		printf("  modules:\n");
		for (i = 0; i < p->nmodules; i++)
			tty_printf(stdout, "    %#llx %s%s\n", (unsigned long long)p->modules[i].base,
				   p->modules[i].path, p->modules[i].loaded ? "" : " (unloaded)");
	}
	if (p->nlogs) {
		printf("  log:\n");
		for (i = 0; i < p->nlogs; i++)
			tty_printf(stdout, "    [%llu] %s %s\n", (unsigned long long)p->logs[i].number,
				   fmt_log_time(b3, sizeof(b3), p->logs[i].time_ns), p->logs[i].text);
	}
	for (i = 0; i < p->nchildren; i++) {
		const struct blamer_snap_child *ch = &p->children[i];

		printf("  child %lld: ", (long long)ch->pid);
		if (ch->state != BLAMER_CHILD_EXITED)
			printf("running\n");
		else if (WIFSIGNALED(ch->exit_status))
			printf("killed by signal %d\n", WTERMSIG(ch->exit_status));
		else
			printf("exited with code %d\n", WEXITSTATUS(ch->exit_status));
	}
	if (p->npaths) {
		printf("  attribution:\n");
		for (i = 0; i < p->npaths; i++) {
			const struct blamer_snap_path *sp = &p->paths[i];

			printf("    ");
			print_path(stdout, s, p->uid, sp->nodes, sp->depth);
			for (j = 0; j < sp->nvalues; j++) {
				fmt_value(s, p->uid, b1, sizeof(b1), sp->units[j], sp->values[j]);
				printf(" %s=%s", unit_label(s, p->uid, sp->units[j], b2, sizeof(b2)), b1);
			}
			putchar('\n');
		}
	}
	if (p->nmetrics) {
		printf("  metrics:\n");
		print_process_metrics(stdout, "    ", s, p);
	}
}

int cmd_dump(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	int32_t *pids;
	size_t npids, i;
	int ret;

	ret = take(c, BLAMER_READ_DEAD_FULL, &r, &s);
	if (ret)
		return ret;
	ret = parse_pids(c, s, &pids, &npids);
	if (ret)
		goto out;
	if (c->json) {
		blamer_snapshot_write_json(s, stdout, 0, pids, npids);
	} else {
		bool first = true;

		for (i = 0; i < s->nprocs; i++) {
			if (!pid_wanted(pids, npids, s->procs[i].pid))
				continue;
			if (!first)
				putchar('\n');
			first = false;
			dump_process(s, &s->procs[i]);
		}
	}
	free(pids);
out:
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return ret;
}
