// SPDX-License-Identifier: MIT
/*
 * prefork-server: a small pre-fork HTTP server written the way a user
 * would, from the man pages: a master that sets up (the attribution
 * DAG, its paths, its data, the listening socket), then forks N workers
 * that serve with the handles the master made before the fork.
 *
 *   cc -o prefork-server prefork-server.c $(pkg-config --cflags --libs blamer)
 *   ./prefork-server --workers 4 --port-file /tmp/port &
 *   curl http://127.0.0.1:$(cat /tmp/port)/hello     # then: blamer list / blame
 *   curl http://127.0.0.1:$(cat /tmp/port)/crash     # a worker dies of SIGSEGV
 *   blamer postmortem                                 # what it was doing, and how it ended
 *
 * Routes: GET /hello answers "hello"; GET /crash makes the worker that
 * takes it write through a null pointer in the middle of the request;
 * anything else is a 404. Every request is an activity labelled with its
 * method and route, counted on the path /server/http/<route> (requests,
 * and the bytes sent), and in the service's metrics the master defines
 * before it forks: http_requests_total{route,code} (a counter),
 * http_request_duration_seconds{route} (a histogram) and
 * http_requests_in_flight (a gauge summed over live workers). The master
 * records each worker's launch and end (blamer_process_exited()), and on
 * SIGTERM stops the workers and exits.
 *
 * By default it starts no new worker: a dead one stays dead (what a
 * reader sees). --restart replaces every worker that ends, and
 * --max-requests N makes a worker leave (blamer_close(), exit 0) after N
 * requests, as gunicorn's max_requests does: a service whose workers come
 * and go all day (`blamer export` keeps its series flat and exact).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blamer.h>

#define MAX_WORKERS	16
#define UNIT_REQUESTS	1000u	/* an application unit, named below */
#define WARMUP		3u	/* requests the master counts before it forks */

/* Made by the master before the fork, used by every worker. */
static struct blamer_path *req_path[2];	/* /server/http/hello and .../crash */
static struct blamer_value *served, *client;
static struct blamer_metric *requests, *duration;
static struct blamer_series *hello_ok, *in_flight;
static volatile sig_atomic_t stop;
static unsigned max_requests;	/* a worker leaves after this many; 0: never */

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "prefork-server: %s: %s\n", what, strerror(errno));
	exit(1);
}

#ifdef BLAMER_METRIC_COUNTER
/* The service's metrics, defined once: every worker's heap inherits them. */
static void setup_metrics(void)
{
	static const char *const route_code[] = { "route", "code" }, *const route[] = { "route" };
	static const double bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
					  0.025, 0.05, 0.1, 0.25, 1 };
	const struct blamer_metric_def r = {
		.name = "http_requests", .help = "HTTP requests answered, by route and status.",
		.kind = BLAMER_METRIC_COUNTER, .labels = route_code, .nlabels = 2,
	};
	const struct blamer_metric_def d = {
		.name = "http_request_duration_seconds", .help = "Time to answer a request.",
		.kind = BLAMER_METRIC_HISTOGRAM, .base = BLAMER_BASE_SECONDS, .labels = route,
		.nlabels = 1, .bounds = bounds, .nbounds = sizeof(bounds) / sizeof(bounds[0]),
	};
	const struct blamer_metric_def f = {
		.name = "http_requests_in_flight", .help = "Requests being answered, over live workers.",
		.kind = BLAMER_METRIC_GAUGE, .gauge_mode = BLAMER_GAUGE_LIVESUM,
	};
	static const char *const hello[] = { "/hello", "200" };
	struct blamer_metric *fm;

	requests = blamer_metric_define(NULL, &r);
	duration = blamer_metric_define(NULL, &d);
	fm = blamer_metric_define(NULL, &f);
	hello_ok = blamer_metric_series(requests, hello, NULL, 0);
	in_flight = blamer_metric_series(fm, NULL, NULL, 0);
	if (!requests || !duration || !hello_ok || !in_flight) {
		fprintf(stderr, "prefork-server: %s\n", blamer_errmsg());
		exit(1);
	}
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* A request answered: counted by route and status, and how long it took. */
static void observe(const char *route, int code, double t0)
{
	const char *labels[2] = { route, code == 200 ? "200" : "404" };
	/* the handle made before the fork for the common case; the others
	 * found (or made, the first time) by their labels, as
	 * prometheus_client's .labels() does */
	struct blamer_series *c = code == 200 && !strcmp(route, "/hello") ? hello_ok :
				  blamer_metric_series(requests, labels, NULL, 0);

	blamer_counter_add(c, 1);
	blamer_histogram_observe(blamer_metric_series(duration, labels, NULL, 0), now_s() - t0);
}
#else	/* a library without metrics (the old code the test also builds) */
static void setup_metrics(void)
{
}

