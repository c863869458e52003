// SPDX-License-Identifier: MIT
/*
 * reader-trust: the reader and `blamer release` apply the writer's rules
 * for the dir backend (lib/format/where.h, heap-format.rst "Where heaps
 * are") against the moves of another local user:
 *
 *  - squatting: the victim's default directory made first by the attacker,
 *    or left writable by others;
 *  - a symlink planted as the directory (release must not delete in its
 *    target);
 *  - planted files: of another uid, hard-linked, writable by others, a
 *    FIFO, a symlink, named like a slab;
 *  - non-canonical names ("07-5.0.slab") that name a heap a second time;
 *  - the environment of a setuid program: BLAMER_DIR pointing its heaps
 *    at a directory of the program's owner that is not its heap directory.
 *
 * Each victim is a real second user: the test, run as root, prepares the
 * files as the attacker (chown), then drops to the victim's uid before it
 * reads. Only the last component of the directory is the attacker's to
 * plant: /dev/shm is root's and sticky, and an explicit --dir is the
 * caller's own choice of path.
 *
 *   trust_test BLAMER
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>

#include "kselftest_harness.h"

#include "testsupport.h"

#define ATTACKER	4242
#define VICTIM		4243

static const char *blamer = "blamer";
static char top[64];		/* everything of this run, removed at the end */

static void need_root(struct __test_metadata *_metadata)
{
	if (geteuid())
		SKIP(return, "needs root to act as two other users");
}

/* @rel under the run's directory. */
static const char *at(const char *rel)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", top, rel);
	return buf[i];
}

static bool exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* A dead heap of pid @pid, start 5: one slab file in @dir, @uid's. */
static int dead_heap(const char *dir, int pid, uid_t uid)
{
	char path[600];
	struct fx_heap h;
	int ret;

	fx_init(&h, 1, FX_SLAB, pid, 5);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/victim");
	ret = fx_write_dir(&h, dir, pid, 5);
	fx_free(&h);
	snprintf(path, sizeof(path), "%s/%d-5.0.slab", dir, pid);
	return ret ? ret : chown(path, uid, uid);
}

/* A directory @uid owns, mode @mode. */
static int mkdir_as(const char *path, uid_t uid, mode_t mode)
{
	if (mkdir(path, mode) || chown(path, uid, uid) || chmod(path, mode))
		return -1;
	return 0;
}

/* From here on this test process is the victim (each test is a process). */
static void become_victim(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, setresgid(VICTIM, VICTIM, VICTIM));
	ASSERT_EQ(0, setresuid(VICTIM, VICTIM, VICTIM));
}

/* A snapshot of @dir (NULL: the default) or NULL with the error in @err. */
static struct blamer_snapshot *snap(const char *dir, uint32_t flags, char *err, size_t errlen)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = dir,
					.flags = flags };
	struct blamer_reader *r = blamer_reader_open(&o, err, errlen);
	struct blamer_snapshot *s = NULL;

	if (!r)
		return NULL;
	if (blamer_reader_snapshot(r, &s, err, errlen))
		s = NULL;
	blamer_reader_close(r);
	return s;
}

static const char *skipped_why(const struct blamer_snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->nskipped; i++)
		if (!strcmp(s->skipped[i].name, name))
			return s->skipped[i].why;
	return "(not skipped)";
}

/*
 * Runs `blamer --dir DIR ARGS...` (DIR NULL: the default); its exit
 * status, its stderr in @errout.
 */
