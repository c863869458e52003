// SPDX-License-Identifier: MIT
/* Helpers shared by the subcommands: errors, snapshots, formatting. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli.h"
#include "term.h"

/* One line on stderr, "blamer: " first; returns @status. Messages quote
 * outside strings (arguments, the environment, file names, the library's
 * messages about them): through the terminal's sanitizer. */
static int verr(int status, const char *fmt, va_list ap)
{
	fputs("blamer: ", stderr);
	tty_vprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	return status;
}

int err(const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = verr(EX_FAIL, fmt, ap);
	va_end(ap);
	return ret;
}

int usage_err(const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = verr(EX_USAGE, fmt, ap);
	va_end(ap);
	return ret;
}

void report_skipped(const struct blamer_snapshot *s)
{
	size_t i;

	for (i = 0; i < s->nskipped; i++)
		tty_printf(stderr, "blamer: skipped %s/%s: %s\n", s->source, s->skipped[i].name,
			   s->skipped[i].why);
	if (s->skipped_total > s->nskipped)
		tty_printf(stderr, "blamer: ... and %zu more entries of %s skipped\n",
			   s->skipped_total - s->nskipped, s->source);
	if (s->empty_files)
		tty_printf(stderr, "blamer: skipped %zu file%s of %s that hold%s no heap (empty, or not a heap's first bytes)\n",
			   s->empty_files, s->empty_files == 1 ? "" : "s", s->source,
			   s->empty_files == 1 ? "s" : "");
	if (s->units_left_out)
		tty_printf(stderr, "blamer: %zu unit%s left out of the totals, which hold the 16 most processes measure in (`blamer dump` shows each process's own)\n",
			   s->units_left_out, s->units_left_out == 1 ? "" : "s");
}

/* A directory named by --dir or $BLAMER_DIR (else the default one). */
static const char *dir_named(const struct cli *c)
{
	const char *e = getenv("BLAMER_DIR");

	if (c->dir)
		return "--dir";
	return e && *e ? "BLAMER_DIR" : NULL;
}

bool dir_asked(const struct cli *c)
{
	enum blamer_backend env = BLAMER_BACKEND_AUTO;

	blamer_backend_from_env(&env, NULL, 0);
	return c->backend == BLAMER_BACKEND_DIR || env == BLAMER_BACKEND_DIR || dir_named(c);
}

int check_source(const struct cli *c, struct blamer_reader *r)
{
	const char *named = dir_named(c);
	struct stat st;

	/* The default directory appears with the first heap; one named
	 * that does not exist is a typo far more often than not. */
	if (blamer_reader_backend(r) == BLAMER_BACKEND_DIR && named &&
	    stat(blamer_reader_source(r), &st) && errno == ENOENT)
		return err("%s does not exist (no heap was ever made there: check %s)",
			   blamer_reader_source(r), named);
	return EX_OK;
}

void note_empty(const struct cli *c, const struct blamer_reader *r)
{
	const char *src = blamer_reader_source(r);

	if (c->json)
		return;		/* the document says it */
	if (blamer_reader_backend(r) == BLAMER_BACKEND_DEVICE)
		tty_printf(stderr, "blamer: no heaps visible in %s (other users' heaps need permission)\n",
			   src);
	else if (!dir_asked(c) && access(BLAMER_DEVICE, F_OK))
		tty_printf(stderr, "blamer: no heaps in %s, and " BLAMER_DEVICE " is absent (the module is not loaded: `blamer load` loads it)\n",
			   src);
	else
		tty_printf(stderr, "blamer: no heaps in %s\n", src);
}

/*
 * A long-lived reader of dir heaps keeps a descriptor for each live
 * heap's file and a pidfd for each writer, each kind up to a quarter of
 * the soft RLIMIT_NOFILE, and the HTTP server a quarter for its clients;
 * a heap past those is opened, and its writer looked up in /proc, at
 * every snapshot. Services and login sessions start with a soft limit of
 * 1,024 whatever the hard one is (it is kept low only for programs that
 * call select(), which this one does not): a scrape of 1,000 live
 * workers cost 40 % more CPU at 1,024 than at the hard limit.
 */
void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);	/* else the budgets stay smaller */
	}
}

int take(struct cli *c, uint32_t flags, struct blamer_reader **r,
	 struct blamer_snapshot **s)
{
	struct blamer_reader_opts o = {
		.backend = c->backend,
		.dir = c->dir,
		.flags = flags,
	};
	char e[512];
	int ret;

