// SPDX-License-Identifier: MIT
/*
 * reader-amplify: a heap crafted to be expensive costs the reader at
 * most a small constant times the bytes it really holds
 * (Documentation/reader.rst, "Limits"). One test per attack class; each
 * writes the heap into a dir-backend directory on tmpfs, runs the
 * `blamer` commands a monitoring job would run over it, and compares the
 * command's peak RSS (wait4) with the same command over an empty
 * directory:
 *
 *     peak - empty <= RSS_PER_BYTE x (bytes the heap's files hold) + RSS_SLACK
 *
 * where the bytes held are the files' allocated blocks, not the sizes
 * they claim. Times are printed, never asserted (the harness' timeout
 * catches a hang).
 *
 *   amplify_test BLAMER
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "kselftest_harness.h"

#include "testsupport.h"

/* The documented bound (reader.rst): the constant and the fixed slack. */
#define RSS_PER_BYTE	10
#define RSS_SLACK	(2u << 20)

static const char *blamer = "blamer";

/* Tests of their own, each with time for a slow, shared machine. */
FIXTURE(amp) {};
FIXTURE_SETUP(amp) {}
FIXTURE_TEARDOWN(amp) {}
#define AMP_TEST(name) TEST_F_TIMEOUT(amp, name, 600)

struct run {
	uint64_t peak;		/* bytes */
	double secs;
	int status;
};

/*
 * A child's peak RSS (ru_maxrss) counts what it had before exec: the
 * pages of the process that forked it. So the commands are started by a
 * launcher forked before any heap was built, which stays small: it reads
 * a NUL-separated argv from one pipe and answers with a struct run on
 * the other.
 */
static int to_launcher = -1, from_launcher = -1;

static struct run launch(char *const *argv)
{
	struct run r = { 0 };
	struct timespec t0, t1;
	struct rusage ru;
	int st = 0;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &st, 0, &ru) != pid) {
		r.status = -1;
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r.peak = (uint64_t)ru.ru_maxrss * 1024;
	r.secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return r;
}

static void launcher(int in, int out)
{
	char buf[4096], *argv[32];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf) - 1)) > 0) {
		struct run r;
		int argc = 0;
		char *p;

		buf[n] = '\0';
		for (p = buf; p < buf + n && argc < 31; p += strlen(p) + 1)
			argv[argc++] = p;
		argv[argc] = NULL;
		r = launch(argv);
		if (write(out, &r, sizeof(r)) != sizeof(r))
			break;
	}
	_exit(0);
}

static void start_launcher(void)
{
	int a[2], b[2];

	if (pipe(a) || pipe(b))
		return;
	if (fork() == 0) {
		close(a[1]);
		close(b[0]);
		launcher(a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	to_launcher = a[1];
	from_launcher = b[0];
}

/* Runs `blamer --dir DIR ARGS...`, output discarded: its peak RSS. */
static struct run run_blamer(const char *dir, const char *const *args)
{
	struct run r = { .status = -1 };
	char buf[4096];
	size_t n = 0;
	const char *const pre[] = { blamer, "--dir", dir };
	int i;

	for (i = 0; i < 3; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", pre[i]) + 1;
	for (; *args; args++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", *args) + 1;
	if (write(to_launcher, buf, n) != (ssize_t)n ||
	    read(from_launcher, &r, sizeof(r)) != sizeof(r))
		r.status = -1;
	return r;
}

/* Bytes the files of @dir hold: their allocated blocks. */
static uint64_t held_bytes(const char *dir)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	uint64_t n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_name[0] != '.' && !lstat(path, &st) && S_ISREG(st.st_mode))
			n += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return n;
}

static void rm_dir(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* A fresh 0700 directory on tmpfs (where the dir backend's heaps live). */
static void new_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/dev/shm/blamer-amp.XXXXXX");
	if (!mkdtemp(dir))
		snprintf(dir, len, "/tmp/blamer-amp.%d", (int)getpid());
	mkdir(dir, 0700);
}

/*
 * Runs each command over @dir and over an empty directory and checks
 * the bound. Returns the worst ratio (extra RSS / bytes held).
 */
static double measure_held(struct __test_metadata *_metadata, const char *class,
			   const char *dir, const char *const *const *cmds, uint64_t held)
{
	char empty[64];
	double worst = 0;
	int i;

	new_dir(empty, sizeof(empty));
	for (i = 0; cmds[i]; i++) {
		struct run base = run_blamer(empty, cmds[i]);
		struct run r = run_blamer(dir, cmds[i]);
		uint64_t extra = r.peak > base.peak ? r.peak - base.peak : 0;
		double ratio = held ? (double)extra / (double)held : 0;
		char cmd[128] = "";
		int k;

		for (k = 0; cmds[i][k]; k++)
			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s", k ? " " : "",
				 cmds[i][k]);
		TH_LOG("%-9s %-24s heap holds %8.1f KiB, peak RSS %7.1f MiB (empty dir %5.1f MiB): %5.2f x heap, %.2f s, exit %d",
		       class, cmd, held / 1024.0, r.peak / 1048576.0, base.peak / 1048576.0, ratio,
		       r.secs, r.status);
		EXPECT_LE(extra, RSS_PER_BYTE * held + RSS_SLACK);
		EXPECT_EQ(0, r.status);
		if (ratio > worst)
			worst = ratio;
	}
	rm_dir(empty);
	return worst;
}

static double measure(struct __test_metadata *_metadata, const char *class, const char *dir,
		      const char *const *const *cmds)
{
	return measure_held(_metadata, class, dir, cmds, held_bytes(dir));
}

/* Deallocates every block of the file at @path: all holes, size kept. */
static int fallocate_punch(const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0 || fstat(fd, &st))
		return -1;
	ret = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size);
	close(fd);
	return ret;
}

