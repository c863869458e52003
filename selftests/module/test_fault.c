// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: the error paths. A call that fails must fail with
 * its documented error and leave nothing behind: no slab, no charge, no
 * descriptor, no reference on the module.
 *
 *  - Replies that cannot be copied out: the argument, or only its tail, or
 *    the LIST entries, on a read-only page (every kernel, any user).
 *  - A full descriptor table (RLIMIT_NOFILE): EMFILE, the slab undone.
 *  - Every allocation failing in turn (root, kernels with fault injection:
 *    the debug kernels): /proc/thread-self/fail-nth makes the Nth
 *    allocation of the calling thread fail, for N = 1, 2, ... until a call
 *    makes fewer than N; failslab and fail_page_alloc are set to fail
 *    sleeping and order-0 allocations too, and to say nothing. That
 *    covers open(), each ioctl and the module's init (finit_module()).
 */
#include <sys/resource.h>
#include <sys/syscall.h>

#include "blamer_test.h"

#define FAIL_NTH "/proc/thread-self/fail-nth"
#define DEBUGFS "/sys/kernel/debug/"
/* More than any one call allocates; a sweep longer than this is a bug. */
#define MAX_NTH 5000

/* Descriptors open in this process. */
static int nr_fds(void)
{
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

static long long module_refcnt(void)
{
	long long v = -1;
	FILE *f = fopen("/sys/module/blamer/refcnt", "r");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * What a call may leave behind: the caller's account (slabs, bytes), the
 * device's (if the caller may see it), descriptors, module references.
 */
struct trace {
	struct blamer_status st;
	int fds;
	long long refcnt;
};

static int take_trace(struct trace *t)
{
	int fd = bl_open(O_RDONLY), err;

	if (fd < 0)
		return fd;
	err = bl_status(fd, &t->st);
	close(fd);
	t->fds = nr_fds();
	t->refcnt = module_refcnt();
	return err;
}

/* Nothing left behind since @a; logs the first difference. */
static int same_trace(struct __test_metadata *_metadata,
		      const struct trace *a, const char *what)
{
	static const char *const names[] = {
		"user slabs", "user bytes", "user orphans", "device slabs",
		"device orphans", "device bytes", "descriptors",
		"module references",
	};
	struct trace b;
	size_t i;

	if (take_trace(&b)) {
		TH_LOG("%s: cannot read the status", what);
		return 0;
	}
	{
		const long long was[] = {
			a->st.user_slabs, a->st.user_bytes, a->st.user_orphans,
			a->st.slabs, a->st.orphans, a->st.bytes, a->fds,
			a->refcnt,
		}, now[] = {
			b.st.user_slabs, b.st.user_bytes, b.st.user_orphans,
			b.st.slabs, b.st.orphans, b.st.bytes, b.fds, b.refcnt,
		};

		for (i = 0; i < ARRAY_SIZE(names); i++)
			if (was[i] != now[i]) {
				TH_LOG("%s: %s was %lld, now %lld", what,
				       names[i], was[i], now[i]);
				return 0;
			}
	}
	return 1;
}

/* A read-only copy of @len bytes of @src (zeros if NULL), or NULL. */
static void *ro_copy(const void *src, size_t len)
{
	void *p = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (src)
		memcpy(p, src, len);
	return mprotect(p, PG, PROT_READ) ? NULL : p;
}

/*
 * Two pages, the first writable, the second read-only: where a structure
 * of @len bytes must start for its last @tail bytes to be read-only (the
 * tail is zero, as a larger structure's unknown tail must be).
 */
static void *straddle(size_t len, size_t tail)
{
	char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + PG, PG, PROT_READ))
		return NULL;
	return p + PG - (len - tail);
}

