// SPDX-License-Identifier: GPL-2.0
/*
 * blamer_kfuzz: a fuzzer of /dev/blamer that knows its ABI.
 *
 *   blamer_kfuzz [-t SECONDS] [-p PROCS] [-T THREADS] [-s SEED] [-f]
 *
 * Run as root. PROCS worker processes (default 6), a third of them root,
 * a third uid 1000, a third uid 1001, each with THREADS threads (default
 * 3), issue random but mostly well-formed sequences of what a program can
 * do to the device: open it, create, open, list, release and poll slabs,
 * ask for status; map slab descriptors with random lengths, offsets and
 * protections, mprotect, mremap, madvise, munmap and touch the mappings;
 * dup and close descriptors; pass them to other workers over SCM_RIGHTS;
 * vmsplice() mappings into pipes that outlive the slabs; vfork (the child
 * must not be able to create);
 * fork (the child uses what it inherited, then exits or is killed; one
 * in four does so in a pid namespace of its own), exec
 * itself with some descriptors left open (a worker that is not root,
 * one time in three, a set-user-ID root copy of itself: an elevated
 * creator), exit with a random status, kill each other; and a fork child
 * that creates and writes a slab, clone(CLONE_VM)s a process that goes
 * on writing it, and execs (vm-exec). A supervisor replaces every worker that dies until the time
 * is up, and every second or so sets one of the module's limits an
 * administrator may change at any time (orphans kept, bytes per account,
 * the readers' group, watchers per account) to another value; they are
 * put back at the end.
 * -f also makes one ioctl in eight fail its allocations
 * (failslab, fail_page_alloc: the kernel's fault injection, if built).
 *
 * The kernel must never complain (the VM runner fails the run), and the
 * program checks what it can observe of the module's promises:
 *  - write access: a process that did not create a slab (in its current
 *    program) never maps it writable and never writes through a mapping
 *    it inherited; a read-only descriptor never maps writable, and
 *    mprotect() never makes a mapping of a slab this process did not
 *    create writable (/proc/self/smaps has the last word: other threads
 *    map and unmap meanwhile);
 *  - only the process (and program) that opened /dev/blamer creates
 *    slabs through that descriptor;
 *  - a process sharing its creator's address space writes a slab no
 *    more once the creator has exec'd (or died): within 10 s its write
 *    faults;
 *  - a plain process of uid 1001 neither opens nor releases a slab a
 *    set-user-ID program run by uid 1001 created;
 *  - BLAMER_IOC_LIST answers within its bounds: count <= capacity,
 *    count <= total, IDs ascending, sizes whole non-zero pages, states
 *    live or orphan;
 *  - it reached the device: slabs were created, mapped and released and
 *    the device counted events;
 *  - afterwards, with every worker dead and every orphan released, the
 *    device holds no slab and no byte.
 * Output is TAP, with per-operation counts (attempts/successes) as
 * comments. Exit status 0 if every check passed.
 *
 * The workers allocate nothing after they start (no malloc, no stdio):
 * the only mappings that come and go are the fuzzer's own, so a stale
 * address one thread uses after another unmapped it can only hit a slab
 * mapping or fault (faults are caught and counted).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/blamer.h>

#define PG		4096UL
#define DEVICE		"/dev/blamer"
#define MAX_PROCS	12
#define MAX_THREADS	4
#define NFD		48
#define NMAP		24
#define NBOARD		256
#define NVIOL		8
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ shared board */

enum op {
	OP_OPEN_DEV, OP_CREATE, OP_OPEN_SLAB, OP_LIST, OP_RELEASE, OP_STATUS,
	OP_POLL, OP_MMAP, OP_MPROTECT, OP_MREMAP, OP_MADVISE, OP_MUNMAP,
	OP_TOUCH, OP_DUP, OP_CLOSE, OP_SEND, OP_RECV, OP_FORK, OP_EXEC,
	OP_EXIT, OP_KILL, OP_SPLICE, OP_VFORK, OP_VMEXEC, OP_NR
};

static const char *const op_names[OP_NR] = {
	"open-dev", "create", "open-slab", "list", "release", "status",
	"poll", "mmap", "mprotect", "mremap", "madvise", "munmap", "touch",
	"dup", "close", "send", "recv", "fork", "exec", "exit", "kill",
	"splice", "vfork", "vm-exec",
};

/* Relative frequencies: mostly the calls that make and use slabs. */
static const unsigned int op_weight[OP_NR] = {
	[OP_OPEN_DEV] = 4, [OP_CREATE] = 12, [OP_OPEN_SLAB] = 8,
	[OP_LIST] = 8, [OP_RELEASE] = 6, [OP_STATUS] = 2, [OP_POLL] = 3,
	[OP_MMAP] = 12, [OP_MPROTECT] = 5, [OP_MREMAP] = 4, [OP_MADVISE] = 4,
	[OP_MUNMAP] = 6, [OP_TOUCH] = 14, [OP_DUP] = 3, [OP_CLOSE] = 6,
	[OP_SEND] = 4, [OP_RECV] = 4, [OP_FORK] = 2, [OP_EXEC] = 1,
	[OP_EXIT] = 1, [OP_KILL] = 1, [OP_SPLICE] = 3, [OP_VFORK] = 1,
	[OP_VMEXEC] = 1,
};

/* Who made a slab: a process in one program (exec starts a new one). */
struct ident {
	int32_t pid;
	uint32_t nonce;
};

/* What travels with a descriptor over SCM_RIGHTS. */
struct passed {
	uint32_t kind;
	uint32_t pad;
	uint64_t id;
	uint64_t size;
	struct ident creator;
};

struct board {
	uint64_t deadline_ns;
	uint64_t ids[NBOARD];		/* slab IDs anyone created */
	uint64_t max_id;		/* the highest of them */
	uint32_t next_id;
	int32_t pids[MAX_PROCS];	/* the workers, by slot */
	uint64_t tries[OP_NR], oks[OP_NR];
	uint64_t faults;		/* caught SIGSEGV/SIGBUS */
	uint64_t writes_denied;		/* non-owner write faults, as promised */
	uint64_t maps_rw, injected;
	uint64_t max_events;
	uint64_t startfail;		/* workers that could not switch user */
	uint64_t pidns;			/* fork children in a pid namespace of their own */
	uint64_t suid_execs;		/* set-user-ID execs that ran elevated */
	uint64_t vm_revoked;		/* CLONE_VM writers stopped after the exec */
	uint64_t plain_1001;		/* plain uid 1001's tries at those slabs */
	/* vm-exec: when each child's new program began (by the child's slot,
	 * its pid to tell a reused slot), what its CLONE_VM writer waits for */
	uint64_t vm_began[NBOARD];
	int32_t vm_pid[NBOARD];
	uint32_t next_vm;
	/* slabs created by elevated processes (set-user-ID), and their real uid */
	uint64_t elev_ids[NBOARD];
	uint32_t elev_uid[NBOARD];
	uint32_t next_elev;
	uint32_t violations, nviol;
	char viol[NVIOL][200];
};

static struct board *bd;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count(enum op op, int ok)
{
	__atomic_add_fetch(&bd->tries[op], 1, __ATOMIC_RELAXED);
	if (ok)
		__atomic_add_fetch(&bd->oks[op], 1, __ATOMIC_RELAXED);
}

/*
 * A broken promise: counted, and the first few kept for the report.
 * Workers are SIGKILLed at any moment (op_kill, the respawns), so the
 * text is made first and copied whole into its slot, and only then
 * counted: a worker killed in between loses the whole report, never
 * leaves a count with an empty text (a run once reported "violation: "
 * and nothing more).
 */
