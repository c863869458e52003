// SPDX-License-Identifier: MIT
/*
 * prefork_test SERVER [BLAMER]: examples/prefork-server as a user runs
 * it, checked through the reader (TAP).
 *
 * Starts the server with 3 workers (its own process group, a private
 * port on 127.0.0.1), sends 10 GET /hello, one GET /crash, 5 more GET
 * /hello, and reads every heap: the master's health-check adds (made
 * before the fork) and every worker's adds (through handles made before
 * the fork) are counted exactly; the crashed worker's stack (the request
 * it was serving), its data and how it ended (the kernel's fact on the
 * device backend, the parent's claim on the dir backend) are in its
 * postmortem; every worker's modules symbolize its addresses; roles are
 * shown; nothing was dropped. With BLAMER, the CLI's postmortem and list
 * are checked too.
 *
 * The backend is the environment's (BLAMER_BACKEND, BLAMER_DIR), the
 * same for the server and the reader. Bounded: a watchdog kills the
 * server's process group and fails the test after 150 s; the server is
 * stopped (SIGTERM, then SIGKILL) on every way out.
 *
 * Built against the library of any version: what a library before
 * format 3 cannot show (roles, drop counters) is then a failure, not a
 * compile error, so the same test runs against the old code.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blamer.h>

#define WORKERS		3
#define BEFORE		10
#define AFTER		5
#define WARMUP		3	/* the master's own adds before the fork (the example's) */
#define UNIT_REQUESTS	1000u

static pid_t server = -1;	/* also its process group */
static int ntest, nfail;
static char tmpdir[64];

static void stop_server(void)
{
	int i;

	if (server <= 0)
		return;
	kill(server, SIGTERM);
	for (i = 0; i < 100; i++) {
		if (waitpid(server, NULL, WNOHANG) == server) {
			server = -1;
			break;
		}
		usleep(100000);
	}
	if (server > 0) {
		kill(-server, SIGKILL);
		waitpid(server, NULL, 0);
	}
	server = -1;
}

static void on_alarm(int sig)
{
	static const char m[] = "Bail out! prefork_test: timed out\n";

	(void)sig;
	if (server > 0)
		kill(-server, SIGKILL);
	if (write(1, m, sizeof(m) - 1) < 0)
		_exit(1);
	_exit(1);
}

static void ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	nfail += !cond;
}

