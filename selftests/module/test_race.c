// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: ioctls racing each other. IDs are sequential,
 * so a racer need not be handed an ID to use it: it guesses the next
 * ones. The threads of one process race CREATE against RELEASE and OPEN
 * of the IDs it is about to return (what once freed a slab under
 * CREATE's feet), every ioctl against every other, with mappings made
 * and dropped; processes of the same user and of another race the same
 * way, and die while they do. The kernel must say nothing (the VM
 * runner fails the run on any report), the device must still answer,
 * and what the racers observe must keep the rules: another user never
 * releases or opens what is not its own.
 */
#include <poll.h>
#include <time.h>

#include "blamer_test.h"

#define RACE_MS 1500

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* What the racers share: the last ID created, and counts. */
struct race {
	int dev;
	long long deadline;
	__u64 last_id;
	unsigned long created, released_early, opened_early, ops;
	unsigned int seed;
};

/* The newest ID any racing process made (shared memory), or NULL. */
static __u64 *newest;

static bool race_on(struct race *r)
{
	return now_ms() < r->deadline;
}

static __u64 next_guess(struct race *r, unsigned int ahead)
{
	return __atomic_load_n(&r->last_id, __ATOMIC_RELAXED) + ahead;
}

/*
 * Create one-page slabs as fast as possible, publishing each ID, and
 * release each one once the next exists (so the table stays small).
 */
static void *creator(void *arg)
{
	struct race *r = arg;
	struct blamer_create c;
	__u64 prev = 0;

	while (race_on(r)) {
		if (bl_create(r->dev, PG, &c))
			continue;
		__atomic_store_n(&r->last_id, c.id, __ATOMIC_RELAXED);
		__atomic_fetch_add(&r->created, 1, __ATOMIC_RELAXED);
		close(c.fd);
		if (prev)
			bl_release(r->dev, prev);
		prev = c.id;
	}
	return NULL;
}

struct guesser {
	struct race *r;
	unsigned int ahead;
};

/* RELEASE the ID the creator is about to be handed. */
static void *releaser(void *arg)
{
	struct guesser *g = arg;

	while (race_on(g->r))
		if (!bl_release(g->r->dev, next_guess(g->r, g->ahead)))
			__atomic_fetch_add(&g->r->released_early, 1,
					   __ATOMIC_RELAXED);
	return NULL;
}

/* OPEN, map and read the ID the creator is about to be handed. */
static void *opener(void *arg)
{
	struct guesser *g = arg;
	int sfd;
	char *p;

	while (race_on(g->r)) {
		sfd = bl_open_slab(g->r->dev, next_guess(g->r, g->ahead));
		if (sfd < 0)
			continue;
		__atomic_fetch_add(&g->r->opened_early, 1, __ATOMIC_RELAXED);
		p = bl_map(sfd, PG, PROT_READ);
		if (p) {
			bl_peek(p);
			munmap(p, PG);
		}
		close(sfd);
	}
	return NULL;
}

/* The slabs of this process the device lists, and its user's count. */
static void count_mine(struct __test_metadata *_metadata, int dev,
		       unsigned long *mine)
{
	struct blamer_slab_info *v;
	int n, i;

	*mine = 0;
	n = bl_list(dev, &v, NULL);
	ASSERT_LE(0, n);
	for (i = 0; i < n; i++)
		if (v[i].flags & BLAMER_SLAB_MINE)
			(*mine)++;
	free(v);
}

/* Release every live slab of this process. */
static void release_mine(int dev)
{
	struct blamer_slab_info *v;
	int n, i;

	n = bl_list(dev, &v, NULL);
	for (i = 0; i < n; i++)
		if (v[i].flags & BLAMER_SLAB_MINE)
			bl_release(dev, v[i].id);
	if (n >= 0)
		free(v);
}

/*
 * One creator, two threads releasing the next two IDs, one opening the
 * next: a released slab must stay whole until CREATE has made its file.
 * Afterwards the listing and the account agree with what survived.
 */
TEST(release_and_open_ids_not_yet_returned)
{
	struct guesser g1, g2, g3;
	struct blamer_status st0, st;
	pthread_t t[4];
	struct race r = { 0 };
	unsigned long mine;

	r.dev = bl_open(O_RDWR);
	ASSERT_LE(0, r.dev);
	ASSERT_EQ(0, bl_status(r.dev, &st0));
	r.deadline = now_ms() + RACE_MS;
	g1 = (struct guesser){ &r, 1 };
	g2 = (struct guesser){ &r, 2 };
	g3 = (struct guesser){ &r, 1 };
	ASSERT_EQ(0, pthread_create(&t[0], NULL, creator, &r));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, releaser, &g1));
	ASSERT_EQ(0, pthread_create(&t[2], NULL, releaser, &g2));
	ASSERT_EQ(0, pthread_create(&t[3], NULL, opener, &g3));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	TH_LOG("%lu created, %lu released and %lu opened by guessers",
	       r.created, r.released_early, r.opened_early);
	EXPECT_LT(0, r.created);
	count_mine(_metadata, r.dev, &mine);
	ASSERT_EQ(0, bl_status(r.dev, &st));
	EXPECT_EQ(st0.user_slabs + mine, st.user_slabs);
	EXPECT_LE(mine, r.created);
	release_mine(r.dev);
	count_mine(_metadata, r.dev, &mine);
	EXPECT_EQ(0, mine);
	close(r.dev);
}