static unsigned int resized(unsigned int cmd, unsigned int size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

/* The reply of CREATE cannot be written: EFAULT, and no slab, no fd. */
TEST(create_reply_not_writable)
{
	struct blamer_create *c, want = { .length = PG };
	struct trace t;
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, take_trace(&t));
	c = ro_copy(&want, sizeof(want));
	ASSERT_NE(NULL, c);
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, c));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_TRUE(same_trace(_metadata, &t, "read-only reply"));

	/* Only the zero tail of a larger structure is read-only. */
	c = straddle(sizeof(*c) + 8, 8);
	ASSERT_NE(NULL, c);
	*c = want;
	c->fd = -1;
	EXPECT_EQ(-1, ioctl(fd, resized(BLAMER_IOC_CREATE, sizeof(*c) + 8), c));
	EXPECT_EQ(EFAULT, errno);
	/* The number was written, but no descriptor installed there. */
	EXPECT_LE(0, c->fd);
	EXPECT_EQ(-1, fcntl(c->fd, F_GETFD));
	EXPECT_TRUE(same_trace(_metadata, &t, "read-only tail"));
	close(fd);
}

/* The same for OPEN: EFAULT, no descriptor, the slab untouched. */
TEST(open_reply_not_writable)
{
	struct blamer_open *o, want = { 0 };
	struct blamer_create c;
	struct trace t;
	int fd = bl_open(O_RDWR), sfd;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	ASSERT_EQ(0, take_trace(&t));
	want.id = c.id;
	o = ro_copy(&want, sizeof(want));
	ASSERT_NE(NULL, o);
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_OPEN, o));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_TRUE(same_trace(_metadata, &t, "read-only reply"));

	o = straddle(sizeof(*o) + 8, 8);
	ASSERT_NE(NULL, o);
	*o = want;
	o->fd = -1;
	EXPECT_EQ(-1, ioctl(fd, resized(BLAMER_IOC_OPEN, sizeof(*o) + 8), o));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_LE(0, o->fd);
	EXPECT_EQ(-1, fcntl(o->fd, F_GETFD));
	EXPECT_TRUE(same_trace(_metadata, &t, "read-only tail"));
	/* The slab is still there, and still the caller's. */
	sfd = bl_open_slab(fd, c.id);
	EXPECT_LE(0, sfd);
	close(sfd);
	close(c.fd);
	EXPECT_EQ(0, bl_release(fd, c.id));
	close(fd);
}

/* LIST and STATUS: the structure, an entry or an entry's tail read-only. */
TEST(list_and_status_reply_not_writable)
{
	struct blamer_list want = { .info_size = sizeof(struct blamer_slab_info),
				    .capacity = 1 }, *l;
	struct blamer_status *st;
	struct blamer_create c;
	char *entries;
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	/* The entries read-only. */
	want.slabs = (uintptr_t)ro_copy(NULL, 0);
	ASSERT_NE(0, want.slabs);
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &want));
	EXPECT_EQ(EFAULT, errno);
	/* An entry's tail beyond the known layout read-only. */
	entries = straddle(sizeof(struct blamer_slab_info) + 8, 8);
	ASSERT_NE(NULL, entries);
	want.info_size = sizeof(struct blamer_slab_info) + 8;
	want.slabs = (uintptr_t)entries;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &want));
	EXPECT_EQ(EFAULT, errno);
	/* The entries writable, the structure itself read-only. */
	want.info_size = sizeof(struct blamer_slab_info);
	want.slabs = (uintptr_t)entries;	/* all on the writable page */
	l = ro_copy(&want, sizeof(want));
	ASSERT_NE(NULL, l);
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, l));
	EXPECT_EQ(EFAULT, errno);

	st = ro_copy(NULL, 0);
	ASSERT_NE(NULL, st);
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_STATUS, st));
	EXPECT_EQ(EFAULT, errno);
	st = straddle(sizeof(*st) + 8, 8);
	ASSERT_NE(NULL, st);
	EXPECT_EQ(-1, ioctl(fd, resized(BLAMER_IOC_STATUS, sizeof(*st) + 8),
			    st));
	EXPECT_EQ(EFAULT, errno);
	close(c.fd);
	EXPECT_EQ(0, bl_release(fd, c.id));
	close(fd);
}

