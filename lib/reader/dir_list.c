// SPDX-License-Identifier: MIT
/*
 * Dir backend, listing: the slab files of the directory, named
 * `<pid>-<start_ns>[-<seq>].<index>.slab` (the writer's names,
 * format/where.h), in the order of heaps throughout the reader (by pid
 * and start time; then a process's heaps by seq, and index). Whatever
 * is not a slab file's name, a symlink or no regular file is skipped and
 * noted in the snapshot with the reason.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "where.h"

int rd_dfile_cmp(const void *a, const void *b)
{
	const struct rd_dfile *x = a, *y = b;
	int c = rd_pid_start_cmp(x->pid, x->start, y->pid, y->start);

	if (c)
		return c;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

void rd_dfile_name(char *buf, const struct rd_dfile *f)
{
	bl_slab_name(buf, BL_SLAB_NAME_MAX, f->pid, f->start, f->seq, f->idx);
}

/* The slab files of the directory, sorted by heap and index; the rest skipped. */
int rd_dir_list_files(struct rd_dirwalk *d, struct rd_dfile **out, size_t *nout,
		      char *err, size_t errlen)
{
	struct rd_dfile *files = NULL, f;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dh;
	int fd;

	fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dh = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dh) {
		rd_err(err, errlen, "%s: %s", d->r->source, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(dh))) {
		/* the writers' retention state (lib/writer/retention.c): theirs, no heap */
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, BL_TRIM_STATE))
			continue;
		if (!bl_slab_name_parse(de->d_name, &f.pid, &f.start, &f.seq, &f.idx)) {
			rd_skip(d->s, de->d_name,
				"not a slab file name (<pid>-<start_ns>[-<seq>].<index>.slab)");
			continue;
		}
		f.type = de->d_type;
		f.ino = de->d_ino;
		if (f.type == DT_LNK) {
			rd_skip(d->s, de->d_name, "a symlink, not followed");
			continue;
		}
		if (f.type != DT_REG && f.type != DT_UNKNOWN) {
			rd_skip(d->s, de->d_name, "not a regular file");
			continue;
		}
		if (n == cap) {
			struct rd_dfile *nf;

			if (cap >= RD_MAX_DIR_FILES) {
				rd_skip(d->s, de->d_name, "more than %u slab files", RD_MAX_DIR_FILES);
				continue;
			}
			cap = cap ? cap * 2 : 64;
			nf = realloc(files, cap * sizeof(*nf));
			if (!nf) {
				free(files);
				closedir(dh);
				rd_err(err, errlen, "out of memory");
				return -ENOMEM;
			}
			files = nf;
		}
		files[n++] = f;
	}
	closedir(dh);
	if (n)
		qsort(files, n, sizeof(*files), rd_dfile_cmp);
	*out = files;
	*nout = n;
	return 0;
}
