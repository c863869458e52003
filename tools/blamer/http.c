// SPDX-License-Identifier: MIT
/*
 * A scrape endpoint no other client can keep from its scraper (http.h).
 *
 * One thread, one epoll loop, every socket non-blocking: a client that
 * sends its request a byte at a time, never reads its answer or never
 * closes holds one connection, never the server. Each connection has
 * deadlines fixed when its stage begins (its request, its answer, its
 * end) that no byte it sends or takes moves, and a byte budget for what
 * it may send. Connections are capped per peer and in all; when a new
 * one finds no room, the one that has done least is let go to make it:
 * one whose client has all its answer (it is not hurt), else the oldest
 * still sending its request, else the one whose answer has not moved for
 * longest: one that has stopped taking it (nothing taken for
 * HTTP_STALL_MS) before any that is taking it, which goes only when every
 * other one is taking its answer too. Let go before its client took all
 * of its answer (room, a deadline), a TCP connection is reset, so that
 * the kernel does not keep the rest for a client that never takes it;
 * and the kernel holds at most HTTP_SNDBUF of an answer for a client (no
 * autotuning up to 4 MiB). Within a peer, where the kernel names the
 * process that connected (a Unix socket), the process holding the most
 * of the peer's connections loses one of its own first: a scraper holds
 * one, and a process of its uid that opens many does not push it out
 * before it has asked. On TCP a
 * connection reaches accept() only once it has sent something
 * (TCP_DEFER_ACCEPT: one that says nothing takes no room here), and a
 * request sent at once, as a scraper sends it, is read the moment it is
 * accepted, so a flood of new connections does not push it out before it
 * has asked.
 *
 * A peer is a uid where the kernel says one: SO_PEERCRED on a Unix
 * socket; for TCP, the uid owning the client's socket when that socket
 * is on this machine (NETLINK_SOCK_DIAG finds it by the four-tuple), so
 * that every local user, all coming from 127.0.0.1, has a cap of their
 * own; else the peer's address.
 *
 * The answer to GET /metrics is made once for every client that asks
 * while it is fresh (HTTP_FRESH_MS) and shared (counted references);
 * at most HTTP_ANSWERS are kept at once, so what a crowd of slow
 * readers costs is bounded: past that, they get the newest there is.
 * Requests are parsed only as far as the request line (method, target,
 * version); headers are read, up to HTTP_MAX_REQUEST bytes, and ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <linux/sock_diag.h>

#include "http.h"
#include "mono.h"

/* Accepted per round of the loop: the connections already there are
 * read between rounds, so a flood does not let a new one go unread. */
#define ACCEPT_BATCH	8
/* Connections the kernel queues before accept(): a flood that fills the
 * queue makes the next client's handshake wait for a retransmission (1 s
 * and more), so the queue is deep; accept() empties it fast. */
#define HTTP_BACKLOG	1024
/* How long accepting rests after accept() failed for a lack of something. */
#define ACCEPT_PAUSE_MS	200

/* ---- listening ---- */

/*
 * A TCP connection is handed to accept() only once its first bytes are
 * there (TCP_DEFER_ACCEPT, for as long as a request may take): one that
 * connects and says nothing waits in the kernel, taking no room of ours,
 * and a scraper's is read whole the moment it is accepted.
 */
static void defer_accept(int fd)
{
	int secs = HTTP_REQUEST_MS / 1000;

	setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
}

static int listen_tcp(const char *spec, char *err, size_t errlen)
{
	union {
		struct sockaddr any;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} sa;
	socklen_t salen;
	char host[64], *end;
	const char *colon, *h, *port;
	size_t hl;
	long pn;
	int fd, one = 1;

	colon = strrchr(spec, ':');
	if (!colon) {
		snprintf(err, errlen, "bad --listen '%s': give ADDR:PORT, e.g. 127.0.0.1:9464, or unix:PATH",
			 spec);
		return -1;
	}
	port = colon + 1;
	errno = 0;
	pn = strtol(port, &end, 10);
	if (*port < '0' || *port > '9' || *end || errno || pn < 1 || pn > 65535) {
		snprintf(err, errlen, "bad --listen '%s': the port must be 1-65535", spec);
		return -1;
	}
	h = spec;
	hl = (size_t)(colon - spec);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (!hl) {
		h = "127.0.0.1";	/* localhost unless told otherwise */
		hl = strlen(h);
	}
	if (hl >= sizeof(host)) {
		snprintf(err, errlen, "bad --listen '%s': address too long", spec);
		return -1;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	/* numeric only (inet_pton): no resolver, which a static binary
	 * would have to load at run time */
	memset(&sa, 0, sizeof(sa));
	if (inet_pton(AF_INET, host, &sa.v4.sin_addr) == 1) {
		sa.v4.sin_family = AF_INET;
		sa.v4.sin_port = htons((uint16_t)pn);
		salen = sizeof(sa.v4);
	} else if (inet_pton(AF_INET6, host, &sa.v6.sin6_addr) == 1) {
		sa.v6.sin6_family = AF_INET6;
		sa.v6.sin6_port = htons((uint16_t)pn);
		salen = sizeof(sa.v6);
	} else {
		snprintf(err, errlen, "bad --listen '%s': give a numeric IPv4 or [IPv6] address",
			 spec);
		return -1;
	}
	fd = socket(sa.any.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, &sa.any, salen) || listen(fd, HTTP_BACKLOG)) {
		snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -2;
	}
	defer_accept(fd);
	return fd;
}

