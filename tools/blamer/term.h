/* SPDX-License-Identifier: MIT */
/*
 * The terminal of the views that redraw (term.c): raw keys, restoring
 * the terminal on every way out, size, colour, and a screen writer.
 */
#ifndef BLAMER_TERM_H
#define BLAMER_TERM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * The terminal's one sanitizer: every string that reaches a terminal
 * from outside the program (heap contents, /proc, the kernel's comm,
 * file names, the environment, messages quoting them) passes through it.
 * Printable ASCII stays; every other byte (ESC, CR, LF, BEL, DEL, bytes
 * of 0x80 and above, so any UTF-8 too) becomes '?', so no escape
 * sequence, carriage return, forged line or invalid text reaches the
 * terminal. In place; returns @s.
 */
char *tty_clean(char *s);
/*
 * printf() to @f through tty_clean(): only the newlines that end @fmt
 * itself are kept (a line's own end), so a view writes one line per
 * call and no argument can start a line of its own.
 */
void tty_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tty_vprintf(FILE *f, const char *fmt, va_list ap);

/* Keys one by one without echo, on the alternate screen; false if stdin
 * is not a terminal. Restored by term_restore(), at exit, and around a
 * stop (Ctrl-Z). */
bool term_raw(void);
void term_restore(void);
/* True once after a stop and continue: the screen needs a full redraw. */
bool term_resumed(void);
/* Rows and columns of the terminal on stdout (24x80 if unknown). */
void term_size(int *rows, int *cols);
/* Colour on stdout: a terminal, NO_COLOR unset or empty, TERM not dumb. */
bool term_colour(void);

/*
 * A frame written line by line. redraw: on a terminal, from the top
 * left, each line cut at the width and the frame at the height, what the
 * previous frame left below cleared; else plain lines.
 */
struct screen {
	bool redraw;
	bool colour;
	int rows, cols;		/* 0: no limit */
	int used;		/* lines written */
};

void scr_begin(struct screen *s);
/* True when only @keep rows are left. */
bool scr_full(const struct screen *s, int keep);
/* One line; @sgr is its SGR colour ("1", "7", "31"...) or NULL. */
void scr_line(struct screen *s, const char *sgr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Ends the frame; with redraw, @status (if not NULL) on the last row. */
void scr_end(struct screen *s, const char *status, const char *sgr);

#endif /* BLAMER_TERM_H */
