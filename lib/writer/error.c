// SPDX-License-Identifier: MIT
/*
 * One-line error messages: every failing call stores why in a per-thread
 * buffer that blamer_errmsg() returns. Per thread so that concurrent
 * callers never see each other's message; nothing to reset.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "blamer.h"
#include "internal.h"

static __thread char errbuf[256];
static __thread int lasterr;

int bl_error(int err, const char *fmt, ...)
{
	const char *desc;
	va_list ap;
	int n;

	lasterr = err;
	va_start(ap, fmt);
	n = vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	/* strerrordesc_np: no locale, no buffer: usable where strerror is not */
	desc = err ? strerrordesc_np(err) : NULL;
	if (err && n >= 0 && (size_t)n < sizeof(errbuf))
		snprintf(errbuf + n, sizeof(errbuf) - n, ": %s", desc ? desc : "unknown error");
	return -err;
}

int bl_last_error(void)
{
	return lasterr ? lasterr : EIO;
}

const char *blamer_errmsg(void)
{
	return errbuf[0] ? errbuf : "no error";
}

int blamer_errno(void)
{
	return lasterr;
}
