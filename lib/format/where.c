// SPDX-License-Identifier: MIT
/*
 * Where heaps are (where.h): the backend the environment asks for; for
 * the dir backend where the directory is and when it is safe, what slab
 * files are called, which files are ours, and the process start time
 * that names a heap, and which dead heaps are kept. The lessons of
 * hsperfdata: the directory must be ours, a real directory and writable
 * by nobody else; files are regular, ours and singly linked, and
 * everything else found there was planted; a process we cannot see in
 * /proc may still live (a container sharing the directory), so its lock
 * on its files is asked too (JDK-8286030). Trimming the dead is trim.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "heap_format.h"
#include "where.h"

int blamer_backend_from_env(enum blamer_backend *out, char *err, size_t errlen)
{
	const char *env = getenv("BLAMER_BACKEND");

	if (!env || !*env || !strcmp(env, "auto"))
		*out = BLAMER_BACKEND_AUTO;
	else if (!strcmp(env, "device"))
		*out = BLAMER_BACKEND_DEVICE;
	else if (!strcmp(env, "dir"))
		*out = BLAMER_BACKEND_DIR;
	else {
		if (err && errlen)
			snprintf(err, errlen, "BLAMER_BACKEND=%.64s: use device, dir or auto", env);
		return -EINVAL;
	}
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

/* What writer and reader both ask of an open directory: a directory, not
 * writable by group or others; the writer also wants it ours (@ours). */
static int check_dir_fd(int fd, const char *path, bool ours, uid_t *owner,
			char *why, size_t whylen)
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
	if (ours && st.st_uid != geteuid()) {
		snprintf(why, whylen, "%s is owned by uid %u, not by us (uid %u)", path,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "%s is writable by group or others (mode %03o)%s", path,
			 (unsigned)(st.st_mode & 0777),
			 ours ? "" : ": heaps there could be anyone's, and the library never writes there");
		return -EPERM;
	}
	if (owner)
		*owner = st.st_uid;
	return 0;
}

/* O_NOFOLLOW: a symlink planted at the path is refused, not followed. */
static int open_dir_nofollow(const char *path, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int err;

	if (fd >= 0)
		return fd;
	err = errno;
	if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
		snprintf(why, whylen, "%s is a symlink: refused", path);
		return -EPERM;
	}
	snprintf(why, whylen, "cannot open directory %s", path);
	return -err;
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
	fd = open_dir_nofollow(path, why, whylen);
	if (fd < 0)
		return fd;
	ret = check_dir_fd(fd, path, true, NULL, why, whylen);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int bl_slabdir_open_read(const char *path, uid_t *owner, char *why, size_t whylen)
{
	int fd, ret;

	fd = open_dir_nofollow(path, why, whylen);
	if (fd < 0)
		return fd;
	ret = check_dir_fd(fd, path, false, owner, why, whylen);
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
	char canon[BL_SLAB_NAME_MAX];
	const char *s = name;
	uint64_t p, start, idx;

	if (!parse_u64(&s, &p) || *s++ != '-' || !parse_u64(&s, &start) ||
	    *s++ != '.' || !parse_u64(&s, &idx) || strcmp(s, ".slab"))
		return false;
	if (p == 0 || p > INT32_MAX || idx >= BLAMER_MAX_SLABS)
		return false;
	/* Canonical only: "007-1.0.slab" names the heap of "7-1.0.slab" a
	 * second time (and would be read, counted and released as a twin). */
	bl_slab_name(canon, sizeof(canon), (int64_t)p, start, (uint32_t)idx);
	if (strcmp(canon, name))
		return false;
	*pid = (int32_t)p;
	*start_ns = start;
	*index = (uint32_t)idx;
	return true;
}

const char *bl_slab_file_why(const struct stat *st, uid_t owner)
{
	if (S_ISLNK(st->st_mode))
		return "a symlink, not followed";
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != owner)
		return "owned by another user";
	if (st->st_nlink != 1)
		return "has more than one link (a hard link to it exists elsewhere)";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by group or others";
	return NULL;
}

bool bl_slab_file_ok(const struct stat *st)
{
	return !bl_slab_file_why(st, geteuid());
}

int bl_slabdir_remove_heap(int dirfd, int64_t pid, int64_t start_ns)
{
	char name[BL_SLAB_NAME_MAX];
	struct stat st;
	int removed = 0;
	uint32_t i;

	/* each name a heap's slab can have, last first (a removal cut
	 * short leaves no slab without its first): a cost that does not
	 * grow with the directory, where a readdir of it did */
	for (i = BLAMER_MAX_SLABS; i-- > 0;) {
		bl_slab_name(name, sizeof(name), pid, (uint64_t)start_ns, i);
		/* only what the library could have made */
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || !bl_slab_file_ok(&st))
			continue;
		if (!unlinkat(dirfd, name, 0))
			removed++;
	}
	return removed;
}

static int env_u64(const char *name, uint64_t max, bool suffix, uint64_t *out,
		   char *why, size_t whylen)
{
	const char *e = getenv(name), *p;
	uint64_t v = 0, mul = 1;

	if (!e || !*e)
		return 0;
	for (p = e; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			goto bad;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == e)
		goto bad;
	if (suffix && *p) {
		mul = *p == 'K' ? 1ull << 10 : *p == 'M' ? 1ull << 20 : *p == 'G' ? 1ull << 30 : 0;
		p++;
	}
	if (*p || !mul || v > max / mul)
		goto bad;
	*out = v * mul;
	return 0;
bad:
	snprintf(why, whylen, "%s=%s: give a number%s up to %llu", name, e,
		 suffix ? " of bytes (K, M or G for KiB, MiB, GiB)" : "", (unsigned long long)max);
	return -EINVAL;
}

int bl_retention_from_env(struct bl_retention *r, char *why, size_t whylen)
{
	uint64_t n = BL_DEFAULT_MAX_DEAD;

	r->max_dead_bytes = BL_DEFAULT_MAX_DEAD_BYTES;
	if (env_u64("BLAMER_DIR_MAX_DEAD", 1u << 20, false, &n, why, whylen) ||
	    env_u64("BLAMER_DIR_MAX_DEAD_BYTES", 1ull << 50, true, &r->max_dead_bytes, why,
		    whylen))
		return -EINVAL;
	r->max_dead = (uint32_t)n;
	return 0;
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
		if (field == 20)
			st->num_threads = strtol(f, NULL, 10);
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
