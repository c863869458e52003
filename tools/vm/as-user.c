// SPDX-License-Identifier: GPL-2.0
/*
 * as-user: run a command as an unprivileged user inside the test VM.
 *
 *   as-user CMD [ARGS...]    runs CMD as blamer (uid 1000, gid 1000)
 *   as-user2 CMD [ARGS...]   runs CMD as other  (uid 1001, gid 1001)
 *
 * The identity is chosen by the name the program is invoked under
 * (argv[0]), so one static binary serves both. The busybox in Debian has
 * no setuidgid applet, hence this helper. Order matters: supplementary
 * groups and the gid must be dropped while we still have CAP_SETGID,
 * i.e. before setuid().
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ident {
	const char *prog;
	const char *name;
	uid_t uid;
	gid_t gid;
};

static const struct ident idents[] = {
	{ "as-user", "blamer", 1000, 1000 },
	{ "as-user2", "other", 1001, 1001 },
};

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	const struct ident *id = NULL;
	size_t i;

	base = base ? base + 1 : argv[0];
	for (i = 0; i < sizeof(idents) / sizeof(idents[0]); i++)
		if (strcmp(base, idents[i].prog) == 0)
			id = &idents[i];
	if (!id) {
		fprintf(stderr, "as-user: invoked as '%s', want as-user or as-user2\n", base);
		return 127;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: %s CMD [ARGS...]\n", base);
		return 127;
	}
	if (setgroups(1, &id->gid) || setgid(id->gid) || setuid(id->uid)) {
		fprintf(stderr, "%s: cannot become %s: %s\n", base, id->name, strerror(errno));
		return 127;
	}
	/* A login-like environment so tools that look at $HOME/$USER behave. */
	setenv("USER", id->name, 1);
	setenv("LOGNAME", id->name, 1);
	setenv("HOME", "/tmp", 1);
	execvp(argv[1], argv + 1);
	fprintf(stderr, "%s: %s: %s\n", base, argv[1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