/* No free descriptor: EMFILE from CREATE (undone) and OPEN. */
TEST(descriptor_table_full)
{
	struct blamer_create c, d;
	struct rlimit old, full;
	int fd = bl_open(O_RDWR), top = 0, i, fillers[1024], nf = 0;
	struct trace t;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	ASSERT_EQ(0, take_trace(&t));
	for (i = 0; i < 1024; i++)
		if (fcntl(i, F_GETFD) >= 0)
			top = i;
	/* Every descriptor up to the highest in use taken, and no more. */
	for (i = 0; i < top; i++)
		if (fcntl(i, F_GETFD) < 0) {
			fillers[nf] = open("/dev/null", O_RDONLY);
			ASSERT_EQ(i, fillers[nf]);
			nf++;
		}
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	full = old;
	full.rlim_cur = top + 1;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &full));
	EXPECT_EQ(-EMFILE, bl_create(fd, PG, &d));
	EXPECT_EQ(-EMFILE, bl_open_slab(fd, c.id));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	while (nf)
		close(fillers[--nf]);
	EXPECT_TRUE(same_trace(_metadata, &t, "EMFILE"));
	close(c.fd);
	EXPECT_EQ(0, bl_release(fd, c.id));
	close(fd);
}

/* ------------------------------------------------------ fault injection */

struct knob {
	const char *path;
	const char *val;
	char old[32];
};

/*
 * Fail on fail-nth only (probability 0), sleeping and order-0, quietly.
 * User pages (highmem-capable) are left alone: a page fault in
 * copy_to_user() would turn an injected failure into EFAULT.
 */
static struct knob knobs[] = {
	{ .path = DEBUGFS "failslab/probability", .val = "0" },
	{ .path = DEBUGFS "failslab/ignore-gfp-wait", .val = "N" },
	{ .path = DEBUGFS "failslab/verbose", .val = "0" },
	{ .path = DEBUGFS "fail_page_alloc/probability", .val = "0" },
	{ .path = DEBUGFS "fail_page_alloc/ignore-gfp-wait", .val = "N" },
	{ .path = DEBUGFS "fail_page_alloc/min-order", .val = "0" },
	{ .path = DEBUGFS "fail_page_alloc/ignore-gfp-highmem", .val = "Y" },
	{ .path = DEBUGFS "fail_page_alloc/verbose", .val = "0" },
};

/* Debugfs attribute files are not seekable: one open to read, one to write. */
static int knob_rw(const char *path, char *old, size_t n, const char *val)
{
	ssize_t r;
	int fd;

	if (old) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return -errno;
		r = read(fd, old, n - 1);
		close(fd);
		old[r > 0 ? r : 0] = 0;
		old[strcspn(old, "\n")] = 0;
	}
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	r = write(fd, val, strlen(val));
	if (r < 0)
		r = -errno;
	close(fd);
	return r < 0 ? (int)r : r == (ssize_t)strlen(val) ? 0 : -EIO;
}

/* 0, or why fault injection cannot be used here (a reason to skip). */
static const char *inject_setup(void)
{
	size_t i;

	if (geteuid())
		return "needs root (debugfs)";
	if (access(FAIL_NTH, W_OK))
		return "no fault injection in this kernel (CONFIG_FAULT_INJECTION)";
	static char why[160];
	int err;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		err = knob_rw(knobs[i].path, knobs[i].old, sizeof(knobs[i].old),
			      knobs[i].val);
		if (err) {
			snprintf(why, sizeof(why), "cannot set %s: %s",
				 knobs[i].path, strerror(-err));
			return why;
		}
	}
	return NULL;
}

static void inject_restore(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(knobs); i++)
		if (knobs[i].old[0])
			knob_rw(knobs[i].path, NULL, 0, knobs[i].old);
}

/*
 * A sweep: op() makes one call with the Nth allocation failing; undo()
 * takes back what a successful call made. The thread's fail-nth file is
 * opened beforehand, so only the call itself counts.
 */
struct sweep {
	const char *name;
	long (*op)(void *arg);		/* >= 0 or -errno */
	void (*undo)(void *arg, long ret);
	void *arg;
	int failed;			/* calls that failed (ENOMEM) */
	int absorbed;			/* injected, yet the call succeeded */
	int calls;			/* N of the first run that was not hit */
};