	*s = NULL;
	*r = blamer_reader_open(&o, e, sizeof(e));
	if (!*r)
		return err("%s", e);
	ret = check_source(c, *r);
	if (!ret && blamer_reader_snapshot(*r, s, e, sizeof(e)))
		ret = err("%s", e);
	if (ret) {
		blamer_reader_close(*r);
		*r = NULL;
		return ret;
	}
	report_skipped(*s);
	if (!(*s)->nprocs)
		note_empty(c, *r);
	return EX_OK;
}

static int i32_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

bool pid_wanted(const int32_t *pids, size_t n, int32_t pid)
{
	return !n || bsearch(&pid, pids, n, sizeof(*pids), i32_cmp);
}

size_t proc_first(const struct blamer_snapshot *s, int32_t pid)
{
	size_t lo = 0, hi = s->nprocs;

	/* processes come by pid (then start time): the first of @pid */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int parse_pids(struct cli *c, const struct blamer_snapshot *s, int32_t **pids,
	       size_t *npids)
{
	size_t j, n = 0;
	int i;

	*npids = 0;
	*pids = calloc((size_t)c->nargs + 1, sizeof(**pids));
	if (!*pids)
		return err("out of memory");
	for (i = 0; i < c->nargs; i++) {
		char *end;
		long v = strtol(c->args[i], &end, 10);

		if (*end || end == c->args[i] || v <= 0 || v > INT32_MAX) {
			free(*pids);
			*pids = NULL;
			return usage_err("'%s' is not a PID (give process IDs as shown by `blamer list`)",
					 c->args[i]);
		}
		j = proc_first(s, (int32_t)v);
		if (j == s->nprocs || s->procs[j].pid != v) {
			free(*pids);
			*pids = NULL;
			return err("no heap for pid %ld visible in %s (see `blamer list`; other users' processes need permission)",
				   v, s->source);
		}
		(*pids)[n++] = (int32_t)v;
	}
	/* sorted, each once: looked up per process (pid_wanted()) */
	qsort(*pids, n, sizeof(**pids), i32_cmp);
	for (j = 0; j < n; j++)
		if (!*npids || (*pids)[*npids - 1] != (*pids)[j])
			(*pids)[(*npids)++] = (*pids)[j];
	return EX_OK;
}

void fmt_bytes(char *buf, size_t len, uint64_t v)
{
	static const char units[] = "KMGTPE";
	double d = (double)v;
	int u = -1;

	/* One style everywhere: IEC prefixes, always a B, like "0B",
	 * "512B", "41KiB", "1.0MiB"; two digits at most after rounding. */
	if (v < 1024) {
		snprintf(buf, len, "%lluB", (unsigned long long)v);
		return;
	}
	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	if (d >= 1023.5 && u < 5) {	/* would print as 1024 */
		d /= 1024;
		u++;
	}
	snprintf(buf, len, d < 9.95 ? "%.1f%ciB" : "%.0f%ciB", d, units[u]);
}

static const struct blamer_snap_unit_def *unit_def(const struct blamer_snapshot *s, int64_t uid,
						     uint32_t unit)
{
	if (!s)
		return NULL;
	return uid == ALL_UIDS ? blamer_snap_unit_def(s, unit) :
				 blamer_snap_uid_unit_def(s, (uint32_t)uid, unit);
}

const char *unit_label(const struct blamer_snapshot *s, int64_t uid, uint32_t unit, char *buf,
		       size_t len)
{
	const struct blamer_snap_unit_def *d = unit_def(s, uid, unit);
	const char *n = blamer_unit_name(unit);

	/* cpu_ns values are shown as time (2.22s), so the column is "cpu" */
	if (unit == BLAMER_UNIT_CPU_NS)
		n = "cpu";
	if (!n && d)
		n = d->name;	/* the program's name (blamer_dag_unit()) */
	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "unit%u", unit);
	return buf;
}

bool parse_number(const char *text, unsigned long long max, unsigned long long *v)
{
	char *end;

	if (*text < '0' || *text > '9')
		return false;	/* strtoull would take a sign or spaces */
	errno = 0;
	*v = strtoull(text, &end, 10);
	return !*end && !errno && *v <= max;
}