/*
 * A socket file at @path left by an exporter that is gone (ours, a
 * socket, and nobody answers on it) is removed: true if there is none
 * now.
 */
static bool clear_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd;
	bool stale;

	if (lstat(path, &st))
		return errno == ENOENT;
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	stale = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) && errno == ECONNREFUSED;
	close(fd);
	return stale && !unlink(path);
}

static int listen_unix(const char *spec, char *err, size_t errlen, char **made)
{
	const char *path = spec + 5;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, e;

	if (!*path || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "bad --listen '%s': give unix:PATH, a path of at most %zu bytes",
			 spec, sizeof(sa.sun_path) - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (!clear_stale(path, &sa)) {
		snprintf(err, errlen, "cannot listen on %s: %s", path,
			 errno == ENOENT ? "it exists" : "it exists and is not a stale socket of ours");
		return -2;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		return -2;
	}
	/* owner and group may connect (chgrp the socket, or its directory,
	 * to the scraper's group), nobody else; from bind() on */
	old = umask(0117);
	e = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? errno : 0;
	umask(old);
	if (e || listen(fd, HTTP_BACKLOG)) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(e ? e : errno));
		if (!e)
			unlink(path);
		close(fd);
		return -2;
	}
	*made = strdup(path);
	return fd;
}

/* systemd's socket activation: the one listening stream socket at fd 3. */
static int listen_systemd(char *err, size_t errlen)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int type = 0, on = 0;
	socklen_t l = sizeof(type), l2 = sizeof(on);

	if (!pid || !fds || strtol(pid, NULL, 10) != getpid() || strcmp(fds, "1")) {
		snprintf(err, errlen,
			 "--listen systemd: no socket passed (run from a .socket unit with one ListenStream=)");
		return -2;
	}
	if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM ||
	    getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &on, &l2) || !on) {
		snprintf(err, errlen, "--listen systemd: fd 3 is not a listening stream socket");
		return -2;
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	{
		int dom = 0;
		socklen_t dl = sizeof(dom);

		if (!getsockopt(3, SOL_SOCKET, SO_DOMAIN, &dom, &dl) &&
		    (dom == AF_INET || dom == AF_INET6))
			defer_accept(3);
	}
	if (fcntl(3, F_SETFD, FD_CLOEXEC) || fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK)) {
		snprintf(err, errlen, "--listen systemd: %s", strerror(errno));
		return -2;
	}
	return 3;
}

int http_listen(const char *spec, char *err, size_t errlen, char **made)
{
	*made = NULL;
	if (!strncmp(spec, "unix:", 5))
		return listen_unix(spec, err, errlen, made);
	if (!strcmp(spec, "systemd"))
		return listen_systemd(err, errlen);
	return listen_tcp(spec, err, errlen);
}

void http_unlink(const char *path)
{
	struct stat st;

	if (path && !lstat(path, &st) && S_ISSOCK(st.st_mode) && st.st_uid == geteuid())
		unlink(path);
}

/* ---- the server ---- */

/* Who a connection is, for the caps: a uid, or an address. */
struct peer {
	uint32_t kind;		/* 1 uid, 2 address */
	uint32_t uid;
	uint8_t addr[16];
};

/* A shared answer: one rendering, sent to every client that asked while
 * it was fresh. */
struct answer {
	unsigned refs;
	bool failed;		/* a 500 with the reason */
	char *body;
	size_t len, cap;
	long long made_ms;
};

enum stage { C_READ, C_WRITE, C_LINGER };

