// SPDX-License-Identifier: MIT
/*
 * reader-unit, the dir backend: live and dead heaps, status, files
 * truncated while read, a long-lived reader following a heap, release,
 * the trust rules, a missing directory. Built with ASan and UBSan.
 */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "testsupport.h"
#include "rtest.h"
#include "where.h"

/* Why the snapshot skipped the directory entry @name, or "". */
static const char *skipped_why(const struct blamer_snapshot *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nskipped; i++)
		if (!strcmp(s->skipped[i].name, name))
			return s->skipped[i].why;
	return "";
}

/*
 * Status sums the writes every heap dropped, dead heaps included, by
 * reason, and says how many heaps dropped any, in its JSON too.
 */
/*
 * A slab file's name is written without snprintf() (where.c): every
 * writer and reader must still agree with it byte for byte, at the
 * extremes and cut short as snprintf() cuts.
 */
TEST(slab_names_are_what_snprintf_writes)
{
	static const int64_t pids[] = { 1, 7, 4194304, INT32_MAX, INT64_MAX, -1, INT64_MIN };
	static const uint64_t starts[] = { 0, 5, 1234567890123ull, UINT64_MAX };
	static const uint32_t seqs[] = { 0, 1, UINT32_MAX }, idxs[] = { 0, 9, 63 };
	char want[128], got[128];
	size_t a, b, c, d, len;

	for (a = 0; a < sizeof(pids) / sizeof(pids[0]); a++)
		for (b = 0; b < sizeof(starts) / sizeof(starts[0]); b++)
			for (c = 0; c < 3; c++)
				for (d = 0; d < 3; d++) {
					int n = seqs[c] ?
						snprintf(want, sizeof(want), "%" PRId64 "-%" PRIu64 "-%u.%u.slab",
							 pids[a], starts[b], seqs[c], idxs[d]) :
						snprintf(want, sizeof(want), "%" PRId64 "-%" PRIu64 ".%u.slab",
							 pids[a], starts[b], idxs[d]);

					memset(got, 'x', sizeof(got));
					ASSERT_EQ(n, bl_slab_name(got, sizeof(got), pids[a], starts[b],
								  seqs[c], idxs[d]));
					ASSERT_STREQ(want, got);
					/* cut short: what fits, and a NUL */
					for (len = 0; len <= (size_t)n + 1; len += 7) {
						memset(got, 'x', sizeof(got));
						ASSERT_EQ(n, bl_slab_name(got, len, pids[a], starts[b],
									  seqs[c], idxs[d]));
						if (len)
							ASSERT_EQ(0, strncmp(want, got, len - 1));
						if (len)
							ASSERT_EQ('\0', got[len - 1 < (size_t)n ? len - 1 : (size_t)n]);
						ASSERT_EQ('x', got[len]);
					}
				}
}

TEST(status_sums_the_drops_of_every_heap)
{
	uint64_t counts[BLAMER_DROP_REASONS] = { 0 };
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_backend_status st;
	struct blamer_reader *r;
	struct fx_heap a, b;
	char *json = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_init(&a, 1, FX_SLAB, 3999201, 5);
	fx_process(&a, BLAMER_PHASE_MAIN_LOOP, "/srv/a");
	counts[BLAMER_DROP_STRING_CUT] = 3;
	fx_drops(&a, "worker", "1", counts, BLAMER_DROP_REASONS);
	fx_init(&b, 1, FX_SLAB, 3999202, 6);
	fx_process(&b, BLAMER_PHASE_MAIN_LOOP, "/srv/b");
	counts[BLAMER_DROP_STRING_CUT] = 1;
	counts[BLAMER_DROP_HEAP_FULL] = 4;
	fx_drops(&b, "worker", "2", counts, BLAMER_DROP_REASONS);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999201, 5));
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999202, 6));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_status(r, &st, NULL, 0));
	EXPECT_EQ(2, st.heaps);
	EXPECT_EQ(4, st.drops[BLAMER_DROP_STRING_CUT]);
	EXPECT_EQ(4, st.drops[BLAMER_DROP_HEAP_FULL]);
	EXPECT_EQ(8, st.dropped);
	EXPECT_EQ(2, st.dropping_heaps);
	f = open_memstream(&json, &len);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, blamer_status_write_json(&st, f));
	fclose(f);
	EXPECT_NE(NULL, strstr(json, "\"dropped\":\"8\",\"drops\":{\"heap_full\":\"4\",\"string_cut\":\"4\"}"))
		TH_LOG("%s", json);
	EXPECT_NE(NULL, strstr(json, "\"dropping_heaps\":\"2\""));
	free(json);
	blamer_reader_close(r);
	fx_free(&a);
	fx_free(&b);
	rm_tmpdir();
}

