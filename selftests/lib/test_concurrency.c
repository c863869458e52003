// SPDX-License-Identifier: MIT
/*
 * Concurrency tests of the writer (run under TSan as suite lib-tsan and
 * under ASan/UBSan with the others): allocation to full from 16 threads,
 * walking the list while others append, re-typing races, growth races,
 * thread churn, first uses of series (and again in a fork child),
 * measurements (exact, read while added, from signal
 * handlers, over thread churn), pushes from signal handlers, and the
 * reader's "now" against activities pushed while it reads.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "common.h"

#define NTHREADS 16

struct payload {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint32_t writer, seq;
};

struct alloc_arg {
	struct blamer *b;
	int id;
	pthread_barrier_t *go;
	blamer_ref *refs;
	size_t n, cap;
	int err;
};

static void *alloc_until_full(void *p)
{
	struct alloc_arg *a = p;
	struct bl_heap *h = &a->b->heap;

	pthread_barrier_wait(a->go);
	for (;;) {
		uint32_t size = sizeof(struct payload) + 8 * ((a->id + a->n) % 5);
		int err = 0;
		blamer_ref r = bl_heap_alloc(h, size, T_REC_TEST, &err);
		struct payload *pl;

		if (!r) {
			if (err == EAGAIN)
				continue;	/* another thread is adding a slab */
			a->err = err;
			return NULL;
		}
		pl = bl_ptr(h, r);
		pl->writer = a->id;
		pl->seq = a->n;
		if (!bl_heap_make_iterable(h, r)) {
			a->err = EIO;
			return NULL;
		}
		if (a->n == a->cap)
			return NULL;
		a->refs[a->n++] = r;
	}
}

static int cmp_ref(const void *x, const void *y)
{
	blamer_ref a = *(const blamer_ref *)x, b = *(const blamer_ref *)y;

	return a < b ? -1 : a > b;
}

TEST_F(ctx, alloc_16_threads_until_full)
{
	struct alloc_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	pthread_barrier_t go;
	struct blamer_config c;
	blamer_ref *all, r;
	struct bl_iter it = { 0 };
	struct v_stats st;
	struct v_heap v;
	size_t total = 0, listed = 0, i;
	struct blamer *b;
	uint32_t t;

	c = t_cfg(self->dir, 65536, 8);
	ASSERT_EQ(0, t_open(self, &c, &b));
	pthread_barrier_init(&go, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++) {
		args[i] = (struct alloc_arg){ .b = b, .id = i, .go = &go, .cap = 65536 };
		args[i].refs = calloc(args[i].cap, sizeof(blamer_ref));
		ASSERT_EQ(0, pthread_create(&th[i], NULL, alloc_until_full, &args[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		ASSERT_EQ(ENOSPC, args[i].err);
		total += args[i].n;
	}
	ASSERT_EQ(8, b->heap.hh->slab_count);
	ASSERT_TRUE(bl_heap_flags(&b->heap) & BLAMER_HEAP_F_FULL);
	ASSERT_GT(total, 8 * 65536 / 96);
	all = calloc(total + 1, sizeof(*all));
	/* every allocation is on the list exactly once, nothing else is */
	while ((r = bl_heap_next(&b->heap, &it, &t))) {
		if (t != T_REC_TEST)
			continue;
		ASSERT_LT(listed, total);
		all[listed++] = r;
	}
	ASSERT_EQ(total, listed);
	qsort(all, listed, sizeof(*all), cmp_ref);
	for (i = 1; i < listed; i++)
		ASSERT_NE(all[i - 1], all[i]);
	/* and every record is the one its thread made */
	for (i = 0; i < NTHREADS; i++) {
		size_t k;

		for (k = 0; k < args[i].n; k++) {
			struct payload *pl = bl_ptr(&b->heap, args[i].refs[k]);

			ASSERT_EQ(i, pl->writer);
			ASSERT_EQ(k, pl->seq);
		}
		free(args[i].refs);
	}
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(total, st.by_type[T_REC_TEST]);
	free(all);
	t_close(self, b);
}

struct walk_arg {
	struct blamer *b;
	atomic_int *stop;
	pthread_barrier_t *go;
	int walks, bad;
	char why[96];
};

#define APPENDERS 4
#define PER_APPENDER 4000

static void *walker(void *p)
{
	struct walk_arg *w = p;

	pthread_barrier_wait(w->go);
	do {
		uint32_t last[APPENDERS] = { 0 }, t;
		bool seen[APPENDERS] = { 0 };
		struct bl_iter it = { 0 };
		blamer_ref r;

		while ((r = bl_heap_next(&w->b->heap, &it, &t))) {
			struct payload *pl;

			if (t != T_REC_TEST)
				continue;
			pl = bl_heap_get(&w->b->heap, r, T_REC_TEST, sizeof(*pl));
			if (!pl || pl->writer >= APPENDERS) {
				snprintf(w->why, sizeof(w->why), "bad record");
				w->bad++;
				break;
			}
			/* each appender's records appear in its order, once */
			if (seen[pl->writer] && pl->seq != last[pl->writer] + 1) {
				snprintf(w->why, sizeof(w->why), "writer %u: %u after %u",
					 pl->writer, pl->seq, last[pl->writer]);
				w->bad++;
			}
			seen[pl->writer] = true;
			last[pl->writer] = pl->seq;
		}
		w->walks++;
	} while (!atomic_load(w->stop));
	return NULL;
}

static void *appender(void *p)
{
	struct alloc_arg *a = p;
	uint32_t k;

	pthread_barrier_wait(a->go);
	for (k = 0; k < PER_APPENDER; k++) {
		int err = 0;
		blamer_ref r;
		struct payload *pl;

		do
			r = bl_heap_alloc(&a->b->heap, sizeof(*pl), T_REC_TEST, &err);
		while (!r && err == EAGAIN);
		if (!r) {
			a->err = err;
			return NULL;
		}
		pl = bl_ptr(&a->b->heap, r);
		pl->writer = a->id;
		pl->seq = k;
		bl_heap_make_iterable(&a->b->heap, r);
		a->n++;
	}
	return NULL;
}

TEST_F(ctx, walk_while_appending)
{
	struct alloc_arg args[APPENDERS];
	struct walk_arg w[2];
	pthread_t th[APPENDERS], wt[2];
	atomic_int stop = 0;
	struct blamer_config c;
	struct bl_iter it = { 0 };
	struct blamer *b;
	size_t listed = 0;
	uint32_t t;
	int i;

	pthread_barrier_t go;

	c = t_cfg(self->dir, 262144, 8);
	ASSERT_EQ(0, t_open(self, &c, &b));
	pthread_barrier_init(&go, NULL, 2 + APPENDERS);
	for (i = 0; i < 2; i++) {
		w[i] = (struct walk_arg){ .b = b, .stop = &stop, .go = &go };
		ASSERT_EQ(0, pthread_create(&wt[i], NULL, walker, &w[i]));
	}
	for (i = 0; i < APPENDERS; i++) {
		args[i] = (struct alloc_arg){ .b = b, .id = i, .go = &go };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, appender, &args[i]));
	}
	for (i = 0; i < APPENDERS; i++) {
		pthread_join(th[i], NULL);
		ASSERT_EQ(0, args[i].err);
		ASSERT_EQ(PER_APPENDER, args[i].n);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 2; i++) {
		pthread_join(wt[i], NULL);
		ASSERT_EQ(0, w[i].bad) TH_LOG("%s", w[i].why);
		ASSERT_GT(w[i].walks, 0);
	}
	while (bl_heap_next(&b->heap, &it, &t))
		listed += t == T_REC_TEST;
	ASSERT_EQ(APPENDERS * PER_APPENDER, listed);
	ASSERT_EQ(0, bl_heap_flags(&b->heap) & BLAMER_HEAP_F_CORRUPT);
	t_close(self, b);
}

#define RETYPE_RECORDS 512

struct retype_arg {
	struct blamer *b;
	blamer_ref *refs;
	pthread_barrier_t *go;
	int id, wins;
};

static void *retyper(void *p)
{
	struct retype_arg *a = p;
	int i;

	pthread_barrier_wait(a->go);
	for (i = 0; i < RETYPE_RECORDS; i++) {
		if (bl_heap_change_type(&a->b->heap, a->refs[i], T_REC_TEST,
					BLAMER_RETIRED(T_REC_TEST), true)) {
			struct payload *pl = bl_ptr(&a->b->heap, a->refs[i]);

			/* zeroed for us, and ours alone */
			if (pl->writer || pl->seq)
				return NULL;
			pl->writer = a->id + 1;
			pl->seq = i;
			a->wins++;
		}
	}
	return NULL;
}

TEST_F(ctx, retype_race)
{
	struct retype_arg args[8];
	pthread_t th[8];
	pthread_barrier_t go;
	blamer_ref refs[RETYPE_RECORDS];
	struct blamer_config c;
	struct blamer *b;
	int i, wins = 0, err = 0;

	c = t_cfg(self->dir, 262144, 2);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < RETYPE_RECORDS; i++) {
		struct payload *pl;

		refs[i] = bl_heap_alloc(&b->heap, sizeof(*pl), T_REC_TEST, &err);
		ASSERT_NE(0, refs[i]);
		pl = bl_ptr(&b->heap, refs[i]);
		pl->writer = 1000;	/* old contents, to be zeroed */
		pl->seq = 1000;
		ASSERT_TRUE(bl_heap_make_iterable(&b->heap, refs[i]));
		ASSERT_TRUE(bl_heap_change_type(&b->heap, refs[i], BLAMER_RETIRED(T_REC_TEST),
						T_REC_TEST, false));
	}
	pthread_barrier_init(&go, NULL, 8);
	for (i = 0; i < 8; i++) {
		args[i] = (struct retype_arg){ .b = b, .refs = refs, .go = &go, .id = i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, retyper, &args[i]));
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		wins += args[i].wins;
	}
	/* every record reused exactly once */
	ASSERT_EQ(RETYPE_RECORDS, wins);
	for (i = 0; i < RETYPE_RECORDS; i++) {
		struct payload *pl = bl_ptr(&b->heap, refs[i]);

		ASSERT_EQ(T_REC_TEST, pl->hdr.type);
		ASSERT_GE(pl->writer, 1);
		ASSERT_LE(pl->writer, 8);
		ASSERT_EQ(i, pl->seq);
	}
	t_close(self, b);
}