struct conn {
	int fd;
	enum stage st;
	long long since;	/* when its stage began */
	long long deadline;	/* and when it must be done */
	unsigned long long seq;	/* its place in the order of accept() */
	struct peer peer;
	pid_t pid;		/* the process that connected; 0: not known (TCP) */
	char *req;		/* C_READ: the head so far */
	size_t nreq;
	struct answer *ans;	/* C_WRITE: the shared answer, or NULL */
	char head[192];		/* status line, headers, and a short body */
	size_t nhead;
	const char *body;	/* what follows the head */
	size_t nbody;
	size_t sent;		/* of head + body */
	long long answer_by;	/* C_WRITE's deadline, kept for C_LINGER */
	long long moved;	/* when its answer last moved: the kernel took
				 * bytes of it (C_WRITE), or the client took
				 * some of what the kernel held (C_LINGER) */
	size_t queued;		/* C_LINGER: what the kernel still held of the
				 * answer when last looked at */
	size_t drained;		/* C_LINGER: bytes read and dropped */
};

struct http_server {
	int lfd, ep, nl;	/* listener, epoll, sock_diag (-1: none) */
	int reserve;		/* a spare descriptor: when accept() hits the
				 * limit, freed to shed one connection */
	bool is_unix;
	const char *path, *type;
	http_render render;
	void *arg;
	struct conn **c;	/* slots, NULL when free */
	size_t max;
	size_t n;
	unsigned long long accepted;	/* connections accepted so far */
	struct answer *ans[HTTP_ANSWERS];	/* [0] the newest */
	long long resume_ms;	/* the listener rests until then (0: it does not) */
};

static void answer_put(struct answer *a)
{
	if (a)
		a->refs--;
}

static void conn_close(struct http_server *s, size_t i)
{
	struct conn *c = s->c[i];

	epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	answer_put(c->ans);
	free(c->req);
	free(c);
	s->c[i] = NULL;
	s->n--;
}

static void watch(struct http_server *s, size_t i, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = i + 1 };

	epoll_ctl(s->ep, EPOLL_CTL_MOD, s->c[i]->fd, &ev);
}

/* ---- peers ---- */

static bool peer_eq(const struct peer *a, const struct peer *b)
{
	return a->kind == b->kind && (a->kind == 1 ? a->uid == b->uid :
				      !memcmp(a->addr, b->addr, sizeof(a->addr)));
}

/*
 * The uid owning the client end of TCP connection @fd, when that end is
 * a socket of this machine (the kernel's inet_diag, asked for exactly
 * that four-tuple); false if it is not (a remote client) or cannot say.
 */
static bool local_tcp_uid(int nl, int fd, uint32_t *uid)
{
	struct sockaddr_storage me, them;
	socklen_t ml = sizeof(me), tl = sizeof(them);
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr h;
		char b[1024];
	} rsp;
	struct inet_diag_msg *m;
	ssize_t n;

	if (nl < 0 || getsockname(fd, (struct sockaddr *)&me, &ml) ||
	    getpeername(fd, (struct sockaddr *)&them, &tl) || me.ss_family != them.ss_family)
		return false;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (them.ss_family == AF_INET) {
		const struct sockaddr_in *t = (void *)&them, *l = (void *)&me;

		req.r.sdiag_family = AF_INET;
		req.r.id.idiag_sport = t->sin_port;	/* the client's end */
		req.r.id.idiag_dport = l->sin_port;
		memcpy(req.r.id.idiag_src, &t->sin_addr, 4);
		memcpy(req.r.id.idiag_dst, &l->sin_addr, 4);
	} else if (them.ss_family == AF_INET6) {
		const struct sockaddr_in6 *t = (void *)&them, *l = (void *)&me;

		if (IN6_IS_ADDR_V4MAPPED(&t->sin6_addr)) {
			/* a v4 client of a dual-stack socket: its end is AF_INET */
			req.r.sdiag_family = AF_INET;
			memcpy(req.r.id.idiag_src, &t->sin6_addr.s6_addr[12], 4);
			memcpy(req.r.id.idiag_dst, &l->sin6_addr.s6_addr[12], 4);
		} else {
			req.r.sdiag_family = AF_INET6;
			memcpy(req.r.id.idiag_src, &t->sin6_addr, 16);
			memcpy(req.r.id.idiag_dst, &l->sin6_addr, 16);
		}
		req.r.id.idiag_sport = t->sin6_port;
		req.r.id.idiag_dport = l->sin6_port;
	} else {
		return false;
	}
	/* the kernel answers while it takes the request: nothing to wait for */
	if (send(nl, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		return false;
	n = recv(nl, &rsp, sizeof(rsp), MSG_DONTWAIT);
	while (recv(nl, rsp.b + sizeof(rsp) / 2, sizeof(rsp) / 2, MSG_DONTWAIT) > 0)
		;	/* nothing else may stay queued for the next ask */
	if (n < (ssize_t)(NLMSG_HDRLEN + sizeof(*m)) || rsp.h.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    rsp.h.nlmsg_len > (size_t)n)
		return false;
	m = NLMSG_DATA(&rsp.h);
	*uid = m->idiag_uid;
	return true;
}

/* Who connected on @fd: its peer, and on a Unix socket the process that
 * connected (*@pid; 0 where the kernel does not say: TCP). A remote IPv6
 * peer is its /64: one host or site has all of one, and would otherwise
 * be as many peers as it likes. */
static void peer_of(struct http_server *s, int fd, struct peer *p, pid_t *pid)
{
	struct sockaddr_storage them;
	socklen_t tl = sizeof(them);
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	memset(p, 0, sizeof(*p));
	*pid = 0;
	if (s->is_unix) {
		bool known = !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl);

		p->kind = 1;
		p->uid = known ? (uint32_t)cr.uid : UINT32_MAX;
		*pid = known ? cr.pid : 0;
		return;
	}
	if (local_tcp_uid(s->nl, fd, &p->uid)) {
		p->kind = 1;
		return;
	}
	p->kind = 2;
	if (getpeername(fd, (struct sockaddr *)&them, &tl))
		return;
	if (them.ss_family == AF_INET)
		memcpy(p->addr, &((struct sockaddr_in *)&them)->sin_addr, 4);
	else if (them.ss_family == AF_INET6)
		memcpy(p->addr, &((struct sockaddr_in6 *)&them)->sin6_addr,
		       IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&them)->sin6_addr) ?
		       16 : 8);
}

