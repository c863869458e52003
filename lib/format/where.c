// SPDX-License-Identifier: MIT
/*
 * Where heaps are (where.h): the backend the environment asks for; for
 * the dir backend where the directory is and when it is safe, what slab
 * files are called and which files are ours. The lessons of hsperfdata:
 * the directory must be ours, a real directory and writable by nobody
 * else; files are regular, ours and singly linked, and everything else
 * found there was planted. Which dead heaps are kept is the writer's
 * policy (lib/writer/retention.c); reading /proc is lib/sys/proc.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "heap_format.h"
#include "where.h"

/*
 * Every variable of the environment the library reads, here and in the
 * writer, reader and exporter, is read with secure_getenv(): in a setuid
 * or setgid program (or one with file capabilities) it is unset, so the
 * user who ran the program cannot point its heaps, or the heaps it reads,
 * at a directory of their choosing, nor change its clock or retention.
 */
int blamer_backend_from_env(enum blamer_backend *out, char *err, size_t errlen)
{
	const char *env = secure_getenv("BLAMER_BACKEND");

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

int bl_slabdir_path(char *buf, size_t len, const char *dir)
{
	int n;

	if (!dir || !*dir)
		dir = secure_getenv("BLAMER_DIR");
	if (dir && *dir)
		n = snprintf(buf, len, "%s", dir);
	else
		n = snprintf(buf, len, "/dev/shm/blamer-%u", (unsigned)geteuid());
	/* a name cut short names another directory, most likely a parent of
	 * the one meant: its heaps would be read, written and released */
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
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

/* @v in decimal at @o; past its last digit. */
static char *put_u64(char *o, uint64_t v)
{
	char d[20];
	size_t n = 0;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*o++ = d[--n];
	return o;
}

/*
 * As snprintf() with "%PRId64-%PRIu64[-%u].%u.slab" would (a reader
 * names every file twice a snapshot: snprintf() was 5 % of a scrape of
 * 1,000 live dir heaps).
 */
int bl_slab_name(char *buf, size_t len, int64_t pid, uint64_t start_ns, uint32_t seq,
		 uint32_t index)
{
	char name[96], *o = name;
	size_t n;

	if (pid < 0) {
		*o++ = '-';
		o = put_u64(o, -(uint64_t)pid);
	} else {
		o = put_u64(o, (uint64_t)pid);
	}
	*o++ = '-';
	o = put_u64(o, start_ns);
	if (seq) {
		*o++ = '-';
		o = put_u64(o, seq);
	}
	*o++ = '.';
	o = put_u64(o, index);
	memcpy(o, ".slab", 5);
	o += 5;
	n = (size_t)(o - name);
	if (len) {
		size_t k = n < len - 1 ? n : len - 1;

		memcpy(buf, name, k);
		buf[k] = '\0';
	}
	return (int)n;
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

bool bl_slab_name_parse(const char *name, int32_t *pid, uint64_t *start_ns, uint32_t *seq,
			uint32_t *index)
{
	char canon[BL_SLAB_NAME_MAX];
	const char *s = name;
	uint64_t p, start, q = 0, idx;

	if (!parse_u64(&s, &p) || *s++ != '-' || !parse_u64(&s, &start) ||
	    (*s == '-' && (s++, !parse_u64(&s, &q))) ||
	    *s++ != '.' || !parse_u64(&s, &idx) || strcmp(s, ".slab"))
		return false;
	if (p == 0 || p > INT32_MAX || q > UINT32_MAX || idx >= BLAMER_MAX_SLABS)
		return false;
	/* Canonical only: "007-1.0.slab" names the heap of "7-1.0.slab" a
	 * second time (and would be read, counted and released as a twin),
	 * and so would "7-1-0.0.slab". */
	bl_slab_name(canon, sizeof(canon), (int64_t)p, start, (uint32_t)q, (uint32_t)idx);
	if (strcmp(canon, name))
		return false;
	*pid = (int32_t)p;
	*start_ns = start;
	*seq = (uint32_t)q;
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