struct churn_arg {
	struct blamer *b;
	int ok;
};

enum { CHURN_MAX = 8 };

/* @rounds rounds of @n (at most CHURN_MAX) threads running @fn on @b at
 * once, each joined before the next round: 0, or -1 once a thread could
 * not start or said it failed. */
static int churn(struct blamer *b, int rounds, int n, void *(*fn)(void *))
{
	struct churn_arg args[CHURN_MAX];
	pthread_t th[CHURN_MAX];
	int round, i, started, bad = 0;

	for (round = 0; round < rounds && !bad; round++) {
		for (started = 0; started < n; started++) {
			args[started] = (struct churn_arg){ .b = b };
			if (pthread_create(&th[started], NULL, fn, &args[started])) {
				bad = 1;
				break;
			}
		}
		for (i = 0; i < started; i++) {
			pthread_join(th[i], NULL);
			bad |= !args[i].ok;
		}
	}
	return bad ? -1 : 0;
}

static void *churner(void *p)
{
	struct churn_arg *a = p;

	a->ok = blamer_push(a->b, BLAMER_ACTIVITY_TASK, "churn", 0, 0) == 1 &&
		blamer_set_uint(a->b, BLAMER_DATA_ACTIVITY, "n", 1) != NULL;
	blamer_pop(a->b);
	return NULL;
}

TEST_F(ctx, thread_churn_reuses_records)
{
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(0, churn(b, 25, 8, churner));
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	/* 200 threads, at most 8 at a time: records are reused */
	ASSERT_EQ(0, st.by_type[BLAMER_REC_THREAD]);
	ASSERT_LE(st.retired[BLAMER_REC_THREAD], 8);
	ASSERT_GE(st.retired[BLAMER_REC_THREAD], 1);
	t_close(self, b);
}

/* Nests activities with data past the spares, over and over; leaves
 * the last ones pushed when it exits. */
static void *data_churner(void *p)
{
	struct churn_arg *a = p;
	int r, d;

	a->ok = 1;
	for (r = 0; r < 50; r++) {
		for (d = 0; d < 6; d++)
			if (blamer_push(a->b, BLAMER_ACTIVITY_TASK, "data", d, 0) != d + 1 ||
			    !blamer_set_uint(a->b, BLAMER_DATA_ACTIVITY, "n", d))
				a->ok = 0;
		for (d = 0; d < (r == 49 ? 4 : 6); d++)
			blamer_pop(a->b);
	}
	return NULL;
}

/*
 * Short-lived threads whose activities have data: the data records a
 * thread retired (its spares, those past them, those of activities it
 * left pushed) are taken over by the next threads, not left retired for
 * no one (before, 2,000 such threads filled a 2 MiB heap). 4 threads at
 * a time, up to 6 records each.
 */
TEST_F(ctx, activity_data_churn_reuses_records)
{
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(0, churn(b, 30, 4, data_churner));
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(0, st.by_type[BLAMER_REC_USERDATA]);
	ASSERT_LE(st.retired[BLAMER_REC_USERDATA], 4 * 6);
	t_close(self, b);
}

struct claims_arg {
	struct blamer_path **p;
	int n;
	int64_t tid;	/* atomic */
	int go;		/* atomic: the thread may exit */
};

static void *path_adder(void *p)
{
	struct claims_arg *a = p;
	int i;

	for (i = 0; i < a->n; i++)
		blamer_path_add(a->p[i], 0, 1);
	__atomic_store_n(&a->tid, bl_tls.tid, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&a->go, __ATOMIC_ACQUIRE))
		sched_yield();
	return NULL;
}

/* The claims of the DAG shards in @b's heap: how many are @tid's, and
 * how many anybody's. */
static void count_claims(struct blamer *b, int64_t tid, int *mine, int *any)
{
	struct bl_iter it = { 0 };
	blamer_ref ref;
	uint32_t type;

	*mine = *any = 0;
	while ((ref = bl_heap_next(&b->heap, &it, &type))) {
		struct blamer_dag_shard *s;

		if (type != BLAMER_REC_DAG_SHARD)
			continue;
		s = bl_ptr(&b->heap, ref);
		*mine += s->claim == (uint64_t)tid;
		*any += s->claim != 0;
	}
}

/*
 * A thread's exit releases the shards it claimed from the list its TLS
 * keeps, not by walking the heap under the registry lock (a short-lived
 * thread cost 2.1 ms in a heap of 100,000 records). A shard planted with
 * the thread's tid that it never claimed shows which: the walk released
 * it too, the list does not. Past BL_CLAIMS shards the exit walks.
 */
TEST_F(ctx, thread_exit_releases_the_shards_it_noted)
{
	enum { NP = BL_CLAIMS + 4 };
	uint32_t units[1] = { BLAMER_UNIT_COUNT };
	struct blamer_path *p[NP];
	struct blamer_dag_shard *planted;
	struct claims_arg a = { .p = p, .go = 1 };
	struct blamer_config c;
	struct blamer *b;
	blamer_ref ref;
	pthread_t th;
	int i, mine, any;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < NP; i++) {
		uint64_t id = blamer_dag_id("claims") + i;

		p[i] = blamer_path_get(b, &id, 1, units, 1);
		ASSERT_NE(NULL, p[i]);
	}
	/* a few paths: the list */
	a.n = 3;
	ASSERT_EQ(0, pthread_create(&th, NULL, path_adder, &a));
	ASSERT_EQ(0, pthread_join(th, NULL));
	count_claims(b, a.tid, &mine, &any);
	ASSERT_EQ(0, any);
	/* the planted shard, with the tid the next thread will have */
	ref = bl_record_new(b, BLAMER_REC_DAG_SHARD, sizeof(*planted), false);
	ASSERT_NE(0, ref);
	planted = bl_ptr(&b->heap, ref);
	a.tid = 0;
	a.go = 0;
	ASSERT_EQ(0, pthread_create(&th, NULL, path_adder, &a));
	while (!__atomic_load_n(&a.tid, __ATOMIC_ACQUIRE))
		sched_yield();
	planted->claim = (uint64_t)a.tid;
	__atomic_store_n(&a.go, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(th, NULL));
	count_claims(b, a.tid, &mine, &any);
	ASSERT_EQ(1, any);
	ASSERT_EQ(1, mine);
	planted->claim = 0;
	/* more paths than the list holds: the walk */
	a.n = NP;
	ASSERT_EQ(0, pthread_create(&th, NULL, path_adder, &a));
	ASSERT_EQ(0, pthread_join(th, NULL));
	count_claims(b, a.tid, &mine, &any);
	ASSERT_EQ(0, any);
	t_close(self, b);
}

struct add_arg {
	struct blamer_path *p;
	struct blamer_value *v;
};

static void *adder(void *p)
{
	struct add_arg *a = p;
	int i;

	for (i = 0; i < 100000; i++) {
		blamer_path_add(a->p, 0, 1);
		blamer_path_add(a->p, 1, 3);
		blamer_value_add(a->v, 2);
	}
	return NULL;
}