/* ---- answers ---- */

static void set_head(struct conn *c, const char *status, const char *type, size_t len)
{
	int n = snprintf(c->head, sizeof(c->head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, type, len);

	c->nhead = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
}

static void begin_write(struct http_server *s, size_t i, long long now)
{
	struct conn *c = s->c[i];

	free(c->req);
	c->req = NULL;
	c->st = C_WRITE;
	c->since = now;
	c->deadline = now + HTTP_ANSWER_MS;
	c->answer_by = c->deadline;
	c->moved = now;
	c->sent = 0;
	watch(s, i, EPOLLOUT);
}

/* A short answer of its own: status @status, its text as the body. */
static void error_answer(struct http_server *s, size_t i, const char *status, long long now)
{
	struct conn *c = s->c[i];
	size_t bl = strlen(status) + 1;

	set_head(c, status, "text/plain; charset=utf-8", bl);
	if (c->nhead + bl <= sizeof(c->head)) {
		memcpy(c->head + c->nhead, status, bl - 1);
		c->head[c->nhead + bl - 1] = '\n';
		c->nhead += bl;
	}
	c->body = NULL;
	c->nbody = 0;
	begin_write(s, i, now);
}

/*
 * The answer a GET or HEAD now gets: the newest if fresh; else one made
 * now, in the buffer of the oldest nobody is sent any more; with every
 * buffer being sent, the newest, however old.
 */
static struct answer *current_answer(struct http_server *s, long long now)
{
	struct answer *a = s->ans[0], *slot;
	size_t k;

	if (a && now - a->made_ms < HTTP_FRESH_MS)
		return a;
	/* where to make it: a new one while there is room, else the oldest
	 * that nobody is being sent */
	for (k = 0; k < HTTP_ANSWERS && s->ans[k]; k++)
		;
	if (k == HTTP_ANSWERS) {
		for (k = HTTP_ANSWERS; k-- > 0 && s->ans[k]->refs;)
			;
		if (k == (size_t)-1)
			return a;	/* every one is being sent: the newest will do */
		slot = s->ans[k];
	} else {
		slot = calloc(1, sizeof(*slot));
		if (!slot)
			return a;
	}
	/* to the front: those newer than its place move down one */
	memmove(&s->ans[1], &s->ans[0], k * sizeof(s->ans[0]));
	s->ans[0] = slot;
	slot->failed = s->render(s->arg, &slot->body, &slot->len, &slot->cap) != 0;
	if (!slot->body)
		slot->len = 0;
	/* fresh from when it is made: a slow snapshot is not stale at once */
	slot->made_ms = mono_ms();
	return slot;
}

/* "METHOD TARGET HTTP/1.x": 0 if well formed, the target's path part
 * (before any '?') NUL-terminated in place. */
static int parse_line(char *buf, char **method, char **target)
{
	char *eol = strpbrk(buf, "\r\n"), *sp1, *sp2, *q;

	if (!eol)
		return -1;
	*eol = '\0';
	sp1 = strchr(buf, ' ');
	if (!sp1)
		return -1;
	sp2 = strchr(sp1 + 1, ' ');
	if (!sp2 || strchr(sp2 + 1, ' ') || strncmp(sp2 + 1, "HTTP/1.", 7))
		return -1;
	*sp1 = *sp2 = '\0';
	*method = buf;
	*target = sp1 + 1;
	if (**target != '/')
		return -1;
	q = strchr(*target, '?');
	if (q)
		*q = '\0';
	return 0;
}

/* The request head is in: what to answer. */
static void route(struct http_server *s, size_t i, long long now)
{
	struct conn *c = s->c[i];
	char *method, *target;
	struct answer *a;
	bool head;

	c->req[c->nreq] = '\0';
	if (parse_line(c->req, &method, &target)) {
		error_answer(s, i, "400 Bad Request", now);
		return;
	}
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		error_answer(s, i, "405 Method Not Allowed", now);
		return;
	}
	if (strcmp(target, s->path)) {
		error_answer(s, i, "404 Not Found", now);
		return;
	}
	a = current_answer(s, now);
	if (!a) {
		error_answer(s, i, "503 Service Unavailable", now);
		return;
	}
	a->refs++;
	c->ans = a;
	if (a->failed)
		set_head(c, "500 Internal Server Error", "text/plain; charset=utf-8", a->len);
	else
		set_head(c, "200 OK", s->type, a->len);
	c->body = a->body;
	c->nbody = head ? 0 : a->len;
	begin_write(s, i, now);
}

