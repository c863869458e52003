/* SPDX-License-Identifier: MIT */
/*
 * The smallest HTTP/1.x server a scraper needs: one listening socket,
 * one request at a time, GET or HEAD of one path, every connection
 * closed after its answer.
 */
#ifndef BLAMER_HTTP_H
#define BLAMER_HTTP_H

#include <stddef.h>

/* A client has this long from accept() to send its request, and as long
 * again, once the answer is made, to read it: one that sends slowly, or
 * does not read, is dropped then, and the next one is served. */
#define HTTP_TIMEOUT_MS		5000
/* Request line and headers: more is refused (431). */
#define HTTP_MAX_REQUEST	8192

/*
 * Parse "ADDR:PORT", "[ADDR6]:PORT" or ":PORT" (ADDR 127.0.0.1), bind
 * and listen. Returns the socket, or with a one-line message in @err -1
 * (@spec is not an address and port) or -2 (socket, bind or listen
 * failed: in use, not ours...).
 */
int http_listen(const char *spec, char *err, size_t errlen);

/*
 * Points *body at the answer to a GET of the served path (@arg's memory,
 * valid until the next call); returns 0, or -1 with a one-line reason in
 * *body (served as 500).
 */
typedef int (*http_render)(void *arg, const char **body, size_t *len);

/*
 * Accept one connection on @lfd and answer it: @path with @render (as
 * @content_type), 404 for other paths, 405 for other methods, 400 for
 * anything malformed. Waits on the client at most HTTP_TIMEOUT_MS for
 * its request and as long for it to take the answer. Returns 0, or -1 if accept() failed (errno set).
 */
int http_serve_one(int lfd, const char *path, const char *content_type,
		   http_render render, void *arg);

#endif /* BLAMER_HTTP_H */
