// SPDX-License-Identifier: MIT
/*
 * The text of the exposition: made in a buffer (struct prom_out) with
 * its own number writers, and every string from outside through one
 * escaper, prom_escape(): label values and HELP text come out valid
 * UTF-8, without control characters, escaped as the exposition format
 * 0.0.4 says.
 */
#include <stdlib.h>
#include <string.h>

#include "prom.h"

bool prom_room(struct prom_out *o, size_t n)
{
	size_t cap;
	char *np;

	if (o->len + n <= o->cap)
		return true;
	if (o->f && o->len) {
		if (fwrite(o->p, 1, o->len, o->f) != o->len)
			o->oom = true;	/* ferror() says which */
		o->len = 0;
		if (n <= o->cap)
			return !o->oom;
	}
	if (o->oom)
		return false;
	for (cap = o->cap ? o->cap : o->f ? PROM_OUT_CHUNK : 65536; cap < o->len + n; cap *= 2)
		;
	np = realloc(o->p, cap);
	if (!np) {
		o->oom = true;
		return false;
	}
	o->p = np;
	o->cap = cap;
	return true;
}

void prom_put(struct prom_out *o, const void *s, size_t n)
{
	if (prom_room(o, n)) {
		memcpy(o->p + o->len, s, n);
		o->len += n;
	}
}

void prom_puts(struct prom_out *o, const char *s)
{
	prom_put(o, s, strlen(s));
}

void prom_putc(struct prom_out *o, char c)
{
	if (prom_room(o, 1))
		o->p[o->len++] = c;
}

void prom_u64(struct prom_out *o, uint64_t v)
{
	char b[20];
	size_t i = sizeof(b);

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	prom_put(o, b + i, sizeof(b) - i);
}

/* Nanoseconds as seconds, exactly: "S.NNNNNNNNN". */
void prom_ns(struct prom_out *o, uint64_t v)
{
	char b[9];
	uint64_t f = v % 1000000000u;
	int i;

	prom_u64(o, v / 1000000000u);
	for (i = 8; i >= 0; i--, f /= 10)
		b[i] = (char)('0' + f % 10);
	prom_putc(o, '.');
	prom_put(o, b, sizeof(b));
}

/*
 * The length of the valid UTF-8 sequence at @s (1..4), or 0: overlong
 * forms, surrogates and code points past U+10FFFF are invalid. @cp gets
 * the code point.
 */
size_t prom_utf8_seq(const unsigned char *s, uint32_t *cp)
{
	size_t n, i;
	uint32_t c = s[0];

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

bool prom_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* Bytes every escaper copies as they are: printable ASCII but \\ and ". */
static bool plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '\\' && c != '"';
}

/*
 * The one escaper of label values: the exposition format's \\, \" and
 * \n; any other control character and every byte that is not valid UTF-8
 * becomes U+FFFD, so the exposition stays valid UTF-8 (Prometheus rejects
 * the whole scrape otherwise) and prints safely on a terminal. @help: HELP
 * text, where " stays as it is.
 */
void prom_escape(struct prom_out *o, const char *str, bool help)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;
	size_t n;

	while (*s) {
		for (n = 0; plain(s[n]); n++)
			;
		prom_put(o, s, n);
		s += n;
		if (!*s)
			break;
		n = prom_utf8_seq(s, &cp);
		if (*s == '\\' || (*s == '"' && !help)) {
			prom_putc(o, '\\');
			prom_putc(o, (char)*s);
		} else if (*s == '"') {
			prom_putc(o, '"');
		} else if (*s == '\n') {
			prom_puts(o, "\\n");
		} else if (!n || prom_is_control(cp)) {
			prom_puts(o, "\xef\xbf\xbd");
		} else {
			prom_put(o, s, n);
		}
		s += n ? n : 1;
	}
}

void prom_family(struct prom_out *o, const char *name, const char *type, const char *help)
{
	prom_puts(o, "# HELP ");
	prom_puts(o, name);
	prom_putc(o, ' ');
	prom_escape(o, help, true);
	prom_puts(o, "\n# TYPE ");
	prom_puts(o, name);
	prom_putc(o, ' ');
	prom_puts(o, type);
	prom_putc(o, '\n');
}

/* Labels "l1="v1",..." (no braces). */
void prom_labels(struct prom_out *o, const struct prom_label *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i)
			prom_putc(o, ',');
		prom_puts(o, l[i].name);
		prom_put(o, "=\"", 2);
		prom_escape(o, l[i].value, false);
		prom_putc(o, '"');
	}
}

void prom_sample_u64(struct prom_out *o, const char *name, const struct prom_label *l, size_t n,
		       uint64_t v)
{
	prom_puts(o, name);
	if (n) {
		prom_putc(o, '{');
		prom_labels(o, l, n);
		prom_putc(o, '}');
	}
	prom_putc(o, ' ');
	prom_u64(o, v);
	prom_putc(o, '\n');
}
