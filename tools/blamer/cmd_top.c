// SPDX-License-Identifier: MIT
/*
 * blamer top: a live view like top(1), systemd-cgtop or varnishstat.
 * Each frame is one snapshot: per process its phase and current
 * activity (the top of the busiest thread's stack), then attribution
 * totals with their rate since the previous frame. It waits with poll()
 * on /dev/blamer (woken early when a heap appears or its owner dies) and
 * on the keyboard; on the dir backend it refreshes every interval.
 *
 * On a terminal it redraws in place and takes keys (the help text in
 * main.c lists them): sorting and paging through state are views of the
 * frame already taken; a filter takes a new one (its totals are those of
 * the processes it keeps).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mono.h"
#include "term.h"

enum sort_key { SORT_PID, SORT_COMM, SORT_STATE, SORT_PHASE, SORT_THREADS, SORT_AGE, NSORT };
/* IDENTITY is shown after STATE but not sorted by: one backend, one value */

static const char *const sort_names[NSORT] = { "pid", "command", "state", "phase",
					       "threads", "activity age" };

struct top {
	struct cli *c;
	struct blamer_reader *r;
	struct blamer_snapshot *cur, *prev;
	struct screen scr;
	bool keys;		/* a terminal that takes keys */
	bool paused, help, prompting, reversed, quit;
	enum sort_key sort;
	char filter[64];	/* applied: a pid, or part of a command name */
	char edit[64];		/* the filter being typed */
	double interval;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_winch(int sig)
{
	(void)sig;	/* only to interrupt poll(): the next frame fits */
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
			if (th)
				*th = t;
		}
	}
	return best;
}

/* ---- which processes, in which order ---- */

static bool matches(const struct blamer_snap_process *p, const char *filter)
{
	char *end;
	long pid = strtol(filter, &end, 10);

	if (!*end && end != filter)
		return p->pid == pid;
	return strcasestr(p->comm, filter) != NULL;
}

/* The filter, applied to a fresh snapshot (totals included). */
static void apply_filter(const struct top *t, struct blamer_snapshot *s)
{
	int32_t *pids;
	size_t i, n = 0;

	if (!t->filter[0])
		return;
	pids = calloc(s->nprocs + 1, sizeof(*pids));
	if (!pids)
		return;
	for (i = 0; i < s->nprocs; i++)
		if (matches(&s->procs[i], t->filter))
			pids[n++] = s->procs[i].pid;
	if (!n)
		pids[n++] = -1;		/* no pid: keeps nothing */
	blamer_snapshot_select(s, pids, n);
	free(pids);
}

static int sort_cmp(const void *a, const void *b, void *arg)
{
	const struct blamer_snap_process *x = *(const struct blamer_snap_process *const *)a;
	const struct blamer_snap_process *y = *(const struct blamer_snap_process *const *)b;
	const struct top *t = arg;
	const struct blamer_snap_activity *ax, *ay;
	int c = 0;

	switch (t->sort) {
	case SORT_COMM:
		c = strcmp(x->comm, y->comm);
		break;
	case SORT_STATE:
		c = (int)x->state - (int)y->state;
		break;
	case SORT_PHASE:
		c = x->phase < y->phase ? -1 : x->phase > y->phase;
		break;
	case SORT_THREADS:	/* most first */
		c = x->nthreads > y->nthreads ? -1 : x->nthreads < y->nthreads;
		break;
	case SORT_AGE:		/* youngest activity first, none last */
		ax = current(x, NULL);
		ay = current(y, NULL);
		if (!ax || !ay)
			c = !ax - !ay;
		else
			c = ax->time_ns > ay->time_ns ? -1 : ax->time_ns < ay->time_ns;
		break;
	case SORT_PID:
	case NSORT:
		break;
	}
	if (!c)
		c = x->pid < y->pid ? -1 : x->pid > y->pid;
	return t->reversed ? -c : c;
}

static int total_desc(const void *a, const void *b)
{
	const struct blamer_snap_total *x = *(const struct blamer_snap_total *const *)a;
	const struct blamer_snap_total *y = *(const struct blamer_snap_total *const *)b;

	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	return x->value > y->value ? -1 : x->value < y->value;
}

/* ---- one frame ---- */

static const char *row_colour(const struct blamer_snap_process *p)
{
	if (p->health == BLAMER_HEALTH_CORRUPT || p->health == BLAMER_HEALTH_UNREADABLE ||
	    p->health == BLAMER_HEALTH_TORN || p->disproved)
		return "33";			/* yellow: the heap has a problem */
	if (p->state == BLAMER_PROC_LIVE)
		return NULL;
	if (p->exited && (p->exit_signal || p->exit_code))
		return "31";			/* red: killed or failed */
	return "2";				/* dim: ended */
}

