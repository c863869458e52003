// SPDX-License-Identifier: MIT
/*
 * A scrape endpoint (http.h). The server answers one client at a time,
 * so each client gets deadlines: one for sending its request, and one,
 * from when the answer is made, for reading it; reads and writes poll()
 * against them, and a client past one is closed without (the rest of)
 * an answer. Requests are parsed only as far
 * as the request line (method, target, version); headers are read, up
 * to HTTP_MAX_REQUEST bytes, and ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "mono.h"

int http_listen(const char *spec, char *err, size_t errlen)
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
		snprintf(err, errlen, "bad --listen '%s': give ADDR:PORT, e.g. 127.0.0.1:9464", spec);
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
	fd = socket(sa.any.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, &sa.any, salen) || listen(fd, 16)) {
		snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -2;
	}
	return fd;
}

/* Waits for @events on @fd until @deadline: true if ready. */
static bool wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int r;

	for (;;) {
		left = deadline - mono_ms();
		if (left <= 0)
			return false;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return true;
		if (r == 0 || errno != EINTR)
			return false;
	}
}

static bool send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			buf += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    wait_fd(fd, POLLOUT, deadline))
			continue;
		return false;
	}
	return true;
}

/*
 * Reads the request head (up to the empty line) into @buf; the length,
 * 0 if the client closed, timed out or sent too much (*too_big).
 */
static size_t read_head(int fd, char *buf, size_t cap, long long deadline, bool *too_big)
{
	size_t n = 0;

	*too_big = false;
	while (n < cap - 1) {
		ssize_t r;

		if (!wait_fd(fd, POLLIN, deadline))
			return 0;
		r = recv(fd, buf + n, cap - 1 - n, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r <= 0)
			return 0;
		n += (size_t)r;
		buf[n] = '\0';
		/* the empty line, after CRLF or bare LF line ends (or a mix);
		 * memmem: a NUL in the request must not hide its end */
		if (memmem(buf, n, "\n\r\n", 3) || memmem(buf, n, "\n\n", 2))
			return n;
	}
	*too_big = true;
	return n;
}

static void answer(int fd, const char *status, const char *type, const char *body,
		   size_t len, bool head_only, long long deadline)
{
	char hdr[256];
	int hl;

	hl = snprintf(hdr, sizeof(hdr),
		      "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		      "Connection: close\r\n\r\n", status, type, len);
	if (send_all(fd, hdr, (size_t)hl, deadline) && !head_only)
		send_all(fd, body, len, deadline);
}

static void error_answer(int fd, const char *status, long long deadline)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%s\n", status);

	answer(fd, status, "text/plain; charset=utf-8", body, (size_t)n, false, deadline);
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

/*
 * Closes after the answer without losing it: closing a socket with unread
 * input resets the connection, and the client may then never see the
 * answer (a 431 to a request it is still sending). So: end our side, and
 * read what the client still sends until it closes, up to 64 KiB, and
 * never past the deadline.
 */
static void linger_close(int fd, long long deadline)
{
	char sink[4096];
	size_t total = 0;

	shutdown(fd, SHUT_WR);
	while (total < 65536 && wait_fd(fd, POLLIN, deadline)) {
		ssize_t r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		total += (size_t)r;
	}
	close(fd);
}

int http_serve_one(int lfd, const char *path, const char *content_type,
		   http_render render, void *arg)
{
	char buf[HTTP_MAX_REQUEST], *method, *target;
	const char *body = NULL;
	long long deadline;
	size_t len = 0;
	bool too_big, head;
	int fd, ret;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	deadline = mono_ms() + HTTP_TIMEOUT_MS;
	if (!read_head(fd, buf, sizeof(buf), deadline, &too_big))
		goto out;	/* closed or too slow: nobody to answer */
	if (too_big) {
		error_answer(fd, "431 Request Header Fields Too Large", deadline);
		goto out;
	}
	if (parse_line(buf, &method, &target)) {
		error_answer(fd, "400 Bad Request", deadline);
		goto out;
	}
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		error_answer(fd, "405 Method Not Allowed", deadline);
		goto out;
	}
	if (strcmp(target, path)) {
		error_answer(fd, "404 Not Found", deadline);
		goto out;
	}
	ret = render(arg, &body, &len);
	/* the time rendering took is ours, not the client's: it gets as
	 * long again to take the answer (a snapshot of many heaps can take
	 * seconds, and an answer cut off is worse than a late one) */
	deadline = mono_ms() + HTTP_TIMEOUT_MS;
	if (ret) {
		answer(fd, "500 Internal Server Error", "text/plain; charset=utf-8",
		       body ? body : "", body ? strlen(body) : 0, head, deadline);
		goto out;
	}
	answer(fd, "200 OK", content_type, body, len, head, deadline);
out:
	linger_close(fd, deadline);
	return 0;
}
