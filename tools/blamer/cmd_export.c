// SPDX-License-Identifier: MIT
/*
 * blamer export [--prometheus]: the text exposition format (the only
 * format, so the default: --prometheus may be left out), three ways.
 *   (none)                 once, to stdout
 *   --output FILE          once, to FILE, replaced atomically
 *   --interval S --output  the same every S seconds, for node_exporter's
 *                          textfile collector
 *   --listen ADDR:PORT     serving GET /metrics (also unix:PATH, or
 *                          systemd's socket; with --output and
 *                          --interval: both)
 * The series are the service's (blamer_fleet_*(): one per metric, label
 * set, path and uid over every process), or with --per-process each
 * process's own (the cache of blamer_prom_cache keeps their texts). A
 * long-lived exporter (or one given --state) folds dead heaps into its
 * state file before it releases them: at every scrape or write, and at
 * least once a second (on the device, at once when a process dies), so
 * that they are folded before the module's limits or the directory's
 * retention evict them. The long-lived forms keep one reader and take a
 * snapshot per scrape or per write (scrapers asking at once share one:
 * http.c), so a scrape costs what a snapshot costs. Files and stdout get
 * a per-process exposition as it is made; an HTTP answer is made whole
 * first (its length leads it), in buffers kept from scrape to scrape.
 * Dead heaps are always read in full.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
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
/* the service's series: the fleet sums the processes' own values, and
 * shows no process's name */
#define READ_FOR_FLEET	(READ_FOR_EXPORT | BLAMER_READ_DEAD_FULL | BLAMER_READ_NO_TOTALS | \
			 BLAMER_READ_COMM_ONCE)
#define PROM_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define FOLD_MS		1000	/* a serving exporter folds at least this often */
#define FOLD_BUSY_MS	200	/* and this often while processes keep dying */

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * What rounds keep: the reader (which keeps dead heaps decoded), the
 * fleet (its remainder and state, and what each counter was) or, per
 * process, the text each process had (remade only for a process whose
 * values changed) and what each counter was (never shown lower: the
 * cache's guard), and the buffer the file's exposition is made in (10 MB
 * for 1,000 heaps per process: made anew each time, its page faults
 * would cost more than writing it; the HTTP answers have buffers of
 * their own, http.c).
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
	bool once;		/* a one-off: written as it is made, no buffer */
	long long folded_ms;	/* when a round last folded (mono_ms()) */
	int folded;		/* heaps it folded */
};

/* Folds the dead heaps of @s (and releases old ones); an error is
 * reported once (until a fold succeeds again): the heaps stay, counted. */
static void fold(struct exporter *e, struct blamer_snapshot *s)
{
	char msg[512];

	e->folded_ms = mono_ms();
	e->folded = blamer_fleet_fold(e->fleet, e->r, s, e->keep, msg, sizeof(msg));
	if (e->folded > 0)
		malloc_trim(0);	/* what the dead heaps' snapshot took goes back */
	if (e->folded >= 0) {
		e->fold_msg[0] = '\0';
	} else if (strcmp(msg, e->fold_msg)) {
		err("%s", msg);
		snprintf(e->fold_msg, sizeof(e->fold_msg), "%s", msg);
	}
}

/* The exposition of @s in *buf: 0, or -1 with a one-line reason in
 * e->msg. */
static int render_into(struct exporter *e, struct blamer_snapshot *s, char **buf, size_t *len,
		       size_t *cap)
{
	int ret;

	if (e->fleet) {
		fold(e, s);
		ret = blamer_fleet_prometheus_text(e->fleet, s, buf, len, cap);
	} else {
		ret = blamer_snapshot_prometheus_text_cached(s, e->pc, buf, len, cap);
	}
	if (ret) {
		snprintf(e->msg, sizeof(e->msg), "writing the exposition failed: out of memory");
		return -1;
	}
	return 0;
}

/* The same in e->buf. */
static int render_snapshot(struct exporter *e, struct blamer_snapshot *s)
{
	return render_into(e, s, &e->buf, &e->len, &e->cap);
}

/* The exposition of a fresh snapshot of e->r into *buf (an http_render):
 * made once for every scraper that asks while it is fresh (http.c). */
