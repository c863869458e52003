// SPDX-License-Identifier: MIT
/*
 * fleet_bench: what the service's series (`blamer export`'s default)
 * cost as workers come and go, and a scrape of many live workers against
 * prometheus_client's multiprocess mode (Documentation/performance.rst,
 * "Fleet series").
 *
 *   fleet_bench churn BLAMER N
 *	A master makes N short-lived workers one after the other (dir
 *	backend, a private directory): each adds 1 to a counter and
 *	observes a value in a histogram (exponential buckets) through
 *	handles the master made, then dies. A serving exporter (`blamer
 *	export --listen --state`, --keep-dead 0) is scraped after every 500
 *	workers (each scrape folds the dead heaps and releases them, as
 *	Prometheus scraping every second would). At N = 1,000, 10,000 and
 *	100,000: the counter and the histogram's count as the exporter
 *	shows them (they must be N exactly), the number of series, the
 *	exporter's resident memory, and its CPU time per scrape (5 scrapes
 *	1.1 s apart: scrapers within a second share one answer; the fold's
 *	own ticks between them included).
 *
 *   fleet_bench live BLAMER PYTHON PROM_MP_METRICS_PY N [dir|device]
 *	N live workers, each with the metrics of bench/prom_mp_metrics.py
 *	(a counter of 4 routes x 2 codes, a 12-bucket histogram of 4
 *	routes, a livesum gauge); the CPU time of one scrape of their
 *	merged series by a serving exporter, against prometheus_client's
 *	MultiProcessCollector over the same metrics of N processes (CPU
 *	time, the median of 3), and the ratio. The workers' heaps and the
 *	exporter on the dir backend (the default: files read at every
 *	scrape) or on /dev/blamer (`device`: slabs the exporter maps once
 *	and keeps; make bench-fleet-device runs it in the VM). The
 *	exporter's CPU time is also split into user and system time, with
 *	its minor faults (from /proc/PID/stat; clock ticks of 10 ms, so 1 ms
 *	a scrape over the 10): where a scrape's time goes when perf is not
 *	at hand.
 *
 * Every time is CPU time (the exporter's from /proc/PID/schedstat, in ns;
 * Python's its own process time): this
 * machine's other work takes the CPUs, and wall time would mostly
 * measure the waiting. The load average is printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blamer.h"

/* heaps (and prometheus_client's files) on tmpfs, as blamer's default
 * /dev/shm/blamer-UID and a multiprocess directory are; the state on a
 * disk, as /var/lib/blamer is */
static char dir[128], heaps[160], sdir[128], state[192];
static pid_t exporter;
static int port;
static enum blamer_backend backend = BLAMER_BACKEND_DIR;

static void cleanup(void)
{
	char cmd[320];

	if (exporter > 0) {
		kill(exporter, SIGTERM);
		waitpid(exporter, NULL, 0);
		exporter = 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, sdir);
	if ((dir[0] || sdir[0]) && system(cmd))
		fprintf(stderr, "fleet_bench: cleanup of %s failed\n", dir);
}

static void die(const char *what)
{
	fprintf(stderr, "fleet_bench: %s: %s\n", what, strerror(errno));
	cleanup();
	exit(1);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), p;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		die("port");
	p = ntohs(a.sin_port);
	close(fd);
	return p;
}

/* GET /metrics into *buf (malloc()ed, NUL-terminated); its length, -1 on failure. */
static long scrape(char **buf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	size_t cap = 1 << 16, len = 0;
	char *b = malloc(cap), *body;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (!b || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		if (fd >= 0)
			close(fd);
		free(b);
		return -1;
	}
	while ((n = read(fd, b + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap) {
			char *nb = realloc(b, cap *= 2);

			if (!nb)
				die("memory");
			b = nb;
		}
	}
	close(fd);
	b[len] = '\0';
	body = strstr(b, "\r\n\r\n");
	if (!body) {
		free(b);
		return -1;
	}
	memmove(b, body + 4, len - (size_t)(body + 4 - b) + 1);
	*buf = b;
	return (long)strlen(b);
}

/* @pid's user and system time in seconds and its minor faults, from
 * /proc/PID/stat (fields 14, 15 and 10, after the name in parentheses,
 * which may hold anything) */
static void ticks_of(pid_t pid, double *user, double *sys, double *minflt)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, mf;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		die("stat");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %*u %*u %llu %llu",
			 &mf, &ut, &st) != 3)
		die("stat");
	*minflt = (double)mf;
	*user = (double)ut / (double)sysconf(_SC_CLK_TCK);
	*sys = (double)st / (double)sysconf(_SC_CLK_TCK);
}

