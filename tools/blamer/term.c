// SPDX-License-Identifier: MIT
/*
 * The terminal, for the views that redraw (top): raw keys in and the
 * terminal put back however we leave (quit, a signal, Ctrl-Z), its size,
 * whether to use colour, and a line writer that fits lines to the width.
 *
 * Raw here means: no line editing and no echo, keys one by one; ISIG
 * stays on, so Ctrl-C still sends SIGINT (top quits cleanly on it) and
 * Ctrl-Z still stops us (the terminal is restored first, and raw again
 * on SIGCONT).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "term.h"

/* What the signal handlers need: plain data, set before they are. */
static struct termios saved;
static volatile sig_atomic_t raw_on;
static volatile sig_atomic_t resumed;

#define ENTER_SCREEN	"\033[?1049h\033[?25l"	/* alternate screen, no cursor */
#define LEAVE_SCREEN	"\033[?25h\033[?1049l"

static void put(const char *s)
{
	ssize_t n = write(STDOUT_FILENO, s, strlen(s));

	(void)n;	/* nothing to do about a terminal that is gone */
}

static void make_raw(void)
{
	struct termios t = saved;

	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
}

/* async-signal-safe: tcsetattr() and write() only */
static void restore(void)
{
	if (!raw_on)
		return;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
	put(LEAVE_SCREEN);
}

static void on_tstp(int sig)
{
	restore();
	signal(sig, SIG_DFL);
	raise(sig);		/* stops here until SIGCONT */
}

static void on_cont(int sig)
{
	(void)sig;
	if (!raw_on)
		return;
	signal(SIGTSTP, on_tstp);
	make_raw();
	put(ENTER_SCREEN);
	resumed = 1;
}

bool term_raw(void)
{
	struct sigaction sa = { 0 };

	if (raw_on || !isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved))
		return false;
	raw_on = 1;
	make_raw();
	put(ENTER_SCREEN);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_tstp;
	sigaction(SIGTSTP, &sa, NULL);
	sa.sa_handler = on_cont;
	sigaction(SIGCONT, &sa, NULL);
	atexit(term_restore);
	return true;
}

void term_restore(void)
{
	restore();
	raw_on = 0;
	signal(SIGTSTP, SIG_DFL);
	signal(SIGCONT, SIG_DFL);
}

bool term_resumed(void)
{
	bool r = resumed;

	resumed = 0;
	return r;
}

void term_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

bool term_colour(void)
{
	const char *t = getenv("TERM");
	const char *nc = getenv("NO_COLOR");

	/* no-color.org: set and not empty means no colour */
	return isatty(STDOUT_FILENO) && !(nc && *nc) && t && *t && strcmp(t, "dumb");
}

/* Every byte of s[0, n) but printable ASCII becomes '?'. */
static void clean_n(char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			s[i] = '?';
}

char *tty_clean(char *s)
{
	clean_n(s, strlen(s));
	return s;
}

void tty_vprintf(FILE *f, const char *fmt, va_list ap)
{
	size_t flen = strlen(fmt), k = 0;
	char small[1024], *buf = small;
	va_list again;
	int n;

	while (k < flen && fmt[flen - 1 - k] == '\n')
		k++;		/* the format's own line ends */
	va_copy(again, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n >= (int)sizeof(small)) {
		buf = malloc((size_t)n + 1);
		if (buf)
			vsnprintf(buf, (size_t)n + 1, fmt, again);
	}
	va_end(again);
	if (n < 0 || !buf)
		return;
	clean_n(buf, (size_t)n - ((size_t)n < k ? (size_t)n : k));
	fputs(buf, f);
	if (buf != small)
		free(buf);
}

void tty_printf(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tty_vprintf(f, fmt, ap);
	va_end(ap);
}

void scr_begin(struct screen *s)
{
	s->used = 0;
	s->rows = s->cols = 0;
	if (s->redraw) {
		term_size(&s->rows, &s->cols);
		fputs("\033[H", stdout);	/* home; each line clears its rest */
	}
}

bool scr_full(const struct screen *s, int keep)
{
	return s->rows && s->used >= s->rows - keep;
}

void scr_line(struct screen *s, const char *sgr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (s->rows && s->used >= s->rows)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	tty_clean(buf);		/* what the frame shows comes from outside */
	/* cut at the width: a wrapped line would scroll the frame away */
	if (s->cols && (size_t)s->cols < strlen(buf))
		buf[s->cols] = '\0';
	if (s->colour && sgr)
		printf("\033[%sm%s\033[m", sgr, buf);
	else
		fputs(buf, stdout);
	/* the last row has no newline: it would scroll the screen */
	if (s->redraw)
		fputs(s->rows && s->used + 1 >= s->rows ? "\033[K" : "\033[K\n", stdout);
	else
		putchar('\n');
	s->used++;
}

void scr_end(struct screen *s, const char *status, const char *sgr)
{
	if (s->redraw) {
		fputs("\033[J", stdout);	/* what the last frame had below */
		if (status) {
			char buf[512];

			snprintf(buf, sizeof(buf), "%s", status);
			tty_clean(buf);
			if (s->cols && (size_t)s->cols < strlen(buf))
				buf[s->cols] = '\0';
			printf("\033[%d;1H", s->rows);
			if (s->colour && sgr)
				printf("\033[%sm%s\033[m\033[K", sgr, buf);
			else
				printf("%s\033[K", buf);
		}
	}
	fflush(stdout);
}