/*
 * Every ioctl against every other, with the IDs near the newest, and
 * mappings made, touched and dropped: from @nthreads threads of this
 * process, until the deadline.
 */
static unsigned int rnd(unsigned int *seed)
{
	return rand_r(seed);
}

/* Close slot @k's descriptor, and release the slab it created. */
static void drop_slot(struct race *r, int *fds, __u64 *made, int k)
{
	if (fds[k] >= 0)
		close(fds[k]);
	if (made[k])
		bl_release(r->dev, made[k]);
	fds[k] = -1;
	made[k] = 0;
}

static void *chaos(void *arg)
{
	struct race *r = arg;
	unsigned int seed = __atomic_fetch_add(&r->seed, 7919,
					       __ATOMIC_RELAXED);
	struct blamer_slab_info info[16];
	struct blamer_create c;
	struct blamer_status st;
	struct blamer_list l;
	int fds[4] = { -1, -1, -1, -1 }, sfd, k;
	__u64 made[4] = { 0 };	/* the slab a slot's fd created, if any */
	struct pollfd pfd;
	char *p;

	while (race_on(r)) {
		__u64 id = next_guess(r, rnd(&seed) % 5);

		k = rnd(&seed) % 4;
		switch (rnd(&seed) % 8) {
		case 0:
			if (!bl_create(r->dev, (rnd(&seed) % 4 + 1) * PG, &c)) {
				__atomic_store_n(&r->last_id, c.id,
						 __ATOMIC_RELAXED);
				if (newest)
					__atomic_store_n(newest, c.id,
							 __ATOMIC_RELAXED);
				drop_slot(r, fds, made, k);
				fds[k] = c.fd;
				made[k] = c.id;
			}
			break;
		case 1:
			sfd = bl_open_slab(r->dev, id);
			if (sfd >= 0) {
				drop_slot(r, fds, made, k);
				fds[k] = sfd;
			}
			break;
		case 2:
			memset(&l, 0, sizeof(l));
			l.slabs = (uintptr_t)info;
			l.capacity = ARRAY_SIZE(info);
			l.info_size = sizeof(info[0]);
			l.start_id = rnd(&seed) % 2 ? id - 8 : 0;
			ioctl(r->dev, BLAMER_IOC_LIST, &l);
			break;
		case 3:
			bl_release(r->dev, id);
			break;
		case 4:
			bl_status(r->dev, &st);
			break;
		case 5:
			if (fds[k] < 0)
				break;
			p = bl_map(fds[k], PG, PROT_READ | PROT_WRITE);
			if (!p)
				p = bl_map(fds[k], PG, PROT_READ);
			if (p) {
				bl_peek(p);
				munmap(p, PG);
			}
			break;
		case 6:
			drop_slot(r, fds, made, k);
			break;
		case 7:
			pfd.fd = r->dev;
			pfd.events = POLLIN;
			poll(&pfd, 1, 0);
			break;
		}
		__atomic_fetch_add(&r->ops, 1, __ATOMIC_RELAXED);
	}
	for (k = 0; k < 4; k++)
		drop_slot(r, fds, made, k);
	return NULL;
}

static int chaos_threads(int dev, int nthreads, long long ms)
{
	struct race r = { .dev = dev, .seed = getpid() };
	pthread_t t[8];
	int i;

	r.deadline = now_ms() + ms;
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, chaos, &r))
			return -1;
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	return r.ops ? 0 : -1;
}

TEST(every_ioctl_against_every_other_across_threads)
{
	int dev = bl_open(O_RDWR);

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, chaos_threads(dev, 6, RACE_MS));
	release_mine(dev);
	close(dev);
}

/* A racing process: its own device file, chaos, then exit or a kill. */
static pid_t chaos_process(long long ms)
{
	pid_t pid = fork();
	int dev;

	if (pid)
		return pid;
	dev = bl_open(O_RDWR);
	if (dev < 0)
		_exit(1);
	_exit(chaos_threads(dev, 3, ms) ? 2 : 0);
}

/*
 * Processes of the same user race with guessed IDs, and die while they
 * do (exits turn their slabs into orphans under the others' feet); a
 * process of another user races along, and never gets to open or
 * release a slab it did not make.
 */
static bool listed(const struct blamer_slab_info *v, int n, __u64 id)
{
	for (int i = 0; i < n; i++)
		if (v[i].id == id)
			return true;
	return false;
}