static void draw_procs(struct top *t, const struct blamer_snapshot *s, int keep)
{
	const struct blamer_snap_process **order;
	static const char *const titles[NSORT] = { "PID", "COMM", "STATE", "PHASE", "THR",
						   "ACTIVITY" };
	char col[NSORT][16];
	size_t i;

	/* the sort column is marked: * (or ^ reversed) */
	for (i = 0; i < NSORT; i++)
		snprintf(col[i], sizeof(col[i]), "%s%s", titles[i], i != t->sort || !t->keys ? "" :
			 t->reversed ? "^" : "*");
	scr_line(&t->scr, "7", "%7s %-16s %-12s %-12s %-9s %-14s %4s  %s", col[SORT_PID],
		 col[SORT_COMM], "ROLE", col[SORT_STATE], "IDENTITY", col[SORT_PHASE],
		 col[SORT_THREADS], col[SORT_AGE]);
	order = calloc(s->nprocs + 1, sizeof(*order));
	if (!order)
		return;
	for (i = 0; i < s->nprocs; i++)
		order[i] = &s->procs[i];
	qsort_r(order, s->nprocs, sizeof(*order), sort_cmp, t);
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = order[i];
		const struct blamer_snap_thread *th = NULL;
		const struct blamer_snap_activity *a = current(p, &th);
		char st[32], ph[32], age[32], act[256], role[72];

		if (scr_full(&t->scr, keep + 1) && i + 1 < s->nprocs) {
			scr_line(&t->scr, "2", "  ... %zu more (a filter or a bigger window shows them)",
				 s->nprocs - i);
			break;
		}
		if (a) {
			fmt_age(age, sizeof(age), s->monotonic_ns, a->time_ns);
			snprintf(act, sizeof(act), "%s \"%s\"%s %s (thread %s, depth %u)",
				 blamer_activity_kind_name(a->kind), a->label,
				 cut_mark(a->label_cut), age, th->name[0] ? th->name : "?",
				 th->depth);
		} else {
			/* unchecked: a dead dir heap not read (see --dead) */
			snprintf(act, sizeof(act), "%s", p->health == BLAMER_HEALTH_OK ? "idle" :
				 p->health == BLAMER_HEALTH_UNCHECKED ? "-" : proc_health(p));
		}
		scr_line(&t->scr, row_colour(p), "%7d %-16s %-12s %-12s %-9s %-14s %4zu  %s", p->pid,
			 proc_comm(p), proc_role(p, role, sizeof(role)),
			 state_short(p, st, sizeof(st)), proc_identity(p),
			 p->have_record ? phase_str(p->phase, ph, sizeof(ph)) : "-", p->nthreads,
			 act);
	}
	if (!s->nprocs && t->filter[0])
		scr_line(&t->scr, "2", "  (no process matches the filter '%s')", t->filter);
	free(order);
}

/* A rate (>= 0) as a whole number, at most 2^64 - 1: converting a double
 * past that is undefined (a total grown by 2^63 in 0.1 s showed 0/s). */
static uint64_t rate_u64(double r)
{
	return r >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)r;
}

static void draw_totals(struct top *t, const struct blamer_snapshot *s,
			const struct blamer_snapshot *prev)
{
	const struct blamer_snap_total **order;
	double dt = prev ? (double)(s->monotonic_ns - prev->monotonic_ns) / 1e9 : 0;
	size_t i;

	if (!s->ntotals || scr_full(&t->scr, 3))
		return;
	order = calloc(s->ntotals, sizeof(*order));
	if (!order)
		return;
	for (i = 0; i < s->ntotals; i++)
		order[i] = &s->totals[i];
	qsort(order, s->ntotals, sizeof(*order), total_desc);
	scr_line(&t->scr, NULL, "%s", "");
	scr_line(&t->scr, "7", "%-8s %12s %12s  %s", "UNIT", "TOTAL", "RATE/s", "PATH");
	for (i = 0; i < s->ntotals && i < 30 && !scr_full(&t->scr, 1); i++) {
		const struct blamer_snap_total *tt = order[i];
		const struct blamer_snap_total *q =
			prev ? blamer_snap_total_find(prev, tt->nodes, tt->depth, tt->unit) : NULL;
		char un[40], tot[32], rate[32], path[BLAMER_SNAP_MAX_DEPTH * 34];

		fmt_value(s, ALL_UIDS, tot, sizeof(tot), tt->unit, tt->value);
		if (q && dt > 0 && tt->value >= q->value) {
			double r = (double)(tt->value - q->value) / dt;

			/* CPU time per second is a share of one CPU */
			if (tt->unit == BLAMER_UNIT_CPU_NS)
				snprintf(rate, sizeof(rate), "%.1f%%", r / 1e7);
			else
				fmt_value(s, ALL_UIDS, rate, sizeof(rate), tt->unit, rate_u64(r));
		} else {
			snprintf(rate, sizeof(rate), "-");
		}
		blamer_snap_path_string(s, tt->nodes, tt->depth, path, sizeof(path));
		scr_line(&t->scr, NULL, "%-8s %12s %12s  %s",
			 unit_label(s, ALL_UIDS, tt->unit, un, sizeof(un)), tot, rate, path);
	}
	free(order);
}