bool unit_is(const struct blamer_snapshot *s, int64_t uid, uint32_t unit, const char *text)
{
	const char *n = blamer_unit_name(unit);
	char label[40], *end;
	unsigned long num = strtoul(text, &end, 10);

	return !strcmp(unit_label(s, uid, unit, label, sizeof(label)), text) ||
	       (n && !strcmp(n, text)) || (!*end && end != text && num == unit);
}

void fmt_value(const struct blamer_snapshot *s, int64_t uid, char *buf, size_t len,
	       uint32_t unit, uint64_t v)
{
	const struct blamer_snap_unit_def *d = unit_def(s, uid, unit);

	/* an application unit's values in seconds (nanoseconds) or bytes */
	if (d && d->base == BLAMER_BASE_SECONDS)
		unit = BLAMER_UNIT_CPU_NS;
	else if (d && d->base == BLAMER_BASE_BYTES)
		unit = BLAMER_UNIT_BYTES;
	switch (unit) {
	case BLAMER_UNIT_CPU_NS:
		if (v >= 1000000000ull)
			snprintf(buf, len, "%.2fs", (double)v / 1e9);
		else if (v >= 1000000ull)
			snprintf(buf, len, "%.1fms", (double)v / 1e6);
		else
			snprintf(buf, len, "%.1fus", (double)v / 1e3);
		break;
	case BLAMER_UNIT_BYTES:
		fmt_bytes(buf, len, v);
		break;
	default:
		snprintf(buf, len, "%llu", (unsigned long long)v);
	}
}

void fmt_age(char *buf, size_t len, uint64_t now_ns, uint64_t then_ns)
{
	double s;

	/* A TSC stamp converted to CLOCK_MONOTONIC may land a few ns after
	 * the snapshot's "now" (heap-format.rst, "Activity clock"): up to a
	 * millisecond is "just now"; more is a stamp that cannot be right. */
	if (then_ns > now_ns && then_ns - now_ns < 1000000)
		then_ns = now_ns;
	if (!then_ns || then_ns > now_ns) {
		snprintf(buf, len, "?");
		return;
	}
	s = (double)(now_ns - then_ns) / 1e9;
	if (s < 60)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 3600)
		snprintf(buf, len, "%.0fm", s / 60);
	else
		snprintf(buf, len, "%.1fh", s / 3600);
}

static const char *sig_name(uint32_t sig, char *buf, size_t len)
{
	const char *n = sig < 65 ? sigabbrev_np((int)sig) : NULL;

	if (n)
		snprintf(buf, len, "SIG%s", n);
	else
		snprintf(buf, len, "signal %u", sig);
	return buf;
}

void fmt_end(char *buf, size_t len, const struct blamer_snap_process *p)
{
	char sb[32];

	if (p->disproved)	/* /proc contradicts the claim: none of its word */
		snprintf(buf, len, "not the process it claims: %s", p->disproved_why);
	else if (p->state == BLAMER_PROC_LIVE)
		snprintf(buf, len, "running");
	else if (p->heap_state == BLAMER_HEAP_DELETED && !(p->exited && p->exit_signal)) {
		/* blamer_close(): a clean end, whatever the exit code says after */
		if (p->exited && p->exit_code)
			snprintf(buf, len, "closed its heap, then exited with code %d", p->exit_code);
		else if (p->exited)
			snprintf(buf, len, "exited cleanly (closed its heap)");
		else
			snprintf(buf, len, "closed its heap cleanly");
	}
	else if (p->exited && !p->kernel_facts)
		snprintf(buf, len, "exited with code %d (as its heap says; the dir backend has no kernel facts)",
			 p->exit_code);
	else if (p->exited && p->exit_signal)
		snprintf(buf, len, "killed by %s (signal %u)%s",
			 sig_name(p->exit_signal, sb, sizeof(sb)), p->exit_signal,
			 p->coredump ? ", core dumped" : "");
	else if (p->exited)
		snprintf(buf, len, "exited with code %d", p->exit_code);
	else if (p->kernel_facts)
		snprintf(buf, len, "gone (closed /dev/blamer before exiting)");
	else if (p->parent_claim && WIFSIGNALED(p->parent_wait_status))
		snprintf(buf, len, "killed by %s (signal %d)%s, as its parent %d says "
			 "(the parent's claim; the dir backend has no kernel facts)",
			 sig_name((uint32_t)WTERMSIG(p->parent_wait_status), sb, sizeof(sb)),
			 WTERMSIG(p->parent_wait_status),
			 WCOREDUMP(p->parent_wait_status) ? ", core dumped" : "", p->parent_pid);
	else if (p->parent_claim && WIFEXITED(p->parent_wait_status))
		snprintf(buf, len, "exited with code %d, as its parent %d says "
			 "(the parent's claim; the dir backend has no kernel facts)",
			 WEXITSTATUS(p->parent_wait_status), p->parent_pid);
	else if (p->phase == BLAMER_PHASE_EXITED_CLEANLY)
		snprintf(buf, len, "exited cleanly (as its heap says; dir backend has no kernel facts)");
	else
		snprintf(buf, len, "gone, cause unknown (dir backend has no kernel facts)");
}