TEST_F(ctx, measurements_are_exact)
{
	uint64_t ids[2] = { blamer_dag_id("root"), blamer_dag_id("leaf") };
	uint32_t units[2] = { BLAMER_UNIT_COUNT, BLAMER_UNIT_BYTES };
	uint64_t sum[BLAMER_DAG_MAX_UNITS], nshards;
	struct add_arg a;
	struct v_heap v;
	char why[64];
	pthread_t th[4];
	struct blamer_config c;
	struct blamer *b;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	a.p = blamer_path_get(b, ids, 2, units, 2);
	a.v = blamer_set_uint(b, BLAMER_DATA_PROCESS, "ops", 0);
	ASSERT_NE(NULL, a.p);
	ASSERT_NE(NULL, a.v);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, adder, &a));
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	t_view(b, &v);
	ASSERT_EQ(0, v_path_values(&v, a.p->h.ref, sum, &nshards, why)) TH_LOG("%s", why);
	ASSERT_EQ(400000, sum[0]);
	ASSERT_EQ(1200000, sum[1]);
	t_close(self, b);
}

/*
 * A fork child whose threads all start with handles made before the
 * fork: the first adds race to make the child's heap and to make each
 * handle's record again there. Every add counts, once, in the child's
 * own heap (TSan sees the handles' re-making); nothing is dropped.
 */
struct fork_go {
	struct add_arg a;
	pthread_barrier_t go;
};

static void *fork_adder(void *p)
{
	struct fork_go *g = p;

	pthread_barrier_wait(&g->go);
	return adder(&g->a);
}

TEST_F(ctx, fork_child_threads_remake_handles_at_once)
{
	uint64_t ids[2] = { blamer_dag_id("root"), blamer_dag_id("leaf") };
	uint32_t units[2] = { BLAMER_UNIT_COUNT, BLAMER_UNIT_BYTES };
	struct blamer_config c;
	struct fork_go g;
	struct blamer *b;
	int status;
	pid_t pid;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	g.a.p = blamer_path_get(b, ids, 2, units, 2);
	g.a.v = blamer_set_uint(b, BLAMER_DATA_PROCESS, "ops", 10);
	ASSERT_NE(NULL, g.a.p);
	ASSERT_NE(NULL, g.a.v);
	blamer_path_add(g.a.p, 0, 5);	/* the parent's, in the parent's heap */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		uint64_t sum[BLAMER_DAG_MAX_UNITS], nshards, ops;
		struct v_heap v;
		pthread_t th[4];
		char why[64];
		int i, ok = 1;

		pthread_barrier_init(&g.go, NULL, 4);
		for (i = 0; i < 4; i++)
			ok &= pthread_create(&th[i], NULL, fork_adder, &g) == 0;
		for (i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		t_view(b, &v);
		ok &= v_path_values(&v, g.a.p->h.ref, sum, &nshards, why) == 0;
		ok &= sum[0] == 400000 && sum[1] == 1200000;
		memcpy(&ops, (void *)(uintptr_t)g.a.v->h.rec, 8);	/* the value's bytes */
		ok &= ops == 10 + 800000;	/* inherited 10, then the adds */
		ok &= b->drops && !b->drops->count[BLAMER_DROP_BUSY] &&
		      !b->drops->count[BLAMER_DROP_HEAP_FULL];
		if (!ok)
			fprintf(stderr, "# child: %llu %llu ops %llu\n", (unsigned long long)sum[0],
				(unsigned long long)sum[1], (unsigned long long)ops);
		blamer_abandon(b);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	t_close(self, b);
}

#define SHARD_PATHS	3
#define SHARD_ADDERS	4
#define SHARD_ADDS	100000

struct shard_run {
	struct blamer *b;
	struct blamer_path *p[SHARD_PATHS];
	pthread_barrier_t *go;
	atomic_int *stop;
	int adds;
	/* reader: the most adds there will be, snapshots taken, first problem */
	uint64_t max;
	int reads;
	char why[96];
};

static void *shard_adder(void *arg)
{
	struct shard_run *r = arg;
	int i, k;

	if (r->go)
		pthread_barrier_wait(r->go);
	for (i = 0; i < r->adds; i++)
		for (k = 0; k < SHARD_PATHS; k++) {
			blamer_path_add(r->p[k], 0, 1);
			blamer_path_add(r->p[k], 1, k + 1);
		}
	return NULL;
}

/* Reads the paths as a reader would, while adders run: never less than before. */

static void *shard_watcher(void *arg)
{
	struct shard_run *r = arg;
	uint64_t last[SHARD_PATHS][BLAMER_DAG_MAX_UNITS] = { { 0 } };

	pthread_barrier_wait(r->go);
	do {
		struct v_heap v;
		int k, u;

		t_view(r->b, &v);
		for (k = 0; k < SHARD_PATHS && !r->why[0]; k++) {
			uint64_t sum[BLAMER_DAG_MAX_UNITS], n;
			char why[64];

			if (v_path_values(&v, r->p[k]->h.ref, sum, &n, why)) {
				snprintf(r->why, sizeof(r->why), "path %d: %s", k, why);
				break;
			}
			for (u = 0; u < 2; u++) {
				if (sum[u] < last[k][u] || sum[u] > r->max * (u ? k + 1 : 1))
					snprintf(r->why, sizeof(r->why),
						 "path %d unit %d: %llu after %llu", k, u,
						 (unsigned long long)sum[u],
						 (unsigned long long)last[k][u]);
				last[k][u] = sum[u];
			}
		}
		r->reads++;
	} while (!atomic_load(r->stop) && !r->why[0]);
	return NULL;
}

static void shard_paths(struct blamer *b, struct blamer_path **p)
{
	uint32_t units[2] = { BLAMER_UNIT_COUNT, BLAMER_UNIT_BYTES };
	uint64_t ids[2] = { blamer_dag_id("root"), 0 };
	int k;

	for (k = 0; k < SHARD_PATHS; k++) {
		ids[1] = k + 1;
		p[k] = blamer_path_get(b, ids, 2, units, 2);
	}
}

/* Shards of @path, 0 if its values are not what @adds adds of every kind made. */

static uint64_t shard_check(struct blamer *b, struct blamer_path *path, int k, uint64_t adds,
			    char *why)
{
	uint64_t sum[BLAMER_DAG_MAX_UNITS], n;
	struct v_heap v;

	t_view(b, &v);
	if (v_path_values(&v, path->h.ref, sum, &n, why))
		return 0;
	if (sum[0] != adds || sum[1] != adds * (k + 1)) {
		snprintf(why, 64, "path %d: %llu, %llu", k, (unsigned long long)sum[0],
			 (unsigned long long)sum[1]);
		return 0;
	}
	return n;
}

TEST_F(ctx, shard_adds_race_a_reader)
{
	struct shard_run run = { .adds = SHARD_ADDS, .max = SHARD_ADDERS * SHARD_ADDS }, watch;
	pthread_t th[SHARD_ADDERS], wt;
	atomic_int stop = 0;
	pthread_barrier_t go;
	struct blamer_config c;
	char why[64] = "";
	struct blamer *b;
	int i, k;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	shard_paths(b, run.p);
	pthread_barrier_init(&go, NULL, SHARD_ADDERS + 1);
	run.b = b;
	run.go = &go;
	run.stop = &stop;
	watch = run;
	ASSERT_EQ(0, pthread_create(&wt, NULL, shard_watcher, &watch));
	for (i = 0; i < SHARD_ADDERS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, shard_adder, &run));
	for (i = 0; i < SHARD_ADDERS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(wt, NULL);
	ASSERT_EQ(0, watch.why[0]) TH_LOG("%s", watch.why);
	ASSERT_GT(watch.reads, 0);
	for (k = 0; k < SHARD_PATHS; k++) {
		uint64_t n = shard_check(b, run.p[k], k, (uint64_t)SHARD_ADDERS * SHARD_ADDS, why);

		ASSERT_GE(n, 1) TH_LOG("%s", why);
		ASSERT_LE(n, SHARD_ADDERS);
	}
	pthread_barrier_destroy(&go);
	t_close(self, b);
}

/* Threads come and go, shards pass from one to the next, a reader watches. */

TEST_F(ctx, shard_churn_is_bounded_and_exact)
{
	enum { ROUNDS = 25, THREADS = 8, ADDS = 1000 };
	struct shard_run run = { .adds = ADDS }, watch;
	pthread_t th[THREADS], wt;
	atomic_int stop = 0;
	pthread_barrier_t go;
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	char why[64] = "";
	struct blamer *b;
	int round, i, k;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	shard_paths(b, run.p);
	pthread_barrier_init(&go, NULL, 1);
	watch = (struct shard_run){ .b = b, .go = &go, .stop = &stop,
				    .max = ROUNDS * THREADS * ADDS };
	memcpy(watch.p, run.p, sizeof(run.p));
	ASSERT_EQ(0, pthread_create(&wt, NULL, shard_watcher, &watch));
	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < THREADS; i++)
			ASSERT_EQ(0, pthread_create(&th[i], NULL, shard_adder, &run));
		for (i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
	}
	atomic_store(&stop, 1);
	pthread_join(wt, NULL);
	pthread_barrier_destroy(&go);
	ASSERT_EQ(0, watch.why[0]) TH_LOG("%s", watch.why);
	/* 200 threads, at most 8 at a time: at most 8 shards per path */
	for (k = 0; k < SHARD_PATHS; k++) {
		uint64_t n = shard_check(b, run.p[k], k, (uint64_t)ROUNDS * THREADS * ADDS, why);

		ASSERT_GE(n, 1) TH_LOG("%s", why);
		ASSERT_LE(n, THREADS);
	}
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_LE(st.by_type[BLAMER_REC_DAG_SHARD], SHARD_PATHS * THREADS);
	t_close(self, b);
}

