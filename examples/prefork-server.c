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
 * and the bytes sent). The master records each worker's launch and end
 * (blamer_process_exited()), and on SIGTERM stops the workers and exits.
 * It starts no new worker: a dead one stays dead (the example is about
 * what a reader sees).
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
#include <sys/wait.h>
#include <unistd.h>

#include <blamer.h>

#define MAX_WORKERS	16
#define UNIT_REQUESTS	1000u	/* an application unit, named below */
#define WARMUP		3u	/* requests the master counts before it forks */

/* Made by the master before the fork, used by every worker. */
static struct blamer_path *req_path[2];	/* /server/http/hello and .../crash */
static struct blamer_value *served, *client;
static volatile sig_atomic_t stop;

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

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = read(fd, req, sizeof(req) - 1);
	if (n <= 0)
		return;
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
	if (write(fd, resp, (size_t)len) == len && which == 0) {
		blamer_path_add(req_path[0], 0, 1);
		blamer_path_add(req_path[0], 1, (uint64_t)len);
		blamer_value_add(served, 1);
	}
	blamer_pop(NULL);
}

static void worker(int lfd, int index)
{
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
	}
	blamer_set_phase(NULL, BLAMER_PHASE_SHUTTING_DOWN);
	exit(0);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sigaction sa = { .sa_handler = on_term };
	pid_t pids[MAX_WORKERS];
	const char *port_file = NULL;
	int nworkers = 4, i, lfd, one = 1, alive;
	socklen_t alen = sizeof(a);
	unsigned k;
	FILE *f;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			nworkers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--port-file") && i + 1 < argc)
			port_file = argv[++i];
		else {
			fprintf(stderr, "usage: prefork-server [--workers 1..%d] [--port-file FILE]\n",
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
	for (alive = nworkers; alive > 0;) {
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
		alive--;
	}
	blamer_set_phase(NULL, BLAMER_PHASE_SHUTTING_DOWN);
	return 0;
}
