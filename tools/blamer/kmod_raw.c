// SPDX-License-Identifier: MIT
/*
 * Module loading with the raw finit_module/delete_module system calls,
 * for the static build (Debian ships libkmod only as a shared library).
 * Same interface as kmod_libkmod.c; "installed by name" means
 * /lib/modules/$(uname -r)/{extra,updates}/blamer.ko.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "cli.h"

int kmod_insert(const char *path, const char *name, const char *params, char *how,
		size_t howlen)
{
	static const char *const dirs[] = { "extra", "updates", "kernel/drivers/misc" };
	char buf[512];
	struct utsname u;
	size_t i;
	int fd, ret;

	if (!path) {
		if (uname(&u))
			return -errno;
		for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			snprintf(buf, sizeof(buf), "/lib/modules/%s/%s/%s.ko", u.release, dirs[i],
				 name);
			if (access(buf, R_OK) == 0)
				break;
		}
		if (i == sizeof(dirs) / sizeof(dirs[0]))
			return -ENOENT;
		path = buf;
		snprintf(how, howlen, "%s", buf);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = (int)syscall(SYS_finit_module, fd, params ? params : "", 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

int kmod_remove(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}
