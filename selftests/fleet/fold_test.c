// SPDX-License-Identifier: MIT
/*
 * The service's series and the fold against sums that do not fit, under
 * ASan and UBSan, with fixture heaps in a dir: each heap is valid alone
 * (the reader refuses a series whose own parts overflow), but a counter
 * of 1.5e308 in two of them sums past the largest double and a histogram
 * bucket of 2^63 in two of them past 2^64. A merged series, the fold's
 * remainder, the state written and read back, and every exposition must
 * then leave such a series out, never show it infinite or wrapped
 * (lower), while the other series go on exact; a dead heap whose part of
 * a series the remainder cannot take is folded all the same, that part
 * thrown away and counted (blamer_fold_lost_total), the series left out
 * for good, its other series kept. And every number of the JSON, both
 * expositions and the state is C's, read and written under a locale
 * whose decimal point is ','.
 */
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "numtext.h"
#include "testsupport.h"

#define DEAD_A	3999601
#define DEAD_B	3999602
#define BIG_BUCKET	(1ull << 63)

/* A heap of @pid: a histogram "lat" (bounds 1) with @bucket observations
 * at most 1, a counter "big" of @big and a counter "ok" of 1. */
static int write_heap(const char *dir, int64_t pid, uint64_t start, double big, uint64_t bucket)
{
	static const double bounds[] = { 1 };
	uint64_t counts[2] = { bucket, 0 };
	struct fx_heap h;
	blamer_ref d;
	int ret;

	fx_init(&h, 1, FX_SLAB, pid, (int64_t)start);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
	d = fx_metric_def(&h, "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, bounds, 1);
	fx_metric(&h, d, "", 0, 0.5, counts);
	d = fx_metric_def(&h, "big", BLAMER_METRIC_COUNTER, 0, "", 0, NULL, 0);
	fx_metric(&h, d, "", 0, big, NULL);
	d = fx_metric_def(&h, "ok", BLAMER_METRIC_COUNTER, 0, "", 0, NULL, 0);
	fx_metric(&h, d, "", 0, 1, NULL);
	ret = fx_write_dir(&h, dir, pid, start);
	fx_free(&h);
	return ret;
}

/* This process's heap: a live one. */
static int write_live(const char *dir, double big, uint64_t bucket)
{
	return write_heap(dir, getpid(), fx_self_start_ns(), big, bucket);
}

/* The one-off exposition (no guard holds a value: what the heaps and the
 * state say), malloc()ed. */
static char *expose(struct blamer_fleet *f, const struct blamer_snapshot *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&text, &len);

	if (!mf)
		return NULL;
	if (blamer_fleet_write_prometheus(f, s, mf)) {
		fclose(mf);
		free(text);
		return NULL;
	}
	fclose(mf);
	return text;
}

/* The value of the sample @name{uid="UID"@more}, or NaN if none. */
static double sample(const char *text, const char *name, const char *more)
{
	char key[160];
	const char *at;

	snprintf(key, sizeof(key), "\n%s{uid=\"%u\"%s} ", name, (unsigned)getuid(), more);
	at = strstr(text, key);
	return at ? strtod(at + strlen(key), NULL) : NAN;
}

/* No sample of @text is infinite or NaN. */
static bool all_finite(const char *text)
{
	return !strstr(text, "} +Inf\n") && !strstr(text, "} -Inf\n") && !strstr(text, "} NaN\n");
}

/* The state's series lines hold no infinity or NaN (a definition's last
 * bound is "inf": not a value); no state yet holds none. */
static bool state_finite(const char *path)
{
	char line[4096];
	bool ok = true;
	FILE *fp = fopen(path, "r");

	if (!fp)
		return access(path, F_OK) != 0;
	while (fgets(line, sizeof(line), fp))
		if (!strncmp(line, "series ", 7) && (strstr(line, "inf") || strstr(line, "nan")))
			ok = false;
	fclose(fp);
	return ok;
}

FIXTURE(fold) {
	char dir[64], statedir[64], state[96];
	char locdir[64];	/* a locale made for the test, if any */
	struct blamer_reader *r;
};

