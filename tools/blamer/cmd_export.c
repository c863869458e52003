// SPDX-License-Identifier: MIT
/*
 * blamer export [--prometheus]: the text exposition format (the only
 * format, so the default: --prometheus may be left out), three ways.
 *   (none)                 once, to stdout
 *   --output FILE          once, to FILE, replaced atomically
 *   --interval S --output  the same every S seconds, for node_exporter's
 *                          textfile collector
 *   --listen ADDR:PORT     serving GET /metrics (with --output and
 *                          --interval: both)
 * The series are the service's (blamer_fleet_*(): one per metric, label
 * set, path and uid over every process), or with --per-process each
 * process's own (the cache of blamer_prom_cache keeps their texts). A
 * long-lived exporter (or one given --state) folds dead heaps into its
 * state file before it releases them: at every scrape or write, and at
 * least once a second (on the device, at once when a process dies), so
 * that they are folded before the module's limits or the directory's
 * retention evict them. The long-lived forms keep one reader and take a
 * snapshot per scrape or per write. Dead heaps are always read in full.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "http.h"
#include "mono.h"

/* each process's own counters (--per-process): no totals over them */
#define READ_FOR_PROM	(READ_FOR_EXPORT | BLAMER_READ_DEAD_FULL | BLAMER_READ_NO_TOTALS)
/* the service's series: the fleet sums the processes' own values */
#define READ_FOR_FLEET	(READ_FOR_EXPORT | BLAMER_READ_DEAD_FULL | BLAMER_READ_NO_TOTALS)
#define PROM_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define FOLD_MS		1000	/* a serving exporter folds at least this often */

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * What rounds keep: the reader (which keeps dead heaps decoded), the
 * fleet (its remainder and state) or, per process, the text each process
 * had (remade only for a process whose values changed), and the buffer
 * the exposition is made in (10 MB for 1,000 heaps per process: made
 * anew each time, its page faults would cost more than writing it).
 */
struct exporter {
	struct blamer_reader *r;
	struct blamer_prom_cache *pc;	/* --per-process */
	struct blamer_fleet *fleet;	/* the service's series */
	unsigned keep;
	char *buf;
	size_t len, cap;
	char msg[512];
	char fold_msg[512];	/* the last fold's error, reported once */
};

/* Folds the dead heaps of @s (and releases old ones); an error is
 * reported once (until a fold succeeds again): the heaps stay, counted. */
static void fold(struct exporter *e, struct blamer_snapshot *s)
{
	char msg[512];

	if (blamer_fleet_fold(e->fleet, e->r, s, e->keep, msg, sizeof(msg)) >= 0) {
		e->fold_msg[0] = '\0';
	} else if (strcmp(msg, e->fold_msg)) {
		err("%s", msg);
		snprintf(e->fold_msg, sizeof(e->fold_msg), "%s", msg);
	}
}

/* The exposition of @s in e->buf: 0, or -1 with a one-line reason in
 * e->msg. */
static int render_snapshot(struct exporter *e, struct blamer_snapshot *s)
{
	int ret;

	if (e->fleet) {
		fold(e, s);
		ret = blamer_fleet_prometheus_text(e->fleet, s, &e->buf, &e->len, &e->cap);
	} else {
		ret = blamer_snapshot_prometheus_text_cached(s, e->pc, &e->buf, &e->len, &e->cap);
	}
	if (ret) {
		snprintf(e->msg, sizeof(e->msg), "writing the exposition failed: out of memory");
		return -1;
	}
	return 0;
}

/* The same of a fresh snapshot of e->r (an http_render). */
static int render(void *arg, const char **body, size_t *len)
{
	struct exporter *e = arg;
	struct blamer_snapshot *s = NULL;
	int ret = -1;

	if (!blamer_reader_snapshot(e->r, &s, e->msg, sizeof(e->msg))) {
		ret = render_snapshot(e, s);
		blamer_snapshot_free(s);
	}
	*body = ret ? e->msg : e->buf;
	*len = ret ? strlen(e->msg) : e->len;
	return ret;
}

/* A fold of a fresh snapshot, with nothing written (the serving loop's
 * tick): dead heaps folded before the backend's limits evict them. */
static void fold_now(struct exporter *e)
{
	struct blamer_snapshot *s = NULL;

	if (!blamer_reader_snapshot(e->r, &s, e->msg, sizeof(e->msg))) {
		fold(e, s);
		blamer_snapshot_free(s);
	}
}