void print_end_time(FILE *f, const struct blamer_snapshot *s,
		    const struct blamer_snap_process *p)
{
	time_t sec = (time_t)(p->last_seen_ns / 1000000000u);
	char when[64], age[32];
	struct tm tm;

	if (p->state == BLAMER_PROC_LIVE)
		return;
	if (p->orphan_time_ns) {
		/* orphan time is CLOCK_BOOTTIME; the snapshot has MONOTONIC: show as is */
		fprintf(f, "  died at %.3fs after boot\n", (double)p->orphan_time_ns / 1e9);
		return;
	}
	if (!p->last_seen_ns || !localtime_r(&sec, &tm) ||
	    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm)) {
		/* the reader believes no time past now: none may be left */
		if (p->exited)
			fprintf(f, "  ended at an unknown time (its files show none that can be believed)\n");
		return;
	}
	fmt_age(age, sizeof(age), s->realtime_ns, p->last_seen_ns);
	if (p->exited)
		fprintf(f, "  ended at %s (%s ago)\n", when, age);
	else
		fprintf(f, "  last sign of life at %s (%s ago): it ended then or later\n", when, age);
}

const char *state_short(const struct blamer_snap_process *p, char *buf, size_t len)
{
	char sb[32];

	if (p->disproved)
		snprintf(buf, len, "disproved");
	else if (p->state == BLAMER_PROC_LIVE)
		snprintf(buf, len, "live");
	else if (p->exited && p->exit_signal)
		snprintf(buf, len, "killed:%s", sig_name(p->exit_signal, sb, sizeof(sb)) + 3);
	else if (p->exited)
		snprintf(buf, len, "exit:%d", p->exit_code);
	else
		snprintf(buf, len, "dead");
	return buf;
}

const char *phase_str(uint32_t phase, char *buf, size_t len)
{
	const char *n = blamer_phase_name(phase);

	if (n)
		return n;
	snprintf(buf, len, "app:%u", phase >= BLAMER_PHASE_APP_BASE ?
		 phase - BLAMER_PHASE_APP_BASE : phase);
	return buf;
}

static void print_string(FILE *f, const uint8_t *b, size_t n)
{
	char buf[201];

	/* a value's bytes are its writer's: the first 200, sanitized */
	memcpy(buf, b, n < 200 ? n : 200);
	buf[n < 200 ? n : 200] = '\0';
	tty_printf(f, "\"%s\"%s", buf, n > 200 ? "..." : "");
}

const char *cut_mark(bool cut)
{
	return cut ? " [cut]" : "";
}

const char *proc_role(const struct blamer_snap_process *p, char *buf, size_t len)
{
	if (!p->role[0])
		return "-";
	snprintf(buf, len, "%s%s%s", p->role, p->instance[0] ? "/" : "", p->instance);
	return tty_clean(buf);	/* the writer's words */
}

void print_drops(FILE *f, const char *indent, const uint64_t *drops, uint64_t total)
{
	const char *sep = "";
	uint32_t i;

	if (!total)
		return;
	fprintf(f, "%sdropped: %llu write%s not recorded in full (", indent,
		(unsigned long long)total, total == 1 ? "" : "s");
	for (i = 0; i < BLAMER_DROP_MAX; i++) {
		const char *n = blamer_drop_reason_name(i);

		if (!drops[i])
			continue;
		if (n)
			fprintf(f, "%s%s %llu", sep, n, (unsigned long long)drops[i]);
		else
			fprintf(f, "%sreason %u %llu", sep, i, (unsigned long long)drops[i]);
		sep = ", ";
	}
	fprintf(f, ")\n");
}