__attribute__((format(printf, 1, 2)))
static void violation(const char *fmt, ...)
{
	char text[sizeof(bd->viol[0])];
	uint32_t i;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* Also on stderr, at once: the console keeps it whatever happens. */
	fprintf(stderr, "# violation (pid %d): %s\n", (int)getpid(), text);
	i = __atomic_fetch_add(&bd->nviol, 1, __ATOMIC_RELAXED);
	if (i < NVIOL)
		memcpy(bd->viol[i], text, sizeof(text));
	__atomic_add_fetch(&bd->violations, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ randomness */

static __thread uint64_t rng;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static int one_in(unsigned int n)
{
	return below(n) == 0;
}

/* Mostly a few pages; sometimes the edges and the absurd. */
static uint64_t pick_len(void)
{
	static const uint64_t hostile[] = {
		0, 1, PG - 1, PG + 1, 1 << 20, 4 << 20, (4 << 20) + 1,
		64 << 20, ~0ull, ~0ull - PG + 2, 1ull << 63, 1ull << 32,
	};

	if (!one_in(10))
		return (below(8) + 1) * PG - (one_in(4) ? below(PG) : 0);
	return hostile[below(ARRAY_SIZE(hostile))];
}

/* ------------------------------------------------------------ a worker */

enum kind { K_FREE, K_DEV, K_SLAB, K_PIPE };

struct fdent {
	int fd;
	enum kind kind;
	int writable;		/* opened O_RDWR / a read-write slab file */
	int mine;		/* dev: opened by this program; slab: created by it */
	uint64_t id, size;
	struct ident creator;	/* dev: who opened it; slab: who created it */
	uint32_t closes;	/* closes of its number when picked (fd_still()) */
};

struct mapent {
	uint8_t *addr;
	size_t len;
	int prot;
	int inherited;		/* came with fork: this process is not its creator */
	int may_write;		/* this process created the slab (this program) */
	uint64_t id;
};

#define CREATED_IDS (1u << 20)
/* Close counts by descriptor number (numbers that collide count for each other). */
#define FD_NUMBERS 1024u

struct worker {
	pthread_mutex_t lock;	/* the tables, not the calls */
	struct fdent fds[NFD];
	uint32_t closes[FD_NUMBERS];	/* bumped when a number leaves the table */
	struct mapent maps[NMAP];
	struct ident me;
	int slot, nprocs, child;	/* child: a fork or exec child, short-lived */
	int sock_in;			/* this slot's receiving end */
	int sock_out[MAX_PROCS];	/* every slot's sending end */
	int inject;			/* -f */
	int elevated;			/* a set-user-ID program: euid is not uid */
	/* The slabs this process created, by ID (bits; fork clears them). */
	uint8_t created[CREATED_IDS / 8];
};

static struct worker w;

/* A set-user-ID root copy of this program (main() makes it), or "". */
static char suid_path[64];

/* Faults in touched memory are expected; the thread resumes. */
static __thread sigjmp_buf fault_jb;
static __thread volatile sig_atomic_t fault_armed;

static void on_fault(int sig)
{
	if (fault_armed) {
		fault_armed = 0;
		siglongjmp(fault_jb, sig);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void lock(void)
{
	pthread_mutex_lock(&w.lock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&w.lock);
}

/* A copy of a random used entry of the fd table (kind K_FREE if none). */
static struct fdent pick_fd(enum kind want)
{
	struct fdent e = { .fd = -1, .kind = K_FREE };
	unsigned int i, start = below(NFD);

	lock();
	for (i = 0; i < NFD; i++) {
		struct fdent *f = &w.fds[(start + i) % NFD];

		if (f->kind != K_FREE && (want == K_FREE || f->kind == want)) {
			e = *f;
			e.closes = w.closes[f->fd % FD_NUMBERS];
			break;
		}
	}
	unlock();
	return e;
}

static void add_fd(const struct fdent *e)
{
	unsigned int i;

	lock();
	for (i = 0; i < NFD; i++)
		if (w.fds[i].kind == K_FREE) {
			w.fds[i] = *e;
			unlock();
			return;
		}
	unlock();
	close(e->fd);	/* table full */
}

/* Forget fd (after a close); returns whether it was in the table. */
static int drop_fd(int fd)
{
	unsigned int i;
	int found = 0;

	lock();
	for (i = 0; i < NFD; i++)
		if (w.fds[i].kind != K_FREE && w.fds[i].fd == fd) {
			w.fds[i].kind = K_FREE;
			found = 1;
		}
	if (found)
		w.closes[fd % FD_NUMBERS]++;
	unlock();
	return found;
}

/*
 * With the lock held: is e->fd still the descriptor e describes?
 * Another thread may have closed it and got the number back for
 * something else (its own open of the device, say). A number leaves the
 * table, counted, before it is closed (op_close()), and enters it only
 * once open: so if its count is what it was when e was picked, the
 * number was not closed since, and a call made on it before this check
 * reached the file e describes. Comparing the table's entry would not
 * do: a dup() of a number that had meanwhile become another file is
 * entered with the old description (a descriptor this process opened,
 * marked as not its own), and then matches it.
 */
static int fd_same_locked(const struct fdent *e)
{
	return w.closes[e->fd % FD_NUMBERS] == e->closes;
}

/* A check about e holds only if e->fd was still e after the call. */
static int fd_still(const struct fdent *e)
{
	int same;

	lock();
	same = fd_same_locked(e);
	unlock();
	return same;
}

/* Likewise for a mapping. */
static int map_still(const struct mapent *m)
{
	unsigned int i;
	int same = 0;

	lock();
	for (i = 0; i < NMAP; i++)
		if (w.maps[i].addr == m->addr && w.maps[i].id == m->id &&
		    w.maps[i].may_write == m->may_write &&
		    w.maps[i].inherited == m->inherited)
			same = 1;
	unlock();
	return same;
}

static struct mapent pick_map(void)
{
	struct mapent m = { 0 };
	unsigned int i, start = below(NMAP);

	lock();
	for (i = 0; i < NMAP; i++)
		if (w.maps[(start + i) % NMAP].addr) {
			m = w.maps[(start + i) % NMAP];
			break;
		}
	unlock();
	return m;
}

static void add_map(const struct mapent *m)
{
	unsigned int i;

	lock();
	for (i = 0; i < NMAP; i++)
		if (!w.maps[i].addr) {
			w.maps[i] = *m;
			unlock();
			return;
		}
	unlock();
	munmap(m->addr, m->len);
}

/* Replace the entry at addr (if still there) by *m, or drop it if m is NULL. */
static void update_map(const uint8_t *addr, const struct mapent *m)
{
	unsigned int i;

	lock();
	for (i = 0; i < NMAP; i++)
		if (w.maps[i].addr == addr) {
			if (m)
				w.maps[i] = *m;
			else
				w.maps[i].addr = NULL;
			break;
		}
	unlock();
}

static void publish(uint64_t id)
{
	uint32_t i = __atomic_fetch_add(&bd->next_id, 1, __ATOMIC_RELAXED);
	uint64_t max = __atomic_load_n(&bd->max_id, __ATOMIC_RELAXED);

	__atomic_store_n(&bd->ids[i % NBOARD], id, __ATOMIC_RELAXED);
	while (id > max && !__atomic_compare_exchange_n(&bd->max_id, &max, id,
			0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A slab an elevated process created, with the real uid it ran for. */
static void publish_elevated(uint64_t id)
{
	uint32_t i = __atomic_fetch_add(&bd->next_elev, 1, __ATOMIC_RELAXED) % NBOARD;

	__atomic_store_n(&bd->elev_uid[i], (uint32_t)getuid(), __ATOMIC_RELAXED);
	__atomic_store_n(&bd->elev_ids[i], id, __ATOMIC_RELEASE);
}

/*
 * A plain process of uid 1001 (no reader group names 1001, and its
 * capabilities, if any, are a user namespace's) tried (@ok: managed) to
 * @what slab @id: if a set-user-ID program run by uid 1001 created it,
 * its postmortem is not that user's to read or to release.
 */
static void check_not_elevated(const char *what, uint64_t id, int ok)
{
	uint32_t i;

	if (getuid() != 1001 || geteuid() != 1001)
		return;
	for (i = 0; i < NBOARD; i++) {
		if (__atomic_load_n(&bd->elev_ids[i], __ATOMIC_ACQUIRE) != id ||
		    __atomic_load_n(&bd->elev_uid[i], __ATOMIC_RELAXED) != 1001)
			continue;
		__atomic_add_fetch(&bd->plain_1001, 1, __ATOMIC_RELAXED);
		if (ok)
			violation("pid %d (uid 1001) could %s slab %llu of a set-user-ID program",
				  w.me.pid, what, (unsigned long long)id);
		return;
	}
}

/*
 * An ID somebody created (or listed; sometimes an elevated creator's), or
 * a made-up one: often one of the
 * next IDs the device will hand out (IDs are sequential), so that an
 * OPEN or RELEASE races the CREATE that is about to return it.
 */
static uint64_t pick_id(void)
{
	uint64_t id = 0;

	/* an elevated creator's slab, which its user may not have */
	if (one_in(6))
		id = __atomic_load_n(&bd->elev_ids[below(NBOARD)], __ATOMIC_RELAXED);
	if (id)
		return id;
	id = __atomic_load_n(&bd->ids[below(NBOARD)], __ATOMIC_RELAXED);
	if (id && one_in(2))
		return id;
	if (!one_in(3))
		return __atomic_load_n(&bd->max_id, __ATOMIC_RELAXED) + 1 +
		       below(4);
	return one_in(2) ? below(64) : rnd();
}

/* Fault injection for the next call of this thread, one time in eight. */
static int inject_on(void)
{
	int fd;

	if (!w.inject || !one_in(8))
		return 0;
	fd = open("/proc/thread-self/make-it-fail", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, "1", 1) != 1) {
		close(fd);
		return 0;
	}
	__atomic_add_fetch(&bd->injected, 1, __ATOMIC_RELAXED);
	return fd;
}

static void inject_off(int fd)
{
	if (fd > 0) {
		if (pwrite(fd, "0", 1, 0) != 1)
			violation("cannot turn fault injection off");
		close(fd);
	}
}

static long xioctl(int fd, unsigned long cmd, void *arg)
{
	int inj = inject_on();
	long ret = ioctl(fd, cmd, arg);
	int e = errno;

	inject_off(inj);
	errno = e;
	return ret;
}

/* ------------------------------------------------------------ operations */

static void op_open_dev(void)
{
	int rw = !one_in(3);
	struct fdent e = { .kind = K_DEV, .writable = rw, .mine = 1 };

	e.creator = w.me;
	e.fd = open(DEVICE, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	count(OP_OPEN_DEV, e.fd >= 0);
	if (e.fd >= 0)
		add_fd(&e);
}

static void op_create(void)
{
	struct fdent d = pick_fd(K_DEV);
	struct blamer_create c = { .length = pick_len(), .fd = -1 };
	struct fdent e = { .kind = K_SLAB, .writable = 1, .mine = 1 };
	int ok, still;

	if (d.kind == K_FREE)
		return op_open_dev();
	if (one_in(30))
		c.flags = 1u << below(32);
	ok = xioctl(d.fd, BLAMER_IOC_CREATE, &c) == 0;
	count(OP_CREATE, ok);
	if (!ok)
		return;
	still = fd_still(&d);
	if (!d.mine && still)
		violation("pid %d created slab %llu through a /dev/blamer descriptor another process or program opened",
			  w.me.pid, (unsigned long long)c.id);
	if (c.length % PG || !c.length)
		violation("create returned a length of %llu", (unsigned long long)c.length);
	e.fd = c.fd;
	e.id = c.id;
	e.size = c.length;
	e.creator = w.me;
	/* made by this process either way; through which descriptor is
	 * known only if the number did not change */
	e.mine = d.mine || !still;
	if (c.id < CREATED_IDS)
		__atomic_fetch_or(&w.created[c.id / 8], 1u << (c.id % 8),
				  __ATOMIC_RELAXED);
	add_fd(&e);
	publish(c.id);
	if (w.elevated)
		publish_elevated(c.id);
}

static void op_open_slab(void)
{
	struct fdent d = pick_fd(K_DEV);
	struct blamer_open o = { .id = pick_id(), .fd = -1 };
	struct fdent e = { .kind = K_SLAB, .writable = 0 };
	struct stat st;
	int ok;

	if (d.kind == K_FREE)
		return op_open_dev();
	if (one_in(30))
		o.flags = 1u << below(32);
	ok = xioctl(d.fd, BLAMER_IOC_OPEN, &o) == 0;
	count(OP_OPEN_SLAB, ok);
	check_not_elevated("open", o.id, ok);
	if (!ok)
		return;
	e.fd = o.fd;
	e.id = o.id;
	e.size = fstat(o.fd, &st) == 0 ? (uint64_t)st.st_size : PG;
	e.creator.pid = -1;	/* unknown: never this process, for the checks */
	add_fd(&e);
}

/* The list in a buffer on the stack (no malloc in workers). */
static void op_list(void)
{
	struct blamer_slab_info info[24];
	uint8_t big[2 * sizeof(struct blamer_slab_info) * 4];
	struct fdent d = pick_fd(K_DEV);
	struct blamer_list l = { 0 };
	uint32_t i, isz = sizeof(info[0]);
	uint8_t *buf = (uint8_t *)info;
	int ok;

	if (d.kind == K_FREE)
		return op_open_dev();
	l.capacity = below(ARRAY_SIZE(info) + 1);
	l.start_id = one_in(3) ? pick_id() : 0;
	switch (below(12)) {
	case 0:		/* a larger entry than the kernel's: zeroed tail */
		isz = 2 * sizeof(info[0]);
		buf = big;
		memset(big, 0, sizeof(big));
		l.capacity = below(5);
		break;
	case 1:		/* the first published size */
		isz = BLAMER_SLAB_INFO_SIZE_VER0;
		break;
	case 2:		/* hostile sizes */
		isz = one_in(2) ? below(BLAMER_SLAB_INFO_SIZE_VER0) : 4097 + below(1 << 20);
		break;
	case 3:		/* a pointer the kernel must not write through */
		buf = one_in(2) ? NULL : (uint8_t *)(uintptr_t)(rnd() | (1ull << 63));
		break;
	default:
		break;
	}
	l.slabs = (uintptr_t)buf;
	l.info_size = isz;
	if (one_in(40))
		l.reserved = 1;
	ok = xioctl(d.fd, BLAMER_IOC_LIST, &l) == 0;
	count(OP_LIST, ok);
	if (!ok)
		return;
	if (l.count > l.capacity || l.count > l.total)
		violation("list: count %u, capacity %u, total %u", l.count, l.capacity, l.total);
	if (l.events > __atomic_load_n(&bd->max_events, __ATOMIC_RELAXED))
		__atomic_store_n(&bd->max_events, l.events, __ATOMIC_RELAXED);
	if (buf != (uint8_t *)info && buf != big)
		return;
	for (i = 0; i < l.count && i < l.capacity; i++) {
		struct blamer_slab_info *s = (void *)(buf + (size_t)i * isz);

		if (!s->size || s->size % PG ||
		    (s->state != BLAMER_SLAB_LIVE && s->state != BLAMER_SLAB_ORPHAN) ||
		    s->id < l.start_id ||
		    (i && s->id <= ((struct blamer_slab_info *)(buf + (size_t)(i - 1) * isz))->id))
			violation("list entry %u: id %llu size %llu state %u (start %llu)",
				  i, (unsigned long long)s->id, (unsigned long long)s->size,
				  s->state, (unsigned long long)l.start_id);
		if (isz > sizeof(*s)) {
			const uint8_t *tail = (const uint8_t *)s + sizeof(*s);
			size_t k;

			for (k = 0; k < isz - sizeof(*s); k++)
				if (tail[k]) {
					violation("list wrote %zu bytes beyond its entry", k + 1);
					break;
				}
		}
		if (one_in(4))
			publish(s->id);
	}
}

static void op_release(void)
{
	struct fdent d = pick_fd(K_DEV);
	struct blamer_release r = { .id = pick_id() };
	int ok;

	if (d.kind == K_FREE)
		return op_open_dev();
	if (one_in(30))
		r.flags = 1;
	ok = xioctl(d.fd, BLAMER_IOC_RELEASE, &r) == 0;
	count(OP_RELEASE, ok);
	check_not_elevated("release", r.id, ok);
}

static void op_status(void)
{
	struct fdent d = pick_fd(K_DEV);
	struct blamer_status st;
	int ok;

	if (d.kind == K_FREE)
		return op_open_dev();
	ok = xioctl(d.fd, BLAMER_IOC_STATUS, one_in(20) ? NULL : &st) == 0;
	count(OP_STATUS, ok);
}

static void op_poll(void)
{
	struct fdent d = pick_fd(one_in(4) ? K_FREE : K_DEV);
	struct pollfd p;
	int n;

	if (d.kind == K_FREE)
		return;
	p.fd = d.fd;
	p.events = POLLIN;
	n = poll(&p, 1, (int)below(5));
	count(OP_POLL, n >= 0);
}

/* Can this process write a slab through a shared mapping? */
static int may_write(const struct fdent *e)
{
	return e->kind == K_SLAB && e->writable && e->mine &&
	       e->creator.pid == w.me.pid && e->creator.nonce == w.me.nonce;
}

static void op_mmap(void)
{
	struct fdent e = pick_fd(one_in(10) ? K_FREE : K_SLAB);
	struct mapent m = { 0 };
	uint64_t pages;
	off_t off = 0;
	int flags = one_in(8) ? MAP_PRIVATE : MAP_SHARED;
	void *p;

	if (e.kind == K_FREE)
		return;
	pages = e.size / PG ? e.size / PG : 1;
	m.len = one_in(8) ? pick_len() : (below(pages) + 1) * PG;
	if (m.len > (64ull << 20))
		m.len = 64ull << 20;	/* the absurd lengths fail anyway */
	if (one_in(3))
		off = (off_t)(below(pages + 1) * PG);
	if (one_in(20))
		off = (off_t)(rnd() & ~(PG - 1) & 0x7fffffffffffull);
	m.prot = one_in(2) ? PROT_READ | PROT_WRITE : PROT_READ;
	if (one_in(20))
		m.prot |= PROT_EXEC;
	p = mmap(NULL, m.len, m.prot, flags, e.fd, off);
	count(OP_MMAP, p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	if (!fd_still(&e)) {
		munmap(p, m.len);	/* of whatever the number had become */
		return;
	}
	if ((m.prot & PROT_WRITE) && flags == MAP_SHARED && e.kind == K_SLAB) {
		if (!e.writable)
			violation("pid %d mapped a read-only descriptor of slab %llu writable",
				  w.me.pid, (unsigned long long)e.id);
		else if (!may_write(&e))
			violation("pid %d mapped slab %llu writable, created by pid %d",
				  w.me.pid, (unsigned long long)e.id, e.creator.pid);
		__atomic_add_fetch(&bd->maps_rw, 1, __ATOMIC_RELAXED);
	}
	if (flags == MAP_PRIVATE || e.kind != K_SLAB) {
		munmap(p, m.len);	/* only shared slab mappings are tracked */
		return;
	}
	m.addr = p;
	m.id = e.id;
	m.may_write = may_write(&e);
	add_map(&m);
}

/* Did this process create slab @id? (Unknown, above the bits: yes.) */
static int created_here(uint64_t id)
{
	if (id >= CREATED_IDS)
		return 1;
	return (__atomic_load_n(&w.created[id / 8], __ATOMIC_RELAXED) >> (id % 8)) & 1;
}

/*
 * What the kernel says of the mapping at @p (/proc/self/smaps names slab
 * files "blamer:ID"): KM_OTHER, none or not of slab @id; KM_SLAB, of it;
 * KM_SLAB_MW, of it and it may be made writable (VmFlags "mw");
 * KM_UNKNOWN if it cannot tell. The tables are this program's belief,
 * and other threads map and unmap meanwhile: a broken promise is only
 * one the kernel confirms.
 */
enum { KM_UNKNOWN = -1, KM_OTHER, KM_SLAB, KM_SLAB_MW };

static int kernel_mapping_at(const volatile void *p, uint64_t id)
{
	uintptr_t a = (uintptr_t)p;
	char line[512], want[32];
	FILE *f = fopen("/proc/self/smaps", "r");
	int got = KM_OTHER;

	if (!f)
		return KM_UNKNOWN;
	snprintf(want, sizeof(want), "blamer:%llu", (unsigned long long)id);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char *at;

		if (got == KM_SLAB && !strncmp(line, "VmFlags:", 8)) {
			if (strstr(line, " mw"))
				got = KM_SLAB_MW;
			break;
		}
		/* a mapping's first line: "lo-hi perms offset dev inode name" */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) != 2)
			continue;
		if (got == KM_SLAB)
			break;	/* the next mapping: no VmFlags line */
		if (a < lo || a >= hi)
			continue;
		at = strstr(line, want);
		if (!at || (at[strlen(want)] >= '0' && at[strlen(want)] <= '9'))
			break;
		got = KM_SLAB;
	}
	fclose(f);
	return got;
}

static void op_mprotect(void)
{
	struct mapent m = pick_map();
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_NONE,
		PROT_READ | PROT_WRITE | PROT_EXEC,
	};
	int prot = prots[below(ARRAY_SIZE(prots))], ok;
	size_t len;

	if (!m.addr)
		return;
	len = one_in(4) ? (below(m.len / PG) + 1) * PG : m.len;
	ok = mprotect(m.addr, len, prot) == 0;
	count(OP_MPROTECT, ok);
	if (!ok)
		return;
	/*
	 * A mapping of a read-only descriptor lost VM_MAYWRITE. (One a fork
	 * child inherited keeps it; its writes are what is refused, which
	 * op_touch checks.) The tables are a belief: other threads map and
	 * unmap at once, and a mapping that may write can take the address
	 * between the pick and the call (a run of 4 million operations once
	 * saw it). So only a slab this process did not create counts, and
	 * only if the kernel says the mapping there is of that slab and may
	 * write: a process that is not a slab's creator never holds such a
	 * mapping but by fork.
	 */
	if ((prot & PROT_WRITE) && !(m.prot & PROT_WRITE) && !m.may_write &&
	    !m.inherited && map_still(&m) && !created_here(m.id) &&
	    kernel_mapping_at(m.addr, m.id) == KM_SLAB_MW)
		violation("pid %d made a read-only mapping of slab %llu writable",
			  w.me.pid, (unsigned long long)m.id);
	if (len == m.len) {
		m.prot = prot;
		update_map(m.addr, &m);
	}
}

static void op_mremap(void)
{
	struct mapent m = pick_map();
	size_t nlen;
	int flags = 0;
	void *p;

	if (!m.addr)
		return;
	switch (below(4)) {
	case 0:		/* grow in place or moving: VM_DONTEXPAND says no */
		nlen = m.len + PG * (below(4) + 1);
		flags = one_in(2) ? MREMAP_MAYMOVE : 0;
		break;
	case 1:		/* shrink */
		nlen = m.len > PG ? m.len - PG : m.len;
		break;
	case 2:		/* move */
		nlen = m.len;
		flags = MREMAP_MAYMOVE;
		break;
	default:	/* move, leaving the old range mapped but empty */
		nlen = m.len;
		flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP;
		break;
	}
	p = flags & MREMAP_DONTUNMAP ?
		mremap(m.addr, m.len, nlen, flags, NULL) :
		mremap(m.addr, m.len, nlen, flags);
	count(OP_MREMAP, p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	if (nlen > m.len)
		violation("mremap grew a mapping of slab %llu from %zu to %zu bytes",
			  (unsigned long long)m.id, m.len, nlen);
	if (flags & MREMAP_DONTUNMAP)
		munmap(m.addr, m.len);
	{
		uint8_t *old = m.addr;

		m.addr = p;
		m.len = nlen;
		update_map(old, &m);
	}
}

static void op_madvise(void)
{
	static const int advice[] = {
		MADV_DONTNEED, MADV_DOFORK, MADV_DONTFORK, MADV_WILLNEED,
		MADV_WIPEONFORK, MADV_KEEPONFORK, MADV_HUGEPAGE, MADV_NOHUGEPAGE,
		MADV_COLD, MADV_PAGEOUT, MADV_REMOVE, MADV_DONTDUMP, MADV_DODUMP,
		MADV_SEQUENTIAL, MADV_POPULATE_READ, MADV_POPULATE_WRITE,
	};
	struct mapent m = pick_map();
	int ok;

	if (!m.addr)
		return;
	ok = madvise(m.addr, one_in(3) ? PG : m.len,
		     advice[below(ARRAY_SIZE(advice))]) == 0;
	count(OP_MADVISE, ok);
}

static void op_munmap(void)
{
	struct mapent m = pick_map();
	int ok;

	if (!m.addr)
		return;
	if (m.len > PG && one_in(3)) {	/* the first or the last page */
		struct mapent rest = m;

		if (one_in(2)) {
			ok = munmap(m.addr, PG) == 0;
			rest.addr += PG;
		} else {
			ok = munmap(m.addr + m.len - PG, PG) == 0;
		}
		rest.len -= PG;
		count(OP_MUNMAP, ok);
		if (ok)
			update_map(m.addr, &rest);
		return;
	}
	update_map(m.addr, NULL);
	ok = munmap(m.addr, m.len) == 0;
	count(OP_MUNMAP, ok);
}

/* Read or write one byte of a mapping; faults are caught. */
static void op_touch(void)
{
	struct mapent m = pick_map();
	volatile uint8_t *p;
	int wr, sig;

	if (!m.addr)
		return;
	p = m.addr + below(m.len);
	wr = one_in(2);
	sig = sigsetjmp(fault_jb, 1);
	if (sig) {
		__atomic_add_fetch(&bd->faults, 1, __ATOMIC_RELAXED);
		if (wr && m.inherited)
			__atomic_add_fetch(&bd->writes_denied, 1, __ATOMIC_RELAXED);
		count(OP_TOUCH, 0);
		return;
	}
	fault_armed = 1;
	if (wr)
		*p = (uint8_t)rnd();
	else
		(void)*p;
	fault_armed = 0;
	count(OP_TOUCH, 1);
	/* cannot tell: believe the tables */
	if (wr && m.inherited && map_still(&m) && kernel_mapping_at(p, m.id) != KM_OTHER)
		violation("pid %d wrote to slab %llu through a mapping it inherited",
			  w.me.pid, (unsigned long long)m.id);
}

static void op_dup(void)
{
	struct fdent e = pick_fd(K_FREE);
	int fd;

	if (e.kind == K_FREE)
		return;
	fd = fcntl(e.fd, F_DUPFD_CLOEXEC, 3);
	count(OP_DUP, fd >= 0);
	if (fd < 0)
		return;
	/* a copy of whatever the number had become: not entered as e */
	if (!fd_still(&e)) {
		close(fd);
		return;
	}
	e.fd = fd;
	add_fd(&e);
}

static void op_close(void)
{
	struct fdent e = pick_fd(K_FREE);

	if (e.kind == K_FREE)
		return;
	/* Another thread may have closed (and reused) it meanwhile. */
	if (drop_fd(e.fd))
		count(OP_CLOSE, close(e.fd) == 0);
}

static void op_send(void)
{
	struct fdent e = pick_fd(K_FREE);
	struct passed what;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &what, .iov_len = sizeof(what) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int to = (int)below(w.nprocs), ok;

	if (e.kind == K_FREE)
		return;
	memset(&what, 0, sizeof(what));
	memset(cbuf, 0, sizeof(cbuf));
	what.kind = e.kind;
	what.id = e.id;
	what.size = e.size;
	what.creator = e.creator;
	what.pad = e.writable;
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &e.fd, sizeof(int));
	/* Sent with the lock held, so that no close comes between the check
	 * and the send: the receiver enters it as e (a send is not undone). */
	lock();
	ok = fd_same_locked(&e) &&
	     sendmsg(w.sock_out[to], &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
	unlock();
	count(OP_SEND, ok);
}

static void op_recv(void)
{
	struct passed what;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &what, .iov_len = sizeof(what) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	struct fdent e = { 0 };
	ssize_t n;

	n = recvmsg(w.sock_in, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	count(OP_RECV, n == (ssize_t)sizeof(what));
	if (n != (ssize_t)sizeof(what))
		return;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return;
	memcpy(&e.fd, CMSG_DATA(cm), sizeof(int));
	e.kind = what.kind == K_DEV || what.kind == K_PIPE ? what.kind : K_SLAB;
	e.id = what.id;
	e.size = what.size;
	e.writable = (int)what.pad;
	e.creator = what.creator;
	/* A descriptor back at its creator (or opener) is still its own. */
	e.mine = e.creator.pid == w.me.pid && e.creator.nonce == w.me.nonce;
	add_fd(&e);
}

static void run_ops(int n);

/* The child's view: nothing it inherited is its own. */
static void become_child(void)
{
	unsigned int i;

	w.child = 1;
	memset(w.created, 0, sizeof(w.created));
	w.me.pid = getpid();
	w.me.nonce = (uint32_t)rnd() | 1;
	for (i = 0; i < NFD; i++)
		w.fds[i].mine = 0;
	/*
	 * Only MADV_DOFORK'ed mappings came along, and madvise() may have
	 * marked only a mapping's first page: keep the pages that came, up
	 * to the first that did not. The rest is a hole in this address
	 * space, where a mapping of this child's own may land later; a
	 * write there is no write through an inherited mapping.
	 */
	for (i = 0; i < NMAP; i++) {
		struct mapent *m = &w.maps[i];
		unsigned char vec;
		size_t off = 0;

		while (m->addr && off < m->len && !mincore(m->addr + off, PG, &vec))
			off += PG;
		if (off < m->len)
			m->len = off;
		if (!m->len)
			m->addr = NULL;
		m->inherited = 1;
		m->may_write = 0;
	}
}

/*
 * In a fork child, one time in four: go on as the first process of a pid
 * namespace of its own (and, for a worker that is not root, of a user
 * namespace too), so the account's orphans fall into several orphanages
 * (the module keeps one per account and pid namespace). The child
 * unshares, forks the process that goes on, and waits for it; that one
 * dies with it (a SIGKILL meant for the child ends both). Where the
 * kernel refuses, the child goes on where it is.
 */
static void maybe_enter_pidns(void)
{
	int status = 0;
	pid_t pid;

	if (!one_in(4) || unshare(CLONE_NEWPID | (getuid() ? CLONE_NEWUSER : 0)))
		return;
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		__atomic_add_fetch(&bd->pidns, 1, __ATOMIC_RELAXED);
		return;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128);
}

static void op_fork(void)
{
	pid_t pid;

	lock();		/* no other thread holds the tables in the child */
	pid = fork();
	if (pid == 0) {
		maybe_enter_pidns();
		pthread_mutex_init(&w.lock, NULL);
		rng ^= (uint64_t)getpid() << 32;
		become_child();
		run_ops((int)below(100) + 1);
		if (one_in(4))
			raise(one_in(2) ? SIGSEGV : SIGABRT);
		_exit((int)below(256));
	}
	unlock();
	count(OP_FORK, pid > 0);
	if (pid > 0 && one_in(3)) {
		usleep((useconds_t)below(2000));
		kill(pid, SIGKILL);
	}
}

/* exec ourselves with a few descriptors left open: a new program. */
static void op_exec(void)
{
	char arg[NFD][64], *argv[NFD + 8], slot[16];
	unsigned int i, n = 0, a = 0;
	int suid;
	pid_t pid;

	lock();
	for (i = 0; i < NFD && n < 8; i++) {
		struct fdent *f = &w.fds[i];

		if (f->kind == K_FREE || one_in(2))
			continue;
		snprintf(arg[n], sizeof(arg[n]), "%d:%d:%d:%llu:%llu:%d:%u", f->fd,
			 f->kind, f->writable, (unsigned long long)f->id,
			 (unsigned long long)f->size, f->creator.pid, f->creator.nonce);
		n++;
	}
	/* a worker that is not root: sometimes as an elevated creator */
	suid = suid_path[0] && getuid() && one_in(3);
	pid = fork();
	if (pid == 0) {
		/* Leave the chosen descriptors open across exec. */
		for (i = 0; i < n; i++)
			fcntl(atoi(arg[i]), F_SETFD, 0);
		snprintf(slot, sizeof(slot), "%d", w.slot);
		argv[a++] = "blamer_kfuzz";
		argv[a++] = "--exec-child";
		argv[a++] = slot;
		for (i = 0; i < n; i++)
			argv[a++] = arg[i];
		argv[a] = NULL;
		execv(suid ? suid_path : "/proc/self/exe", argv);
		_exit(127);
	}
	unlock();
	count(OP_EXEC, pid > 0);
}

static void op_exit(void)
{
	count(OP_EXIT, 1);
	if (w.child)
		_exit((int)below(256));
	switch (below(3)) {
	case 0:
		exit((int)below(256));
	case 1:
		_exit((int)below(256));
	default:
		raise(one_in(2) ? SIGKILL : SIGTERM);
	}
}

static void op_kill(void)
{
	int32_t pid = __atomic_load_n(&bd->pids[below(MAX_PROCS)], __ATOMIC_RELAXED);
	int ok;

	if (pid <= 0 || pid == w.me.pid)
		return;
	ok = kill(pid, one_in(2) ? SIGKILL : SIGTERM) == 0;
	count(OP_KILL, ok);
}

/*
 * vmsplice() a mapped range into a new pipe and keep only its read end
 * (kind K_PIPE): the pipe holds the slab's pages until the descriptor is
 * closed, past a release, an eviction and the slab's last file, which is
 * when the module keeps them charged and lets them linger.
 */
static void op_splice(void)
{
	struct mapent m = pick_map();
	struct fdent e = { .kind = K_PIPE };
	struct iovec iov;
	int p[2];
	ssize_t n;

	if (!m.addr || pipe2(p, O_CLOEXEC))
		return;
	iov.iov_base = m.addr + below(m.len);
	iov.iov_len = below(m.len - (size_t)((uint8_t *)iov.iov_base - m.addr)) + 1;
	/* Another thread may unmap it meanwhile: EFAULT, not a fault. */
	n = vmsplice(p[1], &iov, 1, SPLICE_F_NONBLOCK);
	count(OP_SPLICE, n > 0);
	close(p[1]);
	e.fd = p[0];
	add_fd(&e);
}

/*
 * A vfork() child borrows this process's address space: it may open the
 * device, but never create a slab (its parent would write it).
 */
static void op_vfork(void)
{
	static int created;	/* written by vfork children, read after */
	struct blamer_create c = { .length = PG, .fd = -1 };
	pid_t pid;
	int fd;

	__atomic_store_n(&created, 0, __ATOMIC_RELAXED);
	pid = vfork();
	if (pid == 0) {
		fd = open(DEVICE, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && !ioctl(fd, BLAMER_IOC_CREATE, &c))
			__atomic_store_n(&created, 1, __ATOMIC_RELAXED);
		_exit(0);
	}
	count(OP_VFORK, pid > 0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (__atomic_load_n(&created, __ATOMIC_RELAXED))
		violation("a vfork() child of pid %d created a slab", w.me.pid);
}

/*
 * vm-exec: what a vm-exec child (a fork child of a worker) and the
 * process it clone(CLONE_VM)s share, the address space the child leaves
 * at its exec. Only those two use it.
 */
#define VM_STACK	(64 * 1024)
#define VM_WRITE_NS	10000000000ull
#define VM_GIVE_UP_NS	60000000000ull

static struct {
	uint8_t *page;		/* the child's slab, mapped writable */
	uint64_t until_ns;	/* when the writer gives up not knowing of an exec */
	uint32_t k;		/* the child's slot in bd->vm_began */
	int32_t child;		/* its pid */
	uint64_t began;		/* when its new program began, once known */
	volatile int wrote;	/* the writer has written once */
	sigjmp_buf jb;
	_Alignas(16) uint8_t stack[VM_STACK];
} vm;

static void on_vm_fault(int sig)
{
	siglongjmp(vm.jb, sig);
}

/*
 * The CLONE_VM writer: writes the slab until a write faults, which must
 * happen within VM_WRITE_NS of the creator's new program beginning (timed
 * from there: a loaded guest may take long to exec) or of its death. It
 * runs on the thread pointer of the child that made it, which that child
 * no longer uses once it has exec'd, and before that nothing here sets
 * errno.
 */
static int vm_writer(void *arg)
{
	struct sigaction sa;
	uint32_t n = 0;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_vm_fault;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	if (sigsetjmp(vm.jb, 1)) {
		__atomic_add_fetch(&bd->vm_revoked, 1, __ATOMIC_RELAXED);
		_exit(0);
	}
	while (now_ns() < vm.until_ns) {
		*(volatile uint32_t *)vm.page = n++;
		vm.wrote = 1;
		if (!vm.began && __atomic_load_n(&bd->vm_pid[vm.k], __ATOMIC_ACQUIRE) == vm.child)
			vm.began = __atomic_load_n(&bd->vm_began[vm.k], __ATOMIC_RELAXED);
		if (vm.began && now_ns() > vm.began + VM_WRITE_NS) {
			violation("a CLONE_VM process wrote slab memory for %llu s after its creator exec'd",
				  VM_WRITE_NS / 1000000000ull);
			break;
		}
	}
	_exit(0);
}

/* The vm-exec child: creates and writes a slab, starts the writer, execs. */
static void vm_child(void)
{
	struct blamer_create c = { .length = PG, .fd = -1 };
	char slot[16], vmarg[16], *argv[5];
	uint64_t t;
	int fd;

	fd = open(DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, BLAMER_IOC_CREATE, &c))
		_exit(0);
	fcntl(c.fd, F_SETFD, FD_CLOEXEC);
	vm.page = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	if (vm.page == MAP_FAILED)
		_exit(0);
	vm.page[0] = 1;		/* its creator's write: allowed, the page is in */
	vm.until_ns = now_ns() + VM_GIVE_UP_NS;
	vm.k = __atomic_fetch_add(&bd->next_vm, 1, __ATOMIC_RELAXED) % NBOARD;
	vm.child = getpid();
	if (clone(vm_writer, vm.stack + VM_STACK, CLONE_VM | SIGCHLD, NULL) < 0)
		_exit(0);
	for (t = now_ns(); !vm.wrote && now_ns() - t < 1000000000ull;)
		sched_yield();
	snprintf(slot, sizeof(slot), "%d", w.slot);
	snprintf(vmarg, sizeof(vmarg), "vm:%u", vm.k);
	argv[0] = "blamer_kfuzz";
	argv[1] = "--exec-child";
	argv[2] = slot;
	argv[3] = vmarg;
	argv[4] = NULL;
	execv("/proc/self/exe", argv);
	_exit(127);	/* a death ends the writes as well */
}

static void op_vmexec(void)
{
	pid_t pid;

	lock();		/* no other thread holds the tables in the child */
	pid = fork();
	if (pid == 0)
		vm_child();
	unlock();
	count(OP_VMEXEC, pid > 0);
}

static void (*const ops[OP_NR])(void) = {
	op_open_dev, op_create, op_open_slab, op_list, op_release, op_status,
	op_poll, op_mmap, op_mprotect, op_mremap, op_madvise, op_munmap,
	op_touch, op_dup, op_close, op_send, op_recv, op_fork, op_exec,
	op_exit, op_kill, op_splice, op_vfork, op_vmexec,
};

static enum op pick_op(void)
{
	unsigned int total = 0, i, r;

	for (i = 0; i < OP_NR; i++)
		total += op_weight[i];
	r = below(total);
	for (i = 0; i < OP_NR; i++) {
		if (r < op_weight[i])
			break;
		r -= op_weight[i];
	}
	/* A short-lived child neither forks nor execs again. */
	if (w.child && (i == OP_FORK || i == OP_EXEC || i == OP_VFORK || i == OP_VMEXEC))
		i = OP_TOUCH;
	return (enum op)i;
}

/* n ops, or until the deadline if n is 0. */
static void run_ops(int n)
{
	int i;

	for (i = 0; !n || i < n; i++) {
		if (now_ns() > bd->deadline_ns)
			break;
		ops[pick_op()]();
	}
}

static void *thread_main(void *arg)
{
	rng = (uint64_t)(uintptr_t)arg;
	run_ops(0);
	return NULL;
}

static void setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	/* Children of workers are reaped by the kernel. */
	sa.sa_handler = SIG_IGN;
	sa.sa_flags = SA_NOCLDWAIT;
	sigaction(SIGCHLD, &sa, NULL);
}

static void worker_main(int threads)
{
	pthread_t t[MAX_THREADS];
	int i, n = 0;

	setup_signals();
	for (i = 1; i < threads; i++)
		if (pthread_create(&t[n], NULL, thread_main,
				   (void *)(uintptr_t)(rnd() | 1)) == 0)
			n++;
	run_ops(0);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	_exit(0);
}

/* ------------------------------------------------------------ supervisor */

struct opts {
	int seconds, procs, threads, inject;
	uint64_t seed;
};

/* uid of a slot: root, 1000, 1001, root, ... */
static uid_t slot_uid(int slot)
{
	static const uid_t uids[] = { 0, 1000, 1001 };

	return uids[slot % 3];
}

static pid_t spawn(int slot, const struct opts *o, int *sock_in)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	rng = o->seed ^ ((uint64_t)getpid() << 20) ^ now_ns();
	w.slot = slot;
	w.me.pid = getpid();
	w.me.nonce = (uint32_t)rnd() | 1;
	w.sock_in = sock_in[slot];
	if (slot_uid(slot)) {
		gid_t g = slot_uid(slot);

		if (setgroups(0, NULL) || setresgid(g, g, g) ||
		    setresuid(slot_uid(slot), slot_uid(slot), slot_uid(slot))) {
			__atomic_add_fetch(&bd->startfail, 1, __ATOMIC_RELAXED);
			_exit(1);
		}
	}
	/* Half the workers are not dumpable: readers then need CAP_SYS_PTRACE. */
	prctl(PR_SET_DUMPABLE, one_in(2) ? 0 : 1);
	worker_main(o->threads);
	return 0;
}

/* The exec'd child: the descriptors on the command line, not its own. */
static int exec_child(int argc, char **argv)
{
	uint64_t began = 0;
	int i;

	/* The board and the sockets are inherited (see main). */
	bd = mmap(NULL, sizeof(*bd), PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0);
	if (bd == MAP_FAILED)
		_exit(125);
	pthread_mutex_init(&w.lock, NULL);
	rng = now_ns() ^ ((uint64_t)getpid() << 32);
	w.slot = atoi(argv[2]);
	w.child = 1;
	w.elevated = geteuid() != getuid();
	if (w.elevated)
		__atomic_add_fetch(&bd->suid_execs, 1, __ATOMIC_RELAXED);
	w.me.pid = getpid();
	w.me.nonce = (uint32_t)rnd() | 1;
	for (i = 0; i < MAX_PROCS; i++)
		w.sock_out[i] = 4 + 2 * i + 1;
	w.sock_in = 4 + 2 * w.slot;
	w.nprocs = MAX_PROCS;
	for (i = 3; i < argc && i - 3 < NFD; i++) {
		struct fdent *f = &w.fds[i - 3];
		unsigned long long id, size;
		unsigned int k;
		int kind;

		/* a vm-exec child's: its writer times its writes from now */
		if (sscanf(argv[i], "vm:%u", &k) == 1 && k < NBOARD) {
			began = now_ns();
			__atomic_store_n(&bd->vm_began[k], began, __ATOMIC_RELAXED);
			__atomic_store_n(&bd->vm_pid[k], (int32_t)getpid(), __ATOMIC_RELEASE);
			continue;
		}
		if (sscanf(argv[i], "%d:%d:%d:%llu:%llu:%d:%u", &f->fd, &kind,
			   &f->writable, &id, &size, &f->creator.pid,
			   &f->creator.nonce) != 7)
			continue;
		f->kind = kind == K_DEV || kind == K_PIPE ? kind : K_SLAB;
		f->id = id;
		f->size = size;
		f->mine = 0;
		fcntl(f->fd, F_SETFD, FD_CLOEXEC);
	}
	setup_signals();
	run_ops((int)below(100) + 1);
	/*
	 * A vm-exec child lives on past its writer's time: its death would
	 * stop the writer too, and only the exec's revocation may (unless
	 * the run ends first).
	 */
	while (began && now_ns() < began + VM_WRITE_NS + 2000000000ull &&
	       now_ns() < bd->deadline_ns)
		usleep(100000);
	_exit(0);
}

static void die(const char *what)
{
	printf("not ok 1 - blamer_kfuzz: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: blamer_kfuzz [-t SECONDS] [-p PROCS] [-T THREADS] [-s SEED] [-f]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	o->seconds = 20;
	o->procs = 6;
	o->threads = 3;
	o->inject = 0;
	o->seed = (uint64_t)time(NULL);
	while ((c = getopt(argc, argv, "t:p:T:s:f")) != -1) {
		switch (c) {
		case 't': o->seconds = atoi(optarg); break;
		case 'p': o->procs = atoi(optarg); break;
		case 'T': o->threads = atoi(optarg); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 'f': o->inject = 1; break;
		default: usage();
		}
	}
	if (optind != argc || o->seconds < 1 || o->procs < 1 ||
	    o->procs > MAX_PROCS || o->threads < 1 || o->threads > MAX_THREADS)
		usage();
}

/* Write VALUE to a debugfs or procfs knob; 0 or -errno. */
static int knob(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* failslab and fail_page_alloc for tasks that ask (make-it-fail), quiet. */
static int setup_injection(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/debug/failslab", "/sys/kernel/debug/fail_page_alloc",
	};
	char p[128];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s/task-filter", dirs[i]);
		if (knob(p, "Y"))
			return -1;
		snprintf(p, sizeof(p), "%s/probability", dirs[i]);
		knob(p, "50");
		snprintf(p, sizeof(p), "%s/times", dirs[i]);
		knob(p, "-1");
		snprintf(p, sizeof(p), "%s/verbose", dirs[i]);
		knob(p, "0");
	}
	/*
	 * The defaults spare what the module allocates: sleeping
	 * allocations (both) and order-0 pages (fail_page_alloc).
	 */
	for (i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s/ignore-gfp-wait", dirs[i]);
		knob(p, "N");
	}
	snprintf(p, sizeof(p), "%s/ignore-gfp-highmem", dirs[1]);
	knob(p, "N");
	snprintf(p, sizeof(p), "%s/min-order", dirs[1]);
	knob(p, "0");
	return 0;
}

#define PARAMS "/sys/module/blamer/parameters/"

/*
 * The limits an administrator may change while the device is in use,
 * with the values the supervisor picks from now and then: orphans kept
 * per account and namespace (0 evicts every orphan at once; lowering it
 * evicts many at the next death), bytes per account (creates evict the
 * creator's orphans to make room), the readers' group (gid 1000: the
 * uid 1000 workers may then read, and release, everyone's orphans), and
 * the watching descriptors per account (polls and lists beyond it).
 */
static const struct {
	const char *name;
	const char *values[4];
} knobs[] = {
	{ PARAMS "max_user_orphans", { "0", "1", "3", "64" } },
	{ PARAMS "max_user_bytes", { "262144", "1048576", "8388608", "67108864" } },
	{ PARAMS "reader_gid", { "-1", "-1", "-1", "1000" } },
	{ PARAMS "max_user_watchers", { "1", "2", "8", "64" } },
};

static char knob_saved[ARRAY_SIZE(knobs)][32];

static void knobs_save(void)
{
	unsigned int i;
	ssize_t n;
	int fd;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		fd = open(knobs[i].name, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, knob_saved[i], sizeof(knob_saved[i]) - 1);
		knob_saved[i][n > 0 ? n : 0] = 0;
		if (fd >= 0)
			close(fd);
	}
}

static void knobs_turn(void)
{
	unsigned int i = (unsigned int)below(ARRAY_SIZE(knobs));

	if (knob_saved[i][0])
		knob(knobs[i].name, knobs[i].values[below(4)]);
}

static void knobs_restore(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(knobs); i++)
		if (knob_saved[i][0])
			knob(knobs[i].name, knob_saved[i]);
}

/*
 * A set-user-ID root copy of this program, which workers that are not
 * root run as elevated creators (their orphans are kept apart from their
 * user's, and are not that user's to read or release); none if the file
 * system will not have it.
 */
static void make_suid_copy(void)
{
	static const char path[] = "/blamer_kfuzz-suid";
	char buf[65536];
	int in, out, ok;
	ssize_t n;

	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	ok = in >= 0 && out >= 0;
	while (ok && (n = read(in, buf, sizeof(buf))) != 0)
		ok = n > 0 && write(out, buf, (size_t)n) == n;
	ok = ok && !fchown(out, 0, 0) && !fchmod(out, 04755);
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		ok = 0;
	if (ok)
		snprintf(suid_path, sizeof(suid_path), "%s", path);
	else if (out >= 0)
		unlink(path);
}

/* Release every orphan (as root), then the device must be empty. */
static int final_check(char *why, size_t whylen)
{
	struct blamer_slab_info info[64];
	struct blamer_status st;
	int fd, round;

	fd = open(DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "open %s: %s", DEVICE, strerror(errno));
		return -1;
	}
	for (round = 0; round < 100; round++) {
		struct blamer_list l = {
			.slabs = (uintptr_t)info, .info_size = sizeof(info[0]),
			.capacity = ARRAY_SIZE(info),
		};
		uint32_t i;

		if (ioctl(fd, BLAMER_IOC_LIST, &l)) {
			snprintf(why, whylen, "list: %s", strerror(errno));
			close(fd);
			return -1;
		}
		if (l.events > bd->max_events)
			bd->max_events = l.events;
		if (!l.count)
			break;
		for (i = 0; i < l.count; i++) {
			struct blamer_release r = { .id = info[i].id };

			if (ioctl(fd, BLAMER_IOC_RELEASE, &r) && errno != ENOENT) {
				snprintf(why, whylen, "release %llu (%s): %s",
					 (unsigned long long)info[i].id,
					 info[i].state == BLAMER_SLAB_LIVE ? "live" : "orphan",
					 strerror(errno));
				close(fd);
				return -1;
			}
		}
	}
	/*
	 * Pages go when their last file and mapping do; the files that were
	 * in flight in the sockets are put from a work queue, and forked and
	 * exec'd children of workers may still be finishing: give them 10 s.
	 */
	for (round = 0; round < 100; round++) {
		memset(&st, 0, sizeof(st));
		if (ioctl(fd, BLAMER_IOC_STATUS, &st)) {
			snprintf(why, whylen, "status: %s", strerror(errno));
			close(fd);
			return -1;
		}
		if (!st.slabs && !st.orphans && !st.bytes)
			break;
		usleep(100000);
	}
	close(fd);
	snprintf(why, whylen, "%llu slabs, %llu orphans, %llu bytes",
		 (unsigned long long)st.slabs, (unsigned long long)st.orphans,
		 (unsigned long long)st.bytes);
	return st.slabs || st.orphans || st.bytes ? -1 : 0;
}

