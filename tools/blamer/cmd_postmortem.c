// SPDX-License-Identifier: MIT
/*
 * blamer postmortem [PID...]: what dead processes left behind: how they
 * ended (from the kernel on the device backend), what every thread was
 * doing, their data and log. blamer release frees them afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "term.h"

static void show(const struct blamer_snapshot *s, const struct blamer_snap_process *p)
{
	char end[256], b[72];
	size_t i, j;

	fmt_end(end, sizeof(end), p);
	tty_printf(stdout, "pid %d (%s)%s: %s\n", p->pid, proc_comm(p), proc_tag(p), end);
	print_end_time(stdout, s, p);
	if (p->cmdline[0])
		tty_printf(stdout, "  cmdline: %s\n", p->cmdline);
	if (p->role[0])
		tty_printf(stdout, "  role: %s\n", proc_role(p, b, sizeof(b)));
	if (p->have_record)
		printf("  last phase: %s\n", phase_str(p->phase, b, sizeof(b)));
	print_drops(stdout, "  ", p->drops, p->dropped);
	if (p->health != BLAMER_HEALTH_OK)
		tty_printf(stdout, "  heap: %s%s%s\n", proc_health(p),
			   p->problem[0] ? ": " : "", p->problem);
	printf("  last activities:%s\n", p->nthreads ? "" : " none recorded");
	for (i = 0; i < p->nthreads; i++) {
		const struct blamer_snap_thread *t = &p->threads[i];

		tty_printf(stdout, "    thread %lld \"%s\":%s\n", (long long)t->tid, t->name,
			   t->torn ? " (stack changing at death, not shown)" :
			   t->nacts ? "" : " idle");
		for (j = t->nacts; j-- > 0;)
			print_activity(stdout, "      ", s, p, j, &t->acts[j], "pushed");
	}
	if (p->user_data.n) {
		printf("  process data:\n");
		print_fields(stdout, "    ", &p->user_data);
	}
	if (p->nlogs) {
		printf("  log (last %zu):\n", p->nlogs < 10 ? p->nlogs : 10);
		for (i = p->nlogs > 10 ? p->nlogs - 10 : 0; i < p->nlogs; i++)
			tty_printf(stdout, "    [%llu] %s %s\n", (unsigned long long)p->logs[i].number,
				   fmt_log_time(b, sizeof(b), p->logs[i].time_ns), p->logs[i].text);
	}
}

int cmd_postmortem(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	int32_t *pids;
	size_t npids, i, n = 0;
	int ret;

	ret = take(c, BLAMER_READ_DEAD_FULL, &r, &s);
	if (ret)
		return ret;
	ret = parse_pids(c, s, &pids, &npids);
	if (ret)
		goto out;
	for (i = 0; i < npids; i++) {
		size_t j;

		for (j = proc_first(s, pids[i]); j < s->nprocs && s->procs[j].pid == pids[i]; j++)
			if (s->procs[j].state == BLAMER_PROC_DEAD)
				break;
		if (j == s->nprocs || s->procs[j].pid != pids[i]) {
			ret = err("pid %d is still running (postmortem shows dead processes; try `blamer dump %d`)",
				  pids[i], pids[i]);
			goto out_pids;
		}
	}
	if (c->json) {
		/* the JSON of dead processes only: filter by their pids */
		int32_t *dead = calloc(s->nprocs + 1, sizeof(*dead));
		size_t nd = 0;

		if (!dead) {
			ret = err("out of memory");
			goto out_pids;
		}
		for (i = 0; i < s->nprocs; i++)
			if (s->procs[i].state == BLAMER_PROC_DEAD &&
			    pid_wanted(pids, npids, s->procs[i].pid))
				dead[nd++] = s->procs[i].pid;
		if (!nd)
			dead[nd++] = -1;	/* matches nothing: an empty list */
		blamer_snapshot_write_json(s, stdout, BLAMER_JSON_NO_ATTRIB, dead, nd);
		free(dead);
		goto out_pids;
	}
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		if (p->state != BLAMER_PROC_DEAD || !pid_wanted(pids, npids, p->pid))
			continue;
		if (n++)
			putchar('\n');
		show(s, p);
	}
	if (!n && s->nprocs)
		tty_printf(stdout, "no dead processes in %s\n", s->source);
	else if (n)
		printf("\nfree them with `blamer release PID...` or `blamer release --all`\n");
out_pids:
	free(pids);
out:
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return ret;
}