FIXTURE_SETUP(fold)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = self->dir,
					.flags = BLAMER_READ_DEAD_FULL };
	char err[256];

	snprintf(self->dir, sizeof(self->dir), "/tmp/blamer-ovf-XXXXXX");
	snprintf(self->statedir, sizeof(self->statedir), "/tmp/blamer-ovfst-XXXXXX");
	snprintf(self->locdir, sizeof(self->locdir), "/tmp/blamer-loc-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_NE(NULL, mkdtemp(self->statedir));
	snprintf(self->state, sizeof(self->state), "%s/fold.state", self->statedir);
	self->r = blamer_reader_open(&o, err, sizeof(err));
	ASSERT_NE(NULL, self->r) TH_LOG("%s", err);
}

FIXTURE_TEARDOWN(fold)
{
	char cmd[256];

	blamer_reader_close(self->r);
	/* locdir still ends in XXXXXX if no locale was made */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s' '%s'", self->dir, self->statedir,
		 strstr(self->locdir, "XXXXXX") ? self->dir : self->locdir);
	if (system(cmd))
		fprintf(stderr, "# cleanup failed\n");
}

static struct blamer_snapshot *snap(struct blamer_reader *r)
{
	struct blamer_snapshot *s = NULL;
	char err[256];

	if (blamer_reader_snapshot(r, &s, err, sizeof(err)))
		fprintf(stderr, "# snapshot: %s\n", err);
	return s;
}

/*
 * The review's case: three heaps of one uid, two dead, each with a
 * bucket of 2^63 and a counter of 1.5e308. Merged, folded, and the
 * exporter restarted on its state: the two series are left out and
 * counted, never +Inf or wrapped, in the snapshot, the exposition or the
 * state; both dead heaps are folded, the second's parts of those two
 * series thrown away and counted; "ok" stays exact.
 */
/* The exposition of sums_past_their_type_are_left_out...'s fold, before
 * and after a restart: ok exact, big and lat left out and counted, the
 * second heap's two parts lost, nothing held. */
static void expect_two_left_out(struct __test_metadata *_metadata, const char *text)
{
	EXPECT_TRUE(all_finite(text)) TH_LOG("%s", text);
	EXPECT_TRUE(sample(text, "ok_total", "") == 3) TH_LOG("%s", text);
	EXPECT_TRUE(isnan(sample(text, "big_total", ""))) TH_LOG("%s", text);
	EXPECT_TRUE(isnan(sample(text, "lat_count", ""))) TH_LOG("%s", text);
	EXPECT_TRUE(sample(text, "blamer_fold_lost_total", "") == 2) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "\nblamer_fold_held_heaps 0\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "\nblamer_metric_conflicts 2\n")) TH_LOG("%s", text);
}

TEST_F(fold, sums_past_their_type_are_left_out_never_infinite_or_wrapped)
{
	struct blamer_snapshot *s;
	struct blamer_fleet *f;
	char err[256], *text;
	size_t i;
	int n;

	ASSERT_EQ(0, write_heap(self->dir, DEAD_A, 5, 1.5e308, BIG_BUCKET));
	ASSERT_EQ(0, write_heap(self->dir, DEAD_B, 5, 1.5e308, BIG_BUCKET));
	ASSERT_EQ(0, write_live(self->dir, 1.5e308, BIG_BUCKET));
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(3, s->nprocs);
	/* the merge: only "ok" (3), the two others counted */
	for (i = 0; i < s->nseries; i++) {
		EXPECT_STREQ("ok", s->series[i].def->name) TH_LOG("%s = %g",
			s->series[i].def->name, s->series[i].value);
		EXPECT_TRUE(isfinite(s->series[i].value));
	}
	EXPECT_EQ(2, s->noverflows);
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	n = blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err));
	/* both: the second's big and lat parts would overflow the remainder */
	EXPECT_EQ(2, n) TH_LOG("%s", err);
	text = expose(f, s);
	ASSERT_NE(NULL, text);
	expect_two_left_out(_metadata, text);
	free(text);
	blamer_snapshot_free(s);
	blamer_fleet_close(f);
	EXPECT_TRUE(state_finite(self->state));

	/* restarted on its state: the same */
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1, s->nprocs);	/* the live one: the dead were released */
	n = blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err));
	EXPECT_EQ(0, n) TH_LOG("%s", err);
	text = expose(f, s);
	ASSERT_NE(NULL, text);
	expect_two_left_out(_metadata, text);
	free(text);
	blamer_snapshot_free(s);
	blamer_fleet_close(f);
	EXPECT_TRUE(state_finite(self->state));
}