/* A heap of one slab of @size bytes for a dead process. */
static void dead_heap(struct fx_heap *h, size_t size, int64_t pid)
{
	fx_init(h, 1, size, pid, 5);
	fx_process(h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/hostile --amplify");
}

static const char *const dump_json[] = { "dump", "--json", NULL };
static const char *const dump[] = { "dump", NULL };
static const char *const top[] = { "top", "--once", "--dead", NULL };
static const char *const prom[] = { "export", "--prometheus", "--dead", NULL };
static const char *const blame[] = { "blame", "--dead", NULL };
static const char *const list[] = { "list", NULL };

/*
 * Every activity slot points at the same 4,096-field user-data record:
 * decoded once, shown within the heap's budget (170 KB heap).
 */
AMP_TEST(shared_reference_fanout)
{
	const char *const *cmds[] = { dump_json, top, prom, NULL };
	blamer_ref ud, t;
	struct fx_heap h;
	char dir[64], name[8];
	int i, k;

	new_dir(dir, sizeof(dir));
	dead_heap(&h, 256 << 10, 3999301);
	ud = fx_userdata(&h, BLAMER_DATA_ACTIVITY, 4096 * 24, 1);
	for (i = 0; i < 4096; i++) {
		snprintf(name, sizeof(name), "%c%c", 'a' + i % 26, 'a' + i / 26 % 26);
		fx_field_u64(&h, ud, name, (uint64_t)i);
	}
	for (k = 0; k < 64; k++) {
		t = fx_thread(&h, 100 + k, "fan", 16);
		for (i = 0; i < 16; i++)
			fx_push(&h, t, BLAMER_ACTIVITY_TASK, "same", 1, ud);
	}
	ASSERT_EQ(0, fx_write_dir(&h, dir, 3999301, 5));
	measure(_metadata, "fanout", dir, cmds);
	fx_free(&h);
	rm_dir(dir);
}

/*
 * The inverse of x ^= x >> 33; x *= C; x ^= x >> 33 (C odd, so it has an
 * inverse modulo 2^64: Newton's iteration, each step doubling the bits).
 */
static uint64_t unmix(uint64_t y)
{
	const uint64_t c = 0xff51afd7ed558ccdull;
	uint64_t inv = c;
	int i;

	for (i = 0; i < 6; i++)
		inv *= 2 - c * inv;
	y ^= y >> 33;
	y *= inv;
	return y ^ (y >> 33);
}

/*
 * Five heaps of 166,000 activities each, whose user-data references (any
 * 64 bits a heap writes) were chosen to share one slot of the reader's
 * table of user-data records: those the reader's unkeyed mix sent to
 * slot 0 of any table up to 2^32 slots. Its linear probing made each one
 * walk past all before it in its heap: `blamer dump --json` took 27 s a
 * heap here (some 1.4 * 10^10 probes), and the harness's 60 s fails the
 * five; with the table's secret seed they spread, 0.3 s a heap.
 */
TEST_F_TIMEOUT(amp, colliding_user_data_references, 60)
{
	const char *const *cmds[] = { dump_json, top, NULL };
	const uint32_t nthreads = 128,
		per = (uint32_t)((28u << 20) / nthreads / sizeof(struct blamer_activity)) - 1;
	struct fx_heap h;
	blamer_ref t;
	char dir[64];
	uint32_t i, k, n;

	new_dir(dir, sizeof(dir));
	for (n = 0; n < 5; n++) {
		dead_heap(&h, 32u << 20, 3999351 + n);
		for (k = 0; k < nthreads; k++) {
			t = fx_thread(&h, 100 + k, "collide", per);
			for (i = 0; i < per; i++)
				fx_push(&h, t, BLAMER_ACTIVITY_TASK, "c", 1,
					unmix((uint64_t)(k * per + i + 1) << 32));
		}
		ASSERT_EQ(0, fx_write_dir(&h, dir, 3999351 + n, 5));
		fx_free(&h);
	}
	measure(_metadata, "collide", dir, cmds);
	rm_dir(dir);
}

/*
 * Sixteen 256 MiB slab files that hold (almost) nothing: eight all holes,
 * eight with a valid first page whose freeptr claims the whole file.
 */
AMP_TEST(sparse_files)
{
	const char *const *cmds[] = { list, dump, top, NULL };
	struct fx_heap h;
	char dir[64], path[4200];
	int i;

	new_dir(dir, sizeof(dir));
	for (i = 0; i < 16; i++) {
		int64_t pid = 3999401 + i;

		dead_heap(&h, 4096, pid);
		fx_thread(&h, pid, "t", 4);
		((struct blamer_slab_header *)h.slab[0])->freeptr = 256u << 20;
		if (i < 8)
			memset(h.slab[0], 0, 4096);
		ASSERT_EQ(0, fx_write_dir(&h, dir, pid, 5));
		snprintf(path, sizeof(path), "%s/%lld-5.0.slab", dir, (long long)pid);
		ASSERT_EQ(0, truncate(path, 256 << 20));
		if (i < 8)
			ASSERT_EQ(0, fallocate_punch(path));
		fx_free(&h);
	}
	measure(_metadata, "sparse", dir, cmds);
	rm_dir(dir);
}

/*
 * 65,536 paths of depth 8 in 8 units each (14.7 MB): the most paths one
 * heap keeps, every prefix a new node of the tree. Once with 64 units
 * in all (one heap keeps 8), once the same 8 units in every path.
 */
static void paths_heap(const char *dir, int64_t pid, bool many_units)
{
	struct fx_heap h;
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)pid;
	int i, d, k;

	dead_heap(&h, 15u << 20, pid);
	for (i = 0; i < 65536; i++) {
		uint64_t nodes[8];
		struct blamer_dag_path *p;

		for (d = 0; d < 8; d++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			nodes[d] = x;
		}
		p = fx_at(&h, fx_path(&h, nodes, 8, 1, 1));
		for (k = 0; k < 8; k++) {
			p->units[k] = BLAMER_UNIT_APP_BASE + (many_units ? (i * 8 + k) % 64 : k);
			p->values[k] = (uint64_t)i + 1;
		}
	}
	fx_write_dir(&h, dir, pid, 5);
	fx_free(&h);
}