/* The processes by role (busy threads: saturation), when roles are set. */
static void draw_roles(struct top *t, const struct blamer_snapshot *s)
{
	size_t i;

	if (!s->nroles || (s->nroles == 1 && !s->roles[0].role[0]) || scr_full(&t->scr, 3))
		return;
	scr_line(&t->scr, NULL, "%s", "");
	scr_line(&t->scr, "7", "%-20s %6s %6s %8s %6s", "ROLE", "LIVE", "DEAD", "THREADS", "BUSY");
	for (i = 0; i < s->nroles && !scr_full(&t->scr, 1); i++) {
		const struct blamer_snap_role *r = &s->roles[i];

		scr_line(&t->scr, NULL, "%-20s %6u %6u %8u %6u", r->role[0] ? r->role : "-", r->live,
			 r->dead, r->threads, r->busy);
	}
}

/* The programs' metrics merged over processes, as many as fit. */
static void draw_series(struct top *t, const struct blamer_snapshot *s)
{
	size_t i;

	if (!s->nseries || scr_full(&t->scr, 3))
		return;
	scr_line(&t->scr, NULL, "%s", "");
	scr_line(&t->scr, "7", "%-9s %5s  %s", "KIND", "PROCS", "SERIES = VALUE");
	for (i = 0; i < s->nseries && !scr_full(&t->scr, 1); i++) {
		char line[800];

		fmt_series(line, sizeof(line), s, &s->series[i]);
		scr_line(&t->scr, NULL, "%-9s %5u  %s", blamer_metric_kind_name(s->series[i].def->kind),
			 s->series[i].nprocs, line);
	}
}

/* --by role: each role's total per (path, unit), largest first. */
struct role_total {
	const char *role;
	const struct blamer_snap_path *path;
	uint32_t unit;
	uint64_t value;
};

static int role_total_cmp(const void *a, const void *b)
{
	const struct role_total *x = a, *y = b;
	int c = strcmp(x->role, y->role);

	if (c)
		return c;
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	c = blamer_path_cmp(x->path->nodes, x->path->depth, y->path->nodes, y->path->depth);
	return c;
}

static int role_total_desc(const void *a, const void *b)
{
	const struct role_total *x = a, *y = b;
	int c = strcmp(x->role, y->role);

	if (c)
		return c;
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	return x->value > y->value ? -1 : x->value < y->value;
}

static void draw_role_totals(struct top *t, const struct blamer_snapshot *s)
{
	struct role_total *v;
	size_t i, j, k, n = 0, m = 0;

	for (i = 0; i < s->nprocs; i++)
		for (j = 0; j < s->procs[i].npaths; j++)
			n += s->procs[i].paths[j].nvalues;
	if (!n || scr_full(&t->scr, 3))
		return;
	v = calloc(n, sizeof(*v));
	if (!v)
		return;
	for (i = 0, n = 0; i < s->nprocs; i++)
		for (j = 0; j < s->procs[i].npaths; j++)
			for (k = 0; k < s->procs[i].paths[j].nvalues; k++)
				v[n++] = (struct role_total){ s->procs[i].role, &s->procs[i].paths[j],
							      s->procs[i].paths[j].units[k],
							      s->procs[i].paths[j].values[k] };
	qsort(v, n, sizeof(*v), role_total_cmp);
	for (i = 0; i < n; i = j) {
		uint64_t sum = 0;

		for (j = i; j < n && !role_total_cmp(&v[i], &v[j]); j++)
			sum += v[j].value;
		v[m] = v[i];
		v[m++].value = sum;
	}
	qsort(v, m, sizeof(*v), role_total_desc);
	scr_line(&t->scr, NULL, "%s", "");
	scr_line(&t->scr, "7", "%-16s %-8s %12s  %s", "ROLE", "UNIT", "TOTAL", "PATH");
	for (i = 0; i < m && i < 30 && !scr_full(&t->scr, 1); i++) {
		char un[40], tot[32], path[BLAMER_SNAP_MAX_DEPTH * 34];

		fmt_value(s, ALL_UIDS, tot, sizeof(tot), v[i].unit, v[i].value);
		blamer_snap_path_string(s, v[i].path->nodes, v[i].path->depth, path, sizeof(path));
		scr_line(&t->scr, NULL, "%-16s %-8s %12s  %s", v[i].role[0] ? v[i].role : "-",
			 unit_label(s, ALL_UIDS, v[i].unit, un, sizeof(un)), tot, path);
	}
	free(v);
}