/*
 * Replaces @path with the exposition of @s: a temporary file in the same
 * directory (mkostemp: a name nobody can have made in advance), mode
 * 0644 for the textfile collector, fsync'ed, then renamed over @path,
 * so a reader sees the old file or the new one, never part of one. A
 * one-off export per process (@e NULL) writes it as it is made (memory
 * stays flat however big the exposition); else what @e makes of @s.
 */
static int write_atomic(const char *path, struct blamer_snapshot *s, struct exporter *e)
{
	char tmp[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int dl = slash ? (int)(slash - path + 1) : 0, fd, saved;
	FILE *f = NULL;

	if (snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", dl, path, slash ? slash + 1 : path) >=
	    (int)sizeof(tmp))
		return err("--output path too long");
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return err("cannot write in the directory of %s: %s", path, strerror(errno));
	if (fchmod(fd, 0644))
		goto fail;
	f = fdopen(fd, "w");
	if (!f)
		goto fail;
	errno = EIO;
	if (e && render_snapshot(e, s)) {
		errno = ENOMEM;
		goto fail;
	}
	if ((e ? fwrite(e->buf, 1, e->len, f) != e->len : blamer_snapshot_write_prometheus(s, f)) ||
	    fflush(f) || fsync(fd))
		goto fail;
	fd = -1;
	if (fclose(f)) {
		f = NULL;
		goto fail;
	}
	f = NULL;
	if (rename(tmp, path))
		goto fail;
	return EX_OK;
fail:
	saved = errno;
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	unlink(tmp);
	return err("cannot write %s: %s", path, strerror(saved));
}

static int write_file(struct exporter *e, const char *path)
{
	struct blamer_snapshot *s = NULL;
	int ret;

	if (blamer_reader_snapshot(e->r, &s, e->msg, sizeof(e->msg)))
		return err("%s", e->msg);
	ret = write_atomic(path, s, e);
	blamer_snapshot_free(s);
	return ret;
}

/* Until SIGTERM or SIGINT: serve @lfd (if >= 0), rewrite --output
 * every interval (if asked) and fold dead heaps at least every FOLD_MS
 * (if there is a state), at once when the device says a process died.
 * Errors of one round are reported and the next round is tried: a
 * service outlives a bad moment. */
static int serve(struct cli *c, struct exporter *e, int lfd)
{
	struct sigaction sa = { .sa_handler = on_stop };
	bool periodic = c->output && (c->seen & OPT_INTERVAL);
	bool folding = e->fleet && c->state_used;
	long long period = (long long)(c->interval * 1000), next = mono_ms();
	long long next_fold = mono_ms() + FOLD_MS;
	int devfd = folding ? blamer_reader_fd(e->r) : -1;
	sigset_t stops, waiting;

	/* SIGTERM and SIGINT are blocked but while waiting (ppoll): one that
	 * comes between the check of stop and the wait still ends the wait,
	 * and one during a round lets the round finish. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigprocmask(SIG_BLOCK, &stops, &waiting);
	sigdelset(&waiting, SIGTERM);
	sigdelset(&waiting, SIGINT);
	while (!stop) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
				       { .fd = devfd, .events = POLLIN } };
		struct timespec ts, *tsp = NULL;
		long long now = mono_ms(), wake = LLONG_MAX, left;
		int n;

		if (periodic) {
			if (now >= next) {
				write_file(e, c->output);	/* folds too */
				next_fold = mono_ms() + FOLD_MS;
				next += period;
				if (next <= now)	/* fell behind: no burst */
					next = now + period;
			}
			wake = next;
		}
		if (folding) {
			if (mono_ms() >= next_fold) {
				fold_now(e);
				next_fold = mono_ms() + FOLD_MS;
			}
			if (next_fold < wake)
				wake = next_fold;
		}
		if (wake != LLONG_MAX) {
			left = wake - mono_ms();
			if (left < 0)
				left = 0;
			ts.tv_sec = (time_t)(left / 1000);
			ts.tv_nsec = (long)(left % 1000) * 1000000;
			tsp = &ts;
		}
		/* both polled: an unused one is -1, which poll() skips */
		n = ppoll(p, 2, tsp, &waiting);
		if (n > 0 && devfd >= 0 && (p[1].revents & POLLIN)) {
			fold_now(e);	/* a heap appeared or its owner died */
			next_fold = mono_ms() + FOLD_MS;
		}
		if (n > 0 && lfd >= 0 && (p[0].revents & POLLIN) &&
		    http_serve_one(lfd, "/metrics", PROM_TYPE, render, e) &&
		    errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) {
			/* EMFILE and the like: the connection stays queued and
			 * poll() says so at once; wait rather than spin */
			err("accept: %s", strerror(errno));
			poll(NULL, 0, 200);
		}
		if (n > 0 && lfd >= 0 && (p[0].revents & POLLIN))
			next_fold = mono_ms() + FOLD_MS;	/* the scrape folded */
	}
	return EX_OK;
}

