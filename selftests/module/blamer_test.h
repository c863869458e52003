/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the /dev/blamer selftests (one program per concern, test_*.c):
 * the kselftest harness, a main() that puts the module parameters back
 * whatever happened to the tests, and helpers to run code as another user
 * and to keep slabs in other processes.
 *
 * The module must be loaded. Tests that need root (parameters, other
 * uids, namespaces, setuid programs) skip otherwise; vm-module.sh runs
 * every program as root and as an unprivileged user, on both kernels.
 */
#ifndef BLAMER_TEST_H
#define BLAMER_TEST_H

#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "blamer_util.h"
#include "kselftest_harness.h"

#if defined(BLAMER_DEVICE_PATH) || defined(BLAMER_ABI_VERSION)
#error "the uapi header must not define paths or versions"
#endif

/* The parameters tests may change, and their values before the run. */
static const char *const bt_param_names[] = {
	"max_slab_bytes", "max_user_bytes", "max_total_bytes",
	"max_user_orphans", "reader_gid", "max_user_watchers",
};

#define BT_NPARAMS ARRAY_SIZE(bt_param_names)

struct bt_params {
	long long v[BT_NPARAMS];
	int ok;
};

static inline void bt_params_save(struct bt_params *p)
{
	size_t i;

	p->ok = 1;
	for (i = 0; i < BT_NPARAMS; i++)
		if (bl_param_get(bt_param_names[i], &p->v[i]))
			p->ok = 0;
}

/* Restores every saved parameter; 0 or the first error. */
static inline int bt_params_restore(const struct bt_params *p)
{
	int ret = 0, err;
	size_t i;

	if (!p->ok || geteuid())
		return 0;
	for (i = 0; i < BT_NPARAMS; i++) {
		err = bl_param_set(bt_param_names[i], p->v[i]);
		if (err && !ret)
			ret = err;
	}
	return ret;
}

/*
 * Every test program's main(). Tests run in forked children; this parent
 * outlives them all, so the parameters come back even if a test crashed
 * before its teardown.
 */
static inline int bt_main(int argc, char **argv)
{
	struct bt_params saved;
	int ret;

	bt_params_save(&saved);
	ret = test_harness_run(argc, argv);
	if (bt_params_restore(&saved)) {
		printf("# could not restore the parameters\n");
		ret = 1;
	}
	return ret;
}

/*
 * Drop to @uid/@gid (no supplementary groups); 0 or -1. Changing ids
 * makes a process non-dumpable; a user's processes started by login are
 * dumpable, so be one of those.
 */
static inline int bt_become(int uid, int gid)
{
	if (gid >= 0 && (setgroups(0, NULL) || setresgid(gid, gid, gid)))
		return -1;
	if (uid >= 0 && setresuid(uid, uid, uid))
		return -1;
	if ((uid >= 0 || gid >= 0) && prctl(PR_SET_DUMPABLE, 1))
		return -1;
	return 0;
}

/*
 * A holder's prepare (bt_holder_start() as root, no ids given): uid and
 * gid 1000 keeping one capability, CAP_NET_RAW, as a service given
 * ambient capabilities or a program with file capabilities runs;
 * dumpable. Exits the holder if it cannot.
 */
static inline void bt_keep_a_capability(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	d[0].permitted = 1u << CAP_NET_RAW;
	d[0].effective = d[0].permitted;
	if (prctl(PR_SET_KEEPCAPS, 1) || bt_become(1000, 1000) ||
	    syscall(SYS_capset, &h, d) || prctl(PR_GET_DUMPABLE) != 1)
		_exit(99);
}

/*
 * The 6.1 harness runs a test even when its fixture's setup skipped it:
 * the bodies and teardowns of such fixtures start with this.
 */
#define BT_SKIPPED() (_metadata->skip)