static double now_s(void)
{
	return 0;
}

static void observe(const char *route, int code, double t0)
{
	(void)route, (void)code, (void)t0;
}
#define blamer_gauge_add(s, v) ((void)(v))
#endif

/* The DAG and the handles every worker writes through. */
static void setup(void)
{
	uint64_t server = blamer_dag_id("server"), http = blamer_dag_id("http");
	uint64_t route[2] = { blamer_dag_id("GET /hello"), blamer_dag_id("GET /crash") };
	uint32_t units[2] = { UNIT_REQUESTS, BLAMER_UNIT_BYTES };
	int i;

	blamer_dag_node(NULL, server, 1, "server");
	blamer_dag_node(NULL, http, 2, "http");
	blamer_dag_link(NULL, server, http);
	blamer_dag_unit(NULL, UNIT_REQUESTS, "http_requests", BLAMER_BASE_NONE);
	for (i = 0; i < 2; i++) {
		uint64_t ids[3] = { server, http, route[i] };

		blamer_dag_node(NULL, route[i], 3, i ? "GET /crash" : "GET /hello");
		blamer_dag_link(NULL, http, route[i]);
		req_path[i] = blamer_path_get(NULL, ids, 3, units, 2);
		if (!req_path[i]) {
			fprintf(stderr, "prefork-server: %s\n", blamer_errmsg());
			exit(1);
		}
	}
	setup_metrics();
	blamer_set_string(NULL, BLAMER_DATA_GLOBAL, "version", "1.0");
	served = blamer_set_uint(NULL, BLAMER_DATA_PROCESS, "served", 0);
#ifdef BLAMER_DROP_REASONS	/* blamer_reserve_string() */
	/* room for any "address:port" written later */
	client = blamer_reserve_string(NULL, BLAMER_DATA_PROCESS, "client", 64);
#else
	client = blamer_set_string(NULL, BLAMER_DATA_PROCESS, "client", "");
#endif
}

static void serve(int fd, const struct sockaddr_in *peer)
{
	char req[1024], label[96], who[64], body[64], resp[256];
	const char *route = "";
	struct timeval tv = { 2, 0 };
	ssize_t n;
	int len, which = -1;
	double t0 = now_s();

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = read(fd, req, sizeof(req) - 1);
	if (n <= 0)
		return;
	blamer_gauge_add(in_flight, 1);
	req[n] = '\0';
	if (!strncmp(req, "GET /hello ", 11)) {
		route = "/hello";
		which = 0;
	} else if (!strncmp(req, "GET /crash ", 11)) {
		route = "/crash";
		which = 1;
	}
	snprintf(label, sizeof(label), "GET %s", which < 0 ? "(other)" : route);
	blamer_push(NULL, BLAMER_ACTIVITY_TASK, label, (uint64_t)fd, 0);
	snprintf(who, sizeof(who), "%s:%u", inet_ntoa(peer->sin_addr), ntohs(peer->sin_port));
	blamer_value_string(client, who);
	if (which == 1) {
		blamer_log(NULL, "crashing on purpose for %s", who);
		*(volatile int *)(uintptr_t)0 = 1;	/* SIGSEGV, mid-request */
	}
	snprintf(body, sizeof(body), which == 0 ? "hello from %d\n" : "not found\n", getpid());
	len = snprintf(resp, sizeof(resp), "HTTP/1.0 %s\r\nContent-Length: %zu\r\n\r\n%s",
		       which == 0 ? "200 OK" : "404 Not Found", strlen(body), body);
	/* counted once answered, before the client can see the answer: a
	 * client that got it finds it counted */
	if (which == 0) {
		blamer_path_add(req_path[0], 0, 1);
		blamer_path_add(req_path[0], 1, (uint64_t)len);
		blamer_value_add(served, 1);
	}
	observe(which == 0 ? "/hello" : "(other)", which == 0 ? 200 : 404, t0);
	if (write(fd, resp, (size_t)len) != len)
		blamer_log(NULL, "a client left before its answer");
	blamer_gauge_add(in_flight, -1);
	blamer_pop(NULL);
}