AMP_TEST(many_paths)
{
	const char *const *cmds[] = { blame, prom, dump_json, NULL };
	char dir[64];

	new_dir(dir, sizeof(dir));
	paths_heap(dir, 3999501, true);
	measure(_metadata, "paths", dir, cmds);
	rm_dir(dir);
	new_dir(dir, sizeof(dir));
	paths_heap(dir, 3999502, false);
	measure(_metadata, "paths8", dir, cmds);
	rm_dir(dir);
}

/* 64 MiB of minimal thread records (no stack slots): 599,186 threads. */
AMP_TEST(minimal_threads)
{
	const char *const *cmds[] = { top, dump, prom, NULL };
	struct fx_heap h;
	size_t size = 64u << 20;
	char dir[64];
	int64_t tid = 1;

	new_dir(dir, sizeof(dir));
	dead_heap(&h, size, 3999601);
	while (((struct blamer_slab_header *)h.slab[0])->freeptr + sizeof(struct blamer_thread) <= size)
		fx_thread(&h, tid++, "t", 0);
	ASSERT_EQ(0, fx_write_dir(&h, dir, 3999601, 5));
	fx_free(&h);
	measure(_metadata, "threads", dir, cmds);
	rm_dir(dir);
}

/* 64 MiB of retired records: a walk of 1.4 million list entries. */
AMP_TEST(long_list_of_retired_records)
{
	const char *const *cmds[] = { dump, NULL };
	struct fx_heap h;
	size_t size = 64u << 20;
	char dir[64];

	new_dir(dir, sizeof(dir));
	dead_heap(&h, size, 3999701);
	while (((struct blamer_slab_header *)h.slab[0])->freeptr + 48 <= size)
		fx_alloc(&h, ~(uint32_t)BLAMER_REC_THREAD, 48, 1);
	ASSERT_EQ(0, fx_write_dir(&h, dir, 3999701, 5));
	fx_free(&h);
	measure(_metadata, "retired", dir, cmds);
	rm_dir(dir);
}