/* ---- the stages ---- */

/*
 * What the kernel still holds of what was sent on @c: bytes the client
 * has not acknowledged (TCP) or not read (a Unix socket; counted with
 * the kernel's overhead). 0: the client has all of it. On TCP our FIN,
 * once shut down, counts one: not a byte of the answer.
 */
static size_t in_kernel(const struct http_server *s, const struct conn *c)
{
	int q = 0;

	if (ioctl(c->fd, SIOCOUTQ, &q) || q <= 0)
		return 0;
	if (!s->is_unix && c->st == C_LINGER)
		q--;
	return (size_t)q;
}

/* The client is gone, or has all its answer and ended: closed the
 * ordinary way (what the kernel still holds goes on to a client that
 * ended while taking it). */
static void drop(struct http_server *s, size_t i)
{
	conn_close(s, i);
}

/*
 * Lets a connection go that is past a budget, or makes room for another:
 * on TCP, what the kernel still holds of its answer is thrown away with
 * it (a reset). Closed the ordinary way, the kernel would keep it, in a
 * socket nobody counts (an orphan), for as long as the client keeps its
 * window shut: a client that never reads could pin that much kernel
 * memory for every connection it was ever let go from. On a Unix socket
 * what was sent is in the client's queue, the client's to free.
 */
static void let_go(struct http_server *s, size_t i)
{
	struct conn *c = s->c[i];
	struct linger rst = { .l_onoff = 1, .l_linger = 0 };

	if (!s->is_unix && in_kernel(s, c))
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
	conn_close(s, i);
}

/*
 * Closes after the answer without losing it: closing a socket with unread
 * input resets the connection, and the client may then never see the
 * answer (a 431 to a request it is still sending). So: end our side, and
 * read what the client still sends until it closes, within its budget.
 */
static void begin_linger(struct http_server *s, size_t i, long long now)
{
	struct conn *c = s->c[i];

	answer_put(c->ans);
	c->ans = NULL;
	shutdown(c->fd, SHUT_WR);
	c->st = C_LINGER;
	c->since = now;
	c->deadline = now + HTTP_LINGER_MS;
	c->drained = 0;
	c->queued = in_kernel(s, c);
	watch(s, i, EPOLLIN);
}