const char *fmt_log_time(char *buf, size_t len, uint64_t realtime_ns)
{
	time_t sec = (time_t)(realtime_ns / 1000000000u);
	struct tm tm;
	size_t n;

	if (!realtime_ns || !localtime_r(&sec, &tm) ||
	    !(n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))) {
		snprintf(buf, len, "%s", "(no time)");
		return buf;
	}
	snprintf(buf + n, len - n, ".%03u", (unsigned)(realtime_ns / 1000000u % 1000u));
	return buf;
}

void print_fields(FILE *f, const char *indent, const struct blamer_snap_fields *fs)
{
	size_t i, j;

	for (i = 0; i < fs->n; i++) {
		const struct blamer_snap_field *x = &fs->v[i];

		tty_printf(f, "%s%s = ", indent, x->name);
		if (x->torn) {
			fprintf(f, "(changing or unknown %s)\n", blamer_field_type_name(x->type));
			continue;
		}
		switch (x->type) {
		case BLAMER_FIELD_SIGNED: fprintf(f, "%lld", (long long)x->i); break;
		case BLAMER_FIELD_UNSIGNED: fprintf(f, "%llu", (unsigned long long)x->u); break;
		case BLAMER_FIELD_DOUBLE: fprintf(f, "%g", x->d); break;
		case BLAMER_FIELD_BOOL: fputs(x->u ? "true" : "false", f); break;
		case BLAMER_FIELD_CHAR:
			fprintf(f, "'%c'", x->u >= 0x20 && x->u < 0x7f ? (int)x->u : '?');
			break;
		case BLAMER_FIELD_STRING:
			print_string(f, x->bytes, x->len);
			fputs(cut_mark(x->cut), f);
			break;
		case BLAMER_FIELD_RAW:
			for (j = 0; j < x->len && j < 64; j++)
				fprintf(f, "%02x", x->bytes[j]);
			if (x->len > 64)
				fputs("...", f);
			fputs(cut_mark(x->cut), f);
			break;
		default:
			fprintf(f, "<%s at %#llx, %llu bytes>", blamer_field_type_name(x->type),
				(unsigned long long)x->u, (unsigned long long)x->ref_size);
		}
		fputc('\n', f);
	}
}

void print_activity(FILE *f, const char *indent, const struct blamer_snapshot *s,
		    const struct blamer_snap_process *p, size_t depth,
		    const struct blamer_snap_activity *a, const char *verb)
{
	char age[64], addr[64], more[128];

	fmt_age(age, sizeof(age), s->monotonic_ns, a->time_ns);
	tty_printf(f, "%s#%zu %s \"%s\"%s %s %s ago", indent, depth,
		   blamer_activity_kind_name(a->kind), a->label, cut_mark(a->label_cut), verb, age);
	if (a->calling_address) {
		fmt_addr(addr, sizeof(addr), p, a->calling_address);
		tty_printf(f, " from %s", addr);
	}
	if (a->data[0] || a->data[1])
		fprintf(f, " data=%#llx,%#llx", (unsigned long long)a->data[0],
			(unsigned long long)a->data[1]);
	fputc('\n', f);
	/* its fields under it */
	snprintf(more, sizeof(more), "%s   ", indent);
	print_fields(f, more, &a->fields);
}

void print_path(FILE *f, const struct blamer_snapshot *s, int64_t uid, const uint64_t *nodes,
		uint32_t depth)
{
	/* a slash and a name (or an id) per node */
	char buf[BLAMER_SNAP_MAX_DEPTH * (1 + sizeof(((struct blamer_snap_node *)0)->name))];

	if (uid == ALL_UIDS)
		blamer_snap_path_string(s, nodes, depth, buf, sizeof(buf));
	else
		blamer_snap_uid_path_string(s, (uint32_t)uid, nodes, depth, buf, sizeof(buf));
	fputs(tty_clean(buf), f);	/* node names are the writers' */
}

void fmt_addr(char *buf, size_t len, const struct blamer_snap_process *p, uint64_t addr)
{
	blamer_snap_addr_string(p, addr, buf, len);	/* the JSON's calling_location too */
}

const char *proc_comm(const struct blamer_snap_process *p)
{
	return p->comm[0] ? p->comm : "?";
}

const char *proc_identity(const struct blamer_snap_process *p)
{
	return p->kernel_facts ? "kernel" : p->disproved ? "disproved" : "claimed";
}

const char *proc_tag(const struct blamer_snap_process *p)
{
	return p->kernel_facts ? "" : p->disproved ? " [claim disproved]" : " [claimed]";
}

const char *proc_health(const struct blamer_snap_process *p)
{
	return blamer_health_name(p->health);
}
