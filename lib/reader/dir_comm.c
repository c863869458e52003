// SPDX-License-Identifier: MIT
/*
 * Dir backend: a dead process's name, which /proc no longer has, from the
 * command line its heap claims.
 */
#include <string.h>

#include "internal.h"

/*
 * A dead heap's comm: the basename of its argv[0], as the heap claims
 * it (the cmdline holds argv joined by spaces), cut to 15 characters.
 */
void rd_comm_from_cmdline(struct blamer_snap_process *p)
{
	const char *a = p->cmdline, *end = strchr(a, ' '), *sl;
	size_t l;

	if (!end)
		end = a + strlen(a);
	for (sl = a; sl < end; sl++)
		if (*sl == '/')
			a = sl + 1;
	l = (size_t)(end - a);
	if (l > sizeof(p->comm) - 2)
		l = sizeof(p->comm) - 2;
	memcpy(p->comm, a, l);
	p->comm[l] = '\0';
}