static int foreign_racer(void *arg)
{
	long long deadline = now_ms() + *(long long *)arg;
	int dev = bl_open(O_RDWR), sfd, bad = 0, n;
	struct blamer_slab_info *v;
	__u64 id, g;

	if (dev < 0)
		return 70;
	while (now_ms() < deadline) {
		/*
		 * What it may read it lists (its own user's orphans of
		 * earlier tests); it makes nothing, and every other ID
		 * near the newest must stay closed to it.
		 */
		n = bl_list(dev, &v, NULL);
		if (n < 0)
			return 72;
		id = __atomic_load_n(newest, __ATOMIC_RELAXED);
		for (g = id > 16 ? id - 16 : 1; g < id + 4; g++) {
			if (listed(v, n, g))
				continue;
			sfd = bl_open_slab(dev, g);
			if (sfd >= 0) {
				bad++;
				close(sfd);
			}
			if (!bl_release(dev, g))
				bad++;
		}
		free(v);
	}
	return bad ? 71 : 0;
}

TEST(processes_of_two_users_race_and_die)
{
	long long ms = RACE_MS;
	int status, foreign = -1, i;
	pid_t p[4];

	newest = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, newest);
	for (i = 0; i < 4; i++) {
		p[i] = chaos_process(ms);
		ASSERT_LE(0, p[i]);
	}
	usleep(ms * 1000 / 3);
	kill(p[0], SIGKILL);
	kill(p[1], SIGTERM);
	if (!geteuid())
		foreign = bt_run_as(1000, 1000, foreign_racer, &ms);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(p[i], waitpid(p[i], &status, 0));
		if (i >= 2) {
			EXPECT_TRUE(WIFEXITED(status));
			EXPECT_EQ(0, WEXITSTATUS(status));
		}
	}
	if (!geteuid())
		EXPECT_EQ(0, foreign);
	munmap(newest, PG);
	newest = NULL;
	bt_clean_orphans();
}

/*
 * The same race across pid namespaces: each container keeps its own
 * orphans (a list per account and namespace, at a limit of 2 here, so
 * deaths evict), made and freed while racers in the host and in the
 * other containers create, release and open guessed IDs. Two containers
 * are killed mid-race, their slabs orphaned under the others' feet.
 */
static int container_chaos(long long ms, long long kill_after_ms)
{
	int status;
	pid_t inner;

	if (unshare(CLONE_NEWPID))
		return 80;
	inner = chaos_process(ms);
	if (inner < 0)
		return 81;
	if (kill_after_ms) {
		usleep(kill_after_ms * 1000);
		kill(inner, SIGKILL);
	}
	if (waitpid(inner, &status, 0) != inner)
		return 82;
	if (kill_after_ms)
		return WIFSIGNALED(status) || WIFEXITED(status) ? 0 : 83;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 84;
}

TEST(containers_race_and_die)
{
	long long ms = RACE_MS;
	struct bt_params saved;
	int status, i;
	pid_t p[6];

	if (geteuid())
		SKIP(return, "needs root (pid namespaces, the orphan limit)");
	bt_params_save(&saved);
	ASSERT_TRUE(saved.ok);
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 2));
	newest = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, newest);
	for (i = 0; i < 4; i++) {
		p[i] = fork();
		ASSERT_LE(0, p[i]);
		if (!p[i])
			_exit(container_chaos(ms, i < 2 ? ms / 3 : 0));
	}
	for (i = 4; i < 6; i++) {
		p[i] = chaos_process(ms);
		ASSERT_LE(0, p[i]);
	}
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(p[i], waitpid(p[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("racer %d", i);
	}
	munmap(newest, PG);
	newest = NULL;
	EXPECT_EQ(0, bt_params_restore(&saved));
	bt_clean_orphans();
}

/*
 * A thread creates while another one execs: the new program is not the
 * creator of what the old one made, whatever the interleaving. The
 * exec'd blamer_slabctl lists its user's slabs; none of the old
 * program's is its own (BLAMER_SLAB_MINE), so it cannot map them
 * writable either (exec_ends_write_access).
 */
static void *create_loop(void *arg)
{
	struct blamer_create c;
	int dev = *(int *)arg;

	for (;;)
		if (!bl_create(dev, PG, &c))
			close(c.fd);
	return NULL;
}

TEST(exec_racing_create)
{
	const char *ctl = bt_slabctl();
	int status, dev, up[2];
	char out[64] = "";
	pthread_t t;
	ssize_t n;
	pid_t pid;

	if (!ctl)
		SKIP(return, "blamer_slabctl not found (BLAMER_SLABCTL)");
	for (int round = 0; round < 8; round++) {
		ASSERT_EQ(0, pipe(up));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			dev = bl_open(O_RDWR);
			if (dev < 0 || pthread_create(&t, NULL, create_loop, &dev))
				_exit(1);
			usleep(1000 * (round + 1));
			dup2(up[1], 1);
			execl(ctl, "blamer_slabctl", "mine", "0", (char *)NULL);
			_exit(2);
		}
		close(up[1]);
		n = read(up[0], out, sizeof(out) - 1);
		out[n > 0 ? n : 0] = 0;
		out[strcspn(out, "\n")] = 0;
		close(up[0]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_STREQ("0", out) TH_LOG("round %d", round);
		bt_clean_orphans();
	}
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
