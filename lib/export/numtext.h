/* SPDX-License-Identifier: MIT */
/*
 * Doubles as text for other programs (numtext.c): the JSON writer, the
 * Prometheus exposition and the fleet state write and read them in C's
 * syntax, with '.', whatever LC_NUMERIC the program that links libblamer
 * chose. Private to lib/export.
 */
#ifndef BLAMER_EXPORT_NUMTEXT_H
#define BLAMER_EXPORT_NUMTEXT_H

#include <stdbool.h>
#include <stddef.h>

/* @v, finite, as the shortest of 15 to 17 significant digits (%g) that
 * reads back as @v: exact, and 0.1 rather than 0.10000000000000001.
 * @len of 32 holds any. */
void ex_double_text(char *buf, size_t len, double v);
/* @v in hexadecimal (%a): the same bits read back. @len of 32 holds any. */
void ex_double_hex(char *buf, size_t len, double v);
/* All of @w as a double in strtod()'s C syntax; false if it is not one. */
bool ex_double_of(const char *w, double *v);

/*
 * What the three do when no C locale can be had: the number made in the
 * thread's locale, and its decimal point made '.' (ex_point_to_dot()), or
 * the '.' of @w made the locale's before strtod() (ex_double_of_here()).
 * Declared for the test that runs them under a locale of another point.
 */
void ex_point_to_dot(char *buf);
bool ex_double_of_here(const char *w, double *v);

#endif