/*
 * Where the fold state is: --state, else for a serving exporter
 * systemd's $STATE_DIRECTORY (StateDirectory=) or /var/lib/blamer if it
 * may write there; NULL: none (nothing is folded).
 */
static const char *state_path(const struct cli *c, bool serving, char *buf, size_t len)
{
	const char *sd = getenv("STATE_DIRECTORY");

	if (c->state)
		return c->state;
	if (!serving)
		return NULL;
	if (sd && *sd) {
		/* a list of directories: the first */
		snprintf(buf, len, "%.*s/fold.state", (int)strcspn(sd, ":"), sd);
		return buf;
	}
	if (!access("/var/lib/blamer", W_OK | X_OK)) {
		snprintf(buf, len, "/var/lib/blamer/fold-%u.state", (unsigned)geteuid());
		return buf;
	}
	return NULL;
}

int cmd_export(struct cli *c)
{
	struct exporter e = { .keep = c->keep };
	bool serving = c->listen || (c->seen & OPT_INTERVAL);
	struct blamer_snapshot *s;
	char msg[512], spath[PATH_MAX];
	const char *state;
	int ret, lfd = -1;

	/* Prometheus is the one format: --prometheus says so, or nothing. */
	if (c->nargs)
		return usage_err("export takes no arguments (use --output FILE)");
	if ((c->seen & OPT_INTERVAL) && !c->output)
		return usage_err("--interval rewrites a file: give --output FILE too");
	if (c->listen && c->output && !(c->seen & OPT_INTERVAL))
		return usage_err("--listen with --output: give --interval S, how often to rewrite it");
	if (c->per_process && (c->seen & (OPT_STATE | OPT_KEEP)))
		return usage_err("--per-process folds nothing: --state and --keep-dead are for the service's series");
	if (c->listen) {
		lfd = http_listen(c->listen, msg, sizeof(msg));
		if (lfd == -1)
			return usage_err("%s", msg);
		if (lfd < 0)
			return err("%s", msg);
	}
	if (!c->per_process) {
		state = state_path(c, serving, spath, sizeof(spath));
		e.fleet = blamer_fleet_open(state, msg, sizeof(msg));
		if (!e.fleet) {
			if (lfd >= 0)
				close(lfd);
			return err("%s", msg);
		}
		c->state_used = state != NULL;
		if (serving && !state)
			err("no fold state (--state FILE, $STATE_DIRECTORY or a writable /var/lib/blamer): dead heaps are counted while they exist, and leave the totals when they are released");
	}
	/* a serving exporter reads each dead heap once (BLAMER_READ_KEEP_DEAD) */
	ret = take(c, (c->per_process ? READ_FOR_PROM : READ_FOR_FLEET) |
		   (serving ? BLAMER_READ_KEEP_DEAD : 0), &e.r, &s);
	if (ret) {
		if (lfd >= 0)
			close(lfd);
		blamer_fleet_close(e.fleet);
		return ret;
	}
	if (serving) {
		blamer_snapshot_free(s);	/* the source is fine; each round takes its own */
		if (!e.fleet)
			e.pc = blamer_prom_cache_new();	/* none: each round writes it all */
		ret = serve(c, &e, lfd);
	} else if (e.fleet) {
		/* one-off: folded too if a state was given */
		if (c->output)
			ret = write_atomic(c->output, s, &e);
		else if (render_snapshot(&e, s))
			ret = err("%s", e.msg);
		else if (fwrite(e.buf, 1, e.len, stdout) != e.len || fflush(stdout))
			ret = err("writing the exposition failed: %s", strerror(errno));
		blamer_snapshot_free(s);
	} else {
		if (c->output)
			ret = write_atomic(c->output, s, NULL);
		else if (blamer_snapshot_write_prometheus(s, stdout) || fflush(stdout))
			ret = err("writing the exposition failed: %s", strerror(errno));
		blamer_snapshot_free(s);
	}
	if (lfd >= 0)
		close(lfd);
	free(e.buf);
	blamer_prom_cache_free(e.pc);
	blamer_fleet_close(e.fleet);
	blamer_reader_close(e.r);
	return ret;
}