/*
 * Drop counts summed over heaps stop at 2^64 - 1, as the reader's other
 * totals: the status's (over every heap of the machine) and the service
 * exposition's blamer_dropped_total were summed with +=, so one heap's
 * count near the top wrapped the total to near nothing.
 */
TEST(drop_sums_over_heaps_stop_at_the_most)
{
	uint64_t counts[BLAMER_DROP_REASONS] = { 0 };
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	struct blamer_backend_status st;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct blamer_fleet *f;
	char *text = NULL, want[128], e[256];
	struct fx_heap a, b;
	size_t len = 0;
	FILE *mf;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_init(&a, 1, FX_SLAB, 3999211, 5);
	fx_process(&a, BLAMER_PHASE_MAIN_LOOP, "/srv/a");
	counts[BLAMER_DROP_STRING_CUT] = UINT64_MAX - 1;
	fx_drops(&a, "worker", "1", counts, BLAMER_DROP_REASONS);
	fx_init(&b, 1, FX_SLAB, 3999212, 6);
	fx_process(&b, BLAMER_PHASE_MAIN_LOOP, "/srv/b");
	counts[BLAMER_DROP_STRING_CUT] = 5;
	fx_drops(&b, "worker", "2", counts, BLAMER_DROP_REASONS);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999211, 5));
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999212, 6));
	fx_free(&a);
	fx_free(&b);
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_status(r, &st, NULL, 0));
	EXPECT_EQ(2, st.heaps);
	EXPECT_EQ(UINT64_MAX, st.drops[BLAMER_DROP_STRING_CUT]);
	EXPECT_EQ(UINT64_MAX, st.dropped);
	EXPECT_EQ(2, st.dropping_heaps);

	/* the service's series: both heaps are of this uid */
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	f = blamer_fleet_open(NULL, e, sizeof(e));
	ASSERT_NE(NULL, f) TH_LOG("%s", e);
	mf = open_memstream(&text, &len);
	ASSERT_NE(NULL, mf);
	EXPECT_EQ(0, blamer_fleet_write_prometheus(f, s, mf));
	fclose(mf);
	snprintf(want, sizeof(want),
		 "\nblamer_dropped_total{reason=\"string_cut\",uid=\"%u\"} 18446744073709551615\n",
		 (unsigned)getuid());
	EXPECT_NE(NULL, strstr(text, want)) TH_LOG("%s", text);
	free(text);
	blamer_fleet_close(f);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
}

