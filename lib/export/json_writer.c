// SPDX-License-Identifier: MIT
/*
 * The one JSON writer and its one escaper (json_writer.h). Output is
 * compact (no spaces), one document per line. Nesting deeper than
 * BL_JSON_MAX_DEPTH is a caller's bug; it is written, not tracked.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "numtext.h"

void bl_json_init(struct bl_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->after_key = false;
	j->nonempty[0] = false;
}

int bl_json_finish(struct bl_json *j)
{
	fputc('\n', j->f);
	return ferror(j->f) ? -EIO : 0;
}

/* Before any value or key: the comma that separates it from the last. */
static void sep(struct bl_json *j)
{
	bool *ne = &j->nonempty[j->depth < BL_JSON_MAX_DEPTH ? j->depth : BL_JSON_MAX_DEPTH - 1];

	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (*ne)
		fputc(',', j->f);
	*ne = true;
}

static void open_(struct bl_json *j, int c)
{
	sep(j);
	fputc(c, j->f);
	j->depth++;
	if (j->depth < BL_JSON_MAX_DEPTH)
		j->nonempty[j->depth] = false;
}

static void close_(struct bl_json *j, int c)
{
	fputc(c, j->f);
	if (j->depth)
		j->depth--;
}

void bl_json_object(struct bl_json *j)
{
	open_(j, '{');
}

void bl_json_object_end(struct bl_json *j)
{
	close_(j, '}');
}

void bl_json_array(struct bl_json *j)
{
	open_(j, '[');
}

void bl_json_array_end(struct bl_json *j)
{
	close_(j, ']');
}

/*
 * The escaper: '"' and '\\' escaped, newline and tab as \n and \t, every
 * other byte below 0x20 or above 0x7e as \u00XX (a byte read as Latin-1),
 * so the output is ASCII. bl_json_text() writes the code points of UTF-8
 * sequences as \uXXXX instead (surrogate pairs past U+FFFF).
 */
static void escaped_byte(FILE *f, unsigned char c)
{
	if (c == '"' || c == '\\')
		fprintf(f, "\\%c", c);
	else if (c == '\n')
		fputs("\\n", f);
	else if (c == '\t')
		fputs("\\t", f);
	else if (c < 0x20 || c >= 0x7f)
		fprintf(f, "\\u%04x", c);
	else
		fputc(c, f);
}

static void escaped(FILE *f, const char *s, size_t n)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < n; i++)
		escaped_byte(f, (unsigned char)s[i]);
	fputc('"', f);
}

void bl_json_key(struct bl_json *j, const char *key)
{
	sep(j);
	escaped(j->f, key, strlen(key));
	fputc(':', j->f);
	j->after_key = true;
}

void bl_json_string_n(struct bl_json *j, const char *s, size_t n)
{
	sep(j);
	escaped(j->f, s, n);
}

void bl_json_string(struct bl_json *j, const char *s)
{
	if (!s)
		bl_json_null(j);
	else
		bl_json_string_n(j, s, strlen(s));
}

void bl_json_u32(struct bl_json *j, uint32_t v)
{
	sep(j);
	fprintf(j->f, "%" PRIu32, v);
}

void bl_json_i32(struct bl_json *j, int32_t v)
{
	sep(j);
	fprintf(j->f, "%" PRId32, v);
}

/* 64 bits: strings, exact in every parser (json_writer.h) */
void bl_json_u64(struct bl_json *j, uint64_t v)
{
	sep(j);
	fprintf(j->f, "\"%" PRIu64 "\"", v);
}

void bl_json_i64(struct bl_json *j, int64_t v)
{
	sep(j);
	fprintf(j->f, "\"%" PRId64 "\"", v);
}

void bl_json_bool(struct bl_json *j, bool v)
{
	sep(j);
	fputs(v ? "true" : "false", j->f);
}

void bl_json_null(struct bl_json *j)
{
	sep(j);
	fputs("null", j->f);
}

void bl_json_double(struct bl_json *j, double v)
{
	char b[32];

	sep(j);
	if (!isfinite(v)) {
		fputs("null", j->f);
		return;
	}
	/* JSON's point is '.' whatever the program's LC_NUMERIC */
	ex_double_text(b, sizeof(b), v);
	fputs(b, j->f);
}

void bl_json_text(struct bl_json *j, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	if (!s) {
		bl_json_null(j);
		return;
	}
	sep(j);
	fputc('"', j->f);
	while (*u) {
		uint32_t cp = *u, need = cp >= 0xf0 ? 3 : cp >= 0xe0 ? 2 : cp >= 0xc0 ? 1 : 0, k;

		if (cp < 0x80 || need == 0) {
			/* ASCII, or a byte that starts nothing: as the escaper */
			escaped_byte(j->f, *u++);
			continue;
		}
		cp &= 0x3f >> need;
		for (k = 1; k <= need && (u[k] & 0xc0) == 0x80; k++)
			cp = cp << 6 | (u[k] & 0x3f);
		if (k <= need) {
			escaped_byte(j->f, *u++);	/* cut short */
			continue;
		}
		if (cp >= 0x10000) {
			cp -= 0x10000;
			fprintf(j->f, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
		} else {
			fprintf(j->f, "\\u%04x", cp);
		}
		u += need + 1;
	}
	fputc('"', j->f);
}

void bl_json_hex(struct bl_json *j, const uint8_t *bytes, size_t n)
{
	size_t i;

	sep(j);
	fputc('"', j->f);
	for (i = 0; i < n; i++)
		fprintf(j->f, "%02x", bytes[i]);
	fputc('"', j->f);
}

void bl_json_id(struct bl_json *j, uint64_t id)
{
	sep(j);
	fprintf(j->f, "\"0x%" PRIx64 "\"", id);
}