/*
 * Over time: a dead heap near the top folds (its values move to the
 * remainder, the series unchanged); then a second dies whose parts of
 * those series the remainder cannot take: the series leave the
 * exposition rather than show +Inf or a wrapped count, and stay out once
 * the fold has thrown those parts away; the exporter restarted shows the
 * same.
 * Every value shown is finite and none is lower than before.
 */
TEST_F(fold, a_series_only_grows_or_leaves_through_folds_and_restarts)
{
	static const struct {
		const char *name, *more;
	} watch[] = {
		{ "big_total", "" }, { "lat_count", "" }, { "lat_bucket", ",le=\"1\"" },
		{ "lat_bucket", ",le=\"+Inf\"" }, { "ok_total", "" },
	};
	enum { NW = sizeof(watch) / sizeof(watch[0]) };
	double last[NW], v;
	struct blamer_snapshot *s;
	struct blamer_fleet *f;
	char err[256], *text;
	int step, n;
	size_t k;

	for (k = 0; k < NW; k++)
		last[k] = -1;
	ASSERT_EQ(0, write_heap(self->dir, DEAD_A, 5, 1e308, BIG_BUCKET));
	ASSERT_EQ(0, write_live(self->dir, 1, 1));
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	for (step = 0; step < 6; step++) {
		if (step == 2)	/* a second heap near the top dies */
			ASSERT_EQ(0, write_heap(self->dir, DEAD_B, 5, 1e308, BIG_BUCKET));
		if (step == 4) {	/* the exporter restarts on its state */
			blamer_fleet_close(f);
			f = blamer_fleet_open(self->state, err, sizeof(err));
			ASSERT_NE(NULL, f) TH_LOG("%s", err);
		}
		s = snap(self->r);
		ASSERT_NE(NULL, s);
		if (step & 1) {	/* a fold, every other step */
			n = blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err));
			ASSERT_LE(0, n) TH_LOG("%s", err);
			EXPECT_EQ(step == 1 || step == 3, n) TH_LOG("step %d", step);
		}
		text = expose(f, s);
		ASSERT_NE(NULL, text);
		EXPECT_TRUE(all_finite(text)) TH_LOG("step %d: %s", step, text);
		for (k = 0; k < NW; k++) {
			v = sample(text, watch[k].name, watch[k].more);
			if (isnan(v))
				continue;	/* left out: no value, not a lower one */
			EXPECT_TRUE(last[k] <= v) TH_LOG("step %d: %s%s %g after %g", step,
						     watch[k].name, watch[k].more, v, last[k]);
			last[k] = v;
		}
		/* before the second heap: every series, exact */
		if (step < 2) {
			EXPECT_TRUE(sample(text, "big_total", "") == 1e308) TH_LOG("%s", text);
			EXPECT_TRUE(sample(text, "lat_count", "") == (double)BIG_BUCKET + 1);
			EXPECT_TRUE(sample(text, "ok_total", "") == 2);
		} else {
			EXPECT_TRUE(isnan(sample(text, "big_total", ""))) TH_LOG("%s", text);
			EXPECT_TRUE(isnan(sample(text, "lat_count", ""))) TH_LOG("%s", text);
			EXPECT_TRUE(sample(text, "ok_total", "") == 3);
		}
		/* the second heap's two parts, once it is folded */
		v = sample(text, "blamer_fold_lost_total", "");
		EXPECT_TRUE(step < 3 ? isnan(v) : v == 2) TH_LOG("step %d: %s", step, text);
		free(text);
		blamer_snapshot_free(s);
		EXPECT_TRUE(state_finite(self->state)) TH_LOG("step %d", step);
	}
	blamer_fleet_close(f);
}

/* A heap of @pid: a histogram "lat" (bounds 1) with @lat observations
 * at most 1 and a counter "req" of @req. */