TEST(dir_live_dead_and_aggregation)
{
	struct fx_heap a, b;
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	size_t i;
	char path[256];
	int fd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	/* live: our own pid and start time; dead: a pid with another start */
	fx_standard(&a, getpid(), (int64_t)fx_self_start_ns(), 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, getpid(), fx_self_start_ns()));
	fx_standard(&b, 3999001, 5, 2);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999001, 5));
	/* junk that must be ignored or refused, never trusted */
	snprintf(path, sizeof(path), "%s/notes.txt", tmpdir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	snprintf(path, sizeof(path), "%s/12-34.0.slab", tmpdir);
	ASSERT_EQ(0, mkdir(path, 0700));	/* a directory named like a slab */
	snprintf(path, sizeof(path), "%s/13-34.0.slab", tmpdir);
	ASSERT_EQ(0, symlink("/etc/passwd", path));

	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	/* the junk is no heap: skipped, each with its reason */
	ASSERT_EQ(2, s->nprocs);
	ASSERT_EQ(3, s->nskipped);
	EXPECT_EQ(3, s->skipped_total);
	EXPECT_STREQ("not a regular file", skipped_why(s, "12-34.0.slab"));
	EXPECT_STREQ("a symlink, not followed", skipped_why(s, "13-34.0.slab"));
	EXPECT_NE(NULL, strstr(skipped_why(s, "notes.txt"), "not a slab file name"));
	p = by_pid(s, getpid());
	ASSERT_NE(NULL, p);
	EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health);
	EXPECT_EQ(4, p->npaths);
	p = by_pid(s, 3999001);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(BLAMER_PROC_DEAD, p->state);
	/* not read in full: its headers, as list has them (one summary of a
	 * dead heap for every view) */
	EXPECT_EQ(BLAMER_HEALTH_UNCHECKED, p->health);
	EXPECT_STREQ("app", p->comm);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	EXPECT_GT(p->used, 1000);
	EXPECT_EQ(0, p->npaths);
	EXPECT_EQ(NULL, by_pid(s, 13));
	/* only the live heap counts in the totals */
	for (i = 0; i < s->ntotals; i++)
		EXPECT_EQ(1, s->totals[i].nprocs);
	blamer_snapshot_free(s);

	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	p = by_pid(s, 3999001);
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health);
	EXPECT_STREQ("app", p->comm);	/* from the heap's argv[0] */
	EXPECT_EQ(NULL, by_pid(s, 12));
	for (i = 0; i < s->ntotals; i++) {
		const struct blamer_snap_total *t = &s->totals[i];

		EXPECT_EQ(2, t->nprocs);
		if (t->depth == 3 && t->unit == BLAMER_UNIT_CPU_NS)
			EXPECT_EQ(3 * 5000000ull, t->value);	/* scale 1 + scale 2 */
	}
	blamer_snapshot_free(s);

	s = dir_snapshot(BLAMER_READ_HEADERS_ONLY);
	ASSERT_NE(NULL, s);
	p = by_pid(s, getpid());
	EXPECT_EQ(BLAMER_HEALTH_UNCHECKED, p->health);
	EXPECT_EQ(0, p->nthreads);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	EXPECT_EQ(2 * FX_SLAB, p->size);
	EXPECT_GT(p->used, 1000);
	blamer_snapshot_free(s);

	/* truncated and oversized files */
	snprintf(path, sizeof(path), "%s/3999001-5.1.slab", tmpdir);
	ASSERT_EQ(0, truncate(path, 100));
	snprintf(path, sizeof(path), "%s/3999001-5.0.slab", tmpdir);
	ASSERT_EQ(0, truncate(path, 2 << 20));
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, by_pid(s, 3999001)->health);
	blamer_snapshot_free(s);

	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
}

/*
 * A dir heap truncated and rewritten over and over while the reader reads
 * it: the reader must neither fault (no SIGBUS: pread, not mmap) nor fail,
 * only report what it saw.
 */
TEST(dir_file_truncated_while_read)
{
	struct fx_heap a;
	char path[256];
	pid_t child;
	int i, st, bad = 0, seen_ok = 0;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	fx_standard(&a, 3999009, 9, 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999009, 9));
	snprintf(path, sizeof(path), "%s/3999009-9.0.slab", tmpdir);
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		int fd = open(path, O_WRONLY);

		/* never outlive a test that failed before it could kill us */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);

		for (;;) {
			if (ftruncate(fd, 0) || pwrite(fd, a.slab[0], 700, 0) != 700 ||
			    pwrite(fd, a.slab[0], FX_SLAB, 0) != FX_SLAB)
				_exit(1);
		}
	}
	for (i = 0; i < 2000; i++) {
		struct blamer_snapshot *s = dir_snapshot(BLAMER_READ_DEAD_FULL);

		if (!s || s->nprocs != 1) {
			bad++;
		} else {
			seen_ok += s->procs[0].health == BLAMER_HEALTH_OK;
			/* whatever it saw, it says so: never ok with missing records */
			if (s->procs[0].health == BLAMER_HEALTH_OK)
				EXPECT_EQ(4, s->procs[0].npaths);
		}
		blamer_snapshot_free(s);
	}
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	TH_LOG("%d of 2000 reads saw the whole heap", seen_ok);
	EXPECT_EQ(0, bad);
	rm_tmpdir();
	fx_free(&a);
}