static void draw_help(struct top *t)
{
	static const char *const lines[] = {
		"keys:",
		"  q            quit",
		"  space        refresh now",
		"  p            pause or resume",
		"  s            sort by the next column; r reverses",
		"  / or f       filter: a pid, or part of a command name (empty: all)",
		"  + or -       refresh less or more often",
		"  h or ?       this help (again: hide it)",
	};
	size_t i;

	scr_line(&t->scr, NULL, "%s", "");
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		scr_line(&t->scr, NULL, "%s", lines[i]);
}

static void draw(struct top *t)
{
	const struct blamer_snapshot *s = t->cur;
	char title[512], status[160];
	size_t i, live = 0, dead = 0;
	int n;

	scr_begin(&t->scr);
	for (i = 0; i < s->nprocs; i++)
		s->procs[i].state == BLAMER_PROC_LIVE ? live++ : dead++;
	n = snprintf(title, sizeof(title), "blamer top - %s %s - %zu live, %zu dead",
		     s->backend == BLAMER_BACKEND_DEVICE ? "device" : "dir", s->source, live, dead);
	if (s->empty_files)	/* one count for all of them, never a row each */
		n += snprintf(title + n, sizeof(title) - (size_t)n, ", %zu empty file%s skipped",
			      s->empty_files, s->empty_files == 1 ? "" : "s");
	if (s->backend == BLAMER_BACKEND_DEVICE)
		n += snprintf(title + n, sizeof(title) - (size_t)n, ", generation %llu",
			      (unsigned long long)s->generation);
	if (t->keys)
		n += snprintf(title + n, sizeof(title) - (size_t)n, " - every %.3gs, sort: %s%s",
			      t->interval, sort_names[t->sort], t->reversed ? " (reversed)" : "");
	if (t->filter[0])
		n += snprintf(title + n, sizeof(title) - (size_t)n, " - filter: %s", t->filter);
	if (t->paused)
		snprintf(title + n, sizeof(title) - (size_t)n, " - PAUSED");
	scr_line(&t->scr, "1", "%s", title);
	scr_line(&t->scr, NULL, "%s", "");
	draw_procs(t, s, t->help ? 9 : s->ntotals ? 4 : 1);
	if (t->help) {
		draw_help(t);
	} else {
		draw_roles(t, s);
		if (t->c->by_role)
			draw_role_totals(t, s);
		else
			draw_totals(t, s, t->prev);
		draw_series(t, s);
	}
	if (!t->keys)
		snprintf(status, sizeof(status), "Ctrl-C quits");
	else if (t->prompting)
		snprintf(status, sizeof(status),
			 "filter (a pid or part of a name; Enter applies, Esc cancels): %s_", t->edit);
	else
		snprintf(status, sizeof(status),
			 "q quit  space refresh  p pause  s sort  r reverse  / filter  +/- interval  h help");
	scr_end(&t->scr, status, t->prompting ? "1" : "7");
}

/* ---- keys ---- */

/* One key; true if a new snapshot is wanted. */
static bool key(struct top *t, int k)
{
	size_t n = strlen(t->edit);

	if (t->prompting) {
		if (k == '\r' || k == '\n') {
			snprintf(t->filter, sizeof(t->filter), "%s", t->edit);
			t->prompting = false;
			/* the previous frame counted other processes: no rates */
			blamer_snapshot_free(t->prev);
			t->prev = NULL;
			return true;
		}
		if (k == 0x1b)
			t->prompting = false;
		else if ((k == 0x7f || k == 0x08) && n)
			t->edit[n - 1] = '\0';
		else if (k >= 0x20 && k < 0x7f && n + 1 < sizeof(t->edit))
			t->edit[n] = (char)k, t->edit[n + 1] = '\0';
		return false;
	}
	switch (k) {
	case 'q':
	case 'Q':
		t->quit = true;
		break;
	case ' ':
		return true;
	case 'p':
		t->paused = !t->paused;
		return !t->paused;	/* resuming shows now, not the old frame */
	case 's':
		t->sort = (enum sort_key)((t->sort + 1) % NSORT);
		break;
	case 'r':
		t->reversed = !t->reversed;
		break;
	case '/':
	case 'f':
		t->prompting = true;
		snprintf(t->edit, sizeof(t->edit), "%s", t->filter);
		break;
	case '+':
		t->interval = t->interval * 2 > 3600 ? 3600 : t->interval * 2;
		break;
	case '-':
		t->interval = t->interval / 2 < 0.1 ? 0.1 : t->interval / 2;
		break;
	case 'h':
	case '?':
		t->help = !t->help;
		break;
	}
	return false;
}