/*
 * The fields of @u, walked as a reader does, stepping over fields being
 * made (type END, their size set); NULL @name counts them all.
 */
static uint32_t t_fields(struct blamer_userdata *u, const char *name, struct blamer_field **last)
{
	uint32_t off = 0, n = 0, used = __atomic_load_n(&u->used, __ATOMIC_ACQUIRE);

	while (off + 8 <= used) {
		struct blamer_field *f = (void *)(u->fields + off);

		if (!f->record_size)
			break;
		if (f->type && (!name || (f->name_size == strlen(name) &&
					  !memcmp(f + 1, name, f->name_size)))) {
			n++;
			if (last)
				*last = f;
		}
		off += f->record_size;
	}
	return n;
}

/* A set that made nothing: it met the same name being made (EAGAIN). */
static int set_ok(struct blamer_value *v)
{
	return v != NULL || bl_last_error() == EAGAIN;
}

struct field_arg {
	struct blamer *b;
	int id, ok;
};

static void *field_maker(void *p)
{
	struct field_arg *a = p;
	char name[32];
	int i;

	a->ok = 1;
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "t%d-f%d", a->id, i);
		a->ok &= blamer_set_int(a->b, BLAMER_DATA_GLOBAL, name, a->id * 100 + i) != NULL;
		a->ok &= set_ok(blamer_set_string(a->b, BLAMER_DATA_GLOBAL, "shared", name));
	}
	return NULL;
}

TEST_F(ctx, user_data_from_many_threads)
{
	struct field_arg args[8];
	pthread_t th[8];
	struct blamer_config c;
	struct blamer_userdata *u;
	struct blamer *b;
	uint32_t off = 0, fields = 0;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < 8; i++) {
		args[i] = (struct field_arg){ .b = b, .id = i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, field_maker, &args[i]));
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		ASSERT_TRUE(args[i].ok);
	}
	u = bl_ptr(&b->heap, b->parts[BL_PART_GLOBAL_DATA]);
	while (off + 8 <= u->used) {
		struct blamer_field *f = (void *)(u->fields + off);

		ASSERT_NE(0, f->type);
		ASSERT_EQ(0, f->seq % 2);
		fields++;
		off += f->record_size;
	}
	ASSERT_EQ(off, u->used);
	/* 160 distinct names and "shared": each made once, however the sets race */
	ASSERT_EQ(161, fields);
	ASSERT_EQ(1, t_fields(u, "shared", NULL));
	t_close(self, b);
}

/*
 * A maker stalled between claiming a field and publishing it (preempted,
 * or interrupted by a signal handler that sets data): every later set of
 * a name past it must still find that name, and the reader must show it.
 * The stalled field is planted as the writer leaves one: header with its
 * size, name written, type still END, used past it. Before the fix a
 * lookup stopped at it, so every set made the name again, until the
 * record was full.
 */
TEST_F(ctx, user_data_past_a_stalled_maker)
{
	struct blamer_reader_opts o = { .backend = t_backend(), .dir = self->dir };
	struct blamer_field *f, *stalled, *got = NULL;
	const struct blamer_snap_fields *g = NULL;
	struct blamer_snapshot *s;
	struct blamer_userdata *u;
	struct blamer_reader *r;
	struct blamer_config c;
	struct blamer *b;
	char e[256];
	size_t p, k, shown = 0;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_GLOBAL, "before", 1));
	u = bl_ptr(&b->heap, b->parts[BL_PART_GLOBAL_DATA]);
	stalled = (void *)(u->fields + u->used);
	stalled->name_size = 7;
	stalled->value_size = 0x5a5a;	/* a hash no name here has */
	stalled->seq = 0xa5a5;
	__atomic_store_n(&stalled->record_size, 24, __ATOMIC_RELEASE);
	memcpy(stalled + 1, "stalled", 7);
	__atomic_store_n(&u->used, u->used + 24, __ATOMIC_RELEASE);
	for (i = 0; i < 1000; i++) {
		ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_GLOBAL, "counter", i))
			TH_LOG("set %d: %s", i, blamer_errmsg());
	}
	ASSERT_EQ(1, t_fields(u, "counter", &got));
	ASSERT_EQ(999, *(int64_t *)((uint8_t *)(got + 1) + 8));
	ASSERT_EQ(2, t_fields(u, NULL, NULL));	/* "before", "counter" */
	/* a string past it too, set again in place */
	ASSERT_NE(NULL, blamer_set_string(b, BLAMER_DATA_GLOBAL, "state", "one"));
	ASSERT_NE(NULL, blamer_set_string(b, BLAMER_DATA_GLOBAL, "state", "two"));
	ASSERT_EQ(1, t_fields(u, "state", &got));
	ASSERT_EQ(0, memcmp((uint8_t *)(got + 1) + 8, "two", 3));

	/* the reader steps over it as well */
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	for (p = 0; p < s->nprocs; p++)
		if (s->procs[p].pid == getpid())
			g = &s->procs[p].global_data;
	ASSERT_NE(NULL, g);
	for (k = 0; k < g->n; k++) {
		if (!strcmp(g->v[k].name, "counter")) {
			ASSERT_EQ(999, g->v[k].i);
			shown++;
		}
		ASSERT_STRNE("stalled", g->v[k].name);
	}
	ASSERT_EQ(1, shown);
	ASSERT_EQ(3, g->n);
	blamer_snapshot_free(s);

	/* the maker resumes: its field is published, nothing else changes */
	f = stalled;
	*(int64_t *)((uint8_t *)(f + 1) + 8) = 7;
	f->value_size = 8;
	f->seq = 0;
	__atomic_store_n(&f->type, BLAMER_FIELD_SIGNED, __ATOMIC_RELEASE);
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_GLOBAL, "counter", 1000));
	ASSERT_EQ(1, t_fields(u, "counter", NULL));
	ASSERT_EQ(1, t_fields(u, "stalled", NULL));
	ASSERT_EQ(4, t_fields(u, NULL, NULL));
	blamer_reader_close(r);
	t_close(self, b);
}

/*
 * Threads released together set the same new name, round after round:
 * each name is made once. Before the fix a thread that lost the claim
 * to another took the next space without looking at what the winner
 * made, so rounds that raced made the name twice. The threads spin at
 * the start of each round (a sleeping barrier wakes them one by one, too
 * far apart to race), yielding if they wait long (more threads than
 * CPUs).
 */
enum { RACE_THREADS = 2, RACE_ROUNDS = 120, RACE_CONTEXTS = 12 };

struct race_arg {
	struct blamer *b;
	atomic_uint *arrived;
	int id, bad;
};

/*
 * Racer @i started on a CPU of its own where the process may use two or
 * more: two racers left to the scheduler on a loaded machine mostly took
 * turns on one CPU, and a round then raced nothing (measured: no lost
 * race in six runs of series_first_uses_race beside a fuzzer).
 */
static int race_create(pthread_t *th, int i, void *(*fn)(void *), void *arg)
{
	cpu_set_t allowed, one;
	pthread_attr_t at;
	int cpu, seen = -1, err;

	if (pthread_attr_init(&at))
		return -1;
	if (!sched_getaffinity(0, sizeof(allowed), &allowed) && CPU_COUNT(&allowed) >= 2) {
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &allowed) && ++seen == i % CPU_COUNT(&allowed))
				break;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_setaffinity_np(&at, sizeof(one), &one);
	}
	err = pthread_create(th, &at, fn, arg);
	pthread_attr_destroy(&at);
	return err;
}

