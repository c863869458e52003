// SPDX-License-Identifier: MIT
/*
 * Dir backend, trust: the rules are the writer's own, from format/where.h,
 * and the reader applies them exactly: the directory is opened without
 * following a symlink and must be a directory of the expected owner that
 * nobody else may write; everything in it is reached through that
 * descriptor (openat, O_NOFOLLOW), so a symlink anywhere that matters is
 * refused, never followed; a slab file must be regular, of the same
 * owner, singly linked, writable by nobody else and named canonically.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "internal.h"
#include "where.h"

/*
 * Opens the directory under the writer's rules. The owner expected is
 * the caller's euid (a directory another user made first is squatting);
 * root may read a directory it named explicitly (--dir, $BLAMER_DIR) of
 * another owner, whose files must then all be that owner's. 0 (fd in
 * d->fd), 1 if there is no directory yet, or -errno with a message.
 */
int rd_dir_open(struct rd_dirwalk *d, char *err, size_t errlen)
{
	uid_t me = geteuid();
	char why[512];
	int fd;

	fd = bl_slabdir_open_read(d->r->source, &d->owner, why, sizeof(why));
	if (fd >= 0 && d->owner != me && !(me == 0 && d->r->explicit_dir)) {
		close(fd);
		snprintf(why, sizeof(why),
			 "%s is owned by uid %u, not by uid %u: refused (another user may have made it; remove it)",
			 d->r->source, (unsigned)d->owner, (unsigned)me);
		fd = -EPERM;
	}
	if (fd == -ENOENT)
		return 1;	/* no process has made a heap yet */
	if (fd < 0) {
		if (fd == -EACCES)
			rd_err(err, errlen, "%s: %s (heaps of other users are not readable)",
			       why, strerror(-fd));
		else if (fd == -EPERM)
			rd_err(err, errlen, "%s", why);
		else
			rd_err(err, errlen, "%s: %s", why, strerror(-fd));
		return fd;
	}
	d->fd = fd;
	return 0;
}

/* Why the slab file @name did not open with @err: the trust rule it
 * breaks if it breaks one, else the error. */
const char *rd_dir_open_why(struct rd_dirwalk *d, const char *name, int err)
{
	const char *why = NULL;
	struct stat st;

	if (!fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW))
		why = bl_slab_file_why(&st, d->owner);
	return why ? why : strerror(err);
}

/* What says a slab file is the one a kept heap was decoded from. */
void rd_dir_kept_slab(struct rd_kept_slab *ks, const struct rd_dfile *f, const struct stat *st)
{
	memset(ks, 0, sizeof(*ks));
	ks->id = f->idx;
	ks->v[0] = (uint64_t)st->st_dev;
	ks->v[1] = (uint64_t)st->st_ino;
	ks->v[2] = (uint64_t)st->st_size;
	ks->v[3] = bl_ts_ns(&st->st_mtim);
	ks->v[4] = bl_ts_ns(&st->st_ctim);
}
