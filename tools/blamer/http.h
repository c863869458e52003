/* SPDX-License-Identifier: MIT */
/*
 * The smallest HTTP/1.x server a scraper needs, and one no other client
 * can keep from it: GET or HEAD of one path, on a TCP port or a Unix
 * socket, every connection closed after its answer, many at once in one
 * event loop (epoll), each with budgets of time and bytes a slow client
 * cannot stretch, a cap on connections per peer and in all, and one
 * answer made for every client that asks while it is fresh.
 */
#ifndef BLAMER_HTTP_H
#define BLAMER_HTTP_H

#include <stddef.h>

/* Budgets of one connection, each from a fixed moment (never moved by a
 * byte arriving): its request head within HTTP_REQUEST_MS of accept(),
 * all of its answer taken within HTTP_ANSWER_MS of when sending began,
 * and its end (what it still sends, up to HTTP_MAX_DRAIN bytes, read and
 * dropped) within HTTP_LINGER_MS of the answer, or of HTTP_ANSWER_MS's end
 * while the kernel still holds some of the answer. */
#define HTTP_REQUEST_MS		5000
#define HTTP_ANSWER_MS		10000
#define HTTP_LINGER_MS		1000
/* Request line and headers: more is refused (431). */
#define HTTP_MAX_REQUEST	8192
#define HTTP_MAX_DRAIN		65536
/* Connections at once: in all (and at most a quarter of the descriptor
 * limit), and of one peer (a uid: a Unix socket's, or a local TCP
 * client's, which the kernel says; else an address). */
#define HTTP_MAX_CONNS		256
#define HTTP_MAX_PER_PEER	32
/* An answer made this long ago or less is every asker's: no snapshot per
 * client. At most HTTP_ANSWERS are kept (being sent): past that, a new
 * asker gets the newest, older as it may be. */
#define HTTP_FRESH_MS		1000
#define HTTP_ANSWERS		2
/* A connection whose answer has not moved (nothing of it taken) for this
 * long has stopped taking it: it may be let go for another. */
#define HTTP_STALL_MS		1000
/* SO_SNDBUF of a TCP connection (the kernel doubles it for its own
 * bookkeeping): the most of an answer the kernel holds for a client. */
#define HTTP_SNDBUF		(128 * 1024)

/*
 * A listening socket for @spec: "ADDR:PORT", "[ADDR6]:PORT", ":PORT"
 * (ADDR 127.0.0.1), "unix:PATH" (a socket file made mode 0660: its owner
 * and group may connect; a stale socket of ours there is replaced), or
 * "systemd" (the one socket systemd passed, socket activation). Returns
 * the socket, or with a one-line message in @err -1 (@spec is none of
 * these) or -2 (socket, bind or listen failed: in use, not ours...). A
 * socket file made is named in *@made (malloc()ed; NULL if none): the
 * caller removes it (http_unlink()).
 */
int http_listen(const char *spec, char *err, size_t errlen, char **made);
/* Removes the socket file @path made by http_listen() if it is still the
 * one it made (a socket of ours). */
void http_unlink(const char *path);

/*
 * Makes the answer to a GET of the served path into *buf (malloc()ed,
 * or NULL with *cap 0; grown with realloc(), *cap its size), *len bytes;
 * returns 0, or -1 with a one-line reason there instead (served as 500).
 */
typedef int (*http_render)(void *arg, char **buf, size_t *len, size_t *cap);

struct http_server;

/* A server of @lfd: @path with @render (as @content_type), 404 for other
 * paths, 405 for other methods, 400 for anything malformed, 431 for a
 * head too big, 503 when no room can be made. NULL out of memory. */
struct http_server *http_server_new(int lfd, const char *path, const char *content_type,
				    http_render render, void *arg);
void http_server_free(struct http_server *s);
/* A descriptor that polls readable when the server has work. */
int http_server_fd(const struct http_server *s);
/* Milliseconds until the server must run again (a deadline), -1 if never. */
long long http_server_timeout(const struct http_server *s);
/* Does what is ready now: accepts, reads, answers, writes, drops the
 * clients past their budgets. Never waits. */
void http_server_run(struct http_server *s);

#endif /* BLAMER_HTTP_H */