static int write_req_heap(const char *dir, int64_t pid, uint64_t lat, double req)
{
	static const double bounds[] = { 1 };
	uint64_t counts[2] = { lat, 0 };
	struct fx_heap h;
	blamer_ref d;
	int ret;

	fx_init(&h, 1, FX_SLAB, pid, 5);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
	d = fx_metric_def(&h, "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, bounds, 1);
	fx_metric(&h, d, "", 0, 0.5, counts);
	d = fx_metric_def(&h, "req", BLAMER_METRIC_COUNTER, 0, "", 0, NULL, 0);
	fx_metric(&h, d, "", 0, req, NULL);
	ret = fx_write_dir(&h, dir, pid, 5);
	fx_free(&h);
	return ret;
}

/* An exporter on @state folding @dir's heaps, killed (abort(): the
 * test's kill -9) at @step of the fold's transaction; true if it was. */
static bool fold_killed_at(const char *dir, const char *state, unsigned step)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (!pid) {
		struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = dir,
						.flags = BLAMER_READ_DEAD_FULL };
		struct blamer_snapshot *s;
		struct blamer_fleet *f;
		struct blamer_reader *r;
		char err[256], n[16];

		snprintf(n, sizeof(n), "%u", step);
		setenv("BLAMER_TEST_FOLD_ABORT", n, 1);
		r = blamer_reader_open(&o, err, sizeof(err));
		f = r ? blamer_fleet_open(state, err, sizeof(err)) : NULL;
		s = f ? snap(r) : NULL;
		if (s)
			blamer_fleet_fold(f, r, s, 0, err, sizeof(err));
		_exit(0);	/* not killed */
	}
	return waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGABRT;
}

/*
 * The review's second case: a heap of the uid with a histogram count of
 * 2^64 - 1 (valid alone) dies and is folded: the remainder's count can
 * never grow again. Every later dead heap observing "lat" was then held
 * whole, its honest counter "req" with it: never folded, and lost once
 * retention took the heap or the exporter restarted (req 16 became 1).
 * Now each such heap folds, its "lat" part thrown away and counted, and
 * "req" stays exact, through folds killed at each step of their
 * transaction and a restart; "lat" is left out for good, never counted
 * twice in blamer_fold_lost_total.
 */
/* The whole of file @path into @buf (at most @len), or back from it
 * (@put, @n bytes); the bytes' count, -1 on an error. */
static long file_bytes(const char *path, char *buf, size_t len, bool put, size_t n)
{
	FILE *fp = fopen(path, put ? "w" : "r");	/* "w": the file's mode kept */
	size_t got;

	if (!fp)
		return -1;
	got = put ? fwrite(buf, 1, n, fp) : fread(buf, 1, len, fp);
	if (fclose(fp) || (put && got != n) || (!put && got == len))
		return -1;
	return (long)got;
}

TEST_F(fold, a_series_that_cannot_fit_never_holds_back_a_heaps_others)
{
	static char before[1 << 16];
	struct blamer_snapshot *s;
	struct blamer_fleet *f;
	char err[256], *text;
	unsigned step;
	long len;
	int n, round;

	ASSERT_EQ(0, write_req_heap(self->dir, DEAD_A, UINT64_MAX, 1));
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1, blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err))) TH_LOG("%s", err);
	text = expose(f, s);
	ASSERT_NE(NULL, text);
	EXPECT_TRUE(sample(text, "lat_count", "") == (double)UINT64_MAX) TH_LOG("%s", text);
	EXPECT_TRUE(sample(text, "req_total", "") == 1) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	blamer_fleet_close(f);
	len = file_bytes(self->state, before, sizeof(before), false, 0);
	ASSERT_LT(0, len);

	/* three honest workers die (lat 1, req 5 each), and an exporter
	 * folds them: whole, or killed at each step of its transaction and
	 * then started again, from the same state each time */
	for (step = 0; step <= 6; step++) {
		ASSERT_EQ(len, file_bytes(self->state, before, 0, true, (size_t)len));
		ASSERT_EQ(0, write_req_heap(self->dir, DEAD_B, 1, 5));
		ASSERT_EQ(0, write_req_heap(self->dir, DEAD_B + 1, 1, 5));
		ASSERT_EQ(0, write_req_heap(self->dir, DEAD_B + 2, 1, 5));
		if (step) {
			EXPECT_TRUE(fold_killed_at(self->dir, self->state, step)) TH_LOG("step %u", step);
		}
		/* the fold after it, and the exporter restarted on its state */
		for (round = 0; round < 2; round++) {
			f = blamer_fleet_open(self->state, err, sizeof(err));
			ASSERT_NE(NULL, f) TH_LOG("%s", err);
			s = snap(self->r);
			ASSERT_NE(NULL, s);
			n = blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err));
			ASSERT_LE(0, n) TH_LOG("%s", err);
			text = expose(f, s);
			ASSERT_NE(NULL, text);
			EXPECT_TRUE(all_finite(text)) TH_LOG("%s", text);
			EXPECT_TRUE(sample(text, "req_total", "") == 16) TH_LOG("step %u round %d: %s",
										step, round, text);
			EXPECT_TRUE(isnan(sample(text, "lat_count", ""))) TH_LOG("%s", text);
			EXPECT_TRUE(isnan(sample(text, "lat_bucket", ",le=\"+Inf\""))) TH_LOG("%s", text);
			/* each heap's lat part once, however often it was folded */
			EXPECT_TRUE(sample(text, "blamer_fold_lost_total", "") == 3) TH_LOG("step %u: %s",
											    step, text);
			EXPECT_NE(NULL, strstr(text, "\nblamer_fold_held_heaps 0\n")) TH_LOG("%s", text);
			EXPECT_NE(NULL, strstr(text, "\nblamer_metric_conflicts 1\n")) TH_LOG("%s", text);
			EXPECT_NE(NULL, strstr(text, "\nblamer_folded_heaps_total 4\n")) TH_LOG("%s", text);
			free(text);
			blamer_snapshot_free(s);
			blamer_fleet_close(f);
			EXPECT_TRUE(state_finite(self->state));
		}
		/* the heaps were released: none left to count a second time */
		s = snap(self->r);
		ASSERT_NE(NULL, s);
		EXPECT_EQ(0, s->nprocs) TH_LOG("step %u", step);
		blamer_snapshot_free(s);
		/* and what retention would take, were any left, is not req's */
		snprintf(err, sizeof(err), "rm -f '%s'/*.slab", self->dir);
		ASSERT_EQ(0, system(err));
		f = blamer_fleet_open(self->state, err, sizeof(err));
		ASSERT_NE(NULL, f) TH_LOG("%s", err);
		s = snap(self->r);
		ASSERT_NE(NULL, s);
		text = expose(f, s);
		ASSERT_NE(NULL, text);
		EXPECT_TRUE(sample(text, "req_total", "") == 16) TH_LOG("step %u: %s", step, text);
		free(text);
		blamer_snapshot_free(s);
		blamer_fleet_close(f);
	}
}