static void race_start(atomic_uint *arrived, unsigned int round)
{
	unsigned int spins = 0;

	atomic_fetch_add(arrived, 1);
	while (atomic_load(arrived) < (round + 1) * RACE_THREADS)
		if (++spins % 4096 == 0)
			sched_yield();
}

/* RACE_THREADS threads of @fn on @b, each with its args[i], started and
 * joined: 0, or -1 if one could not be started (the others then wait in
 * race_start() for good: the test fails there and then). */
static int race_run(struct blamer *b, void *(*fn)(void *), struct race_arg *args)
{
	pthread_t th[RACE_THREADS];
	atomic_uint arrived = 0;
	int i;

	for (i = 0; i < RACE_THREADS; i++) {
		args[i] = (struct race_arg){ .b = b, .arrived = &arrived, .id = i };
		if (race_create(&th[i], i, fn, &args[i]))
			return -1;
	}
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* Rounds 0..RACE_ROUNDS - 1 in the global record, as many in the process
 * record: about as many names as each holds. */
static void *first_set_racer(void *p)
{
	struct race_arg *a = p;
	char name[32];
	int i;

	for (i = 0; i < 2 * RACE_ROUNDS; i++) {
		unsigned int scope = i < RACE_ROUNDS ? BLAMER_DATA_GLOBAL : BLAMER_DATA_PROCESS;

		snprintf(name, sizeof(name), "round-%d", i % RACE_ROUNDS);
		race_start(a->arrived, i);
		if (i % 2)
			a->bad += !set_ok(blamer_set_int(a->b, scope, name, a->id));
		else
			a->bad += !set_ok(blamer_set_string(a->b, scope, name, "v"));
	}
	return NULL;
}

TEST_F(ctx, user_data_first_sets_race)
{
	struct race_arg args[RACE_THREADS];
	struct blamer_config c;
	struct blamer_userdata *u[2];
	struct blamer_process *p;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	char name[32];
	int n, i, k;

	c = t_cfg(self->dir, 0, 0);
	for (n = 0; n < RACE_CONTEXTS; n++) {
		ASSERT_EQ(0, t_open(self, &c, &b));
		ASSERT_EQ(0, race_run(b, first_set_racer, args));
		for (i = 0; i < RACE_THREADS; i++)
			ASSERT_EQ(0, args[i].bad) TH_LOG("thread %d: %s", i, blamer_errmsg());
		u[0] = bl_ptr(&b->heap, b->parts[BL_PART_GLOBAL_DATA]);
		u[1] = bl_ptr(&b->heap, b->parts[BL_PART_PROCESS_DATA]);
		/* the first sets made each record once (heap_format.h: made
		 * on first use): one listed, named by the process record */
		t_view(b, &v);
		ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
		ASSERT_EQ(2, st.by_type[BLAMER_REC_USERDATA]);
		p = bl_ptr(&b->heap, b->process);
		ASSERT_EQ(b->parts[BL_PART_GLOBAL_DATA], p->global_data);
		ASSERT_EQ(b->parts[BL_PART_PROCESS_DATA], p->user_data);
		for (k = 0; k < 2; k++) {
			for (i = 0; i < RACE_ROUNDS; i++) {
				snprintf(name, sizeof(name), "round-%d", i);
				ASSERT_EQ(1, t_fields(u[k], name, NULL))
					TH_LOG("context %d, record %d: %s", n, k, name);
			}
			ASSERT_EQ(RACE_ROUNDS, t_fields(u[k], NULL, NULL));
		}
		t_close(self, b);
	}
}

/*
 * Threads log their first messages at the same instant, in fresh
 * contexts: the log is made on first use (records.c, bl_part()), once
 * per heap as the process record names it, and no message is lost to
 * the race (a loser's record is retired unwritten).
 */
enum { LOG_RACE_MESSAGES = 24 };

static void *first_log_racer(void *p)
{
	struct race_arg *a = p;
	int i;

	race_start(a->arrived, 0);
	for (i = 0; i < LOG_RACE_MESSAGES; i++)
		a->bad += blamer_log(a->b, "thread %d message %d", a->id, i) != 0;
	return NULL;
}

TEST_F(ctx, log_first_use_race)
{
	struct race_arg args[RACE_THREADS];
	struct blamer_config c;
	struct blamer_process *p;
	struct blamer_log *log;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	int n, i, k, seen[RACE_THREADS];

	c = t_cfg(self->dir, 0, 0);
	for (n = 0; n < RACE_CONTEXTS; n++) {
		ASSERT_EQ(0, t_open(self, &c, &b));
		ASSERT_EQ(0, race_run(b, first_log_racer, args));
		for (i = 0; i < RACE_THREADS; i++)
			ASSERT_EQ(0, args[i].bad) TH_LOG("thread %d: %s", i, blamer_errmsg());
		t_view(b, &v);
		ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
		ASSERT_EQ(1, st.by_type[BLAMER_REC_LOG]);
		p = bl_ptr(&b->heap, b->process);
		ASSERT_EQ(b->parts[BL_PART_LOG], p->log);
		log = bl_ptr(&b->heap, p->log);
		ASSERT_EQ(RACE_THREADS * LOG_RACE_MESSAGES, log->head);
		ASSERT_LE(RACE_THREADS * LOG_RACE_MESSAGES, log->slot_count);
		memset(seen, 0, sizeof(seen));
		for (k = 0; k < RACE_THREADS * LOG_RACE_MESSAGES; k++) {
			int t, m;

			ASSERT_EQ(2, sscanf(log->slots[k].text, "thread %d message %d", &t, &m));
			ASSERT_TRUE(t >= 0 && t < RACE_THREADS);
			ASSERT_EQ(seen[t], m);	/* each thread's in order, none lost */
			seen[t]++;
		}
		t_close(self, b);
	}
}

/*
 * Threads make the same DAG node, link and path at the same instant,
 * round after round: each is made once (one record per heap), and the
 * reader's view has every add of every thread. Before, each racer could
 * make its own record (the merged view was right, the per-process lists
 * of dump and JSON showed copies with the values split between them).
 */
enum { DAG_ROUNDS = 150 };

struct dag_arg {
	struct blamer *b;
	atomic_uint *arrived;
	int bad;
};

static void *dag_racer(void *p)
{
	uint32_t unit = BLAMER_UNIT_COUNT;
	struct dag_arg *a = p;
	uint64_t ids[2] = { blamer_dag_id("race-root") };
	struct blamer_path *path;
	char name[32];
	int i;

	for (i = 0; i < DAG_ROUNDS; i++) {
		snprintf(name, sizeof(name), "node-%d", i);
		ids[1] = blamer_dag_id(name);
		race_start(a->arrived, i);
		a->bad += blamer_dag_node(a->b, ids[1], 1, name) != 0;
		a->bad += blamer_dag_link(a->b, ids[0], ids[1]) != 0;
		path = blamer_path_get(a->b, ids, 2, &unit, 1);
		a->bad += !path;
		if (path)
			blamer_path_add(path, 0, 1);
	}
	return NULL;
}

TEST_F(ctx, dag_first_creations_race)
{
	struct dag_arg args[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	atomic_uint arrived = 0;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;
	uint64_t id;
	char name[32];
	size_t k, seen;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < RACE_THREADS; i++) {
		args[i] = (struct dag_arg){ .b = b, .arrived = &arrived };
		ASSERT_EQ(0, race_create(&th[i], i, dag_racer, &args[i]));
	}
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < RACE_THREADS; i++)
		ASSERT_EQ(0, args[i].bad) TH_LOG("%s", blamer_errmsg());
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	/* the records: one of each */
	ASSERT_EQ(DAG_ROUNDS, s->procs[0].nnodes);
	ASSERT_EQ(DAG_ROUNDS, s->procs[0].nedges);
	ASSERT_EQ(DAG_ROUNDS, s->procs[0].npaths);
	/* merged: one node per id, one total per path, every add in it */
	ASSERT_EQ(DAG_ROUNDS, s->nnodes);
	ASSERT_EQ(DAG_ROUNDS, s->ntotals);
	for (i = 0; i < DAG_ROUNDS; i++) {
		snprintf(name, sizeof(name), "node-%d", i);
		id = blamer_dag_id(name);
		for (k = 0, seen = 0; k < s->nnodes; k++) {
			if (s->nodes[k].id != id)
				continue;
			ASSERT_STREQ(name, s->nodes[k].name);
			seen++;
		}
		ASSERT_EQ(1, seen) TH_LOG("%s", name);
		for (k = 0, seen = 0; k < s->ntotals; k++) {
			if (s->totals[k].depth != 2 || s->totals[k].nodes[1] != id)
				continue;
			ASSERT_EQ(RACE_THREADS, s->totals[k].value) TH_LOG("%s", name);
			ASSERT_EQ(1, s->totals[k].nprocs);
			seen++;
		}
		ASSERT_EQ(1, seen) TH_LOG("%s", name);
	}
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* The paths of round 0..DAG_ROUNDS - 1: /race-root/node-i. */
static void race_path_ids(int round, uint64_t ids[2])
{
	char name[32];

	snprintf(name, sizeof(name), "node-%d", round);
	ids[0] = blamer_dag_id("race-root");
	ids[1] = blamer_dag_id(name);
}

struct full_path_arg {
	struct blamer *b;
	atomic_uint *arrived;
	struct blamer_path *got[DAG_ROUNDS];
	int not_full;		/* NULLs for another reason than ENOSPC */
};

static void *full_path_racer(void *p)
{
	uint32_t unit = BLAMER_UNIT_COUNT;
	struct full_path_arg *a = p;
	uint64_t ids[2];
	int i;

	for (i = 0; i < DAG_ROUNDS; i++) {
		race_path_ids(i, ids);
		race_start(a->arrived, i);
		a->got[i] = blamer_path_get(a->b, ids, 2, &unit, 1);
		a->not_full += !a->got[i] && blamer_errno() != ENOSPC;
		if (a->got[i])
			blamer_path_add(a->got[i], 0, 1);
	}
	return NULL;
}

/*
 * New paths asked for at once on a heap that fills in the middle (as
 * series_first_uses_race_on_a_full_heap below does for series): the
 * racers of a round that get a path get the same handle, every NULL is
 * ENOSPC, and the heap lists one record per path handed out with exactly
 * the adds of those that got it.
 */
TEST_F(ctx, paths_first_uses_race_on_a_full_heap)
{
	static struct full_path_arg args[RACE_THREADS];
	unsigned int given[DAG_ROUNDS] = { 0 }, listed[DAG_ROUNDS] = { 0 };
	const struct blamer_snap_process *p;
	pthread_t th[RACE_THREADS];
	atomic_uint arrived = 0;
	int i, t, split = 0, nulls = 0;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;
	uint64_t ids[2];
	size_t k;

	c = t_cfg(self->dir, 16384, 1);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < RACE_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].b = b;
		args[i].arrived = &arrived;
		ASSERT_EQ(0, race_create(&th[i], i, full_path_racer, &args[i]));
	}
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < DAG_ROUNDS; i++) {
		struct blamer_path *one = NULL;

		for (t = 0; t < RACE_THREADS; t++) {
			nulls += !args[t].got[i];
			if (!args[t].got[i])
				continue;
			if (one) {
				ASSERT_EQ(one, args[t].got[i]) TH_LOG("round %d: two handles", i);
			}
			one = args[t].got[i];
			given[i]++;
		}
		split += given[i] && given[i] < RACE_THREADS;
	}
	for (t = 0; t < RACE_THREADS; t++)
		ASSERT_EQ(0, args[t].not_full);
	ASSERT_LT(0, nulls);	/* the heap did fill */
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	p = &s->procs[0];
	ASSERT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s", p->problem);
	for (k = 0; k < p->npaths; k++) {
		const struct blamer_snap_path *sp = &p->paths[k];

		ASSERT_EQ(2, sp->depth);
		for (i = 0; i < DAG_ROUNDS; i++) {
			race_path_ids(i, ids);
			if (sp->nodes[1] == ids[1])
				break;
		}
		ASSERT_LT(i, DAG_ROUNDS);
		listed[i]++;
		EXPECT_EQ(given[i], sp->nvalues ? sp->values[0] : 0) TH_LOG("round %d", i);
	}
	for (i = 0; i < DAG_ROUNDS; i++)
		EXPECT_EQ(given[i] ? 1 : listed[i] ? 1 : 0, listed[i]) TH_LOG("round %d", i);
	TH_LOG("%d rounds split between a path and ENOSPC", split);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/*
 * The first uses of a series race (metric.c's series_make()): threads
 * that find a handle stale at once each make a record, one is listed,
 * and every add is in it; in a fork child, where every handle is stale
 * again, the same in the child's own heap. Odd rounds race on a handle
 * made before; even ones ask for it at once (the series table's CAS)
 * and then race on it.
 */
