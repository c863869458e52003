// SPDX-License-Identifier: MIT
/*
 * blamer top: a live view like top(1) or varnishstat. Each frame is one
 * snapshot: per process its phase and current activity (the top of the
 * busiest thread's stack), then attribution totals with their rate since
 * the previous frame. It waits on /dev/blamer with poll() (woken early
 * when a heap appears or its owner dies), on the dir backend it sleeps.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const struct blamer_snap_activity *current(const struct blamer_snap_process *p,
						  const struct blamer_snap_thread **th)
{
	const struct blamer_snap_activity *best = NULL;
	size_t i;

	for (i = 0; i < p->nthreads; i++) {
		const struct blamer_snap_thread *t = &p->threads[i];

		if (!t->nacts)
			continue;
		/* the most recently started activity is the most telling */
		if (!best || t->acts[t->nacts - 1].time_ns > best->time_ns) {
			best = &t->acts[t->nacts - 1];
			*th = t;
		}
	}
	return best;
}

static int total_desc(const void *a, const void *b)
{
	const struct blamer_snap_total *x = *(const struct blamer_snap_total *const *)a;
	const struct blamer_snap_total *y = *(const struct blamer_snap_total *const *)b;

	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	return x->value > y->value ? -1 : x->value < y->value;
}

static void frame(struct cli *c, const struct blamer_snapshot *s,
		  const struct blamer_snapshot *prev, bool tty)
{
	const struct blamer_snap_total **order;
	size_t i, live = 0, dead = 0;
	double dt = prev ? (double)(s->monotonic_ns - prev->monotonic_ns) / 1e9 : 0;

	for (i = 0; i < s->nprocs; i++)
		s->procs[i].state == BLAMER_PROC_LIVE ? live++ : dead++;
	if (tty && !c->once)
		fputs("\033[H\033[2J", stdout);
	printf("blamer top - %s %s - %zu live, %zu dead", s->backend == BLAMER_BACKEND_DEVICE ?
	       "device" : "dir", s->source, live, dead);
	if (s->backend == BLAMER_BACKEND_DEVICE)
		printf(", generation %llu", (unsigned long long)s->generation);
	printf("\n\n%7s %-16s %-12s %-14s %3s  %s\n", "PID", "COMM", "STATE", "PHASE", "THR",
	       "ACTIVITY");
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];
		const struct blamer_snap_thread *th = NULL;
		const struct blamer_snap_activity *a = current(p, &th);
		char st[32], ph[32], age[32];

		printf("%7d %-16s %-12s %-14s %3zu  ", p->pid, p->comm[0] ? p->comm : "?",
		       state_short(p, st, sizeof(st)),
		       p->have_record ? phase_str(p->phase, ph, sizeof(ph)) : "-", p->nthreads);
		if (a) {
			fmt_age(age, sizeof(age), s->monotonic_ns, a->time_ns);
			printf("%s \"%s\" %s (thread %s, depth %u)\n",
			       blamer_activity_kind_name(a->kind), a->label, age,
			       th->name[0] ? th->name : "?", th->depth);
		} else {
			/* summary: a dead dir heap not read (see --dead) */
			printf("%s\n", p->health == BLAMER_HEALTH_OK ? "idle" :
			       p->health == BLAMER_HEALTH_SUMMARY ? "-" :
			       blamer_health_name(p->health));
		}
	}
	if (!s->ntotals)
		return;
	order = calloc(s->ntotals, sizeof(*order));
	if (!order)
		return;
	for (i = 0; i < s->ntotals; i++)
		order[i] = &s->totals[i];
	qsort(order, s->ntotals, sizeof(*order), total_desc);
	printf("\n%-8s %12s %12s  %s\n", "UNIT", "TOTAL", "RATE/s", "PATH");
	for (i = 0; i < s->ntotals && i < 30; i++) {
		const struct blamer_snap_total *t = order[i];
		const struct blamer_snap_total *q =
			prev ? blamer_snap_total_find(prev, t->nodes, t->depth, t->unit) : NULL;
		const char *un = blamer_unit_name(t->unit);
		char tot[32], rate[32];

		fmt_value(tot, sizeof(tot), t->unit, t->value);
		if (q && dt > 0 && t->value >= q->value)
			fmt_value(rate, sizeof(rate), t->unit,
				  (uint64_t)((double)(t->value - q->value) / dt));
		else
			snprintf(rate, sizeof(rate), "-");
		if (un)
			printf("%-8s %12s %12s  ", un, tot, rate);
		else
			printf("unit%-4u %12s %12s  ", t->unit, tot, rate);
		print_path(stdout, s, t->nodes, t->depth);
		putchar('\n');
	}
	free(order);
}

int cmd_top(struct cli *c)
{
	struct blamer_snapshot *s = NULL, *prev = NULL;
	struct blamer_reader *r;
	struct blamer_reader_opts o = { .backend = c->backend, .dir = c->dir,
					.flags = c->dead ? BLAMER_READ_DEAD_FULL : 0 };
	bool tty = isatty(STDOUT_FILENO);
	long frames = 0;
	char e[512];
	int ret = EX_OK;

	if (c->nargs)
		return usage_err("top takes no arguments");
	r = blamer_reader_open(&o, e, sizeof(e));
	if (!r)
		return err("%s", e);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop) {
		if (blamer_reader_snapshot(r, &s, e, sizeof(e))) {
			ret = err("%s", e);
			break;
		}
		if (c->json)
			blamer_snapshot_write_json(s, stdout, BLAMER_JSON_SUMMARY, NULL, 0);
		else
			frame(c, s, prev, tty);
		fflush(stdout);
		blamer_snapshot_free(prev);
		prev = s;
		s = NULL;
		if (c->once || (c->count && ++frames >= c->count))
			break;
		/* an event (new heap, death) refreshes at once */
		if (blamer_reader_wait(r, (int)(c->interval * 1000)) < 0) {
			ret = err("waiting for events on %s failed", blamer_reader_source(r));
			break;
		}
		if (!c->json && !tty)
			putchar('\n');
	}
	blamer_snapshot_free(prev);
	blamer_reader_close(r);
	return ret;
}