/* ---- numbers whatever the program's locale ---- */

/* A heap of @pid: a histogram "lat" (bounds 0.01, 0.25) of two
 * observations summing to 0.55 and a counter "big" of 20.5. */
static int write_frac_heap(const char *dir, int64_t pid)
{
	static const double bounds[] = { 0.01, 0.25 };
	uint64_t counts[3] = { 1, 0, 1 };
	struct fx_heap h;
	blamer_ref d;
	int ret;

	fx_init(&h, 1, FX_SLAB, pid, 5);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
	d = fx_metric_def(&h, "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, bounds, 2);
	fx_metric(&h, d, "", 0, 0.55, counts);
	d = fx_metric_def(&h, "big", BLAMER_METRIC_COUNTER, 0, "", 0, NULL, 0);
	fx_metric(&h, d, "", 0, 20.5, NULL);
	ret = fx_write_dir(&h, dir, pid, 5);
	fx_free(&h);
	return ret;
}

/* The process's locale made one whose decimal point is ',': the system's
 * if it has one, else de_DE made by localedef into @dir (which it makes)
 * and found through LOCPATH, as Debian installs none; NULL, or why not. */
static const char *comma_locale(char *dir)
{
	static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
					     "nl_NL.UTF-8", "de_DE" };
	char cmd[256];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (setlocale(LC_ALL, names[i]) && !strcmp(localeconv()->decimal_point, ","))
			return NULL;
	if (system("command -v localedef >/dev/null 2>&1"))
		return "no locale with a decimal comma, and no localedef to make one";
	if (!mkdtemp(dir))
		return "no temporary directory for a locale";
	snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1",
		 dir);
	if (system(cmd))
		return "localedef could not make de_DE.UTF-8 (no locale sources: package locales)";
	setenv("LOCPATH", dir, 1);
	if (!setlocale(LC_ALL, "de_DE.UTF-8") || strcmp(localeconv()->decimal_point, ","))
		return "the de_DE.UTF-8 made by localedef has no decimal comma";
	return NULL;
}