enum { SERIES_ROUNDS = 150 };

struct series_arg {
	struct blamer_metric *m;
	struct blamer_series **pre;
	struct blamer_series **got;	/* each round's handle, if not NULL */
	atomic_uint *arrived;
	int bad;
	int not_full;			/* NULLs for another reason than ENOSPC */
};

static void *series_racer(void *p)
{
	struct series_arg *a = p;
	const char *vv[1];
	char v[16];
	int i;

	vv[0] = v;
	for (i = 0; i < SERIES_ROUNDS; i++) {
		struct blamer_series *s = a->pre[i];

		race_start(a->arrived, i);
		if (!s) {
			snprintf(v, sizeof(v), "/r/%d", i);
			s = blamer_metric_series(a->m, vv, NULL, 0);
		}
		a->bad += !s;
		a->not_full += !s && blamer_errno() != ENOSPC;
		if (a->got)
			a->got[i] = s;
		if (s)
			blamer_counter_add(s, 1);
	}
	return NULL;
}

/* RACE_THREADS racers over @pre, their handles into @got[thread] if
 * @got: false if one could not be started. */
static bool series_race_got(struct blamer_metric *m, struct blamer_series **pre,
			    struct blamer_series *(*got)[SERIES_ROUNDS], int *bad, int *not_full)
{
	struct series_arg args[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	atomic_uint arrived = 0;
	int i;

	for (i = 0; i < RACE_THREADS; i++) {
		args[i] = (struct series_arg){ .m = m, .pre = pre, .got = got ? got[i] : NULL,
					       .arrived = &arrived };
		if (race_create(&th[i], i, series_racer, &args[i]))
			return false;
	}
	*bad = *not_full = 0;
	for (i = 0; i < RACE_THREADS; i++) {
		pthread_join(th[i], NULL);
		*bad += args[i].bad;
		*not_full += args[i].not_full;
	}
	return true;
}

static bool series_race(struct blamer_metric *m, struct blamer_series **pre, int *bad)
{
	int not_full;

	return series_race_got(m, pre, NULL, bad, &not_full);
}

/* What @b's heap shows of the race: "" if one record per series, each
 * with every add, else what is wrong (in @why). */
static const char *series_raced(struct blamer *b, char *why, size_t len)
{
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;
	uint32_t k;

	s = t_own_snapshot(b);
	if (!s)
		return "no snapshot";
	p = &s->procs[0];
	why[0] = '\0';
	if (p->health != BLAMER_HEALTH_OK)
		snprintf(why, len, "health %d: %s", (int)p->health, p->problem);
	else if (p->nmetrics != SERIES_ROUNDS)
		snprintf(why, len, "%zu series records, not %d", p->nmetrics, SERIES_ROUNDS);
	for (k = 0; !why[0] && k < p->nmetrics; k++)
		if (p->metrics[k].value != RACE_THREADS)
			snprintf(why, len, "series %s: %g adds, not %d", p->metrics[k].values[0],
				 p->metrics[k].value, RACE_THREADS);
	blamer_snapshot_free(s);
	return why;
}

TEST_F(ctx, series_first_uses_race)
{
	static const char *const l[] = { "route" };
	const struct blamer_metric_def d = { .name = "raced", .kind = BLAMER_METRIC_COUNTER,
					     .labels = l, .nlabels = 1 };
	struct blamer_series *pre[SERIES_ROUNDS] = { 0 };
	struct blamer_metric *m;
	struct blamer_config c;
	struct blamer *b;
	const char *vv[1];
	char v[16], why[160];
	int i, bad, status;
	pid_t pid;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	m = blamer_metric_define(b, &d);
	ASSERT_NE(NULL, m) TH_LOG("%s", blamer_errmsg());
	vv[0] = v;
	for (i = 1; i < SERIES_ROUNDS; i += 2) {
		snprintf(v, sizeof(v), "/r/%d", i);
		pre[i] = blamer_metric_series(m, vv, NULL, 0);
		ASSERT_NE(NULL, pre[i]);
	}
	ASSERT_TRUE(series_race(m, pre, &bad));
	ASSERT_EQ(0, bad) TH_LOG("%s", blamer_errmsg());
	EXPECT_STREQ("", series_raced(b, why, sizeof(why)));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		bool ok = series_race(m, pre, &bad) && !bad &&
			  !strcmp("", series_raced(b, why, sizeof(why)));

		if (!ok)
			fprintf(stderr, "# child: %d bad, %s\n", bad, why);
		blamer_abandon(b);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	t_close(self, b);
}

/*
 * The same race on a heap that fills in the middle of it: the racers of
 * a round that get a handle get the same one (a racer whose record found
 * no room takes the other's, if it is in the table by then), every NULL
 * is ENOSPC, and the heap lists one record per series given out, with
 * exactly the adds of the racers that got it (through the record's own
 * words once no shard fits).
 */
TEST_F(ctx, series_first_uses_race_on_a_full_heap)
{
	static const char *const l[] = { "route" };
	const struct blamer_metric_def d = { .name = "raced", .kind = BLAMER_METRIC_COUNTER,
					     .labels = l, .nlabels = 1 };
	struct blamer_series *pre[SERIES_ROUNDS] = { 0 }, *got[RACE_THREADS][SERIES_ROUNDS];
	const struct blamer_snap_process *p;
	unsigned int given[SERIES_ROUNDS] = { 0 }, listed[SERIES_ROUNDS] = { 0 };
	int i, t, bad, not_full, round, full_rounds = 0;
	struct blamer_snapshot *s;
	struct blamer_metric *m;
	struct blamer_config c;
	struct blamer *b;
	size_t k;

	c = t_cfg(self->dir, 16384, 1);
	ASSERT_EQ(0, t_open(self, &c, &b));
	m = blamer_metric_define(b, &d);
	ASSERT_NE(NULL, m) TH_LOG("%s", blamer_errmsg());
	ASSERT_TRUE(series_race_got(m, pre, got, &bad, &not_full));
	ASSERT_EQ(0, not_full);
	ASSERT_LT(0, bad);	/* the heap did fill */
	for (i = 0; i < SERIES_ROUNDS; i++) {
		struct blamer_series *one = NULL;

		for (t = 0; t < RACE_THREADS; t++) {
			if (!got[t][i])
				continue;
			if (one) {
				ASSERT_EQ(one, got[t][i]) TH_LOG("round %d: two handles", i);
			}
			one = got[t][i];
			given[i]++;
		}
		full_rounds += given[i] < RACE_THREADS;
	}
	ASSERT_LT(0, full_rounds);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	p = &s->procs[0];
	ASSERT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s", p->problem);
	for (k = 0; k < p->nmetrics; k++) {
		ASSERT_EQ(1, sscanf(p->metrics[k].values[0], "/r/%d", &round));
		ASSERT_LT(round, SERIES_ROUNDS);
		listed[round]++;
		EXPECT_EQ((double)given[round], p->metrics[k].value) TH_LOG("round %d", round);
	}
	/* a series no racer got may still be listed (its handle went in,
	 * then a use found no room): with no adds, above */
	for (i = 0; i < SERIES_ROUNDS; i++)
		EXPECT_EQ(given[i] ? 1 : listed[i] ? 1 : 0, listed[i]) TH_LOG("round %d", i);
	blamer_snapshot_free(s);
	t_close(self, b);
}

static struct blamer *sig_ctx;

static volatile sig_atomic_t sig_count;

/*
 * What the loop of push_pop_from_signal_handler is doing: which of its
 * pushes it is in (1, 2; 0 elsewhere) and its iteration, the data0 of
 * that push. A handler that finds the slot of that push written and the
 * depth not yet raised over it landed in the middle of the push, where a
 * push of its own must not undo the interrupted one.
 */
static struct blamer_thread *sig_rec;
static volatile sig_atomic_t sig_in_push, sig_iter, sig_mid_push;

static void on_alarm(int sig)
{
	int saved = errno, in_push = sig_in_push;
	uint32_t d = ld_relaxed(A32(&sig_rec->depth));

	(void)sig;
	if (in_push && d == (uint32_t)in_push - 1 &&
	    *(volatile uint64_t *)&sig_rec->stack[d].data[0] == (uint64_t)sig_iter)
		sig_mid_push++;
	if (blamer_push(sig_ctx, BLAMER_ACTIVITY_GENERIC, "signal", UINT64_MAX, 2) > 0)
		blamer_pop(sig_ctx);
	sig_count++;
	errno = saved;
}

#define PUSH_SIG_US 1000
#define PUSH_MID_MIN 8

TEST_F_TIMEOUT(ctx, push_pop_from_signal_handler, 120)
{
	/*
	 * A signal every ms (every 200 us, a debug kernel under TCG spent
	 * all its time on the signals). The loop ends after 20 signals and
	 * 300,000 iterations, or sooner once 2,000 signals have come and
	 * PUSH_MID_MIN of them landed mid-push: where the clock is a system
	 * call (no invariant TSC: a guest under TCG) nearly every handler
	 * lands on its return, before the push touches the stack, and on a
	 * debug kernel the 300,000 iterations were 7 to 22 s for 2 to 5
	 * handlers mid-push (and 700 to 2,000 signals), where 8 come in
	 * about 3 s. Elsewhere the iterations come first, as before, with
	 * ten times the signals among them.
	 */
	struct itimerval tv = { { 0, PUSH_SIG_US }, { 0, PUSH_SIG_US } };
	struct blamer_config c;
	struct blamer_thread *t;
	struct sigaction sa = { .sa_handler = on_alarm };
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &sig_ctx));
	/* the thread's record exists before any signal; its slots hold
	 * no iteration's data0 (from 1) before the loop */
	ASSERT_EQ(1, blamer_push(sig_ctx, BLAMER_ACTIVITY_TASK, "main", 0, 0));
	blamer_pop(sig_ctx);
	sig_rec = bl_thread_get(sig_ctx)->rec;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &tv, NULL));
	for (i = 1; sig_count < 20 ||
	     (i < 300000 && (sig_mid_push < PUSH_MID_MIN || sig_count < 2000)); i++) {
		sig_iter = i;
		sig_in_push = 1;
		blamer_push(sig_ctx, BLAMER_ACTIVITY_TASK, "main", i, 0);
		sig_in_push = 2;
		blamer_push(sig_ctx, BLAMER_ACTIVITY_LOCK_ACQUIRE, "lock", i, 0);
		sig_in_push = 0;
		blamer_pop(sig_ctx);
		blamer_pop(sig_ctx);
		if (i > 50000000)
			break;
	}
	memset(&tv, 0, sizeof(tv));
	setitimer(ITIMER_REAL, &tv, NULL);
	TH_LOG("%d iterations, %d signals, %d of them mid-push", i, (int)sig_count,
	       (int)sig_mid_push);
	ASSERT_GE(sig_count, 20);
	t = bl_thread_get(sig_ctx)->rec;
	ASSERT_EQ(0, t->depth);
	ASSERT_EQ(0, t->overflows);
	t_close(self, sig_ctx);
}

