// SPDX-License-Identifier: MIT
/*
 * Where heaps are (where.h): the backend the environment asks for; for
 * the dir backend where the directory is and when it is safe, what slab
 * files are called, which files are ours, and the process start time
 * that names a heap. The lessons of hsperfdata: the
 * directory must be ours, a real directory and writable by nobody else;
 * files are regular, ours and singly linked, and everything else found
 * there was planted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heap_format.h"
#include "where.h"

int bl_backend_from_env(enum blamer_backend *out)
{
	const char *env = getenv("BLAMER_BACKEND");

	if (!env || !*env || !strcmp(env, "auto"))
		*out = BLAMER_BACKEND_AUTO;
	else if (!strcmp(env, "device"))
		*out = BLAMER_BACKEND_DEVICE;
	else if (!strcmp(env, "dir"))
		*out = BLAMER_BACKEND_DIR;
	else
		return -EINVAL;
	return 0;
}

const char *bl_slabdir_path(char *buf, size_t len, const char *dir)
{
	if (!dir || !*dir)
		dir = getenv("BLAMER_DIR");
	if (dir && *dir)
		snprintf(buf, len, "%s", dir);
	else
		snprintf(buf, len, "/dev/shm/blamer-%u", (unsigned)geteuid());
	return buf;
}

static int check_dir_fd(int fd, const char *path, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		snprintf(why, whylen, "stat %s", path);
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "%s", path);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, whylen, "%s is owned by uid %u, not by us (uid %u)", path,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "%s is writable by group or others (mode %03o)", path,
			 (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

int bl_slabdir_open(const char *path, char *why, size_t whylen)
{
	int fd, ret;

	/* 0700: our heaps are nobody else's business (readers of other
	 * users need the device backend and its permission checks). */
	if (mkdir(path, 0700) && errno != EEXIST) {
		snprintf(why, whylen, "cannot create %s", path);
		return -errno;
	}
	/* O_NOFOLLOW: a symlink planted at the path is refused, not followed. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		struct stat st;
		int err = errno;

		if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
			snprintf(why, whylen, "%s is a symlink: refused", path);
			return -EPERM;
		}
		snprintf(why, whylen, "cannot open directory %s", path);
		return -err;
	}
	ret = check_dir_fd(fd, path, why, whylen);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int bl_slab_name(char *buf, size_t len, int64_t pid, uint64_t start_ns, uint32_t index)
{
	return snprintf(buf, len, "%" PRId64 "-%" PRIu64 ".%u.slab", pid, start_ns, index);
}

static bool parse_u64(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*s = p;
	*v = x;
	return true;
}

bool bl_slab_name_parse(const char *name, int32_t *pid, uint64_t *start_ns,
			uint32_t *index)
{
	uint64_t p, start, idx;

	if (!parse_u64(&name, &p) || *name++ != '-' || !parse_u64(&name, &start) ||
	    *name++ != '.' || !parse_u64(&name, &idx) || strcmp(name, ".slab"))
		return false;
	if (p == 0 || p > INT32_MAX || idx >= BLAMER_MAX_SLABS)
		return false;
	*pid = (int32_t)p;
	*start_ns = start;
	*index = (uint32_t)idx;
	return true;
}

bool bl_slab_file_ok(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink == 1;
}

int bl_slabdir_remove_heap(int dirfd, int64_t pid, int64_t start_ns)
{
	struct dirent *de;
	struct stat st;
	int fd, removed = 0;
	DIR *d;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		uint64_t start;
		uint32_t idx;
		int32_t p;

		if (!bl_slab_name_parse(de->d_name, &p, &start, &idx) || p != pid ||
		    start != (uint64_t)start_ns)
			continue;
		/* only what the library could have made */
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !bl_slab_file_ok(&st))
			continue;
		if (!unlinkat(dirfd, de->d_name, 0))
			removed++;
	}
	closedir(d);
	return removed;
}

int bl_proc_stat(pid_t pid, struct bl_proc_stat *st)
{
	char path[64], buf[1024], *lp, *rp, *f;
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long long ticks;
	size_t l;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The comm field may hold spaces and parentheses: it ends at the
	 * last ')'. */
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp || rp[1] != ' ' || !rp[2])
		return -EIO;
	l = (size_t)(rp - lp - 1);
	if (l >= sizeof(st->comm))
		l = sizeof(st->comm) - 1;
	memcpy(st->comm, lp + 1, l);
	st->comm[l] = '\0';
	/* after ") " comes field 3 (state); each step moves one field on */
	f = rp + 2;
	st->state = *f;
	for (field = 3; field < 22 && f; field++) {
		f = strchr(f, ' ');
		if (f)
			f++;
	}
	if (!f || sscanf(f, "%llu", &ticks) != 1 || hz <= 0)
		return -EIO;
	st->start_ns = (int64_t)(ticks * (1000000000ull / (unsigned long long)hz));
	return 0;
}

int64_t bl_proc_start_ns(pid_t pid)
{
	struct bl_proc_stat st;
	int ret = bl_proc_stat(pid, &st);

	return ret ? ret : st.start_ns;
}