/* @pid's CPU time in seconds: the scheduler's, in ns (schedstat), where
 * /proc/PID/stat counts clock ticks of 10 ms; the ticks on a kernel
 * without schedstat */
static double cpu_of(pid_t pid)
{
	char path[64];
	unsigned long long ns;
	double u, s, mf;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%llu", &ns) == 1) {
		fclose(f);
		return (double)ns / 1e9;
	}
	if (f)
		fclose(f);
	ticks_of(pid, &u, &s, &mf);
	return u + s;
}

static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static double loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* The exporter, folding into the state (@fold) or not (no state: no
 * fold ticks, each scrape's CPU its own). */
static void start_exporter(const char *blamer, bool fold)
{
	char listen[32];

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	exporter = fork();
	if (exporter < 0)
		die("fork");
	if (exporter == 0) {
		if (fold)
			execl(blamer, blamer, "--dir", heaps, "export", "--listen", listen, "--state",
			      state, "--keep-dead", "0", (char *)NULL);
		else if (backend == BLAMER_BACKEND_DEVICE)
			execl(blamer, blamer, "--backend", "device", "export", "--listen", listen,
			      (char *)NULL);
		else
			execl(blamer, blamer, "--dir", heaps, "export", "--listen", listen,
			      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		char *b;

		if (scrape(&b) >= 0) {
			free(b);
			return;
		}
		usleep(50000);
	}
	die("the exporter did not answer");
}

/* The value of the first sample named @name in @text, or -1. */
static double sample(const char *text, const char *name)
{
	const char *l;
	size_t n = strlen(name);

	for (l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, name, n) && (l[n] == '{' || l[n] == ' ')) {
			const char *nl = strchr(l, '\n'), *sp = l;

			for (const char *q = l; q < (nl ? nl : l + strlen(l)); q++)
				if (*q == ' ')
					sp = q;
			return strtod(sp + 1, NULL);
		}
	return -1;
}

static long series_in(const char *text)
{
	long n = 0;
	const char *l;

	for (l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		n += *l != '#' && *l != '\n';
	return n;
}

/*
 * A fresh answer: the exporter makes one answer for every scraper that
 * asks within a second of it (HTTP_FRESH_MS), so a scrape that must see
 * the heaps as they are now comes more than a second after the last.
 */
static long fresh_scrape(char **b)
{
	usleep(1100000);
	return scrape(b);
}

static void checkpoint(long n)
{
	double t0, t1;
	char *b = NULL;
	long len = 0, i;

	/* the last workers folded: a fresh scrape */
	if (fresh_scrape(&b) < 0)
		die("scrape");
	free(b);
	b = NULL;
	/* then the exporter's CPU over 5 fresh scrapes, each a snapshot, a
	 * fold and the exposition (and the fold's tick between them) */
	t0 = cpu_of(exporter);
	for (i = 0; i < 5; i++) {
		free(b);
		b = NULL;
		len = fresh_scrape(&b);
		if (len < 0)
			die("scrape");
	}
	t1 = cpu_of(exporter);
	printf("%9ld %12.0f %12.0f %8ld %8ld %10ld %10.2f %8.2f\n", n, sample(b, "jobs_total"),
	       sample(b, "job_seconds_count"), series_in(b), len, rss_kib(exporter),
	       (t1 - t0) * 1000 / 5, loadavg());
	fflush(stdout);
	free(b);
}

static int churn(const char *blamer, long total)
{
	const struct blamer_metric_def cd = { .name = "jobs_total", .kind = BLAMER_METRIC_COUNTER };
	const struct blamer_metric_def hd = { .name = "job_seconds", .kind = BLAMER_METRIC_HISTOGRAM,
					      .base = BLAMER_BASE_SECONDS, .schema = 2,
					      .min_exp = -14, .max_exp = 2 };
	struct blamer_config c = { .backend = BLAMER_BACKEND_DIR, .dir = heaps, .slab_size = 65536,
				   .flags = BLAMER_OPEN_NO_MODULES };
	struct blamer_series *jobs, *secs;
	long i, next = 1000;

	/* dead heaps kept until folded (the exporter folds at every scrape,
	 * each 500, and on its own tick): retention's limit raised unless
	 * the caller sets one (BLAMER_DIR_MAX_DEAD=64, the default, shows
	 * what a churn faster than the fold loses) */
	setenv("BLAMER_DIR_MAX_DEAD", "4000", 0);
	if (blamer_init(&c))
		die(blamer_errmsg());
	jobs = blamer_metric_series(blamer_metric_define(NULL, &cd), NULL, NULL, 0);
	secs = blamer_metric_series(blamer_metric_define(NULL, &hd), NULL, NULL, 0);
	if (!jobs || !secs)
		die(blamer_errmsg());
	start_exporter(blamer, true);
	printf("# fleet_bench churn: %ld worker lifetimes (each: a counter add and a histogram observation, then death)\n",
	       total);
	printf("%9s %12s %12s %8s %8s %10s %10s %8s\n", "workers", "jobs_total", "job_count",
	       "series", "bytes", "rss_kib", "scrape_ms", "load");
	for (i = 1; i <= total; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			blamer_counter_add(jobs, 1);
			blamer_histogram_observe(secs, (double)(i % 1000) / 1000);
			_exit(0);	/* dies without closing: a dead heap to fold */
		}
		if (waitpid(pid, NULL, 0) != pid)
			die("wait");
		if (i % 500 == 0) {
			char *b;

			if (scrape(&b) < 0)
				die("scrape");
			free(b);
		}
		if (i == next) {
			checkpoint(i);
			next *= 10;
		}
	}
	kill(exporter, SIGTERM);
	waitpid(exporter, NULL, 0);
	return 0;
}

/* A live worker of the live bench: its metrics, then it waits. */
static void live_worker(int fd)
{
	static const char *const routes[] = { "/", "/hello", "/users/:id", "/orders/:id" };
	static const char *const rc[] = { "route", "code" }, *const r[] = { "route" };
	static const double bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
					  0.025, 0.05, 0.1, 0.25, 1 };
	const struct blamer_metric_def cd = { .name = "http_requests", .kind = BLAMER_METRIC_COUNTER,
					      .labels = rc, .nlabels = 2 };
	const struct blamer_metric_def hd = { .name = "http_request_duration_seconds",
					      .kind = BLAMER_METRIC_HISTOGRAM, .labels = r,
					      .nlabels = 1, .bounds = bounds, .nbounds = 12 };
	const struct blamer_metric_def gd = { .name = "http_requests_in_flight",
					      .kind = BLAMER_METRIC_GAUGE,
					      .gauge_mode = BLAMER_GAUGE_LIVESUM };
	struct blamer_metric *cm = blamer_metric_define(NULL, &cd), *hm = blamer_metric_define(NULL, &hd);
	char ok = 1;
	int i;

	for (i = 0; i < 4; i++) {
		const char *v200[2] = { routes[i], "200" }, *v404[2] = { routes[i], "404" };

		blamer_counter_add(blamer_metric_series(cm, v200, NULL, 0), i + 1);
		blamer_counter_add(blamer_metric_series(cm, v404, NULL, 0), i + 1);
		blamer_histogram_observe(blamer_metric_series(hm, &routes[i], NULL, 0),
					 0.001 * (i + 1));
	}
	blamer_gauge_set(blamer_metric_series(blamer_metric_define(NULL, &gd), NULL, NULL, 0), 1);
	if (write(fd, &ok, 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

static double python_time(const char *py, const char *script, long n, char *what, size_t len)
{
	char cmd[1024], line[256], pydir[192];
	double t = -1;
	FILE *f;

	snprintf(pydir, sizeof(pydir), "%s/mp", dir);
	mkdir(pydir, 0700);
	snprintf(cmd, sizeof(cmd), "%s %s %s %ld", py, script, pydir, n);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	what[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "collect+generate_latest %lf", &t) == 1)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(what, len, "%s", line);
	}
	pclose(f);
	return t;
}

static int live(const char *blamer, const char *py, const char *script, long n)
{
	struct blamer_config c = { .backend = (int)backend, .slab_size = 65536,
				   .flags = BLAMER_OPEN_NO_MODULES };
	pid_t *kids = calloc((size_t)n, sizeof(*kids));
	char what[256], *b = NULL;
	double t0, t1, ours, theirs, u0, s0, f0, u1, s1, f1;
	long i, len = 0;
	int fds[2];

	if (!kids || pipe(fds))
		die("setup");
	if (backend == BLAMER_BACKEND_DIR)
		c.dir = heaps;
	for (i = 0; i < n; i++) {
		char ok;

		kids[i] = fork();
		if (kids[i] < 0)
			die("fork");
		if (kids[i] == 0) {
			close(fds[0]);
			if (blamer_init(&c))
				_exit(1);
			live_worker(fds[1]);
		}
		if (read(fds[0], &ok, 1) != 1)
			die("a worker did not start");
	}
	start_exporter(blamer, false);
	for (i = 0; i < 2; i++) {	/* warm: every heap read once */
		free(b);
		b = NULL;
		if (fresh_scrape(&b) < 0)
			die("scrape");
	}
	t0 = cpu_of(exporter);
	ticks_of(exporter, &u0, &s0, &f0);
	for (i = 0; i < 10; i++) {	/* each a fresh answer: a snapshot and a merge */
		free(b);
		b = NULL;
		len = fresh_scrape(&b);
		if (len < 0)
			die("scrape");
	}
	t1 = cpu_of(exporter);
	ticks_of(exporter, &u1, &s1, &f1);
	ours = (t1 - t0) / 10;
	printf("# fleet_bench live: %ld live workers, %s backend, load average %.2f\n", n,
	       backend == BLAMER_BACKEND_DEVICE ? "device" : "dir", loadavg());
	printf("blamer export --listen (merged): %.2f ms CPU per scrape, %ld series, %ld bytes\n",
	       ours * 1000, series_in(b), len);
	printf("  of which user %.1f ms, system %.1f ms, %.0f minor faults per scrape (/proc/PID/stat)\n",
	       (u1 - u0) * 100, (s1 - s0) * 100, (f1 - f0) / 10);
	free(b);
	kill(exporter, SIGTERM);
	waitpid(exporter, NULL, 0);
	for (i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	theirs = python_time(py, script, n, what, sizeof(what));
	if (theirs > 0)
		printf("prometheus_client MultiProcessCollector: %.2f ms CPU (%s): %.1fx blamer's\n",
		       theirs * 1000, what, theirs / ours);
	else
		printf("prometheus_client: not measured (%s %s failed)\n", py, script);
	free(kids);
	return 0;
}

#define USAGE "usage: fleet_bench churn BLAMER N | live BLAMER PYTHON SCRIPT N [dir|device]\n"

int main(int argc, char **argv)
{
	bool is_live = argc >= 2 && !strcmp(argv[1], "live");
	int ret;

	if (argc < 3) {
		fputs(USAGE, stderr);
		return 2;
	}
	if (is_live && argc == 7 && !strcmp(argv[6], "device"))
		backend = BLAMER_BACKEND_DEVICE;
	else if (is_live && !(argc == 6 || (argc == 7 && !strcmp(argv[6], "dir"))))
		is_live = false;	/* a usage error, below */
	snprintf(dir, sizeof(dir), "/dev/shm/blamer-fleet-bench.XXXXXX");
	snprintf(sdir, sizeof(sdir), "/tmp/blamer-fleet-bench.XXXXXX");
	if (!mkdtemp(dir) || !mkdtemp(sdir)) {
		dir[0] = sdir[0] = '\0';
		die("mkdtemp");
	}
	snprintf(heaps, sizeof(heaps), "%s/heaps", dir);
	if (mkdir(heaps, 0700))
		die("mkdir");
	snprintf(state, sizeof(state), "%s/fold.state", sdir);
	port = free_port();
	if (!strcmp(argv[1], "churn") && argc == 4)
		ret = churn(argv[2], atol(argv[3]));
	else if (is_live)
		ret = live(argv[2], argv[3], argv[4], atol(argv[5]));
	else {
		fputs(USAGE, stderr);
		ret = 2;
	}
	cleanup();
	return ret;
}