/*
 * Two paths whose handles share a cache slot, so every add of the main
 * thread rewrites the slot, and a handler that adds to the path the main
 * thread is at: a handler that ran between the stores of a rewrite, and
 * trusted the half-written slot, would add to the other path's shard.
 */

static struct blamer_path *sig_path[2];

static uint64_t sig_adds[2];

static volatile int sig_at;

static void on_alarm_add(int sig)
{
	int k = sig_at;

	(void)sig;
	blamer_path_add(sig_path[k], 0, 1000);
	sig_adds[k] += 1000;
	sig_count++;
}

TEST_F(ctx, path_add_from_signal_handler)
{
	struct itimerval tv = { { 0, 100 }, { 0, 100 } };
	struct sigaction sa = { .sa_handler = on_alarm_add };
	uint64_t ids[2] = { blamer_dag_id("sig"), 0 }, main_adds[2] = { 0 };
	struct blamer_path *p;
	struct blamer_config c;
	struct blamer *b;
	int i, k;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	/* handles get consecutive ids: the first and the one BL_SHARD_SLOTS later collide */
	for (k = 0; k <= (int)BL_SHARD_SLOTS; k++) {
		ids[1] = k + 1;
		p = blamer_path_get(b, ids, 2, NULL, 0);
		ASSERT_NE(NULL, p);
		if (k == 0 || k == BL_SHARD_SLOTS)
			sig_path[k != 0] = p;
	}
	ASSERT_EQ(sig_path[0]->id % BL_SHARD_SLOTS, sig_path[1]->id % BL_SHARD_SLOTS);
	/* the shards exist before any signal: a handler that interrupts the
	 * making of one may rightly make a second */
	blamer_path_add(sig_path[0], 0, 0);
	blamer_path_add(sig_path[1], 0, 0);
	sig_count = 0;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &tv, NULL));
	for (i = 0; sig_count < 2000 && i < 100000000; i++) {
		k = i & 1;
		sig_at = k;
		blamer_path_add(sig_path[k], 0, 1);
		main_adds[k]++;
	}
	memset(&tv, 0, sizeof(tv));
	setitimer(ITIMER_REAL, &tv, NULL);
	ASSERT_GE(sig_count, 2000);
	for (k = 0; k < 2; k++) {
		uint64_t sum[BLAMER_DAG_MAX_UNITS], n;
		struct v_heap v;
		char why[64];

		t_view(b, &v);
		ASSERT_EQ(0, v_path_values(&v, sig_path[k]->h.ref, sum, &n, why)) TH_LOG("%s", why);
		ASSERT_EQ(main_adds[k] + sig_adds[k], sum[0]) TH_LOG("path %d", k);
		ASSERT_EQ(1, n);	/* one thread: one shard, handler or not */
	}
	t_close(self, b);
}