/* The whole of @path, malloc()ed. */
static char *slurp(const char *path)
{
	static char buf[1 << 16];
	long n = file_bytes(path, buf, sizeof(buf) - 1, false, 0);

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

/* @s's JSON and per-process exposition, and @f's, malloc()ed into one. */
static char *every_text(struct blamer_fleet *f, const struct blamer_snapshot *s)
{
	char *text = NULL, *fleet;
	size_t len = 0;
	FILE *mf = open_memstream(&text, &len);

	if (!mf)
		return NULL;
	blamer_snapshot_write_json(s, mf, 0, NULL, 0);
	blamer_snapshot_write_prometheus(s, mf);
	fleet = expose(f, s);
	fputs(fleet ? fleet : "(no fleet text)", mf);
	free(fleet);
	fclose(mf);
	return text;
}

/*
 * A program that called setlocale(LC_ALL, "") under a locale whose
 * decimal point is ',' (Python programs commonly do) got "sum":0,55 in
 * its JSON, samples of 20,5 that prometheus_client refused, and a fold
 * state of 0x1,48p+4 that an exporter in the C locale refused ("not a
 * number"), as it did the other way round. Every number is C's now, in
 * both directions, and the program's locale is left as it was.
 */
TEST_F(fold, numbers_have_a_point_whatever_the_locale)
{
	char err[256], hex[32], *text, *state;
	struct blamer_snapshot *s;
	struct blamer_fleet *f;
	const char *why;
	double v;

	why = comma_locale(self->locdir);
	if (why)
		SKIP(return, "%s", why);

	/* folded under the comma locale: the state, JSON and both expositions */
	ASSERT_EQ(0, write_frac_heap(self->dir, DEAD_A));
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	text = every_text(f, s);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\"sum\":0.55,")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "\"le\":0.01,")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "} 0.55\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "} 20.5\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "le=\"0.25\"")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "0,55")) TH_LOG("%s", text);
	free(text);
	EXPECT_EQ(1, blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err))) TH_LOG("%s", err);
	text = expose(f, s);	/* from the remainder */
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "} 0.55\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "} 20.5\n")) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	blamer_fleet_close(f);
	state = slurp(self->state);
	ASSERT_NE(NULL, state);
	EXPECT_NE(NULL, strstr(state, " 0x1.47ae147ae147bp-7 0x1p-2 inf ")) TH_LOG("%s", state);
	EXPECT_NE(NULL, strstr(state, " 0x1.48p+4 ")) TH_LOG("%s", state);
	EXPECT_EQ(NULL, strchr(state, ',')) TH_LOG("%s", state);
	free(state);
	/* the program's locale is as it set it */
	EXPECT_STREQ(",", localeconv()->decimal_point);

	/* read, and folded again, by an exporter in the C locale */
	ASSERT_NE(NULL, setlocale(LC_ALL, "C"));
	ASSERT_EQ(0, write_frac_heap(self->dir, DEAD_B));
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1, blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err))) TH_LOG("%s", err);
	text = expose(f, s);
	ASSERT_NE(NULL, text);
	EXPECT_TRUE(sample(text, "big_total", "") == 41) TH_LOG("%s", text);
	EXPECT_TRUE(sample(text, "lat_sum", "") == 1.1) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	blamer_fleet_close(f);

	/* and that state read under the comma locale again */
	ASSERT_NE(NULL, setlocale(LC_ALL, "de_DE.UTF-8"));
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	text = expose(f, s);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "} 41\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "} 1.1\n")) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	blamer_fleet_close(f);

	/* what is done should no C locale be had: the locale's point made
	 * '.' in the text, and '.' made the locale's to read */
	snprintf(hex, sizeof(hex), "%a", 20.5);
	EXPECT_STREQ("0x1,48p+4", hex);
	ex_point_to_dot(hex);
	EXPECT_STREQ("0x1.48p+4", hex);
	EXPECT_TRUE(ex_double_of_here("0x1.48p+4", &v) && v == 20.5);
	EXPECT_TRUE(ex_double_of_here("0.55", &v) && v == 0.55);
	EXPECT_TRUE(ex_double_of_here("inf", &v) && isinf(v));
	EXPECT_FALSE(ex_double_of_here("0x1,48p+4", &v));
	EXPECT_FALSE(ex_double_of_here("20.5x", &v));
	EXPECT_FALSE(ex_double_of_here("", &v));
}

/* ---- drops ---- */

/* A dead heap of @pid that dropped @n writes of a cut string. */
static int write_drop_heap(const char *dir, int64_t pid, uint64_t n)
{
	uint64_t counts[BLAMER_DROP_REASONS] = { 0 };
	struct fx_heap h;
	int ret;

	fx_init(&h, 1, FX_SLAB, pid, 5);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
	counts[BLAMER_DROP_STRING_CUT] = n;
	fx_drops(&h, "worker", "1", counts, BLAMER_DROP_REASONS);
	ret = fx_write_dir(&h, dir, pid, 5);
	fx_free(&h);
	return ret;
}

