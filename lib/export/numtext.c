// SPDX-License-Identifier: MIT
/*
 * Doubles as text for other programs. JSON and the Prometheus text
 * format know only '.' as the decimal point, and the fleet state is read
 * by other processes; but printf() and strtod() follow the calling
 * thread's LC_NUMERIC, which is the program's to choose: a Python program
 * that called locale.setlocale(LC_ALL, "") under de_DE got "sum":0,55,
 * samples prometheus_client could not parse and a state the exporter
 * refused as "not a number".
 *
 * So each conversion here runs under the C locale, made current for this
 * thread only (uselocale()) and the caller's put back before returning:
 * the process's locale stays the program's, and other threads see no
 * change. glibc answers newlocale() for "C" with its static C locale, so
 * this allocates nothing. Should no C locale be had, the conversion runs
 * in the thread's own locale and its decimal point is translated.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numtext.h"

struct c_numeric {
	locale_t c;	/* (locale_t)0: none could be made */
	locale_t prev;
};

static void c_enter(struct c_numeric *s)
{
	s->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (s->c && !(s->prev = uselocale(s->c))) {
		freelocale(s->c);
		s->c = (locale_t)0;
	}
}

static void c_leave(struct c_numeric *s)
{
	if (!s->c)
		return;
	uselocale(s->prev);
	freelocale(s->c);
}

/* The thread's decimal point as printf() writes it (it may be more than
 * one byte): what stands between the 1 and the 5 of 1.5. */
static size_t point(char *p, size_t len)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%.1f", 1.5);

	if (n < 3 || (size_t)n >= sizeof(b) || (size_t)n - 2 >= len) {
		snprintf(p, len, ".");
		return 1;
	}
	memcpy(p, b + 1, (size_t)n - 2);
	p[n - 2] = '\0';
	return (size_t)n - 2;
}

void ex_point_to_dot(char *buf)
{
	char p[16], *at;
	size_t n = point(p, sizeof(p));

	if (!strcmp(p, ".") || !(at = strstr(buf, p)))
		return;
	*at = '.';
	memmove(at + 1, at + n, strlen(at + n) + 1);
}

bool ex_double_of_here(const char *w, double *v)
{
	char p[16], *b, *o, *end;
	size_t n = point(p, sizeof(p));
	bool ok;

	if (!strcmp(p, ".")) {
		*v = strtod(w, &end);
		return end != w && !*end;
	}
	/* the locale's point is no part of C's syntax: C's strtod stops there */
	if (strstr(w, p))
		return false;
	b = malloc(strlen(w) * n + 1);
	if (!b)
		return false;
	for (o = b; *w; w++) {
		if (*w == '.') {
			memcpy(o, p, n);
			o += n;
		} else {
			*o++ = *w;
		}
	}
	*o = '\0';
	*v = strtod(b, &end);
	ok = end != b && !*end;
	free(b);
	return ok;
}

void ex_double_text(char *buf, size_t len, double v)
{
	struct c_numeric s;
	int prec;

	c_enter(&s);
	/* printf and strtod in one locale, whichever: the digits read back */
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, len, "%.17g", v);
	if (!s.c)
		ex_point_to_dot(buf);
	c_leave(&s);
}

void ex_double_hex(char *buf, size_t len, double v)
{
	struct c_numeric s;

	c_enter(&s);
	snprintf(buf, len, "%a", v);
	if (!s.c)
		ex_point_to_dot(buf);
	c_leave(&s);
}

bool ex_double_of(const char *w, double *v)
{
	struct c_numeric s;
	char *end;
	bool ok;

	c_enter(&s);
	if (s.c) {
		*v = strtod(w, &end);
		ok = end != w && !*end;
	} else {
		ok = ex_double_of_here(w, v);
	}
	c_leave(&s);
	return ok;
}