/* ---- the loop ---- */

static int snap(struct top *t)
{
	struct blamer_snapshot *s;
	char e[512];

	if (blamer_reader_snapshot(t->r, &s, e, sizeof(e)))
		return err("%s", e);
	apply_filter(t, s);
	blamer_snapshot_free(t->prev);
	t->prev = t->cur;
	t->cur = s;
	return EX_OK;
}

int cmd_top(struct cli *c)
{
	struct blamer_reader_opts o = { .backend = c->backend, .dir = c->dir,
					/* dead processes count, read once (--live-only: not) */
					.flags = READ_FOR_TOP | BLAMER_READ_KEEP_DEAD |
						 BLAMER_READ_DEAD_FULL |
						 (c->live_only ? BLAMER_READ_LIVE_ONLY : 0) };
	struct top t = { .c = c, .interval = c->interval };
	struct sigaction sa = { 0 };
	bool want = true, dirty = false;
	int64_t due = 0;
	long frames = 0;
	char e[512];
	int ret = EX_OK;

	if (c->nargs)
		return usage_err("top takes no arguments (filter with / on a terminal)");
	raise_nofile();
	t.r = blamer_reader_open(&o, e, sizeof(e));
	if (!t.r)
		return err("%s", e);
	if (check_source(c, t.r)) {
		blamer_reader_close(t.r);
		return EX_FAIL;
	}
	/* no SA_RESTART: the signal ends the poll() */
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	t.scr.redraw = !c->once && !c->json && isatty(STDOUT_FILENO);
	t.scr.colour = !c->json && term_colour();
	t.keys = t.scr.redraw && term_raw();
	while (!stop && !t.quit) {
		struct pollfd pfd[2];
		int nfd = 0, fd = blamer_reader_fd(t.r), n, wait;

		if (want) {
			ret = snap(&t);
			if (ret)
				break;
			frames++;
			due = mono_ms() + (int64_t)(t.interval * 1000);
			want = false;
			dirty = true;
		}
		if (term_resumed()) {
			fputs("\033[2J", stdout);
			dirty = true;
		}
		if (dirty) {
			if (c->json) {
				blamer_snapshot_write_json(t.cur, stdout, BLAMER_JSON_SUMMARY, NULL, 0);
				fflush(stdout);
			} else {
				draw(&t);
			}
			dirty = false;
		}
		if (c->once || (c->count && frames >= c->count))
			break;
		if (t.keys) {
			pfd[nfd].fd = STDIN_FILENO;
			pfd[nfd++].events = POLLIN;
		}
		/* an event (new heap, death) refreshes at once */
		if (fd >= 0 && !t.paused && !t.prompting) {
			pfd[nfd].fd = fd;
			pfd[nfd++].events = POLLIN;
		}
		wait = t.paused || t.prompting ? -1 :
		       due > mono_ms() ? (int)(due - mono_ms()) : 0;
		n = poll(pfd, (nfds_t)nfd, wait);
		if (n < 0) {
			if (errno == EINTR) {
				dirty = true;	/* a resize, or a stop */
				continue;
			}
			ret = err("waiting on %s failed: %s", blamer_reader_source(t.r),
				  strerror(errno));
			break;
		}
		if (n == 0) {
			want = true;
		} else {
			int i;

			for (i = 0; i < nfd; i++) {
				unsigned char buf[64];
				ssize_t k, j;

				if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				if (pfd[i].fd != STDIN_FILENO) {
					want = true;
					continue;
				}
				k = read(STDIN_FILENO, buf, sizeof(buf));
				if (k <= 0) {
					t.quit = true;	/* the terminal is gone */
					break;
				}
				for (j = 0; j < k && !t.quit; j++)
					want |= key(&t, buf[j]);
				dirty = true;
			}
		}
		if (want && !c->json && !t.scr.redraw)
			putchar('\n');	/* frames apart on a pipe */
	}
	if (t.keys)
		term_restore();
	blamer_snapshot_free(t.prev);
	blamer_snapshot_free(t.cur);
	blamer_reader_close(t.r);
	return ret;
}