/*
 * A dead heap's drop count was added to the remainder's with +=: a heap
 * near the top and one more folded after it left the uid's
 * blamer_dropped_total at 3 in the state, and so after every restart.
 * The remainder stops at 2^64 - 1, as the sums over heaps do.
 */
TEST_F(fold, drop_counts_fold_to_their_most_never_wrapped)
{
	struct blamer_snapshot *s;
	struct blamer_fleet *f;
	char err[256], want[128], *text, *state;
	int step;

	for (step = 0; step < 2; step++) {
		ASSERT_EQ(0, write_drop_heap(self->dir, DEAD_A + step, step ? 5 : UINT64_MAX - 1));
		f = blamer_fleet_open(self->state, err, sizeof(err));
		ASSERT_NE(NULL, f) TH_LOG("%s", err);
		s = snap(self->r);
		ASSERT_NE(NULL, s);
		EXPECT_EQ(1, blamer_fleet_fold(f, self->r, s, 0, err, sizeof(err))) TH_LOG("%s", err);
		blamer_snapshot_free(s);
		blamer_fleet_close(f);
	}
	/* started again on the state alone: no heap left */
	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, s->nprocs);
	text = expose(f, s);
	ASSERT_NE(NULL, text);
	snprintf(want, sizeof(want),
		 "\nblamer_dropped_total{reason=\"string_cut\",uid=\"%u\"} 18446744073709551615\n",
		 (unsigned)getuid());
	EXPECT_NE(NULL, strstr(text, want)) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	blamer_fleet_close(f);
	state = slurp(self->state);
	ASSERT_NE(NULL, state);
	snprintf(want, sizeof(want), "\ndrop %u %u 18446744073709551615\n", (unsigned)getuid(),
		 (unsigned)BLAMER_DROP_STRING_CUT);
	EXPECT_NE(NULL, strstr(state, want)) TH_LOG("%s", state);
	free(state);
}

static bool keep_every(const struct blamer_snap_process *p, void *arg)
{
	(void)p;
	(void)arg;
	return true;
}

/* @s as if DEAD_A were uid 1001's and every other heap uid 1002's (the dir
 * backend reads one owner's files), its views made again. */
static void two_uids(struct blamer_snapshot *s)
{
	size_t i;

	for (i = 0; i < s->nprocs; i++)
		s->procs[i].uid = s->procs[i].pid == DEAD_A ? 1001 : 1002;
	blamer_snapshot_filter(s, keep_every, NULL);
}

/* How many of @s's processes have @pid (@is) or another one (!@is). */
static size_t procs_of(const struct blamer_snapshot *s, int64_t pid, bool is)
{
	size_t i, n = 0;

	for (i = 0; i < s->nprocs; i++)
		n += (s->procs[i].pid == pid) == is;
	return n;
}

/*
 * --keep-dead keeps that many folded heaps of each uid: one list for every
 * user let one user's churn release another user's crashed heap (its
 * postmortem) as soon as it had that many newer deaths of its own.
 */
TEST_F(fold, each_uid_keeps_its_own_dead_heaps)
{
	struct blamer_snapshot *s;
	struct blamer_fleet *f;
	char err[256];
	int i;

	f = blamer_fleet_open(self->state, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	ASSERT_EQ(0, write_heap(self->dir, DEAD_A, 1, 1, 1));	/* uid 1001's crash */
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	two_uids(s);
	ASSERT_EQ(1, blamer_fleet_fold(f, self->r, s, 2, err, sizeof(err))) TH_LOG("%s", err);
	blamer_snapshot_free(s);
	usleep(10000);		/* the next deaths are seen later */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, write_heap(self->dir, 3999611 + i, 1, 1, 1));
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	two_uids(s);
	ASSERT_EQ(3, blamer_fleet_fold(f, self->r, s, 2, err, sizeof(err))) TH_LOG("%s", err);
	blamer_snapshot_free(s);
	s = snap(self->r);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1, procs_of(s, DEAD_A, true));	/* uid 1001's one, kept */
	EXPECT_EQ(2, procs_of(s, DEAD_A, false));	/* uid 1002's newest two */
	blamer_snapshot_free(s);
	blamer_fleet_close(f);
}

TEST_HARNESS_MAIN