/*
 * Threads push and pop without pause while snapshots are taken: no
 * activity may be younger than the snapshot's "now" (it is taken after
 * the heaps were read; taken before, activities pushed during the read
 * looked as if from the future, shown as ages of "?"). The monotonic
 * clock makes stamps exact, so the bound is strict.
 */

struct pusher {
	struct blamer *b;
	atomic_int *stop;
};

static void *push_forever(void *arg)
{
	struct pusher *p = arg;

	while (!atomic_load(p->stop)) {
		blamer_push(p->b, BLAMER_ACTIVITY_TASK, "outer", 0, 0);
		blamer_push(p->b, BLAMER_ACTIVITY_LOCK_ACQUIRE, "inner", 0, 0);
		blamer_pop(p->b);
		blamer_pop(p->b);
	}
	return NULL;
}

/*
 * Three threads push without pause on a guest of two vCPUs: under TCG, a
 * debug kernel and a loaded host, five snapshots can take longer than
 * the harness's default 30 s.
 */
TEST_F_TIMEOUT(ctx, snapshot_now_is_after_every_activity, 300)
{
	struct blamer_reader_opts o = { .backend = t_backend(), .dir = self->dir };
	atomic_int stop = 0;
	struct pusher arg = { .stop = &stop };
	struct blamer_reader *r;
	struct blamer_config c;
	pthread_t th[3];
	uint64_t until;
	size_t seen = 0;
	char e[256];
	int i, k;

	c = t_cfg(self->dir, 0, 0);
	setenv("BLAMER_CLOCK", "monotonic", 1);
	i = t_open(self, &c, &arg.b);
	unsetenv("BLAMER_CLOCK");
	ASSERT_EQ(0, i) TH_LOG("%s", blamer_errmsg());
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	/*
	 * One activity that stays while the snapshots are taken: the
	 * pushers' stacks change so fast that every copy of them may be torn
	 * (seen once under ASan), and then no activity would be checked.
	 */
	blamer_push(arg.b, BLAMER_ACTIVITY_TASK, "steady", 0, 0);
	for (k = 0; k < 3; k++)
		ASSERT_EQ(0, pthread_create(&th[k], NULL, push_forever, &arg));
	/* 100 snapshots, or as many as 5 s allow (TSan on a busy machine) */
	until = bl_monotonic_ns() + 5000000000ull;
	for (i = 0; i < 100 && (i < 5 || bl_monotonic_ns() < until); i++) {
		struct blamer_snapshot *s;
		size_t p, t, a;

		ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
		for (p = 0; p < s->nprocs; p++) {
			for (t = 0; t < s->procs[p].nthreads; t++) {
				const struct blamer_snap_thread *th1 = &s->procs[p].threads[t];

				for (a = 0; a < th1->nacts; a++) {
					uint64_t at = th1->acts[a].time_ns;

					ASSERT_LE(at, s->monotonic_ns)
						TH_LOG("snapshot %d: activity %llu ns after now", i,
						       (unsigned long long)(at - s->monotonic_ns));
					seen += at != 0;
				}
			}
		}
		blamer_snapshot_free(s);
	}
	atomic_store(&stop, 1);
	for (k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	blamer_pop(arg.b);
	blamer_reader_close(r);
	ASSERT_GT(seen, 0);
	t_close(self, arg.b);
}

/*
 * Metric writes from many threads (counters and histograms through
 * shards, gauges added to, series made by racing first uses) while the
 * reader takes snapshots: no counter or count ever lower than the last
 * snapshot showed, every series made once, every write counted.
 */
struct metric_run {
	struct blamer *b;
	struct blamer_metric *labelled;
	struct blamer_series *c, *h, *g;
	atomic_int *stop;
	int n;
};

static void *metric_writer(void *arg)
{
	struct metric_run *m = arg;
	char key[8];
	int i;

	for (i = 0; i < m->n; i++) {
		const char *v[1] = { key };

		snprintf(key, sizeof(key), "k%d", i % 8);
		blamer_counter_add(m->c, 1);
		blamer_histogram_observe(m->h, i % 7);
		blamer_gauge_add(m->g, 1);
		blamer_counter_add(blamer_metric_series(m->labelled, v, NULL, 0), 1);
		blamer_gauge_add(m->g, -1);
	}
	return NULL;
}

static const struct blamer_snap_series *find_series(const struct blamer_snapshot *s,
						    const char *name)
{
	size_t i;

	for (i = 0; i < s->nseries; i++)
		if (!strcmp(s->series[i].def->name, name))
			return &s->series[i];
	return NULL;
}

TEST_F_TIMEOUT(ctx, metric_writes_race_a_reader, 300)
{
	enum { THREADS = 4, WRITES = 20000 };
	static const char *const key[] = { "key" };
	double bounds[3] = { 1, 3, 5 };
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_metric_def ld = { .name = "l", .kind = BLAMER_METRIC_COUNTER,
					.labels = key, .nlabels = 1 };
	struct blamer_metric_def hd = { .name = "h", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 3 };
	struct blamer_metric_def gd = { .name = "g", .kind = BLAMER_METRIC_GAUGE,
					.gauge_mode = BLAMER_GAUGE_SUM };
	struct blamer_reader_opts o = { .backend = t_backend(), .dir = self->dir };
	double last_c = 0;
	uint64_t last_h = 0;
	struct metric_run run = { .n = WRITES };
	int32_t me = getpid();
	const struct blamer_snap_series *x;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct blamer_config c;
	pthread_t th[THREADS];
	struct v_stats st;
	struct v_heap v;
	double sum = 0;
	int i, snaps = 0;
	char e[256];
	size_t k;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &run.b));
	run.c = blamer_metric_series(blamer_metric_define(run.b, &cd), NULL, NULL, 0);
	run.h = blamer_metric_series(blamer_metric_define(run.b, &hd), NULL, NULL, 0);
	run.g = blamer_metric_series(blamer_metric_define(run.b, &gd), NULL, NULL, 0);
	run.labelled = blamer_metric_define(run.b, &ld);
	ASSERT_TRUE(run.c && run.h && run.g && run.labelled);
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, metric_writer, &run));
	for (i = 0; i <= THREADS; i++) {
		/* while they write, then once after */
		if (i == THREADS)
			for (k = 0; k < THREADS; k++)
				pthread_join(th[k], NULL);
		do {
			ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
			/* this process's heap (the device shows the user's others) */
			blamer_snapshot_select(s, &me, 1);
			ASSERT_EQ(1, s->nprocs);
			ASSERT_NE(BLAMER_HEALTH_CORRUPT, s->procs[0].health)
				TH_LOG("%s", s->procs[0].problem);
			x = find_series(s, "c");
			if (x) {
				ASSERT_GE(x->value, last_c);
				last_c = x->value;
			}
			x = find_series(s, "h");
			if (x) {
				ASSERT_GE(x->count, last_h);
				last_h = x->count;
			}
			snaps++;
			if (i == THREADS)
				break;
			blamer_snapshot_free(s);
		} while (snaps < 20 * (i + 1));
	}
	ASSERT_EQ((double)THREADS * WRITES, last_c);
	ASSERT_EQ((uint64_t)THREADS * WRITES, last_h);
	ASSERT_EQ(0, find_series(s, "g")->value);
	for (k = 0; k < s->nseries; k++)
		if (!strcmp(s->series[k].def->name, "l"))
			sum += s->series[k].value;
	ASSERT_EQ((double)THREADS * WRITES, sum);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	/* every series once: c, h, g and the eight of l */
	t_view(run.b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(11, st.by_type[BLAMER_REC_METRIC]);
	t_close(self, run.b);
}

TEST_HARNESS_MAIN