/* One request; the bytes of the answer (0: none, as from /crash). */
static size_t get(unsigned port, const char *path, char *out, size_t outlen)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { 10, 0 };
	char req[128];
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return 0;
	}
	while (got + 1 < outlen && (n = read(fd, out + got, outlen - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	return got;
}

static struct blamer_snapshot *snap(struct blamer_reader *r)
{
	struct blamer_snapshot *s = NULL;
	char e[256];

	if (blamer_reader_snapshot(r, &s, e, sizeof(e)))
		printf("# snapshot: %s\n", e);
	return s;
}

static const struct blamer_snap_process *proc(const struct blamer_snapshot *s, int pid)
{
	size_t i;

	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static const struct blamer_snap_field *field(const struct blamer_snap_fields *f, const char *n)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->v[i].name && !strcmp(f->v[i].name, n))
			return &f->v[i];
	return NULL;
}

/* The crashed worker ended with SIGSEGV, as the backend can tell. */
static bool segv(const struct blamer_snap_process *p)
{
	if (p->kernel_facts)
		return p->exited && p->exit_signal == SIGSEGV;
#ifdef BLAMER_DROP_REASONS
	return p->parent_claim && WIFSIGNALED(p->parent_wait_status) &&
	       WTERMSIG(p->parent_wait_status) == SIGSEGV;
#else
	return false;	/* no parent's claim before format 3 */
#endif
}

/* The value of path /server/http/GET /hello in @unit, of @p or all. */
static uint64_t hello(const struct blamer_snapshot *s, const struct blamer_snap_process *p,
		      uint32_t unit)
{
	uint64_t ids[3] = { blamer_dag_id("server"), blamer_dag_id("http"),
			    blamer_dag_id("GET /hello") };
	const struct blamer_snap_total *t;
	uint64_t sum = 0;
	size_t i, k;

	if (!p) {
		t = blamer_snap_total_find(s, ids, 3, unit);
		return t ? t->value : 0;
	}
	for (i = 0; i < p->npaths; i++)
		if (p->paths[i].depth == 3 && !memcmp(p->paths[i].nodes, ids, sizeof(ids)))
			for (k = 0; k < p->paths[i].nvalues; k++)
				if (p->paths[i].units[k] == unit)
					sum += p->paths[i].values[k];
	return sum;
}

/* Runs "BLAMER ARGS" into @out; true if it exited 0. */
static bool cli(const char *blamer, const char *args, char *out, size_t len)
{
	char cmd[512];
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", blamer, args);
	f = popen(cmd, "r");
	if (!f)
		return false;
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	return pclose(f) == 0;
}

static void check_worker_modules(const struct blamer_snap_process *p, int index)
{
	bool found = false;
	size_t i;

	for (i = 0; p && i < p->nmodules; i++) {
		const char *b = strrchr(p->modules[i].path, '/');

		found |= p->modules[i].loaded && b && !strcmp(b + 1, "prefork-server");
	}
	ok(found, "worker %d's heap has the loaded modules (prefork-server among them: %zu)",
	   index, p ? p->nmodules : 0);
}

int main(int argc, char **argv)
{
	struct blamer_reader_opts o = { .flags = BLAMER_READ_DEAD_FULL };
	int master = 0, workers[WORKERS] = { 0 }, crashed = 0, i, j;
	unsigned port = 0;
	struct blamer_snapshot *s = NULL;
	struct blamer_reader *r;
	char pf[128], buf[8192], e[256];
	uint64_t bytes = 0, served = 0;
	size_t got;
	FILE *f;

	if (argc < 2) {
		fprintf(stderr, "usage: prefork_test SERVER [BLAMER]\n");
		return 2;
	}
	signal(SIGALRM, on_alarm);
	alarm(150);
	printf("TAP version 13\n1..23\n");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/prefork-test.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(pf, sizeof(pf), "%s/port", tmpdir);
	server = fork();
	if (server == 0) {
		setpgid(0, 0);
		execl(argv[1], argv[1], "--workers", "3", "--port-file", pf, (char *)NULL);
		_exit(127);
	}
	setpgid(server, server);	/* whichever runs first */
	for (i = 0; i < 300 && access(pf, R_OK); i++)
		usleep(100000);
	f = fopen(pf, "r");
	j = f ? fscanf(f, "%u %d %d %d %d", &port, &master, &workers[0], &workers[1],
		       &workers[2]) : 0;
	ok(j == 5, "the server is up: port %u, master %d, workers %d %d %d", port, master,
	   workers[0], workers[1], workers[2]);
	if (f)
		fclose(f);
	if (!port) {
		stop_server();
		return 1;
	}

	for (i = 0, j = 0; i < BEFORE; i++) {
		got = get(port, "/hello", buf, sizeof(buf));
		j += got && strstr(buf, "200 OK") != NULL;
		bytes += got;
	}
	ok(j == BEFORE, "%d of %d GET /hello answered before the crash", j, BEFORE);
	got = get(port, "/crash", buf, sizeof(buf));
	ok(got == 0, "GET /crash gets no answer (the worker died)");

	r = blamer_reader_open(&o, e, sizeof(e));
	if (!r) {
		printf("Bail out! reader: %s\n", e);
		stop_server();
		return 1;
	}
	/* the master reaps the crashed worker (and records it): up to 20 s
	 * for a worker to be dead with the cause known, then whichever is
	 * dead (the cause is checked below) */
	for (i = 0; i < 200 && (!crashed || i < 20); i++) {
		bool known = false;

		s = snap(r);
		for (j = 0; s && j < WORKERS; j++) {
			const struct blamer_snap_process *p = proc(s, workers[j]);

			if (p && p->state == BLAMER_PROC_DEAD) {
				crashed = workers[j];
				known = p->kernel_facts || segv(p);
			}
		}
		blamer_snapshot_free(s);
		s = NULL;
		if (known)
			break;
		usleep(100000);
	}
	for (i = 0, j = 0; i < AFTER; i++) {
		got = get(port, "/hello", buf, sizeof(buf));
		j += got && strstr(buf, "200 OK") != NULL;
		bytes += got;
	}
	ok(j == AFTER, "%d of %d GET /hello answered after the crash", j, AFTER);

	s = snap(r);
	ok(s && crashed, "a worker died and the reader sees it dead (pid %d)", crashed);
	if (!s || !crashed) {
		stop_server();
		return 1;
	}
	{
		const struct blamer_snap_process *m = proc(s, master), *c = proc(s, crashed);
		bool roles = m != NULL, nodes = true, version = true, drops = true;
		char where[128] = "", role[80];

		ok(m && m->state == BLAMER_PROC_LIVE && m->have_record, "the master's heap is read");
		ok(hello(s, NULL, UNIT_REQUESTS) == WARMUP + BEFORE + AFTER,
		   "every add is counted once: %llu requests on /server/http/GET /hello "
		   "(%d by the master before the fork, %d by the workers after it)",
		   (unsigned long long)hello(s, NULL, UNIT_REQUESTS), WARMUP, BEFORE + AFTER);
		ok(hello(s, NULL, BLAMER_UNIT_BYTES) == bytes,
		   "bytes sent: %llu counted, %llu received",
		   (unsigned long long)hello(s, NULL, BLAMER_UNIT_BYTES), (unsigned long long)bytes);
		ok(m && hello(s, m, UNIT_REQUESTS) == WARMUP,
		   "the master's heap has its own %d adds, none of its workers'", WARMUP);
		for (j = 0; j < WORKERS; j++) {
			const struct blamer_snap_process *w = proc(s, workers[j]);
			const struct blamer_snap_field *sv = w ? field(&w->user_data, "served") : NULL;
			const struct blamer_snap_field *v = w ? field(&w->global_data, "version") : NULL;

			served += sv && !sv->torn ? sv->u : 0;
			version &= v && v->bytes && !strcmp((char *)v->bytes, "1.0");
			nodes &= w && blamer_snap_node_name(s, blamer_dag_id("GET /hello")) && w->nnodes >= 4;
#ifdef BLAMER_DROP_REASONS
			snprintf(role, sizeof(role), "%d", j);
			roles &= w && !strcmp(w->role, "worker") && !strcmp(w->instance, role);
			drops &= w && !w->dropped;
#else
			roles = drops = false;
#endif
		}
		ok(served == BEFORE + AFTER,
		   "the workers' \"served\" (a value handle made before the fork) sums to %llu",
		   (unsigned long long)served);
		ok(version, "every worker's heap inherited the master's global data (version 1.0)");
		ok(nodes, "every worker's heap inherited the DAG nodes");
#ifdef BLAMER_DROP_REASONS
		roles &= m && !strcmp(m->role, "master");
		drops &= m && !m->dropped;
#endif
		ok(roles, "roles: master, worker 0..%d", WORKERS - 1);
		ok(drops, "nothing dropped in any heap");
		for (j = 0; j < WORKERS; j++)
			check_worker_modules(proc(s, workers[j]), j);

		ok(c && segv(c), "the crashed worker ended with SIGSEGV (%s)",
		   c && c->kernel_facts ? "the kernel's fact" : "its parent's claim");
		{
			const struct blamer_snap_activity *a = NULL;
			const struct blamer_snap_field *cl = c ? field(&c->user_data, "client") : NULL;
			size_t t;

			for (t = 0; c && t < c->nthreads; t++)
				if (c->threads[t].nacts)
					a = &c->threads[t].acts[c->threads[t].nacts - 1];
			if (a)
				blamer_snap_addr_string(c, a->calling_address, where, sizeof(where));
			ok(a && !strcmp(a->label, "GET /crash"),
			   "its stack shows the request it died in: \"%s\"", a ? a->label : "(none)");
			ok(!strncmp(where, "prefork-server+0x", 17),
			   "the request's calling address symbolizes: %s", where);
			ok(cl && cl->bytes && !strncmp((char *)cl->bytes, "127.0.0.1:", 10) &&
			   strlen((char *)cl->bytes) > 12,
			   "its data shows the client it served: %s",
			   cl && cl->bytes ? (char *)cl->bytes : "(none)");
		}
		if (argc > 2) {
			char args[64];

			snprintf(args, sizeof(args), "postmortem %d", crashed);
			ok(cli(argv[2], args, buf, sizeof(buf)) && strstr(buf, "SIGSEGV") &&
			   strstr(buf, "\"GET /crash\"") && strstr(buf, "from prefork-server+0x") &&
			   strstr(buf, "crashing on purpose"),
			   "blamer postmortem %d: SIGSEGV, the request, its symbolized address, the log",
			   crashed);
			if (!strstr(buf, "from prefork-server+0x"))
				printf("# %.600s\n", buf);
			ok(cli(argv[2], "list", buf, sizeof(buf)) && strstr(buf, "worker/1") &&
			   strstr(buf, "master"), "blamer list shows the roles");
		} else {
			ok(true, "# SKIP no blamer CLI given");
			ok(true, "# SKIP no blamer CLI given");
		}
	}
	blamer_snapshot_free(s);
	stop_server();
	/* the dead worker's heap is the test's to free */
	s = snap(r);
	for (i = 0; s && i < (int)s->nprocs; i++)
		if (s->procs[i].pid == crashed && s->procs[i].state == BLAMER_PROC_DEAD)
			blamer_reader_release(r, &s->procs[i], e, sizeof(e));
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	unlink(pf);
	rmdir(tmpdir);
	return nfail ? 1 : 0;
}