/* Run @fn(@arg) in a child as @uid/@gid; its exit status, -1 on trouble. */
static inline int bt_run_as(int uid, int gid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (bt_become(uid, gid))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Facts about @id, as a fresh descriptor lists them. */
static inline int bt_facts(__u64 id, struct blamer_slab_info *info)
{
	int fd = bl_open(O_RDONLY), err;

	if (fd < 0)
		return fd;
	err = bl_find(fd, id, info);
	close(fd);
	return err;
}

static inline int bt_send_status(void *arg)
{
	struct blamer_status st;
	int out = *(int *)arg, fd = bl_open(O_RDONLY);

	if (fd < 0 || bl_status(fd, &st))
		return 60;
	return write(out, &st, sizeof(st)) == sizeof(st) ? 0 : 61;
}

/* BLAMER_IOC_STATUS as @uid/@gid see it: 0, or -1 on any trouble. */
static inline int bt_status_as(int uid, int gid, struct blamer_status *st)
{
	int p[2], err;

	if (pipe(p))
		return -1;
	err = bt_run_as(uid, gid, bt_send_status, &p[1]);
	if (!err && read(p[0], st, sizeof(*st)) != sizeof(*st))
		err = -1;
	close(p[0]);
	close(p[1]);
	return err ? -1 : 0;
}

/* The errno (0 on success) of opening slab @id read-only as the caller. */
static inline int bt_try_open(__u64 id)
{
	int fd = bl_open(O_RDONLY), sfd;

	if (fd < 0)
		return -fd;
	sfd = bl_open_slab(fd, id);
	close(fd);
	if (sfd < 0)
		return -sfd;
	close(sfd);
	return 0;
}

static inline int bt_child_open(void *arg)
{
	return bt_try_open(*(__u64 *)arg);
}

static inline int bt_child_release(void *arg)
{
	int fd = bl_open(O_RDONLY), err;

	if (fd < 0)
		return -fd;
	err = bl_release(fd, *(__u64 *)arg);
	close(fd);
	return -err;
}

/* 0 if the caller lists slab @id, 1 if not. */
static inline int bt_child_lists(void *arg)
{
	struct blamer_slab_info info;
	int fd = bl_open(O_RDONLY), err;

	if (fd < 0)
		return 2;
	err = bl_find(fd, *(__u64 *)arg, &info);
	close(fd);
	return err ? 1 : 0;
}

/*
 * A slab owner in a child process: it creates a slab of @len bytes
 * filled with 'B' (as @uid/@gid unless -1, after @prepare if set),
 * reports its ID and waits; bt_holder_finish() makes it exit with @code,
 * or raise @sig if non-zero.
 */
struct bt_holder {
	pid_t pid;
	__u64 id;
	int go;
};

static inline int bt_holder_start(struct bt_holder *h, size_t len, int uid,
				  int gid, int code, int sig,
				  void (*prepare)(void))
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct blamer_create c;
		char b;
		void *p;
		int fd;

		close(up[0]);
		close(down[1]);
		if (bt_become(uid, gid))
			_exit(100);
		if (prepare)
			prepare();
		fd = bl_open(O_RDWR);
		if (fd < 0 || bl_create(fd, len, &c))
			_exit(101);
		p = bl_map(c.fd, c.length, PROT_READ | PROT_WRITE);
		if (!p)
			_exit(102);
		memset(p, 'B', c.length);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(103);
		if (read(down[0], &b, 1) < 0)
			_exit(104);
		if (sig)
			kill(getpid(), sig);
		_exit(code);
	}
	close(up[1]);
	close(down[0]);
	h->pid = pid;
	h->go = down[1];
	if (read(up[0], &h->id, sizeof(h->id)) != sizeof(h->id)) {
		close(up[0]);
		close(h->go);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(up[0]);
	return 0;
}

/* Let the holder finish; its wait status. */
static inline int bt_holder_finish(struct bt_holder *h)
{
	int status = -1;

	if (write(h->go, "x", 1) != 1)
		return -1;
	close(h->go);
	waitpid(h->pid, &status, 0);
	return status;
}

/* Kill the holder with @sig; its wait status. */
static inline int bt_holder_kill(struct bt_holder *h, int sig)
{
	int status = -1;

	kill(h->pid, sig);
	waitpid(h->pid, &status, 0);
	close(h->go);
	return status;
}

/* Create a slab as @uid/@gid in a process that exits at once: an orphan. */
static inline __u64 bt_orphan(size_t len, int uid, int gid)
{
	struct bt_holder h;

	if (bt_holder_start(&h, len, uid, gid, 0, 0, NULL))
		return 0;
	bt_holder_finish(&h);
	return h.id;
}

/*
 * Release every orphan the caller may release, so that a test counting
 * its user's slabs does not see earlier tests' orphans come and go.
 */
static inline void bt_clean_orphans(void)
{
	struct blamer_slab_info *v;
	int fd = bl_open(O_RDONLY), n, i;

	if (fd < 0)
		return;
	n = bl_list(fd, &v, NULL);
	for (i = 0; i < n; i++)
		if (v[i].state == BLAMER_SLAB_ORPHAN)
			bl_release(fd, v[i].id);
	if (n >= 0)
		free(v);
	close(fd);
}

/* Field 22 of /proc/PID/stat: the start time in clock ticks. */
static inline long long bt_proc_starttime(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	int i, fd, n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2;
	/* p is at field 3; field 22 is 19 fields further. */
	for (i = 0; i < 19; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	v = strtoull(p, NULL, 10);
	return (long long)v;
}

static inline long long bt_ns_to_ticks(__u64 ns)
{
	return (long long)(ns / (1000000000ULL / sysconf(_SC_CLK_TCK)));
}

/* The helper program (blamer_slabctl) for tests that exec, or NULL. */
static inline const char *bt_slabctl(void)
{
	const char *p = getenv("BLAMER_SLABCTL");

	if (!p || !*p)
		p = "/bin/blamer_slabctl";
	return access(p, X_OK) ? NULL : p;
}

#endif