static void do_write(struct http_server *s, size_t i, long long now)
{
	struct conn *c = s->c[i];

	for (;;) {
		const char *p;
		size_t left;
		ssize_t w;

		if (c->sent < c->nhead) {
			p = c->head + c->sent;
			left = c->nhead - c->sent;
		} else if (c->sent < c->nhead + c->nbody) {
			p = c->body + (c->sent - c->nhead);
			left = c->nhead + c->nbody - c->sent;
		} else {
			begin_linger(s, i, now);
			return;
		}
		w = send(c->fd, p, left, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			c->sent += (size_t)w;
			c->moved = now;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;	/* the kernel holds all it will for now */
		drop(s, i);	/* gone */
		return;
	}
}

static void do_read(struct http_server *s, size_t i, long long now)
{
	struct conn *c = s->c[i];

	for (;;) {
		size_t from = c->nreq > 3 ? c->nreq - 3 : 0;
		ssize_t r;

		if (c->nreq >= HTTP_MAX_REQUEST - 1) {
			error_answer(s, i, "431 Request Header Fields Too Large", now);
			return;
		}
		r = recv(c->fd, c->req + c->nreq, HTTP_MAX_REQUEST - 1 - c->nreq, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			drop(s, i);	/* closed or failed: nobody to answer */
			return;
		}
		c->nreq += (size_t)r;
		/* the empty line, after CRLF or bare LF line ends (or a mix);
		 * memmem: a NUL in the request must not hide its end; only
		 * where the new bytes could complete it */
		if (memmem(c->req + from, c->nreq - from, "\n\r\n", 3) ||
		    memmem(c->req + from, c->nreq - from, "\n\n", 2)) {
			route(s, i, now);
			if (s->c[i] && s->c[i]->st == C_WRITE)
				do_write(s, i, now);	/* most answers go at once */
			return;
		}
	}
}

static void do_linger(struct http_server *s, size_t i)
{
	struct conn *c = s->c[i];
	char sink[4096];

	for (;;) {
		ssize_t r = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r == 0 && in_kernel(s, c)) {
			/* it ended its side but has not taken all of its
			 * answer: closed now, the rest would be an orphan's
			 * if it never does. Nothing more to read (and both
			 * sides shut, epoll would say so every round): the
			 * deadlines decide */
			epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
			return;
		}
		if (r <= 0) {
			drop(s, i);	/* its end */
			return;
		}
		c->drained += (size_t)r;
		if (c->drained >= HTTP_MAX_DRAIN) {
			let_go(s, i);	/* its budget's end */
			return;
		}
	}
}

/* ---- room for one more ---- */

/*
 * A lingering connection's answer moves while the kernel's queue of it
 * shrinks; nothing says so but asking (SIOCOUTQ), which is done only
 * when a connection must be chosen to go.
 */
static void look(struct http_server *s, long long now)
{
	size_t i, q;

	for (i = 0; i < s->max; i++) {
		struct conn *c = s->c[i];

		if (!c || c->st != C_LINGER || !c->queued)
			continue;
		q = in_kernel(s, c);
		if (q < c->queued)
			c->moved = now;
		c->queued = q;
	}
}

/*
 * What letting @c go costs its client: 0 nothing (its client has all of
 * its answer), 1 the request it is still sending, 2 an answer it has
 * stopped taking, 3 one it is taking (let go only when every other one
 * is taking its answer too). A client taking a large answer steadily
 * still fills the kernel's buffer at the end of nearly every write
 * (EAGAIN), just as one that never reads: what tells them apart is
 * whether the answer moves. Stopped is nothing taken for HTTP_STALL_MS.
 */
static int cost(const struct conn *c, long long now)
{
	if (c->st == C_READ)
		return 1;
	if (c->st == C_LINGER && !c->queued)
		return 0;
	return now - c->moved >= HTTP_STALL_MS ? 2 : 3;
}

/*
 * Is @a to be let go before @b? The one that has done least: a client
 * that has all its answer (lingering) loses nothing; then the oldest
 * still sending its request; then the one whose answer has not moved for
 * longest (one that stopped taking it first; a steady reader only after
 * every other). One round of the loop reads the clock once, so a tie is
 * broken by the order of accept(), not by the place in the table.
 */
static bool goes_first(const struct conn *a, const struct conn *b, long long now)
{
	int ca = cost(a, now), cb = cost(b, now);

	if (ca != cb)
		return ca < cb;
	if (ca >= 2 && a->moved != b->moved)
		return a->moved < b->moved;
	return a->since != b->since ? a->since < b->since : a->seq < b->seq;
}

static size_t peer_count(struct http_server *s, const struct peer *p);
static long peer_victim(struct http_server *s, const struct peer *peer, long long now);

/*
 * The connection to let go for a new one when the server is full: one
 * of the peer holding the most connections (a scraper holds one, a flood
 * many: one peer's many connections never push out another's few), the
 * first to go among them (peer_victim()); of peers holding as many, the
 * one whose candidate goes first. Even one taking its answer, when all
 * of that peer's are: a new connection is not refused for connections
 * that a client opening them faster than HTTP_STALL_MS can tell keeps
 * looking busy (the first writes to a client that never reads move as
 * the kernels' buffers fill).
 */