static int run_blamer(const char *dir, const char *a1, const char *a2, char *errout,
		      size_t len)
{
	const char *argv[8];
	int p[2], st, n = 0;
	ssize_t got;
	size_t have = 0;
	pid_t pid;

	argv[n++] = blamer;
	if (dir) {
		argv[n++] = "--dir";
		argv[n++] = dir;
	}
	argv[n++] = a1;
	argv[n++] = a2;
	argv[n] = NULL;
	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(p[1], 2);
		execv(blamer, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	while (have + 1 < len && (got = read(p[0], errout + have, len - 1 - have)) > 0)
		have += (size_t)got;
	errout[have] = '\0';
	close(p[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * The attacker makes the victim's default directory first and plants a
 * heap there: the victim's reader refuses it and says whose it is,
 * instead of reading what was planted. (Made 0777 it is refused as
 * writable by others first: dir_writable_by_others_is_refused.)
 */
TEST(squatted_default_dir_is_refused)
{
	char dir[64], err[512];

	need_root(_metadata);
	snprintf(dir, sizeof(dir), "/dev/shm/blamer-%u", VICTIM);
	if (exists(dir))
		SKIP(return, "%s exists already", dir);
	ASSERT_EQ(0, mkdir_as(dir, ATTACKER, 0755));
	ASSERT_EQ(0, dead_heap(dir, 3999901, VICTIM));
	if (fork() == 0) {
		unsetenv("BLAMER_DIR");
		become_victim(_metadata);
		EXPECT_EQ(NULL, snap(NULL, BLAMER_READ_DEAD_FULL, err, sizeof(err)));
		EXPECT_NE(NULL, strstr(err, "owned by uid 4242")) TH_LOG("%s", err);
		EXPECT_EQ(1, run_blamer(NULL, "release", "--all", err, sizeof(err)));
		EXPECT_NE(NULL, strstr(err, "owned by uid 4242")) TH_LOG("%s", err);
		_exit(_metadata->passed ? 0 : 1);
	}
	{
		int st = 1;

		wait(&st);
		EXPECT_TRUE(exists("/dev/shm/blamer-4243/3999901-5.0.slab"));
		unlink("/dev/shm/blamer-4243/3999901-5.0.slab");
		rmdir(dir);
		EXPECT_EQ(0, st);
	}
}

/* The victim's own directory, but writable by others: anyone could have
 * planted its contents. */
TEST(dir_writable_by_others_is_refused)
{
	char err[512];

	need_root(_metadata);
	ASSERT_EQ(0, mkdir_as(at("open"), VICTIM, 0777));
	ASSERT_EQ(0, dead_heap(at("open"), 3999902, VICTIM));
	become_victim(_metadata);
	EXPECT_EQ(NULL, snap(at("open"), 0, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "writable by group or others")) TH_LOG("%s", err);
	ASSERT_EQ(0, chmod(at("open"), 0720));
	EXPECT_EQ(NULL, snap(at("open"), 0, err, sizeof(err)));
	ASSERT_EQ(0, chmod(at("open"), 0700));
	EXPECT_NE(NULL, snap(at("open"), 0, err, sizeof(err)));
}

/*
 * The heap directory is a symlink to a directory of the victim's (where
 * another program keeps files named like slabs): it is refused, not
 * followed, and `release --all` deletes nothing in its target.
 */
TEST(symlinked_dir_is_not_followed_and_release_deletes_nothing)
{
	char err[512];

	need_root(_metadata);
	ASSERT_EQ(0, mkdir_as(at("precious"), VICTIM, 0700));
	ASSERT_EQ(0, dead_heap(at("precious"), 3999903, VICTIM));
	ASSERT_EQ(0, mkdir_as(at("home"), VICTIM, 0700));
	ASSERT_EQ(0, symlink(at("precious"), at("home/heaps")));
	become_victim(_metadata);
	EXPECT_EQ(NULL, snap(at("home/heaps"), BLAMER_READ_DEAD_FULL, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "is a symlink: refused")) TH_LOG("%s", err);
	EXPECT_EQ(1, run_blamer(at("home/heaps"), "release", "--all", err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "symlink")) TH_LOG("%s", err);
	EXPECT_TRUE(exists(at("precious/3999903-5.0.slab")));
	/* the same directory named directly is the victim's, and is read */
	EXPECT_EQ(0, run_blamer(at("precious"), "release", "--all", err, sizeof(err)));
	EXPECT_FALSE(exists(at("precious/3999903-5.0.slab")));
}

/*
 * Files that are not ones the victim's writer made: another uid's, a
 * hard link (its other name is anywhere), writable by others, a FIFO
 * (must not block the reader) and a symlink, each named like a slab of a
 * heap of its own. Each is skipped with its reason, whether the heap is
 * read or only named, and `release --all` leaves every one of them.
 */
TEST(planted_files_are_skipped_and_never_released)
{
	static const struct {
		int pid;
		const char *why;
	} planted[] = {
		{ 3999911, "owned by another user" },
		{ 3999912, "has more than one link (a hard link to it exists elsewhere)" },
		{ 3999913, "writable by group or others" },
		{ 3999914, "not a regular file" },
		{ 3999915, "a symlink, not followed" },
	};
	char name[64], err[4096];
	struct blamer_snapshot *s;
	uint32_t flags[] = { 0, BLAMER_READ_DEAD_FULL, BLAMER_READ_HEADERS_ONLY };
	size_t i, k;

	need_root(_metadata);
	ASSERT_EQ(0, mkdir_as(at("v"), VICTIM, 0700));
	ASSERT_EQ(0, mkdir_as(at("elsewhere"), VICTIM, 0700));
	ASSERT_EQ(0, dead_heap(at("v"), 3999910, VICTIM));		/* the real one */
	ASSERT_EQ(0, dead_heap(at("v"), 3999911, ATTACKER));
	ASSERT_EQ(0, dead_heap(at("v"), 3999912, VICTIM));
	ASSERT_EQ(0, link(at("v/3999912-5.0.slab"), at("elsewhere/x")));
	ASSERT_EQ(0, dead_heap(at("v"), 3999913, VICTIM));
	ASSERT_EQ(0, chmod(at("v/3999913-5.0.slab"), 0622));
	ASSERT_EQ(0, mkfifo(at("v/3999914-5.0.slab"), 0600));
	ASSERT_EQ(0, chown(at("v/3999914-5.0.slab"), VICTIM, VICTIM));
	ASSERT_EQ(0, dead_heap(at("elsewhere"), 3999915, VICTIM));
	ASSERT_EQ(0, symlink(at("elsewhere/3999915-5.0.slab"), at("v/3999915-5.0.slab")));
	ASSERT_EQ(0, lchown(at("v/3999915-5.0.slab"), VICTIM, VICTIM));
	become_victim(_metadata);

	for (k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
		s = snap(at("v"), flags[k], err, sizeof(err));
		ASSERT_NE(NULL, s) TH_LOG("%s", err);
		ASSERT_EQ(1, s->nprocs);
		EXPECT_EQ(3999910, s->procs[0].pid);
		EXPECT_EQ(5, s->nskipped);
		for (i = 0; i < sizeof(planted) / sizeof(planted[0]); i++) {
			snprintf(name, sizeof(name), "%d-5.0.slab", planted[i].pid);
			EXPECT_STREQ(planted[i].why, skipped_why(s, name)) TH_LOG("flags %u", flags[k]);
		}
		blamer_snapshot_free(s);
	}
	EXPECT_EQ(0, run_blamer(at("v"), "release", "--all", err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "3999911-5.0.slab: owned by another user")) TH_LOG("%s", err);
	EXPECT_FALSE(exists(at("v/3999910-5.0.slab")));
	for (i = 0; i < sizeof(planted) / sizeof(planted[0]); i++) {
		snprintf(name, sizeof(name), "v/%d-5.0.slab", planted[i].pid);
		EXPECT_TRUE(exists(at(name))) TH_LOG("%s", name);
	}
	EXPECT_TRUE(exists(at("elsewhere/3999915-5.0.slab")));
	EXPECT_TRUE(exists(at("elsewhere/x")));
}

/*
 * Names that are not exactly what the writer writes: leading zeros, a
 * sign, a pid out of range, a seq written out as 0. "007-5.0.slab" would name heap 7-5's slab 0
 * a second time: it must be neither read nor counted nor said to be
 * released, and it stays where it is (the user is told it was skipped).
 */
TEST(only_canonical_names_are_heaps)
{
	static const char *const twins[] = {
		"03999920-5.0.slab", "3999920-05.0.slab", "3999920-5.00.slab",
		"+3999920-5.0.slab", "02147483000-5.0.slab", "2147483648-5.0.slab",
		"0-5.0.slab", "3999920-5.0.slab.", "3999920-5.64.slab",
		/* a seq (a process's later heap) written out as 0, with a
		 * leading zero, past 32 bits, empty or signed */
		"3999920-5-0.0.slab", "3999920-5-01.0.slab", "3999920-5-4294967296.0.slab",
		"3999920-5-.0.slab", "3999920-5--1.0.slab",
	};
	char src[600], dst[600], err[4096];
	struct blamer_snapshot *s;
	size_t i;

	need_root(_metadata);
	ASSERT_EQ(0, mkdir_as(at("n"), VICTIM, 0700));
	ASSERT_EQ(0, mkdir_as(at("m"), VICTIM, 0700));
	ASSERT_EQ(0, dead_heap(at("n"), 3999920, VICTIM));
	for (i = 0; i < sizeof(twins) / sizeof(twins[0]); i++) {
		/* copies of the real slab, not links (those are refused anyway) */
		ASSERT_EQ(0, dead_heap(at("m"), 3999920, VICTIM));
		snprintf(src, sizeof(src), "%s", at("m/3999920-5.0.slab"));
		snprintf(dst, sizeof(dst), "%s/%s", at("n"), twins[i]);
		ASSERT_EQ(0, rename(src, dst));
	}
	become_victim(_metadata);
	s = snap(at("n"), BLAMER_READ_DEAD_FULL, err, sizeof(err));
	ASSERT_NE(NULL, s) TH_LOG("%s", err);
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(1, s->procs[0].nslabs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(sizeof(twins) / sizeof(twins[0]), s->nskipped);
	for (i = 0; i < sizeof(twins) / sizeof(twins[0]); i++)
		EXPECT_NE(NULL, strstr(skipped_why(s, twins[i]), "not a slab file name"))
			TH_LOG("%s", twins[i]);
	blamer_snapshot_free(s);
	EXPECT_EQ(0, run_blamer(at("n"), "release", "--all", err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "skipped")) TH_LOG("%s", err);
	EXPECT_FALSE(exists(at("n/3999920-5.0.slab")));
	for (i = 0; i < sizeof(twins) / sizeof(twins[0]); i++) {
		snprintf(dst, sizeof(dst), "%s/%s", at("n"), twins[i]);
		EXPECT_TRUE(exists(dst)) TH_LOG("%s", twins[i]);
	}
}

/*
 * Root may read another user's directory it names (--dir): then every
 * file must be that user's, and one root or anyone else put there is
 * skipped, as is the directory's when the victim reads it.
 */
TEST(root_reads_a_named_dir_by_its_owner_rules)
{
	char err[512];
	struct blamer_snapshot *s;

	need_root(_metadata);
	ASSERT_EQ(0, mkdir_as(at("r"), VICTIM, 0700));
	ASSERT_EQ(0, dead_heap(at("r"), 3999930, VICTIM));
	ASSERT_EQ(0, dead_heap(at("r"), 3999931, 0));
	s = snap(at("r"), BLAMER_READ_DEAD_FULL, err, sizeof(err));
	ASSERT_NE(NULL, s) TH_LOG("%s", err);
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(3999930, s->procs[0].pid);
	EXPECT_EQ(VICTIM, s->procs[0].uid);
	EXPECT_STREQ("owned by another user", skipped_why(s, "3999931-5.0.slab"));
	blamer_snapshot_free(s);
	EXPECT_EQ(0, run_blamer(at("r"), "release", "--all", err, sizeof(err)));
	EXPECT_FALSE(exists(at("r/3999930-5.0.slab")));
	EXPECT_TRUE(exists(at("r/3999931-5.0.slab")));
}

/* Slab files in @dir whose names start with "@pid-". */
static int slabs_of(const char *dir, pid_t pid)
{
	char prefix[32];
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return 0;
	snprintf(prefix, sizeof(prefix), "%d-", (int)pid);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix)) && strstr(e->d_name, ".slab");
	closedir(d);
	return n;
}

/*
 * This program, installed setuid to the victim and run by the attacker
 * with BLAMER_DIR naming another directory of the victim's: the library
 * reads its environment with secure_getenv(), so the heap goes to the
 * victim's default directory, never where the attacker said. (Before, it
 * went there: a directory the victim owns passes the writer's rules.)
 */
TEST(a_setuid_program_ignores_the_callers_environment)
{
	char exe[600], line[64] = "", def[64], rm[80];
	int p[2], st = -1;
	ssize_t got;
	pid_t pid;

	need_root(_metadata);
	snprintf(def, sizeof(def), "/dev/shm/blamer-%u", VICTIM);
	snprintf(rm, sizeof(rm), "rm -rf %s", def);
	if (exists(def))
		SKIP(return, "%s exists already", def);
	ASSERT_EQ(0, mkdir_as(at("suid"), VICTIM, 0755));
	ASSERT_EQ(0, mkdir_as(at("victims-own"), VICTIM, 0700));
	snprintf(exe, sizeof(exe), "cp /proc/%d/exe %s", (int)getpid(), at("suid/writer"));
	ASSERT_EQ(0, system(exe));
	snprintf(exe, sizeof(exe), "%s", at("suid/writer"));
	ASSERT_EQ(0, chown(exe, VICTIM, VICTIM));
	ASSERT_EQ(0, chmod(exe, 04755));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char *const argv[] = { exe, "--setuid-writer", NULL };
		char env_dir[600];
		char *const envp[] = { env_dir, "BLAMER_BACKEND=dir", "BLAMER_CLOCK=bogus", NULL };

		snprintf(env_dir, sizeof(env_dir), "BLAMER_DIR=%s", at("victims-own"));
		dup2(p[1], 1);
		if (setresgid(ATTACKER, ATTACKER, ATTACKER) || setresuid(ATTACKER, ATTACKER, ATTACKER))
			_exit(126);
		execve(exe, argv, envp);
		_exit(127);
	}
	close(p[1]);
	got = read(p[0], line, sizeof(line) - 1);
	close(p[0]);
	line[got > 0 ? got : 0] = '\0';
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	if (!strncmp(line, "not secure", 10)) {
		EXPECT_EQ(0, system(rm));
		SKIP(return, "setuid had no effect here (a nosuid mount?): %s", line);
	}
	EXPECT_EQ(0, st) TH_LOG("%s", line);
	EXPECT_STREQ("wrote\n", line);
	EXPECT_EQ(0, slabs_of(at("victims-own"), pid));
	EXPECT_LT(0, slabs_of(def, pid));
	EXPECT_EQ(0, system(rm));
}

/* The setuid side of the test above: a heap through the default context. */
static int setuid_writer(void)
{
	struct blamer *b;

	if (!getauxval(AT_SECURE) || geteuid() != VICTIM) {
		printf("not secure: euid %u, AT_SECURE %lu\n", (unsigned)geteuid(),
		       getauxval(AT_SECURE));
		fflush(stdout);
		_exit(0);
	}
	b = blamer_default();
	if (b)
		printf("wrote\n");
	else
		printf("no context: %s\n", strerror(errno));
	fflush(stdout);
	if (b)
		blamer_abandon(b);
	/* _exit: no leak check, which cannot trace a setuid process */
	_exit(b ? 0 : 1);
}

int main(int argc, char **argv)
{
	char cmd[128];
	int ret;

	if (argc > 1 && !strcmp(argv[1], "--setuid-writer"))
		return setuid_writer();
	if (argc > 1)
		blamer = argv[1];
	snprintf(top, sizeof(top), "/tmp/blamer-trust.XXXXXX");
	if (!mkdtemp(top) || chmod(top, 0755))
		return 1;
	ret = test_harness_run(1, argv);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", top);
	return ret;
}
