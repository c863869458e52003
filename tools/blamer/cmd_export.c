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
 * The long-lived forms keep one reader and take a snapshot per scrape or
 * per write (scrapers asking at once share one: http.c), so a scrape
 * costs what a snapshot costs. Files and stdout get the exposition as it
 * is made; an HTTP answer is made whole first (its length leads it), in
 * buffers kept from scrape to scrape. Dead
 * heaps are always read in full: their totals stay counted until they
 * are released (the counter model, lib/export/prom.c).
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

/* each process's own counters: no totals over them */
#define READ_FOR_PROM	(READ_FOR_EXPORT | BLAMER_READ_DEAD_FULL | BLAMER_READ_NO_TOTALS)
#define PROM_TYPE	"text/plain; version=0.0.4; charset=utf-8"

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * What rounds keep: the reader (which keeps dead heaps decoded), the
 * text each process had (remade only for a process whose values
 * changed) and what each counter was (never shown lower: the cache's
 * guard), and the buffer the file's exposition is made in (10 MB for
 * 1,000 heaps: made anew each time, its page faults would cost more than
 * writing it; the HTTP answers have buffers of their own, http.c).
 */
struct exporter {
	struct blamer_reader *r;
	struct blamer_prom_cache *pc;
	char *buf;
	size_t len, cap;
	char msg[512];
};

/* The exposition of @s in e->buf: 0, or -1 with a one-line reason in
 * e->msg. */
static int render_snapshot(struct exporter *e, const struct blamer_snapshot *s)
{
	if (blamer_snapshot_prometheus_text_cached(s, e->pc, &e->buf, &e->len, &e->cap)) {
		snprintf(e->msg, sizeof(e->msg), "writing the exposition failed: out of memory");
		return -1;
	}
	return 0;
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
		int ret = blamer_snapshot_prometheus_text_cached(s, e->pc, buf, len, cap);

		blamer_snapshot_free(s);
		if (!ret)
			return 0;
		snprintf(e->msg, sizeof(e->msg), "writing the exposition failed: out of memory");
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

/*
 * Replaces @path with the exposition of @s: a temporary file in the same
 * directory (mkostemp: a name nobody can have made in advance), mode
 * 0644 for the textfile collector, fsync'ed, then renamed over @path,
 * so a reader sees the old file or the new one, never part of one. A
 * one-off export (@e NULL) writes it as it is made (memory stays flat
 * however big the exposition); a serving one writes what e's cache made.
 */
static int write_atomic(const char *path, const struct blamer_snapshot *s,
			struct exporter *e)
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

/* Until SIGTERM or SIGINT: serve @lfd (if >= 0) and rewrite --output
 * every interval (if asked). Errors of one round are reported and the
 * next round is tried: a service outlives a bad moment. */
static int serve(struct cli *c, struct exporter *e, int lfd)
{
	struct sigaction sa = { .sa_handler = on_stop };
	bool periodic = c->output && (c->seen & OPT_INTERVAL);
	long long period = (long long)(c->interval * 1000), next = mono_ms();
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
	while (!stop) {
		struct pollfd p = { .fd = hs ? http_server_fd(hs) : -1, .events = POLLIN };
		struct timespec ts;
		long long now = mono_ms(), wait = -1, t;

		if (periodic) {
			if (now >= next) {
				write_file(e, c->output);
				next += period;
				if (next <= now)	/* fell behind: no burst */
					next = now + period;
			}
			wait = next - mono_ms();
			if (wait < 0)
				wait = 0;
		}
		/* the clients' deadlines are the server's to keep */
		t = hs ? http_server_timeout(hs) : -1;
		if (t >= 0 && (wait < 0 || t < wait))
			wait = t;
		ts.tv_sec = (time_t)(wait / 1000);
		ts.tv_nsec = (long)(wait % 1000) * 1000000;
		if (ppoll(&p, hs ? 1 : 0, wait >= 0 ? &ts : NULL, &waiting) >= 0 && hs)
			http_server_run(hs);
	}
	http_server_free(hs);
	return EX_OK;
}

int cmd_export(struct cli *c)
{
	struct exporter e = { 0 };
	struct blamer_snapshot *s;
	char msg[512], *made = NULL;
	int ret, lfd = -1;

	/* Prometheus is the one format: --prometheus says so, or nothing. */
	if (c->nargs)
		return usage_err("export takes no arguments (use --output FILE)");
	if ((c->seen & OPT_INTERVAL) && !c->output)
		return usage_err("--interval rewrites a file: give --output FILE too");
	if (c->listen && c->output && !(c->seen & OPT_INTERVAL))
		return usage_err("--listen with --output: give --interval S, how often to rewrite it");
	if (c->listen) {
		lfd = http_listen(c->listen, msg, sizeof(msg), &made);
		if (lfd == -1)
			return usage_err("%s", msg);
		if (lfd < 0)
			return err("%s", msg);
	}
	/* a serving exporter reads each dead heap once (BLAMER_READ_KEEP_DEAD) */
	ret = take(c, READ_FOR_PROM | (lfd >= 0 || (c->seen & OPT_INTERVAL) ?
				       BLAMER_READ_KEEP_DEAD : 0), &e.r, &s);
	if (ret) {
		if (lfd >= 0)
			close(lfd);
		http_unlink(made);
		free(made);
		return ret;
	}
	if (lfd >= 0 || (c->seen & OPT_INTERVAL)) {
		blamer_snapshot_free(s);	/* the source is fine; each round takes its own */
		e.pc = blamer_prom_cache_new();	/* none: each round writes it all */
		ret = serve(c, &e, lfd);
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
	blamer_reader_close(e.r);
	return ret;
}