static long victim(struct http_server *s, long long now)
{
	size_t held[HTTP_MAX_CONNS], i, j, most = 0;	/* s->max <= HTTP_MAX_CONNS */
	long best = -1, v;

	for (i = 0; i < s->max; i++) {
		held[i] = s->c[i] ? peer_count(s, &s->c[i]->peer) : 0;
		most = held[i] > most ? held[i] : most;
	}
	for (i = 0; i < s->max; i++) {
		if (!s->c[i] || held[i] != most)
			continue;
		/* each such peer once: at its first connection */
		for (j = 0; j < i && !(s->c[j] && peer_eq(&s->c[j]->peer, &s->c[i]->peer)); j++)
			;
		if (j < i)
			continue;
		v = peer_victim(s, &s->c[i]->peer, now);
		if (v >= 0 && (best < 0 || goes_first(s->c[v], s->c[best], now)))
			best = v;
	}
	return best;
}

/*
 * The same when @peer is full, among its own connections; where the
 * kernel names the process that made each (a Unix socket), after those
 * whose client has all its answer (they lose nothing) those of the
 * process holding the most of the peer's connections go first. A scraper holds one, which it
 * may not have used yet (a loaded machine runs it a while later) when a
 * process of its uid opens its 33rd connection: that process pays with
 * one of its own. A uid that spreads its connections over as many
 * processes still competes with its scraper. Where no process is named
 * (TCP: pid 0 for all) this is the order of goes_first().
 */
static long peer_victim(struct http_server *s, const struct peer *peer, long long now)
{
	size_t of[HTTP_MAX_PER_PEER], held[HTTP_MAX_PER_PEER], k = 0, i, j, bh = 0;
	long best = -1;

	for (i = 0; i < s->max && k < HTTP_MAX_PER_PEER; i++)
		if (s->c[i] && peer_eq(&s->c[i]->peer, peer))
			of[k++] = i;
	for (i = 0; i < k; i++) {
		held[i] = 0;
		for (j = 0; j < k; j++)
			held[i] += s->c[of[j]]->pid == s->c[of[i]]->pid;
	}
	for (i = 0; i < k; i++) {
		const struct conn *c = s->c[of[i]];
		size_t h = cost(c, now) ? held[i] : k + 1;	/* all taken: first */

		if (best < 0 || h > bh || (h == bh && goes_first(c, s->c[best], now))) {
			best = (long)of[i];
			bh = h;
		}
	}
	return best;
}

static size_t peer_count(struct http_server *s, const struct peer *p)
{
	size_t i, n = 0;

	for (i = 0; i < s->max; i++)
		n += s->c[i] && peer_eq(&s->c[i]->peer, p);
	return n;
}

/*
 * The kernel's buffer for what a TCP connection is sent, fixed: left to
 * itself it grows to tcp_wmem's maximum (4 MiB), which a client that
 * stops reading pins for as long as it keeps its window shut. Fixed, it
 * no longer grows for a fast client either: HTTP_SNDBUF is large enough
 * that a scrape of the loopback is not slowed (performance.rst).
 */
static void cap_sndbuf(struct http_server *s, int fd)
{
	int sz = HTTP_SNDBUF;

	if (!s->is_unix)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

/* accept() failing for a lack of something (descriptors, memory): the
 * listener rests for ACCEPT_PAUSE_MS instead of waking the loop at once
 * again and again; the queued connections wait in the kernel. */
static void pause_accept(struct http_server *s, long long now)
{
	if (!epoll_ctl(s->ep, EPOLL_CTL_DEL, s->lfd, NULL))
		s->resume_ms = now + ACCEPT_PAUSE_MS;
}

static void resume_accept(struct http_server *s, long long now)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };

	if (s->resume_ms && now >= s->resume_ms && !epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &ev))
		s->resume_ms = 0;
}

/* No room: a short 503 (if the socket takes it at once), and closed. */
static void refuse(int fd)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\n\r\n";

	if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* it may not even take that: closed all the same */
	}
	close(fd);
}