int main(int argc, char **argv)
{
	int sp[MAX_PROCS][2], sock_in[MAX_PROCS], i, memfd, nt = 0, check;
	uint64_t total = 0, respawns = 0, startfail, events, knob_at = 0, knob_turns = 0;
	pid_t pids[MAX_PROCS];
	struct opts o;
	char why[160];

	if (argc >= 3 && !strcmp(argv[1], "--exec-child"))
		return exec_child(argc, argv);
	parse(argc, argv, &o);
	if (geteuid()) {
		fprintf(stderr, "blamer_kfuzz: run as root (workers switch to uids 1000 and 1001)\n");
		return 2;
	}
	/*
	 * Fixed descriptor numbers, so an exec'd child finds them: 3 the
	 * board (a memfd), 4 + 2i and 5 + 2i slot i's receiving and sending
	 * ends. Neither is close-on-exec.
	 */
	memfd = memfd_create("blamer_kfuzz", 0);
	if (memfd < 0 || dup2(memfd, 3) != 3 || ftruncate(3, sizeof(*bd)))
		die("memfd");
	if (memfd != 3)
		close(memfd);
	bd = mmap(NULL, sizeof(*bd), PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0);
	if (bd == MAP_FAILED)
		die("mmap");
	for (i = 0; i < MAX_PROCS; i++) {
		if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sp[i]) ||
		    dup2(sp[i][0], 4 + 2 * i) < 0 || dup2(sp[i][1], 5 + 2 * i) < 0)
			die("socketpair");
	}
	for (i = 0; i < MAX_PROCS; i++) {
		if (sp[i][0] != 4 + 2 * i && sp[i][0] > 5 + 2 * (MAX_PROCS - 1))
			close(sp[i][0]);
		if (sp[i][1] != 5 + 2 * i && sp[i][1] > 5 + 2 * (MAX_PROCS - 1))
			close(sp[i][1]);
		sock_in[i] = 4 + 2 * i;
		w.sock_out[i] = 5 + 2 * i;
	}
	pthread_mutex_init(&w.lock, NULL);
	w.nprocs = o.procs;
	w.inject = o.inject && setup_injection() == 0;
	bd->deadline_ns = now_ns() + (uint64_t)o.seconds * 1000000000ull;
	rng = o.seed | 1;
	knobs_save();
	make_suid_copy();
	printf("TAP version 13\n1..5\n");
	printf("# blamer_kfuzz: %d s, %d processes x %d threads, seed %llu%s\n",
	       o.seconds, o.procs, o.threads, (unsigned long long)o.seed,
	       w.inject ? ", fault injection" : "");
	fflush(stdout);
	for (i = 0; i < o.procs; i++) {
		pids[i] = spawn(i, &o, sock_in);
		bd->pids[i] = pids[i];
	}
	/* Replace the dead until the time is up; turn a knob now and then. */
	while (now_ns() < bd->deadline_ns) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (now_ns() >= knob_at) {
			knobs_turn();
			knob_turns++;
			knob_at = now_ns() + below(2000) * 1000000ull;
		}

		if (pid <= 0) {
			usleep(20000);
			continue;
		}
		for (i = 0; i < o.procs; i++)
			if (pids[i] == pid) {
				pids[i] = spawn(i, &o, sock_in);
				bd->pids[i] = pids[i];
				respawns++;
			}
	}
	knobs_restore();
	for (i = 0; i < o.procs; i++)
		kill(pids[i], SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	/* Descriptors still in flight in the sockets hold their slabs' files. */
	for (i = 0; i < MAX_PROCS; i++) {
		close(4 + 2 * i);
		close(5 + 2 * i);
	}
	/* Exec'd and forked children of workers end on their own: wait for them. */
	for (i = 0; i < 50; i++) {
		struct blamer_status st = { 0 };
		int fd = open(DEVICE, O_RDONLY | O_CLOEXEC);
		int busy = fd >= 0 && !ioctl(fd, BLAMER_IOC_STATUS, &st) &&
			   st.slabs > st.orphans;

		if (fd >= 0)
			close(fd);
		if (!busy)
			break;
		usleep(100000);
	}
	check = final_check(why, sizeof(why));
	startfail = bd->startfail;
	if (suid_path[0])
		unlink(suid_path);

	for (i = 0; i < OP_NR; i++)
		total += bd->tries[i];
	printf("# operations (tried/succeeded):");
	for (i = 0; i < OP_NR; i++) {
		if (i % 6 == 0)
			printf("\n#  ");
		printf(" %s %llu/%llu", op_names[i], (unsigned long long)bd->tries[i],
		       (unsigned long long)bd->oks[i]);
	}
	printf("\n# faults caught %llu (inherited-mapping writes refused %llu), writable maps %llu, injected failures %llu, children in a new pid namespace %llu, limits changed %llu times\n",
	       (unsigned long long)bd->faults, (unsigned long long)bd->writes_denied,
	       (unsigned long long)bd->maps_rw, (unsigned long long)bd->injected,
	       (unsigned long long)bd->pidns, (unsigned long long)knob_turns);
	printf("# set-user-ID execs that ran elevated %llu%s (their slabs %u; plain uid 1001 tried to open or release theirs %llu times), CLONE_VM writers stopped after their creator's exec %llu\n",
	       (unsigned long long)bd->suid_execs, suid_path[0] ? "" : " (no set-user-ID copy)",
	       bd->next_elev, (unsigned long long)bd->plain_1001,
	       (unsigned long long)bd->vm_revoked);
	for (i = 0; i < NVIOL && i < (int)bd->nviol; i++)
		if (bd->viol[i][0])
			printf("# violation: %s\n", bd->viol[i]);
	nt++;
	printf("%s %d - %llu operations in %d s, %llu workers replaced\n",
	       total ? "ok" : "not ok", nt, (unsigned long long)total,
	       o.seconds, (unsigned long long)respawns);
	nt++;
	printf("%s %d - the module's promises held (%u violations)\n",
	       bd->violations ? "not ok" : "ok", nt, bd->violations);
	events = bd->max_events;
	nt++;
	printf("%s %d - it reached the device: %llu slabs created, %llu mapped, %llu released, %llu events\n",
	       bd->oks[OP_CREATE] && bd->oks[OP_MMAP] && events ? "ok" : "not ok", nt,
	       (unsigned long long)bd->oks[OP_CREATE], (unsigned long long)bd->oks[OP_MMAP],
	       (unsigned long long)bd->oks[OP_RELEASE], (unsigned long long)events);
	nt++;
	printf("%s %d - afterwards the device is empty (%s)\n",
	       check ? "not ok" : "ok", nt, why);
	nt++;
	printf("%s %d - every worker started as its user (%llu failed)\n",
	       startfail ? "not ok" : "ok", nt, (unsigned long long)startfail);
	return total && !bd->violations && bd->oks[OP_CREATE] && events &&
	       !check && !startfail ? 0 : 1;
}
