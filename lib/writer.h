/* SPDX-License-Identifier: MIT */
/* Writer internals shared by the writer sources in lib/. Not public. */
#ifndef BLAMER_WRITER_H
#define BLAMER_WRITER_H

/* Stores a one-line message (with strerror(err) appended if err) and returns -err. */
int bl_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
