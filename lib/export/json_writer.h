/* SPDX-License-Identifier: MIT */
/*
 * The one JSON writer (json_writer.c): every JSON document the project
 * emits (snapshots, status) is written through it, streaming, straight
 * to a FILE. It places the commas and colons, so a caller only says
 * what comes next; and it has the one string escaper, which makes any
 * byte string valid JSON in ASCII (so valid UTF-8 whatever a heap held).
 *
 * Numbers follow one rule, by type: an integer of 32 bits is a JSON
 * number; one of 64 bits is a string of its decimal digits (most JSON
 * parsers hold numbers as doubles, exact only up to 2^53), and a 64-bit
 * identity or address a hex string "0x...". The value functions take
 * the width, so a caller cannot write a 64-bit value as a number.
 */
#ifndef BLAMER_EXPORT_JSON_WRITER_H
#define BLAMER_EXPORT_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BL_JSON_MAX_DEPTH	32

struct bl_json {
	FILE *f;
	uint32_t depth;			/* open objects and arrays */
	bool nonempty[BL_JSON_MAX_DEPTH];	/* per level: a member was written */
	bool after_key;			/* the next value completes a member */
};

void bl_json_init(struct bl_json *j, FILE *f);
/* Ends the document with a newline; 0 or -EIO if writing failed. */
int bl_json_finish(struct bl_json *j);

void bl_json_object(struct bl_json *j);
void bl_json_object_end(struct bl_json *j);
void bl_json_array(struct bl_json *j);
void bl_json_array_end(struct bl_json *j);
/* The key of the next member of the open object. */
void bl_json_key(struct bl_json *j, const char *key);

/* Values. */
void bl_json_string(struct bl_json *j, const char *s);		/* NULL: null */
void bl_json_string_n(struct bl_json *j, const char *s, size_t n);
void bl_json_u32(struct bl_json *j, uint32_t v);	/* a number */
void bl_json_i32(struct bl_json *j, int32_t v);		/* a number */
void bl_json_u64(struct bl_json *j, uint64_t v);	/* "123": a decimal string */
void bl_json_i64(struct bl_json *j, int64_t v);		/* "-123": a decimal string */
void bl_json_bool(struct bl_json *j, bool v);
void bl_json_null(struct bl_json *j);
void bl_json_double(struct bl_json *j, double v);	/* shortest exact; not finite: null */
/* A string of UTF-8 (a label value the reader made valid): its code
 * points as \uXXXX, so a parser reads the same text; NULL: null. */
void bl_json_text(struct bl_json *j, const char *s);
void bl_json_hex(struct bl_json *j, const uint8_t *bytes, size_t n);	/* "0a1b..." */
void bl_json_id(struct bl_json *j, uint64_t id);	/* "0x1f...": an id or address */

/* Members: key and value. */
static inline void bl_json_kv_string(struct bl_json *j, const char *k, const char *v)
{
	bl_json_key(j, k);
	bl_json_string(j, v);
}

static inline void bl_json_kv_u32(struct bl_json *j, const char *k, uint32_t v)
{
	bl_json_key(j, k);
	bl_json_u32(j, v);
}

static inline void bl_json_kv_i32(struct bl_json *j, const char *k, int32_t v)
{
	bl_json_key(j, k);
	bl_json_i32(j, v);
}

static inline void bl_json_kv_id(struct bl_json *j, const char *k, uint64_t v)
{
	bl_json_key(j, k);
	bl_json_id(j, v);
}

static inline void bl_json_kv_u64(struct bl_json *j, const char *k, uint64_t v)
{
	bl_json_key(j, k);
	bl_json_u64(j, v);
}

static inline void bl_json_kv_i64(struct bl_json *j, const char *k, int64_t v)
{
	bl_json_key(j, k);
	bl_json_i64(j, v);
}

static inline void bl_json_kv_bool(struct bl_json *j, const char *k, bool v)
{
	bl_json_key(j, k);
	bl_json_bool(j, v);
}

#endif /* BLAMER_EXPORT_JSON_WRITER_H */