/* A 16 MiB log ring (116,508 slots) and 8 MiB of user data fields. */
AMP_TEST(big_log_and_fields)
{
	const char *const *cmds[] = { dump, dump_json, NULL };
	struct fx_heap h;
	blamer_ref log, t, ud;
	char dir[64], name[8];
	int i, k;

	new_dir(dir, sizeof(dir));
	dead_heap(&h, 25u << 20, 3999801);
	log = fx_log(&h, (uint32_t)((16u << 20) / sizeof(struct blamer_log_slot)));
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->log = log;
	for (i = 0; i < (int)((16u << 20) / sizeof(struct blamer_log_slot)); i++)
		fx_log_msg(&h, log, "a log line of a hostile heap, as long as they come.....");
	t = fx_thread(&h, 7, "t", 85);
	for (k = 0; k < 85; k++) {
		ud = fx_userdata(&h, BLAMER_DATA_ACTIVITY, 4096 * 24, 0);
		for (i = 0; i < 4096; i++) {
			snprintf(name, sizeof(name), "%c%c", 'a' + i % 26, 'a' + i / 26 % 26);
			fx_field_u64(&h, ud, name, (uint64_t)i);
		}
		fx_push(&h, t, BLAMER_ACTIVITY_TASK, "fields", 1, ud);
	}
	ASSERT_EQ(0, fx_write_dir(&h, dir, 3999801, 5));
	fx_free(&h);
	measure(_metadata, "log+fields", dir, cmds);
	rm_dir(dir);
}

/*
 * 100,000 slab files that hold no heap: 0 bytes, 40 bytes of text (less
 * than a slab header), or a slab header's worth of zeros (a writer that
 * died between making its file and writing the header leaves zeros).
 * Each used to be a process of
 * its own: 1.3-3 KB of RSS and five Prometheus series per file (127 MB
 * for list, 308 MB for top). They are now one count in the snapshot, so
 * what they cost is bounded by the bytes the reader reads of them: the
 * files' bytes and their directory entries (taken as 64 bytes each;
 * getdents gives about 40 for these names), not the pages tmpfs
 * allocates for them, which the reader never reads.
 */
AMP_TEST(files_without_a_heap)
{
	const char *const list_json[] = { "list", "--json", NULL };
	const char *const *cmds[] = { list, list_json, top, prom, dump, NULL };
	static const char zeros[64], text[] = "not a heap, just forty bytes of text..\n";
	uint64_t read_bytes = 0;
	char dir[64], path[4200];
	int i;

	new_dir(dir, sizeof(dir));
	for (i = 0; i < 100000; i++) {
		size_t len = i % 3 == 0 ? 0 : i % 3 == 1 ? sizeof(zeros) : sizeof(text) - 1;
		int fd;

		snprintf(path, sizeof(path), "%s/%d-5.0.slab", dir, 3000000 + i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		ASSERT_LE(0, fd);
		ASSERT_EQ((ssize_t)len, write(fd, i % 3 == 2 ? text : zeros, len));
		close(fd);
		read_bytes += len + 64;
	}
	measure_held(_metadata, "no-heap", dir, cmds, read_bytes);
	rm_dir(dir);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		blamer = argv[1];
	start_launcher();
	return test_harness_run(1, argv);
}