static int render(void *arg, char **buf, size_t *len, size_t *cap)
{
	struct exporter *e = arg;
	struct blamer_snapshot *s = NULL;
	size_t ml;
	char *nb;

	if (!blamer_reader_snapshot(e->r, &s, e->msg, sizeof(e->msg))) {
		int ret = render_into(e, s, buf, len, cap);

		blamer_snapshot_free(s);
		if (!ret)
			return 0;
	}
	/* the reason, as the answer's body */
	ml = strlen(e->msg);
	if (*cap < ml + 2) {
		nb = realloc(*buf, ml + 2);
		if (!nb) {
			*len = 0;
			return -1;
		}
		*buf = nb;
		*cap = ml + 2;
	}
	memcpy(*buf, e->msg, ml);
	(*buf)[ml] = '\n';
	*len = ml + 1;
	return -1;
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
	if (e && e->once) {
		/* the service's series, as they are made */
		fold(e, s);
		if (blamer_fleet_write_prometheus(e->fleet, s, f) || fflush(f) || fsync(fd))
			goto fail;
	} else {
		if (e && render_snapshot(e, s)) {
			errno = ENOMEM;
			goto fail;
		}
		if ((e ? fwrite(e->buf, 1, e->len, f) != e->len :
			 blamer_snapshot_write_prometheus(s, f)) ||
		    fflush(f) || fsync(fd))
			goto fail;
	}
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
	int devfd = folding ? blamer_reader_fd(e->r) : -1;
	struct http_server *hs = NULL;
	sigset_t stops, waiting;

	if (lfd >= 0) {
		hs = http_server_new(lfd, "/metrics", PROM_TYPE, render, e);
		if (!hs)
			return err("cannot serve: out of memory");
	}
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
	e->folded_ms = mono_ms();
	while (!stop) {
		struct pollfd p[2] = { { .fd = hs ? http_server_fd(hs) : -1, .events = POLLIN },
				       { .fd = devfd, .events = POLLIN } };
		struct timespec ts;
		long long now = mono_ms(), wait = -1, t;
		int n;

		if (periodic) {
			if (now >= next) {
				write_file(e, c->output);	/* folds too */
				next += period;
				if (next <= now)	/* fell behind: no burst */
					next = now + period;
			}
			wait = next - mono_ms();
			if (wait < 0)
				wait = 0;
		}
		if (folding) {
			/* a scrape or a write folds too (e->folded_ms); while
			 * heaps die, folds come sooner: on the dir backend
			 * retention may take a heap a second after its death */
			long long every = e->folded > 0 ? FOLD_BUSY_MS : FOLD_MS;

			if (mono_ms() - e->folded_ms >= every)
				fold_now(e);
			every = e->folded > 0 ? FOLD_BUSY_MS : FOLD_MS;
			t = e->folded_ms + every - mono_ms();
			if (t < 0)
				t = 0;
			if (wait < 0 || t < wait)
				wait = t;
		}
		/* the clients' deadlines are the server's to keep */
		t = hs ? http_server_timeout(hs) : -1;
		if (t >= 0 && (wait < 0 || t < wait))
			wait = t;
		ts.tv_sec = (time_t)(wait / 1000);
		ts.tv_nsec = (long)(wait % 1000) * 1000000;
		/* both polled: an unused one is -1, which poll() skips */
		n = ppoll(p, 2, wait >= 0 ? &ts : NULL, &waiting);
		if (n > 0 && devfd >= 0 && (p[1].revents & POLLIN))
			fold_now(e);	/* a heap appeared or its owner died */
		if (n >= 0 && hs)
			http_server_run(hs);
	}
	http_server_free(hs);
	return EX_OK;
}

/*
 * Where the fold state is: --state, else for a serving exporter
 * systemd's $STATE_DIRECTORY (StateDirectory=) or /var/lib/blamer if it
 * may write there; NULL: none (nothing is folded).
 */
static const char *state_path(const struct cli *c, bool serving, char *buf, size_t len,
			      bool *too_long)
{
	const char *sd = getenv("STATE_DIRECTORY");
	int n;

	if (c->state)
		return c->state;
	if (!serving)
		return NULL;
	if (sd && *sd) {
		/* a list of directories: the first; cut, it would name
		 * another file */
		n = snprintf(buf, len, "%.*s/fold.state", (int)strcspn(sd, ":"), sd);
		*too_long = n < 0 || (size_t)n >= len;
		return *too_long ? NULL : buf;
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
	char msg[512], spath[PATH_MAX], *made = NULL;
	bool too_long = false;
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
	if (serving)
		raise_nofile();
	if (c->listen) {
		lfd = http_listen(c->listen, msg, sizeof(msg), &made);
		if (lfd == -1)
			return usage_err("%s", msg);
		if (lfd < 0)
			return err("%s", msg);
	}
	if (!c->per_process) {
		state = state_path(c, serving, spath, sizeof(spath), &too_long);
		if (too_long) {
			if (lfd >= 0)
				close(lfd);
			http_unlink(made);
			free(made);
			return err("$STATE_DIRECTORY is too long for a path (%zu bytes)",
				   strlen(getenv("STATE_DIRECTORY")));
		}
		e.fleet = blamer_fleet_open(state, msg, sizeof(msg));
		if (!e.fleet) {
			if (lfd >= 0)
				close(lfd);
			http_unlink(made);
			free(made);
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
		http_unlink(made);
		free(made);
		return ret;
	}
	if (serving) {
		blamer_snapshot_free(s);	/* the source is fine; each round takes its own */
		if (!e.fleet)
			e.pc = blamer_prom_cache_new();	/* none: each round writes it all */
		ret = serve(c, &e, lfd);
	} else if (e.fleet) {
		/* one-off: folded too if a state was given; written as it is
		 * made (memory stays flat however big the exposition) */
		e.once = true;
		if (c->output) {
			ret = write_atomic(c->output, s, &e);
		} else {
			fold(&e, s);
			if (blamer_fleet_write_prometheus(e.fleet, s, stdout) || fflush(stdout))
				ret = err("writing the exposition failed: %s", strerror(errno));
		}
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
	http_unlink(made);	/* a socket file of ours, gone with us */
	free(made);
	free(e.buf);
	blamer_prom_cache_free(e.pc);
	blamer_fleet_close(e.fleet);
	blamer_reader_close(e.r);
	return ret;
}