/*
 * A long-lived reader reads a slab file first as far as it read it the
 * last time: a heap that grew since (a file rewritten with more records,
 * a freeptr past that hint) is still read whole, and one that shrank is
 * read as it is now.
 */
TEST(long_lived_dir_reader_follows_a_heap_that_grows_and_shrinks)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	uint64_t p5[] = { FX_ROOT, 0x500ull };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap a, b;
	int i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, 3999011, 11, 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999011, 11));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);
	blamer_snapshot_free(s);
	/* grown: three more paths in the second slab, past its old freeptr */
	a.cur = 1;
	for (i = 0; i < 3; i++) {
		p5[1] = 0x500ull + (uint64_t)i;
		fx_path(&a, p5, 2, 1000, 0);
	}
	a.cur = 0;
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999011, 11));
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(7, s->procs[0].npaths);
	blamer_snapshot_free(s);
	/* shrunk back: the heap as it is now, nothing of the bigger one */
	fx_standard(&b, 3999011, 11, 1);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999011, 11));
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
}

TEST(dir_release_removes_dead_only)
{
	struct fx_heap a;
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	char e[256];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, getpid(), (int64_t)fx_self_start_ns(), 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, getpid(), fx_self_start_ns()));
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999002, 9));
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	ASSERT_EQ(2, s->nprocs);
	EXPECT_EQ(-EBUSY, blamer_reader_release(r, by_pid(s, getpid()), e, sizeof(e)));
	EXPECT_EQ(0, blamer_reader_release(r, by_pid(s, 3999002), e, sizeof(e)));
	blamer_snapshot_free(s);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	EXPECT_EQ(1, s->nprocs);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/*
 * A live writer's file made a moment ago and not written yet (between the
 * writer's create and its header) is a heap being made: no row, and not
 * counted as a file without a heap, which an exporter would print at
 * every scrape a worker is born in; the same file a second later, still
 * empty, is counted.
 */
TEST(a_live_writers_file_not_yet_written_is_a_heap_being_made)
{
	struct blamer_snapshot *s;
	char path[256];
	int fd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/%d-%" PRIu64 ".0.slab", tmpdir, (int)getpid(),
		 fx_self_start_ns());
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, s->nprocs);
	EXPECT_EQ(0, s->empty_files);
	blamer_snapshot_free(s);
	/* unchanged a second later (its ctime, which no call sets back,
	 * included): no longer being made */
	usleep(1200 * 1000);
	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, s->nprocs);
	EXPECT_EQ(1, s->empty_files);
	blamer_snapshot_free(s);
	close(fd);
	rm_tmpdir();
}

/*
 * What the reader believes of a directory: a name the process gave itself
 * is made printable; a file time in the future is no evidence; a symlink
 * or a directory others can write is refused, as the writer refuses it.
 */