static int run_sweep(struct __test_metadata *_metadata, struct sweep *s)
{
	char buf[32];
	struct trace t;
	int nth_fd, n;
	long ret;
	ssize_t r;

	nth_fd = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	if (nth_fd < 0)
		return -1;
	for (n = 1; n <= MAX_NTH; n++) {
		int hit;

		if (take_trace(&t))
			break;
		snprintf(buf, sizeof(buf), "%d", n);
		if (pwrite(nth_fd, buf, strlen(buf), 0) != (ssize_t)strlen(buf))
			break;
		ret = s->op(s->arg);
		r = pread(nth_fd, buf, sizeof(buf) - 1, 0);
		if (pwrite(nth_fd, "0", 1, 0) != 1 || r <= 0)
			break;
		buf[r] = 0;
		/* What is left of N: 0 if the Nth allocation was reached. */
		hit = atoi(buf) == 0;
		if (ret < 0 && ret != -ENOMEM) {
			TH_LOG("%s, allocation %d failing: error %ld (%s)",
			       s->name, n, -ret, strerror(-ret));
			close(nth_fd);
			return -1;
		}
		if (ret >= 0)
			s->undo(s->arg, ret);
		if (!same_trace(_metadata, &t, s->name)) {
			TH_LOG("... after allocation %d failed", n);
			close(nth_fd);
			return -1;
		}
		if (!hit) {
			if (ret < 0) {
				TH_LOG("%s failed without an injected failure",
				       s->name);
				close(nth_fd);
				return -1;
			}
			s->calls = n;
			close(nth_fd);
			return 0;
		}
		if (ret < 0)
			s->failed++;
		else
			s->absorbed++;
	}
	TH_LOG("%s: sweep stopped at allocation %d", s->name, n);
	close(nth_fd);
	return -1;
}

#define SWEEP(name_, op_, undo_, arg_) do {				\
	struct sweep s_ = { .name = name_, .op = op_, .undo = undo_,	\
			    .arg = arg_ };				\
	ASSERT_EQ(0, run_sweep(_metadata, &s_));			\
	/* Somewhere an allocation failure reached the caller. */	\
	EXPECT_LT(0, s_.failed);					\
	printf("# %s: %d allocations, %d failed the call (ENOMEM), %d absorbed\n", \
	       s_.name, s_.calls - 1, s_.failed, s_.absorbed);		\
	fflush(stdout);							\
} while (0)

FIXTURE(nth) {
	int dev;
	struct blamer_create held;
};

FIXTURE_SETUP(nth)
{
	const char *why = inject_setup();

	self->dev = -1;
	if (why)
		SKIP(return, "%s", why);
	bt_clean_orphans();
	self->dev = bl_open(O_RDWR);
	ASSERT_LE(0, self->dev);
	self->held.fd = -1;
}

FIXTURE_TEARDOWN(nth)
{
	if (BT_SKIPPED())
		return;
	if (self->held.fd >= 0) {
		close(self->held.fd);
		bl_release(self->dev, self->held.id);
	}
	close(self->dev);
	inject_restore();
}

static long op_open(void *arg)
{
	return bl_open(O_RDWR);
}

static void undo_close(void *arg, long ret)
{
	close((int)ret);
}

TEST_F(nth, open_device)
{
	if (BT_SKIPPED())
		return;
	SWEEP("open /dev/blamer", op_open, undo_close, NULL);
}

struct create_arg {
	int dev;
	__u64 len;
	struct blamer_create c;
};

static long op_create(void *arg)
{
	struct create_arg *a = arg;

	return bl_create(a->dev, a->len, &a->c);
}

static void undo_create(void *arg, long ret)
{
	struct create_arg *a = arg;

	close(a->c.fd);
	bl_release(a->dev, a->c.id);
}

/*
 * The first slab of a process (an owner record is made) and of an
 * account (the account is made), three pages.
 */