static void worker(int lfd, int index)
{
	unsigned answered = 0;
	char inst[16];

	snprintf(inst, sizeof(inst), "%d", index);
#ifdef BLAMER_DROP_REASONS	/* blamer_set_role() */
	/* first: the worker's heap is made with its role */
	blamer_set_role(NULL, "worker", inst);
#endif
	blamer_set_phase(NULL, BLAMER_PHASE_MAIN_LOOP);
	blamer_log(NULL, "worker %s up", inst);
	while (!stop) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		int fd = accept(lfd, (struct sockaddr *)&peer, &plen);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			die("accept");
		}
		serve(fd, &peer);
		close(fd);
		if (max_requests && ++answered >= max_requests)
			break;	/* its turn to leave: the master starts another */
	}
	blamer_set_phase(NULL, BLAMER_PHASE_SHUTTING_DOWN);
	/* a clean end: the heap stays, closed, for an exporter to fold
	 * (it holds the service's series) */
	blamer_reset();
	exit(0);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sigaction sa = { .sa_handler = on_term };
	pid_t pids[MAX_WORKERS];
	const char *port_file = NULL;
	int nworkers = 4, i, lfd, one = 1, alive, restart = 0, next_index;
	socklen_t alen = sizeof(a);
	unsigned k;
	FILE *f;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			nworkers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--port-file") && i + 1 < argc)
			port_file = argv[++i];
		else if (!strcmp(argv[i], "--max-requests") && i + 1 < argc)
			max_requests = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--restart"))
			restart = 1;
		else {
			fprintf(stderr, "usage: prefork-server [--workers 1..%d] [--port-file FILE] [--restart] [--max-requests N]\n",
				MAX_WORKERS);
			return 2;
		}
	}
	if (nworkers < 1 || nworkers > MAX_WORKERS) {
		fprintf(stderr, "prefork-server: --workers takes 1..%d\n", MAX_WORKERS);
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!blamer_default()) {
		fprintf(stderr, "prefork-server: %s\n", blamer_errmsg());
		return 1;
	}
#ifdef BLAMER_DROP_REASONS
	blamer_set_role(NULL, "master", "");
#endif
	setup();
	/* the master's own requests before any worker exists: a health check */
	for (k = 0; k < WARMUP; k++)
		blamer_path_add(req_path[0], 0, 1);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen))
		die("listen on 127.0.0.1");
	blamer_set_phase(NULL, BLAMER_PHASE_MAIN_LOOP);
	for (i = 0; i < nworkers; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0)
			worker(lfd, i);
		blamer_process_launched(NULL, pids[i]);
	}
	if (port_file) {
		/* "port master-pid worker-pids...", written whole, then renamed */
		char tmp[4096];

		snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
		f = fopen(tmp, "w");
		if (!f)
			die(tmp);
		fprintf(f, "%u %d", ntohs(a.sin_port), getpid());
		for (i = 0; i < nworkers; i++)
			fprintf(f, " %d", pids[i]);
		fprintf(f, "\n");
		if (fclose(f) || rename(tmp, port_file))
			die(port_file);
	}
	for (alive = nworkers, next_index = nworkers; alive > 0;) {
		int status;
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0) {
			if (errno != EINTR)
				break;
			if (stop)
				for (i = 0; i < nworkers; i++)
					kill(pids[i], SIGTERM);
			continue;
		}
		blamer_process_exited(NULL, pid, status);
		if (WIFSIGNALED(status))
			blamer_log(NULL, "worker %d killed by signal %d", (int)pid, WTERMSIG(status));
		else
			blamer_log(NULL, "worker %d exited with code %d", (int)pid, WEXITSTATUS(status));
		for (i = 0; i < nworkers && pids[i] != pid; i++)
			;
		if (restart && !stop && i < nworkers) {
			/* a new worker in its place, with the handles made before */
			pids[i] = fork();
			if (pids[i] < 0)
				die("fork");
			if (pids[i] == 0)
				worker(lfd, next_index);
			next_index++;
			blamer_process_launched(NULL, pids[i]);
			continue;
		}
		alive--;
	}
	blamer_set_phase(NULL, BLAMER_PHASE_SHUTTING_DOWN);
	return 0;
}