TEST(dir_trust_rules_of_the_reader)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	struct timespec future[2] = { { .tv_nsec = UTIME_OMIT } };
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	char comm[16], path[256], link[80], e[256];
	struct fx_heap a;
	size_t i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	ASSERT_EQ(0, prctl(PR_GET_NAME, comm));
	ASSERT_EQ(0, prctl(PR_SET_NAME, "x\033[2J\033]0;p\a\x9b"));
	fx_standard(&a, getpid(), (int64_t)fx_self_start_ns(), 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, getpid(), fx_self_start_ns()));
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999001, 5));
	future[1].tv_sec = time(NULL) + 365 * 86400;
	snprintf(path, sizeof(path), "%s/3999001-5.0.slab", tmpdir);
	ASSERT_EQ(0, utimensat(AT_FDCWD, path, future, 0));
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	prctl(PR_SET_NAME, comm);
	ASSERT_NE(NULL, s);
	p = by_pid(s, getpid());
	ASSERT_NE(NULL, p);
	EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
	EXPECT_STREQ("x?[2J?]0;p??", p->comm);
	p = by_pid(s, 3999001);
	ASSERT_NE(NULL, p);
	EXPECT_LE(p->last_seen_ns, s->realtime_ns);
	for (i = 0; i < s->nprocs; i++)
		EXPECT_EQ(NULL, strpbrk(s->procs[i].comm, "\033\a"));
	blamer_snapshot_free(s);

	/* a symlink to that good directory; then the directory opened to others */
	snprintf(link, sizeof(link), "%s.link", tmpdir);
	ASSERT_EQ(0, symlink(tmpdir, link));
	o.dir = link;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(-EPERM, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	EXPECT_NE(NULL, strstr(e, "is a symlink: refused")) TH_LOG("%s", e);
	blamer_reader_close(r);
	unlink(link);
	ASSERT_EQ(0, chmod(tmpdir, 0770));
	o.dir = tmpdir;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(-EPERM, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	EXPECT_NE(NULL, strstr(e, "writable by group or others")) TH_LOG("%s", e);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/*
 * A directory name longer than the reader keeps (255 bytes), given or in
 * $BLAMER_DIR, was cut to its first 255 bytes: `blamer --dir A/sub
 * release --all` read and released the heaps of A. It is refused, with
 * ENAMETOOLONG and a message saying so; a name of 255 bytes is read.
 */
TEST(a_dir_name_too_long_is_refused_never_cut)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	char a[256], sub[300], e[256];
	struct fx_heap h;
	size_t n;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	n = (size_t)snprintf(a, sizeof(a), "%s/", tmpdir);
	memset(a + n, 'p', sizeof(a) - 1 - n);
	a[sizeof(a) - 1] = '\0';
	snprintf(sub, sizeof(sub), "%s/sub", a);
	ASSERT_EQ(0, mkdir(a, 0700));
	ASSERT_EQ(0, mkdir(sub, 0700));
	fx_standard(&h, 3999003, 9, 1);
	ASSERT_EQ(0, fx_write_dir(&h, a, 3999003, 9));
	fx_free(&h);

	o.dir = sub;
	errno = 0;
	r = blamer_reader_open(&o, e, sizeof(e));
	EXPECT_EQ(NULL, r);
	EXPECT_EQ(ENAMETOOLONG, errno);
	EXPECT_NE(NULL, strstr(e, "directory name too long (259 bytes, at most 255)")) TH_LOG("%s", e);
	blamer_reader_close(r);
	o.dir = NULL;
	setenv("BLAMER_DIR", sub, 1);
	r = blamer_reader_open(&o, e, sizeof(e));
	unsetenv("BLAMER_DIR");
	EXPECT_EQ(NULL, r);
	EXPECT_NE(NULL, strstr(e, "too long")) TH_LOG("%s", e);
	blamer_reader_close(r);

	/* 255 bytes are read whole */
	o.dir = a;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	EXPECT_STREQ(a, blamer_reader_source(r));
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	EXPECT_EQ(1, s->nprocs);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
}

TEST(missing_dir_is_empty_and_device_error_says_load)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.dir = "/nonexistent/blamer" };
	struct blamer_reader *r = blamer_reader_open(&o, NULL, 0);
	struct blamer_snapshot *s;
	char e[256];

	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	EXPECT_EQ(0, s->nprocs);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	o.backend = BLAMER_BACKEND_DEVICE;
	o.device = "/nonexistent/blamer-dev";
	EXPECT_EQ(NULL, blamer_reader_open(&o, e, sizeof(e)));
	EXPECT_NE(NULL, strstr(e, "blamer load"));
}

TEST_HARNESS_MAIN