TEST_F(nth, create_first)
{
	struct create_arg a = { .dev = self->dev, .len = 3 * PG };

	if (BT_SKIPPED())
		return;
	SWEEP("CREATE, first slab", op_create, undo_create, &a);
}

/* A process that has a live slab: its owner record is found. */
TEST_F(nth, create_more)
{
	struct create_arg a = { .dev = self->dev, .len = 2 * PG };

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_create(self->dev, PG, &self->held));
	SWEEP("CREATE, another slab", op_create, undo_create, &a);
}

struct id_arg {
	int dev;
	__u64 id;
};

static long op_open_slab(void *arg)
{
	struct id_arg *a = arg;

	return bl_open_slab(a->dev, a->id);
}

TEST_F(nth, open_slab)
{
	struct id_arg a = { .dev = self->dev };

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_create(self->dev, PG, &self->held));
	a.id = self->held.id;
	SWEEP("OPEN", op_open_slab, undo_close, &a);
}

static long op_list(void *arg)
{
	struct blamer_slab_info *v;
	int n = bl_list(*(int *)arg, &v, NULL);

	if (n >= 0)
		free(v);
	return n < 0 ? n : 0;
}

static void undo_nothing(void *arg, long ret)
{
}

/* LIST and STATUS allocate nothing of their own: nothing fails them. */
TEST_F(nth, list_and_status)
{
	struct sweep s = { .name = "LIST", .op = op_list, .undo = undo_nothing,
			   .arg = &self->dev };

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_create(self->dev, PG, &self->held));
	ASSERT_EQ(0, run_sweep(_metadata, &s));
	EXPECT_EQ(0, s.failed);
}

/*
 * A page allocated at the writer's first touch, with the Nth allocation
 * of the faulting task failing, for N = 1, 2, ... until a touch makes
 * fewer: the fault returns VM_FAULT_OOM (the kernel says "VM_FAULT_OOM
 * leaked out", a warning that is no console failure) and is retried, so
 * the touch completes, its page is the slab's (a reader sees the byte),
 * and the account is as it was. Each N on a fresh page. A reader's first
 * read of a page nobody wrote allocates nothing (it maps the hole page),
 * so there is no allocation to fail: the sweep ends at N = 1 with zero
 * hits, and the read sees zeroes. The slab's page allocation may use
 * highmem, which fail_page_alloc skips by default.
 */
static int touch_sweep(struct __test_metadata *_metadata, unsigned char *p,
		       const unsigned char *check, int write, int *page)
{
	int nth_fd, n, hit, hits = 0;
	unsigned char v;
	struct trace t;
	char buf[32];
	ssize_t r;

	nth_fd = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	if (nth_fd < 0)
		return -1;
	for (n = 1; n <= 64; n++, (*page)++) {
		unsigned char *at = p + (size_t)*page * PG + 100;

		if (take_trace(&t))
			break;
		snprintf(buf, sizeof(buf), "%d", n);
		if (pwrite(nth_fd, buf, strlen(buf), 0) != (ssize_t)strlen(buf))
			break;
		if (write)
			bl_poke(at, 'f');
		else
			v = bl_peek(at);
		r = pread(nth_fd, buf, sizeof(buf) - 1, 0);
		if (pwrite(nth_fd, "0", 1, 0) != 1 || r <= 0)
			break;
		buf[r] = 0;
		hit = atoi(buf) == 0;
		if (write)
			v = bl_peek(check + (size_t)*page * PG + 100);
		if (v != (write ? 'f' : 0)) {
			TH_LOG("page %d, allocation %d failing: read %d", *page,
			       n, v);
			close(nth_fd);
			return -1;
		}
		if (!same_trace(_metadata, &t, "first touch")) {
			close(nth_fd);
			return -1;
		}
		if (!hit) {
			close(nth_fd);
			printf("# first %s: %d allocations, %d failed and were retried\n",
			       write ? "write" : "read", n - 1, hits);
			fflush(stdout);
			return hits;
		}
		hits++;
	}
	TH_LOG("first touch: sweep stopped at allocation %d", n);
	close(nth_fd);
	return -1;
}