static void accept_some(struct http_server *s, long long now)
{
	int k;

	for (k = 0; k < ACCEPT_BATCH; k++) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct conn *c;
		struct peer p;
		pid_t pid;
		long v = -1;
		size_t i;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && s->reserve >= 0) {
			/* out of descriptors: the spare one takes the
			 * connection off the queue to refuse it */
			close(s->reserve);
			fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd >= 0)
				refuse(fd);
			s->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
			continue;
		}
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED && errno != EPROTO)
				pause_accept(s, now);	/* EMFILE & co.: not a spin */
			return;	/* none waiting, or the next round */
		}
		cap_sndbuf(s, fd);
		peer_of(s, fd, &p, &pid);
		/* a full peer makes room among its own; a full server, among
		 * all */
		if (peer_count(s, &p) >= HTTP_MAX_PER_PEER) {
			look(s, now);
			v = peer_victim(s, &p, now);
		} else if (s->n >= s->max) {
			look(s, now);
			v = victim(s, now);
		}
		if (v >= 0)
			let_go(s, (size_t)v);
		if (peer_count(s, &p) >= HTTP_MAX_PER_PEER || s->n >= s->max) {
			refuse(fd);
			continue;
		}
		for (i = 0; i < s->max && s->c[i]; i++)
			;
		c = calloc(1, sizeof(*c));
		if (c)
			c->req = malloc(HTTP_MAX_REQUEST);
		if (!c || !c->req) {
			if (c)
				free(c);
			refuse(fd);
			continue;
		}
		c->fd = fd;
		c->st = C_READ;
		c->since = now;
		c->seq = s->accepted++;
		c->deadline = now + HTTP_REQUEST_MS;
		c->peer = p;
		c->pid = pid;
		ev.data.u64 = i + 1;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev)) {
			free(c->req);
			free(c);
			refuse(fd);
			continue;
		}
		s->c[i] = c;
		s->n++;
		/* a scraper's request is there already: read now, before a
		 * flood of new connections could count it as doing nothing */
		do_read(s, i, now);
	}
}

/* ---- the loop ---- */

struct http_server *http_server_new(int lfd, const char *path, const char *content_type,
				    http_render render, void *arg)
{
	struct http_server *s = calloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);
	struct rlimit rl;

	if (!s)
		return NULL;
	s->lfd = lfd;
	s->path = path;
	s->type = content_type;
	s->render = render;
	s->arg = arg;
	s->nl = -1;
	s->reserve = -1;
	s->max = HTTP_MAX_CONNS;
	/* a quarter of the descriptors at most: the reader needs its own */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < s->max)
		s->max = rl.rlim_cur / 4 > 8 ? (size_t)(rl.rlim_cur / 4) : 8;
	s->is_unix = !getsockname(lfd, (struct sockaddr *)&me, &ml) && me.ss_family == AF_UNIX;
	if (!s->is_unix)
		s->nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->c = calloc(s->max, sizeof(*s->c));
	s->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
	if (s->ep < 0 || !s->c || epoll_ctl(s->ep, EPOLL_CTL_ADD, lfd, &ev)) {
		http_server_free(s);
		return NULL;
	}
	return s;
}

void http_server_free(struct http_server *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; s->c && i < s->max; i++)
		if (s->c[i])
			conn_close(s, i);
	for (i = 0; i < HTTP_ANSWERS; i++) {
		if (s->ans[i])
			free(s->ans[i]->body);
		free(s->ans[i]);
	}
	free(s->c);
	if (s->ep >= 0)
		close(s->ep);
	if (s->nl >= 0)
		close(s->nl);
	if (s->reserve >= 0)
		close(s->reserve);
	free(s);
}

int http_server_fd(const struct http_server *s)
{
	return s->ep;
}

long long http_server_timeout(const struct http_server *s)
{
	long long first = -1, now = mono_ms();
	size_t i;

	for (i = 0; i < s->max; i++)
		if (s->c[i] && (first < 0 || s->c[i]->deadline < first))
			first = s->c[i]->deadline;
	if (s->resume_ms && (first < 0 || s->resume_ms < first))
		first = s->resume_ms;
	return first < 0 ? -1 : first > now ? first - now : 0;
}

void http_server_run(struct http_server *s)
{
	struct epoll_event ev[64];
	long long now = mono_ms();
	int n, k;
	size_t i;

	resume_accept(s, now);
	n = epoll_wait(s->ep, ev, 64, 0);
	for (k = 0; k < n; k++) {
		size_t at = (size_t)ev[k].data.u64;

		if (!at) {
			accept_some(s, now);
			continue;
		}
		i = at - 1;
		if (i >= s->max || !s->c[i])
			continue;	/* let go earlier in this round */
		switch (s->c[i]->st) {
		case C_READ:
			do_read(s, i, now);
			break;
		case C_WRITE:
			do_write(s, i, now);
			break;
		case C_LINGER:
			do_linger(s, i);
			break;
		}
	}
	/* budgets: past its deadline a connection goes, whatever it does */
	now = mono_ms();
	for (i = 0; i < s->max; i++) {
		struct conn *c = s->c[i];

		if (!c || now < c->deadline)
			continue;
		if (c->st == C_LINGER && now < c->answer_by && in_kernel(s, c)) {
			/* the kernel still holds the end of its answer,
			 * which the answer's budget gives it time to take */
			c->deadline = c->answer_by;
			continue;
		}
		let_go(s, i);
	}
}