TEST_F(nth, first_touch)
{
	unsigned char *rw, *ro;
	int sfd, page = 0;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, knob_rw(DEBUGFS "fail_page_alloc/ignore-gfp-highmem",
			     NULL, 0, "N"));
	ASSERT_EQ(0, bl_create(self->dev, 256 * PG, &self->held));
	sfd = bl_open_slab(self->dev, self->held.id);
	ASSERT_LE(0, sfd);
	rw = bl_map(self->held.fd, 256 * PG, PROT_READ | PROT_WRITE);
	ro = bl_map(sfd, 256 * PG, PROT_READ);
	ASSERT_NE(NULL, rw);
	ASSERT_NE(NULL, ro);
	/* Page tables made: the sweeps fail the slab's own pages. */
	bl_poke(rw, 1);
	bl_peek(ro + 128 * PG);
	page = 1;
	EXPECT_LT(0, touch_sweep(_metadata, rw, ro, 1, &page));
	page = 129;
	EXPECT_EQ(0, touch_sweep(_metadata, ro, NULL, 0, &page));
	munmap(rw, 256 * PG);
	munmap(ro, 256 * PG);
	close(sfd);
}

/* ------------------------------------------------------------ module init */

struct load_arg {
	const char *ko;
	char params[512];
};

static long op_load(void *arg)
{
	struct load_arg *a = arg;
	int fd = open(a->ko, O_RDONLY | O_CLOEXEC);
	long ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, a->params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int loaded(void)
{
	struct stat sb;

	return !stat("/sys/module/blamer", &sb);
}

static int unload(void)
{
	return syscall(SYS_delete_module, "blamer", O_NONBLOCK) ? -errno : 0;
}

/*
 * Load with allocation @n failing: the load's result, and in *@left
 * what remained of fail-nth (0: the failure was injected).
 */
static long load_failing(struct load_arg *a, int n, int *left)
{
	int nth = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	char buf[32];
	long ret;

	*left = -1;
	if (nth < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%d", n);
	if (write(nth, buf, strlen(buf)) != (ssize_t)strlen(buf)) {
		close(nth);
		return -EIO;
	}
	ret = op_load(a);
	memset(buf, 0, sizeof(buf));
	*left = read(nth, buf, sizeof(buf) - 1) > 0 ? atoi(buf) : -1;
	if (write(nth, "0", 1) != 1)
		*left = -1;
	close(nth);
	return ret;
}

/* More allocations than any load makes: fail-nth counts them down. */
#define LOAD_COUNT 1000000

/* Allocations a successful load makes. */
static int load_allocations(struct load_arg *a)
{
	int left;

	if (load_failing(a, LOAD_COUNT, &left) || left < 0)
		return -1;
	return LOAD_COUNT - left;
}

/*
 * The last allocations of a load: init's, and the loader's just before.
 * Where the kernel shows where init begins (below), the sweep ends with
 * PRE_INIT_LOADS loads from the first that failed before init: the rest
 * of the window would only fail the loader's own allocations, each load
 * about a third of a second on a debug kernel, and test nothing of ours.
 */
#define LOAD_WINDOW 150
#define PRE_INIT_LOADS 8

/*
 * A module built for coverage (GCOV_PROFILE, the debug kernels) runs its
 * constructors between the module_load event and init: gcov's
 * registration of each object file, some hundred allocations on 6.1.
 * A failure there is absorbed (that file's counts go missing), so the
 * event cannot tell it from one in init, and the window would sweep
 * gcov's allocations, a load each, testing nothing of ours. So the
 * third load in a row that absorbed its failure, and every third after
 * it (gcov's are one long such run; init absorbs few), is made again
 * with the failure's stack printed (failslab/verbose 2, read back from
 * /dev/kmsg): gcov's code in it means the sweep has left init. The
 * kernel prints at most 10 such reports in 5 s, so at most GCOV_PROBES
 * loads are made again; a stack not seen counts as not gcov's, and the
 * sweep goes on as it would without.
 */
#define GCOV_PROBES 6
#define GCOV_RUN 3
#define KMSG "/dev/kmsg"

static int failure_in_gcov(struct load_arg *a, int n)
{
	char rec[1024];
	int km, left, found = 0;
	long ret;
	ssize_t r;

	km = open(KMSG, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (km < 0)
		return 0;
	if (lseek(km, 0, SEEK_END) < 0 ||
	    knob_rw(DEBUGFS "failslab/verbose", NULL, 0, "2")) {
		close(km);
		return 0;
	}
	ret = load_failing(a, n, &left);
	knob_rw(DEBUGFS "failslab/verbose", NULL, 0, "0");
	if (!ret && unload())
		found = -1;	/* cannot go on: the caller asserts */
	/* one record per read; EPIPE if the buffer wrapped meanwhile */
	while (!found && (r = read(km, rec, sizeof(rec) - 1)) != 0) {
		if (r < 0) {
			if (errno == EPIPE)
				continue;
			break;
		}
		rec[r] = 0;
		if (strstr(rec, "gcov"))
			found = 1;
	}
	close(km);
	return found < 0 ? found : left ? 0 : found;
}

/*
 * The module_load tracepoint fires in load_module() right before
 * do_init_module() (6.1 and 6.12): a load that failed without firing it
 * failed in the loader, before the module's init could run. Its trace
 * is read after each load; the ring buffer allocates nothing when an
 * event is written, so the event costs the load no allocation.
 */
#define TRACEFS DEBUGFS "tracing/"
#define LOAD_EVENT TRACEFS "events/module/module_load/enable"

/*
 * A load that fails and an unload each wait for RCU grace periods (the
 * loader's synchronize_rcu()), some 0.2 s of a debug kernel under TCG:
 * most of the sweep. Expedited, they are half that; the allocations
 * and paths of a load are the same.
 */
#define RCU_EXPEDITED "/sys/kernel/rcu_expedited"

FIXTURE(load) {
	struct load_arg a;
	int unloaded;
	char event_was[8];	/* the event's enable before the test; "" if none */
	char rcu_was[8];	/* rcu_expedited before the test; "" if not set */
};

/* Empty the trace buffer: 0, or -errno. */
static int trace_clear(void)
{
	int fd = open(TRACEFS "trace", O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Whether the trace shows this module's load reaching do_init_module(). */
static int trace_saw_load(void)
{
	static char buf[16384];
	int fd = open(TRACEFS "trace", O_RDONLY | O_CLOEXEC);
	ssize_t r, len = 0;

	if (fd < 0)
		return 0;
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = 0;
	return !!strstr(buf, "module_load: blamer");
}

/*
 * Needs the module file (BLAMER_KO) and nobody using the device. Only
 * slab allocations fail here: the loader's page allocations (the module's
 * sections) would each print a page allocation failure report, and init
 * allocates no pages.
 */
FIXTURE_SETUP(load)
{
	const char *why = inject_setup();
	size_t i, len = 0;

	if (why)
		SKIP(return, "%s", why);
	self->a.ko = getenv("BLAMER_KO");
	if (!self->a.ko || access(self->a.ko, R_OK))
		SKIP(return, "no module file (BLAMER_KO)");
	ASSERT_EQ(0, knob_rw(DEBUGFS "fail_page_alloc/ignore-gfp-wait", NULL,
			     0, "Y"));
	for (i = 0; i < BT_NPARAMS; i++) {
		long long v;

		ASSERT_EQ(0, bl_param_get(bt_param_names[i], &v));
		len += snprintf(self->a.params + len,
				sizeof(self->a.params) - len, "%s=%lld ",
				bt_param_names[i], v);
	}
	if (unload())
		SKIP(return, "the module is in use");
	self->unloaded = 1;
	if (knob_rw(RCU_EXPEDITED, self->rcu_was, sizeof(self->rcu_was), "1"))
		self->rcu_was[0] = 0;
	/* Without the event (no tracefs), the whole window is swept. */
	if (knob_rw(LOAD_EVENT, self->event_was, sizeof(self->event_was), "1")) {
		self->event_was[0] = 0;
	} else if (trace_clear()) {
		knob_rw(LOAD_EVENT, NULL, 0, self->event_was);
		self->event_was[0] = 0;
	}
}

/* The module back with the parameters it had, the device open to all. */
FIXTURE_TEARDOWN(load)
{
	if (BT_SKIPPED()) {
		inject_restore();
		return;
	}
	if (!loaded())
		EXPECT_EQ(0, op_load(&self->a));
	EXPECT_EQ(0, chmod(BL_DEVICE, 0666));
	if (self->event_was[0])
		knob_rw(LOAD_EVENT, NULL, 0, self->event_was);
	if (self->rcu_was[0])
		knob_rw(RCU_EXPEDITED, NULL, 0, self->rcu_was);
	inject_restore();
}

/*
 * Loading the module with each of the last allocations of a load failing
 * in turn, from the last one down: those of init (the filesystem's mount,
 * the tracepoint probe, the misc device) and of the loader just after and
 * before: PRE_INIT_LOADS loads from the first that failed before init
 * (below it, every allocation is before init), or LOAD_WINDOW in all.
 * Each load fails with ENOMEM and leaves no module and no device, or
 * succeeds (a failure the kernel absorbed) and unloads again. Where the
 * event shows it, some of the failures must have been init's own: the
 * error paths the sweep is for.
 */
TEST_F_TIMEOUT(load, module_init, 600)
{
	int n, k, left, failed = 0, absorbed = 0, in_init = 0, below = 0, before = 0;
	int loads = 0, probes = 0, in_gcov = 0, run = 0;
	char seen[LOAD_WINDOW + 1] = "";	/* each load's outcome, for the log */
	int event = self->event_was[0] != 0;
	struct stat sb;
	long ret;

	if (BT_SKIPPED())
		return;
	k = load_allocations(&self->a);
	ASSERT_LT(0, k);
	ASSERT_EQ(0, unload());
	for (n = k; n > 0 && n > k - LOAD_WINDOW; n--) {
		loads++;
		if (event)
			ASSERT_EQ(0, trace_clear());
		ret = load_failing(&self->a, n, &left);
		ASSERT_LE(0, left);
		seen[loads - 1] = ret ? 'f' : left ? '-' : 'a';
		run = ret || left ? 0 : run + 1;
		if (ret) {
			EXPECT_EQ(-ENOMEM, ret)
				TH_LOG("allocation %d of %d failing: %s", n, k,
				       strerror(-ret));
			EXPECT_FALSE(loaded()) TH_LOG("allocation %d", n);
			EXPECT_NE(0, stat(BL_DEVICE, &sb))
				TH_LOG("allocation %d: the device stayed", n);
			EXPECT_EQ(0, left)
				TH_LOG("allocation %d: failed uninjected", n);
			failed++;
			if (event && trace_saw_load())
				in_init++;
			else if (event)
				below = 1;	/* the loader's, before init */
		} else {
			if (!left)
				absorbed++;
			ASSERT_EQ(0, unload());
			if (run && run % GCOV_RUN == 0 && event && !below && probes < GCOV_PROBES) {
				probes++;
				in_gcov = failure_in_gcov(&self->a, n);
				ASSERT_LE(0, in_gcov) TH_LOG("allocation %d: no unload", n);
				below = in_gcov;	/* gcov's: before init */
			}
		}
		/* from the first failure before init on, every load's is too */
		if (below && ++before == PRE_INIT_LOADS)
			break;
	}
	EXPECT_LT(0, failed);
	printf("# finit_module: %d allocations; last %d: %d failed (ENOMEM), %d absorbed\n",
	       k, loads, failed, absorbed);
	if (event) {
		EXPECT_LT(0, in_init) TH_LOG("no failure reached the module's init");
		printf("# %d failures after module_load; %d loads from the first before it%s\n",
		       in_init, before, in_gcov ? " (gcov's constructors)" : "");
		printf("# loads made again with the failure's stack, to tell gcov's: %d\n", probes);
		printf("# from allocation %d down (f failed, a absorbed): %s\n", k, seen);
	} else {
		printf("# no module_load event: the whole window swept\n");
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
