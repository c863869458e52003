// SPDX-License-Identifier: MIT
/*
 * The fleet state parser (lib/export/fleet_state.c) on hostile files,
 * under ASan and UBSan: a valid state reads, and every way a state can be
 * wrong (each field of each record: out of range, not a number, too many
 * or too few, a bad escape, a key given twice, a series of no
 * definition, buckets or partials not its definition's, a record nobody
 * knows), with its hash made right so that only the parser can refuse
 * it, is refused with a message, never a crash; then thousands of random
 * changes, hashed again: read or refused, never a crash or a leak.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "blamer.h"
#include "hash.h"

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
	return h;
}

/* @body (lines, each ending in \n) with its end line, written at @path. */
static void write_state(const char *path, const char *body, size_t len)
{
	size_t lines = 0, i;
	FILE *f;

	for (i = 0; i < len; i++)
		lines += body[i] == '\n';
	f = fopen(path, "w");
	if (!f)
		abort();
	fwrite(body, 1, len, f);
	fprintf(f, "end %zu %016llx\n", lines, (unsigned long long)fnv(body, len));
	fclose(f);
	chmod(path, 0600);
}

static const char good[] =
	"blamer-fold 3\n"
	"generation 3\n"
	"folded 7\n"
	"source s:/dev/shm/blamer-1000\n"
	"node 1000 1f s:server\n"
	"node 1000 2a s:GET%20/hello\n"
	"unit 1000 1000 0 s:requests\n"
	"def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n"
	"def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p-2 0x1p+0 inf s:\n"
	"def 1000 s:depth 2 0 5 0 0 0 s:\n"
	"series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n"
	"series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 3 4 5 6\n"
	"series 2 1000 0 0 0x1.8p+1 0 0\n"
	"path 1000 1000 2 1f 2a 42\n"
	"drop 1000 9 3\n"
	"heap 123 456 abc def 789\n";

/* Version 1: definitions without their uid (the heap gone: a fold
 * writes the state again). */
static const char good_v1[] =
	"blamer-fold 1\n"
	"generation 1\n"
	"folded 2\n"
	"def s:reqs 1 0 0 0 1 s:route 0 s:Requests.\n"
	"def s:unused 1 0 0 0 0 0 s:\n"
	"def s:depth 2 0 5 0 0 0 s:\n"
	"series 0 1000 0 s:/a 1 0x1p+1 0x0p+0 0 0\n"
	"series 0 1001 0 s:/b 1 0x1p+2 0x0p+0 0 0\n"
	"series 2 1001 0 0 0x1.8p+1 0 0\n"
	"series 0 1001 0 s:/c 1 0x1p+3 0x0p+0 0 0\n"
	"heap 123 456 abc def 789\n";

FIXTURE(st) {
	char dir[64], path[96];
};

FIXTURE_SETUP(st)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/blamer-state-XXXXXX");
	if (!mkdtemp(self->dir))
		abort();
	snprintf(self->path, sizeof(self->path), "%s/fold.state", self->dir);
}

FIXTURE_TEARDOWN(st)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	if (system(cmd))
		fprintf(stderr, "# cleanup failed\n");
}

/* Opens @body as a state: 1 read, 0 refused with a message. */
static int try_open(const char *path, const char *body, size_t len, char *err, size_t errlen)
{
	struct blamer_fleet *f;

	write_state(path, body, len);
	err[0] = '\0';
	f = blamer_fleet_open(path, err, errlen);
	if (!f)
		return err[0] ? 0 : -1;
	blamer_fleet_close(f);
	return 1;
}

/* The exposition of @f with no process. */
static char *text_of(struct blamer_fleet *f)
{
	struct blamer_snapshot s = { 0 };
	char *text = NULL;
	size_t len = 0, cap = 0;

	return blamer_fleet_prometheus_text(f, &s, &text, &len, &cap) ? NULL : text;
}

/* @body written at @path as a state, then its exposition with no process;
 * NULL (ASSERT in the caller) if it is refused (*err says why). */
static char *text_of_state(const char *path, const char *body, size_t len, char *err,
			   size_t errlen)
{
	struct blamer_fleet *f;
	char *text;

	write_state(path, body, len);
	f = blamer_fleet_open(path, err, errlen);
	if (!f)
		return NULL;
	text = text_of(f);
	blamer_fleet_close(f);
	return text;
}

/* A fold of an empty snapshot (one empty live "heap") into @f: a commit
 * if the state listed a heap (good[]'s 123 goes). */
static int fold_nothing(struct blamer_fleet *f, char *err, size_t errlen)
{
	struct blamer_snapshot *s;
	int ret;

	if (blamer_snapshot_from_memory(NULL, 0, &s))
		return -ENOMEM;
	ret = blamer_fleet_fold(f, NULL, s, 0, err, errlen);
	blamer_snapshot_free(s);
	return ret;
}

/* @path's bytes (a state is small), NULL-terminated; NULL if unread. */
static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *fp = fopen(path, "r");
	size_t n;

	if (!fp)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return buf;
}

TEST_F(st, a_valid_state_reads_and_writes_back_the_same)
{
	struct blamer_fleet *f;
	char err[256], *before, *after, *buf;

	ASSERT_EQ(1, try_open(self->path, good, strlen(good), err, sizeof(err))) TH_LOG("%s", err);
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	before = text_of(f);
	ASSERT_NE(NULL, before);
	ASSERT_NE(NULL, strstr(before, "reqs_total{route=\"/hello\",code=\"200\",uid=\"1000\"} 10\n"))
		TH_LOG("%s", before);
	ASSERT_NE(NULL, strstr(before, "lat_bucket{route=\"/hello\",path=\"/server/GET %2Fhello\",uid=\"1000\",le=\"1\"} 9\n"))
		TH_LOG("%s", before);
	ASSERT_NE(NULL, strstr(before, "blamer_app_requests_total{path=\"/server/GET %2Fhello\",unit=\"1000\",uid=\"1000\"} 42\n"))
		TH_LOG("%s", before);
	ASSERT_NE(NULL, strstr(before, "depth{uid=\"1000\"} 3\n")) TH_LOG("%s", before);
	ASSERT_NE(NULL, strstr(before, "blamer_dropped_total{reason=\"label_values_cut\",uid=\"1000\"} 3\n"));
	ASSERT_NE(NULL, strstr(before, "blamer_folded_heaps_total 7\n"));
	/* a fold of a snapshot without heap 123: its identity goes, the
	 * state is written again; read back, it shows the same */
	ASSERT_EQ(0, fold_nothing(f, err, sizeof(err))) TH_LOG("%s", err);
	blamer_fleet_close(f);
	buf = slurp(self->path);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, strstr(buf, "generation 4\n"));
	ASSERT_EQ(NULL, strstr(buf, "\nheap "));
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	after = text_of(f);
	ASSERT_NE(NULL, after);
	ASSERT_STREQ(before, after);
	free(before);
	free(after);
	blamer_fleet_close(f);
}

/*
 * A series whose parts the fold threw away ("lost": its sum would not
 * fit) is left out of the exposition, counted in blamer_fold_lost_total,
 * and written back as it was read, so a restart neither shows it again
 * as if whole nor forgets the count.
 */
TEST_F(st, a_lost_series_stays_left_out_and_counted)
{
	struct blamer_fleet *f;
	char body[4096], err[256], *before, *after;
	const char *at = strstr(good, "path ");
	int n;

	ASSERT_NE(NULL, at);
	n = snprintf(body, sizeof(body), "%.*slost 0 2\n%s", (int)(at - good), good, at);
	ASSERT_EQ(1, try_open(self->path, body, (size_t)n, err, sizeof(err))) TH_LOG("%s", err);
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	before = text_of(f);
	ASSERT_NE(NULL, before);
	EXPECT_EQ(NULL, strstr(before, "\nreqs_total{")) TH_LOG("%s", before);
	EXPECT_NE(NULL, strstr(before, "\nblamer_fold_lost_total{uid=\"1000\"} 2\n")) TH_LOG("%s", before);
	EXPECT_NE(NULL, strstr(before, "\nblamer_metric_conflicts 1\n")) TH_LOG("%s", before);
	EXPECT_NE(NULL, strstr(before, "\nlat_count{")) TH_LOG("%s", before);
	ASSERT_EQ(0, fold_nothing(f, err, sizeof(err))) TH_LOG("%s", err);	/* written again */
	blamer_fleet_close(f);
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	after = text_of(f);
	ASSERT_NE(NULL, after);
	EXPECT_STREQ(before, after);
	free(before);
	free(after);
	blamer_fleet_close(f);
}

/*
 * Version 1 had one definition per name for every uid: read, each
 * becomes its series' uids' own (a copy each), one no series uses goes,
 * and the exposition is the same before and after the state is written
 * again as version 2.
 */
TEST_F(st, a_version_1_state_reads_with_a_definition_per_uid)
{
	struct blamer_fleet *f;
	char err[256], *before, *after, *file;

	write_state(self->path, good_v1, strlen(good_v1));
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	before = text_of(f);
	ASSERT_NE(NULL, before);
	EXPECT_NE(NULL, strstr(before, "reqs_total{route=\"/a\",uid=\"1000\"} 2\n")) TH_LOG("%s", before);
	EXPECT_NE(NULL, strstr(before, "reqs_total{route=\"/b\",uid=\"1001\"} 4\n")) TH_LOG("%s", before);
	EXPECT_NE(NULL, strstr(before, "reqs_total{route=\"/c\",uid=\"1001\"} 8\n")) TH_LOG("%s", before);
	EXPECT_NE(NULL, strstr(before, "depth{uid=\"1001\"} 3\n")) TH_LOG("%s", before);
	EXPECT_NE(NULL, strstr(before, "blamer_metric_conflicts 0\n")) TH_LOG("%s", before);
	ASSERT_EQ(0, fold_nothing(f, err, sizeof(err))) TH_LOG("%s", err);
	blamer_fleet_close(f);
	file = slurp(self->path);
	ASSERT_NE(NULL, file);
	EXPECT_EQ(0, strncmp(file, "blamer-fold 3\n", 14)) TH_LOG("%s", file);
	EXPECT_NE(NULL, strstr(file, "\ndef 1000 s:reqs ")) TH_LOG("%s", file);
	EXPECT_NE(NULL, strstr(file, "\ndef 1001 s:reqs ")) TH_LOG("%s", file);
	EXPECT_NE(NULL, strstr(file, "\ndef 1001 s:depth ")) TH_LOG("%s", file);
	EXPECT_EQ(NULL, strstr(file, "s:unused")) TH_LOG("%s", file);
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	after = text_of(f);
	ASSERT_NE(NULL, after);
	EXPECT_STREQ(before, after);
	free(before);
	free(after);
	blamer_fleet_close(f);
	/* a name defined twice (other buckets), each used by uid 2: two
	 * definitions of "lat" for uid 2, refused, and never one's series
	 * given the other's buckets (ASan would see them read past) */
	{
		static const char twice[] =
			"blamer-fold 1\n"
			"def s:lat 3 1 0 0 0 3 0x1p-2 0x1p+0 inf s:\n"
			"def s:lat 3 1 0 0 0 2 0x1p+0 inf s:\n"
			"series 0 1 0 0 0x0p+0 0 3 1 1 1\n"
			"series 0 2 0 0 0x0p+0 0 3 1 1 1\n"
			"series 1 3 0 0 0x0p+0 0 2 1 1\n"
			"series 1 2 0 0 0x0p+0 0 2 1 1\n";

		ASSERT_EQ(0, try_open(self->path, twice, strlen(twice), err, sizeof(err)));
		EXPECT_NE(NULL, strstr(err, "defined twice for a uid")) TH_LOG("%s", err);
	}
}

/*
 * A name is defined per uid: two users' services may give one name other
 * labels (both written, in one family), and where two uids' metrics of
 * one name are of other kinds, the least uid's family is written and the
 * other counted as a conflict, whichever family name sorts first and
 * however many series the other has.
 */
TEST_F(st, a_name_is_defined_per_uid_and_the_least_uid_keeps_its_family)
{
	static const char fmt[] =
		"blamer-fold 2\n"
		"generation 1\n"
		"folded 3\n"
		"def 1000 s:reqs 1 0 0 0 1 s:route 0 s:Requests.\n"
		"def %u s:reqs 2 0 5 0 0 0 s:Depth.\n"
		"def 1002 s:reqs 1 0 0 0 1 s:code 0 s:Requests%%20by%%20code.\n"
		"series 0 1000 0 s:/a 1 0x1p+1 0x0p+0 0 0\n"
		"series 1 %u 0 0 0x1p+2 0 0\n"
		"series 2 1002 0 s:200 1 0x1p+3 0x0p+0 0 0\n"
		"series 2 1002 0 s:500 1 0x1p+0 0x0p+0 0 0\n";
	char body[1024], err[256], *text;
	int n;

	/* the gauge's uid after the counters': theirs is the family */
	n = snprintf(body, sizeof(body), fmt, 1001u, 1001u);
	text = text_of_state(self->path, body, (size_t)n, err, sizeof(err));
	ASSERT_NE(NULL, text) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(text, "# TYPE reqs_total counter\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "reqs_total{route=\"/a\",uid=\"1000\"} 2\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "reqs_total{code=\"200\",uid=\"1002\"} 8\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "reqs_total{code=\"500\",uid=\"1002\"} 1\n")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "reqs{")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "# TYPE reqs gauge")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_metric_conflicts 1\n")) TH_LOG("%s", text);
	free(text);
	/* the gauge's uid least: its family, though "reqs" sorts before
	 * "reqs_total" either way */
	n = snprintf(body, sizeof(body), fmt, 999u, 999u);
	text = text_of_state(self->path, body, (size_t)n, err, sizeof(err));
	ASSERT_NE(NULL, text) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(text, "# TYPE reqs gauge\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "reqs{uid=\"999\"} 4\n")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "reqs_total")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "blamer_metric_conflicts 0\n")) TH_LOG("%s", text);
	free(text);
}

/*
 * A counter "c" {x} and a gauge "c_total" of one uid, folded: one family.
 * The counter (first by name) is written, the gauge counted as a
 * conflict. Sorting the two compared the counter's label value with the
 * gauge's none: every start of the exporter crashed on such a state.
 */
TEST_F(st, two_metrics_of_one_family_in_a_state_are_a_conflict)
{
	static const char body[] =
		"blamer-fold 2\n"
		"generation 1\n"
		"folded 2\n"
		"def 1000 s:c 1 0 0 0 1 s:x 0 s:C.\n"
		"def 1000 s:c_total 2 0 5 0 0 0 s:G.\n"
		"series 0 1000 0 s:v 1 0x1p+1 0x0p+0 0 0\n"
		"series 1 1000 0 0 0x1p+2 0 0\n";
	char err[256], *text;

	text = text_of_state(self->path, body, strlen(body), err, sizeof(err));
	ASSERT_NE(NULL, text) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(text, "# TYPE c_total counter\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "c_total{x=\"v\",uid=\"1000\"} 2\n")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "c_total{uid=")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_metric_conflicts 1\n")) TH_LOG("%s", text);
	free(text);
}

/*
 * Version 2 named nodes and units for every uid: read, each name is
 * copied to every uid whose series or paths use it (no label written
 * before changes), one no record uses goes, and the next commit writes
 * version 3, each name with its uid.
 */
TEST_F(st, a_version_2_state_reads_with_names_per_uid)
{
	static const char v2[] =
		"blamer-fold 2\n"
		"generation 1\n"
		"folded 2\n"
		"node 1f s:server\n"
		"node 77 s:unused\n"
		"unit 1007 0 s:requests\n"
		"unit 1008 1 s:unused\n"
		"path 1000 1007 1 1f 5\n"
		"path 1001 1007 1 1f 7\n"
		"heap 123 456 abc def 789\n";
	char err[256], *text, *file;
	struct blamer_fleet *f;

	write_state(self->path, v2, strlen(v2));
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	text = text_of(f);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "blamer_app_requests_total{path=\"/server\",unit=\"1007\",uid=\"1000\"} 5\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_app_requests_total{path=\"/server\",unit=\"1007\",uid=\"1001\"} 7\n")) TH_LOG("%s", text);
	free(text);
	{

		ASSERT_EQ(0, fold_nothing(f, err, sizeof(err))) TH_LOG("%s", err);
	}
	blamer_fleet_close(f);
	file = slurp(self->path);
	ASSERT_NE(NULL, file);
	EXPECT_EQ(0, strncmp(file, "blamer-fold 3\n", 14)) TH_LOG("%s", file);
	EXPECT_NE(NULL, strstr(file, "\nnode 1000 1f s:server\n")) TH_LOG("%s", file);
	EXPECT_NE(NULL, strstr(file, "\nnode 1001 1f s:server\n")) TH_LOG("%s", file);
	EXPECT_NE(NULL, strstr(file, "\nunit 1000 1007 0 s:requests\n")) TH_LOG("%s", file);
	EXPECT_NE(NULL, strstr(file, "\nunit 1001 1007 0 s:requests\n")) TH_LOG("%s", file);
	EXPECT_EQ(NULL, strstr(file, "unused")) TH_LOG("%s", file);
}

/*
 * Names are each uid's own: a heap of uid 0 naming the victim's node
 * 0x1234 "PWNED", naming another node "handler" (the victim's name), and
 * naming the victim's unit 1007 "aaa" in seconds changes nothing of uid
 * 1000's series: not its path label, not its family, not its value (no
 * division by 1e9). The remainder's names are per uid too.
 */
TEST_F(st, another_uids_names_change_no_label_or_value_of_a_uid)
{
	static const char state[] =
		"blamer-fold 3\n"
		"generation 1\n"
		"folded 1\n"
		"node 0 1234 s:PWNED\n"
		"unit 0 1007 1 s:zzz\n"
		"path 0 1007 1 1234 1\n"
		"heap 123 456 abc def 789\n";
	struct blamer_snap_node vn[] = { { .id = 0x1234, .name = "handler" } };
	struct blamer_snap_node an[] = { { .id = 0x1234, .name = "PWNED" },
					 { .id = 0x9999, .name = "handler" } };
	struct blamer_snap_path vp[] = { { .depth = 1, .nodes = { 0x1234 }, .nvalues = 2,
					   .units = { 1007, BLAMER_UNIT_CPU_NS },
					   .values = { 5000, 100 } } };
	struct blamer_snap_path ap[] = { { .depth = 1, .nodes = { 0x9999 }, .nvalues = 2,
					   .units = { 1007, BLAMER_UNIT_CPU_NS },
					   .values = { 1, 50 } } };
	struct blamer_snap_process procs[2] = {
		{ .pid = 5, .uid = 0, .state = BLAMER_PROC_LIVE, .heap_key = 5,
		  .nodes = an, .nnodes = 2, .paths = ap, .npaths = 1 },
		{ .pid = 10, .uid = 1000, .state = BLAMER_PROC_LIVE, .heap_key = 10,
		  .nodes = vn, .nnodes = 1, .paths = vp, .npaths = 1 },
	};
	/* as the reader makes them: over every uid, then per uid */
	struct blamer_snap_node all[] = { { .id = 0x1234, .name = "PWNED" },
					  { .id = 0x9999, .name = "handler" } };
	struct blamer_snap_unit_def alld[] = { { 1007, BLAMER_BASE_SECONDS, "aaa" } };
	struct blamer_snap_uid_node un[] = { { 0, { .id = 0x1234, .name = "PWNED" } },
					     { 0, { .id = 0x9999, .name = "handler" } },
					     { 1000, { .id = 0x1234, .name = "handler" } } };
	struct blamer_snap_uid_unit_def ud[] = {
		{ 0, { 1007, BLAMER_BASE_SECONDS, "aaa" } },
		{ 1000, { 1007, BLAMER_BASE_NONE, "requests" } } };
	struct blamer_snapshot s = { .procs = procs, .nprocs = 2, .nodes = all, .nnodes = 2,
				     .unit_defs = alld, .nunit_defs = 1,
				     .uid_nodes = un, .nuid_nodes = 3,
				     .uid_unit_defs = ud, .nuid_unit_defs = 2,
				     .flags = BLAMER_SNAP_UID_NAMES };
	char err[256], *text = NULL, *pp = NULL;
	size_t len = 0, cap = 0;
	struct blamer_fleet *f;
	FILE *mf;

	EXPECT_STREQ("handler", blamer_snap_uid_node_name(&s, 1000, 0x1234));
	EXPECT_STREQ("requests", blamer_snap_uid_unit_def(&s, 1000, 1007)->name);
	EXPECT_EQ(NULL, blamer_snap_uid_unit_def(&s, 1001, 1007));
	write_state(self->path, state, strlen(state));
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	ASSERT_EQ(0, blamer_fleet_prometheus_text(f, &s, &text, &len, &cap));
	/* uid 1000's: its own names, its own base */
	EXPECT_NE(NULL, strstr(text, "blamer_app_requests_total{path=\"/handler\",unit=\"1007\",uid=\"1000\"} 5000\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_attribution_cpu_seconds_total{path=\"/handler\",uid=\"1000\"} 0.000000100\n")) TH_LOG("%s", text);
	/* uid 0's: its own (a unit: the least of the remainder's and the heaps') */
	EXPECT_NE(NULL, strstr(text, "blamer_app_aaa_seconds_total{path=\"/handler\",unit=\"1007\",uid=\"0\"} 0.000000001\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_app_aaa_seconds_total{path=\"/PWNED\",unit=\"1007\",uid=\"0\"} 0.000000001\n")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "@0x")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "uid=\"1000\"} 0.000005")) TH_LOG("%s", text);
	free(text);
	blamer_fleet_close(f);
	/* each process's own series: its uid's names */
	mf = open_memstream(&pp, &len);
	ASSERT_NE(NULL, mf);
	ASSERT_EQ(0, blamer_snapshot_write_prometheus(&s, mf));
	fclose(mf);
	EXPECT_NE(NULL, strstr(pp, "blamer_app_requests_total{pid=\"10\",")) TH_LOG("%s", pp);
	EXPECT_NE(NULL, strstr(pp, "path=\"/handler\",unit=\"1007\"} 5000\n")) TH_LOG("%s", pp);
	EXPECT_EQ(NULL, strstr(pp, "@0x")) TH_LOG("%s", pp);
	free(pp);
}

TEST_F(st, every_wrong_field_is_refused)
{
	/* each replaces one line of the good state */
	static const struct {
		const char *was, *now;
	} bad[] = {
		/* each kind of record twice (sorted, then neighbours: a
		 * pairwise search took seconds on 40,000 series) */
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n"
		  "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n" },
		{ "path 1000 1000 2 1f 2a 42\n", "path 1000 1000 2 1f 2a 42\npath 1000 1000 2 1f 2a 7\n" },
		{ "drop 1000 9 3\n", "drop 1000 9 3\ndrop 1000 9 4\n" },
		{ "source s:/dev/shm/blamer-1000\n",
		  "source s:/dev/shm/blamer-1000\nsource s:/dev/shm/blamer-0\n" },
		{ "source s:/dev/shm/blamer-1000\n", "source /dev/shm/blamer-1000\n" },
		{ "blamer-fold 3\n", "blamer-fold 4\n" },
		{ "blamer-fold 3\n", "" },
		/* version 1's definitions, version 2's names in a version 3 state */
		{ "blamer-fold 3\n", "blamer-fold 1\n" },
		{ "blamer-fold 3\n", "blamer-fold 2\n" },
		/* a name's uid: missing, not a uid; a name twice for one uid */
		{ "node 1000 1f s:server\n", "node 1f s:server\n" },
		{ "node 1000 1f s:server\n", "node 4294967295 1f s:server\n" },
		{ "unit 1000 1000 0 s:requests\n", "unit 1000 0 s:requests\n" },
		{ "unit 1000 1000 0 s:requests\n",
		  "unit 1000 1000 0 s:requests\nunit 1000 1000 1 s:other\n" },
		/* a definition's uid: missing, not a uid, twice for one uid;
		 * a series of another uid's definition */
		{ "def 1000 s:depth 2 0 5 0 0 0 s:\n", "def s:depth 2 0 5 0 0 0 s:\n" },
		{ "def 1000 s:depth 2 0 5 0 0 0 s:\n", "def 4294967295 s:depth 2 0 5 0 0 0 s:\n" },
		{ "def 1000 s:depth 2 0 5 0 0 0 s:\n", "def -1 s:depth 2 0 5 0 0 0 s:\n" },
		{ "def 1000 s:depth 2 0 5 0 0 0 s:\n",
		  "def 1000 s:depth 2 0 5 0 0 0 s:\ndef 1000 s:depth 2 0 4 0 0 0 s:\n" },
		{ "series 2 1000 0 0 0x1.8p+1 0 0\n", "series 2 1001 0 0 0x1.8p+1 0 0\n" },
		{ "generation 3\n", "generation -3\n" },
		{ "generation 3\n", "generation 3 4\n" },
		{ "generation 3\n", "generation\n" },
		{ "generation 3\n", "generation 99999999999999999999999\n" },
		{ "folded 7\n", "folded 0x7\n" },
		{ "node 1000 1f s:server\n", "node 1000 zz s:server\n" },
		{ "node 1000 1f s:server\n", "node 1000 1f server\n" },
		{ "node 1000 1f s:server\n", "node 1000 1f s:%G0\n" },
		{ "node 1000 1f s:server\n", "node 1000 1f s:a%00b\n" },
		{ "node 1000 1f s:server\n", "node 1000 1f s:%2\n" },
		{ "node 1000 1f s:server\n", "node 1000 1f s:012345678901234567890123456789012\n" },
		{ "node 1000 2a s:GET%20/hello\n", "node 1000 1f s:again\n" },
		{ "unit 1000 1000 0 s:requests\n", "unit 1000 999 0 s:requests\n" },
		{ "unit 1000 1000 0 s:requests\n", "unit 1000 1000 3 s:requests\n" },
		{ "unit 1000 1000 0 s:requests\n", "unit 1000 1000 0 s:Req-uests\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:reqs 4 0 0 0 2 s:route s:code 0 s:x\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:reqs 1 0 1 0 2 s:route s:code 0 s:x\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:reqs 1 0 0 0 9 s:route s:code 0 s:x\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:reqs 1 0 0 0 2 s:route s:code\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:re-qs 1 0 0 0 2 s:route s:code 0 s:x\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:reqs 1 0 0 0 2 s:rou:te s:code 0 s:x\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:lat 1 0 0 0 2 s:route s:code 0 s:x\n" },
		{ "def 1000 s:reqs 1 0 0 0 2 s:route s:code 0 s:Requests%20served.\n",
		  "def 1000 s:reqs 1 0 0 0 2 s:route s:code 2 0x1p+0 inf s:x\n" },
		{ "def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p-2 0x1p+0 inf s:\n",
		  "def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p+0 0x1p-2 inf s:\n" },
		{ "def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p-2 0x1p+0 inf s:\n",
		  "def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p-2 0x1p+0 0x1p+2 s:\n" },
		{ "def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p-2 0x1p+0 inf s:\n",
		  "def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p-2 nan inf s:\n" },
		{ "def 1000 s:lat 3 1 0 0 1 s:route 3 0x1p-2 0x1p+0 inf s:\n",
		  "def 1000 s:lat 3 1 0 0 1 s:route 999 0x1p-2 0x1p+0 inf s:\n" },
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 3 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n" },
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 9 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n" },
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 0 s:/hello 1 0x1.4p+3 0x0p+0 0 0\n" },
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 0 s:/hello s:200 49 0x1.4p+3 0x0p+0 0 0\n" },
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 3 1 2 3\n" },
		{ "series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 3 4 5 6\n",
		  "series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 3 4 5\n" },
		{ "series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 3 4 5 6\n",
		  "series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 2 4 5\n" },
		{ "series 2 1000 0 0 0x1.8p+1 0 0\n",
		  "series 0 1000 0 s:/hello s:200 1 0x1p+0 0x0p+0 0 0\n" },
		/* a counter or histogram no fold keeps: a sum not finite, or
		 * of finite partials past the largest double; a count past
		 * 2^64 - 1 (an older exporter wrote +Inf and wrapped ones) */
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 0 s:/hello s:200 1 inf 0x0p+0 0 0\n" },
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 0 s:/hello s:200 1 nan 0x0p+0 0 0\n" },
		{ "series 0 1000 0 s:/hello s:200 1 0x1.4p+3 0x0p+0 0 0\n",
		  "series 0 1000 0 s:/hello s:200 2 0x1.fffffffffffffp+1023 0x1p+1023 0x0p+0 0 0\n" },
		{ "series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 3 4 5 6\n",
		  "series 1 1000 2 1f 2a s:/hello 2 -inf 0x1p-53 0x0p+0 0 3 4 5 6\n" },
		{ "series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 3 4 5 6\n",
		  "series 1 1000 2 1f 2a s:/hello 2 0x1p+0 0x1p-53 0x0p+0 0 3 "
		  "9223372036854775808 9223372036854775808 0\n" },
		{ "path 1000 1000 2 1f 2a 42\n", "path 1000 1000 0 42\n" },
		{ "path 1000 1000 2 1f 2a 42\n", "path 1000 1000 2 1f 42\n" },
		{ "drop 1000 9 3\n", "drop 1000 16 3\n" },
		/* a lost count: of a gauge, of no series, of 0, twice, not
		 * a count */
		{ "drop 1000 9 3\n", "lost 2 1\ndrop 1000 9 3\n" },
		{ "drop 1000 9 3\n", "lost 3 1\ndrop 1000 9 3\n" },
		{ "drop 1000 9 3\n", "lost 0 0\ndrop 1000 9 3\n" },
		{ "drop 1000 9 3\n", "lost 0 1\nlost 0 1\ndrop 1000 9 3\n" },
		{ "drop 1000 9 3\n", "lost 0 -1\ndrop 1000 9 3\n" },
		{ "drop 1000 9 3\n", "lost 0\ndrop 1000 9 3\n" },
		{ "heap 123 456 abc def 789\n", "heap -1 456 abc def 789\n" },
		{ "heap 123 456 abc def 789\n", "heap 2147483648 456 abc def 789\n" },
		{ "heap 123 456 abc def 789\n", "heap 123 456 abc def\n" },
		{ "heap 123 456 abc def 789\n", "heap 123 456 abc def 789\nheap 123 456 abc def 789\n" },
		{ "heap 123 456 abc def 789\n", "what 1\n" },
		{ "heap 123 456 abc def 789\n", "heap 123  456 abc def 789\n" },
	};
	char body[4096], err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *at = strstr(good, bad[i].was);
		int n;

		ASSERT_NE(NULL, at);
		n = snprintf(body, sizeof(body), "%.*s%s%s", (int)(at - good), good, bad[i].now,
			     at + strlen(bad[i].was));
		ASSERT_EQ(0, try_open(self->path, body, (size_t)n, err, sizeof(err)))
			TH_LOG("%zu: %s read", i, bad[i].now);
		ASSERT_NE(NULL, strstr(err, "refused")) TH_LOG("%zu: %s", i, err);
	}
	/* an empty file, and one of only an end line */
	ASSERT_EQ(0, try_open(self->path, "", 0, err, sizeof(err)));
	unlink(self->path);
	ASSERT_EQ(1, try_open(self->path, "blamer-fold 2\n", 14, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(1, try_open(self->path, "blamer-fold 1\n", 14, err, sizeof(err))) TH_LOG("%s", err);
}

TEST_F(st, random_changes_are_read_or_refused)
{
	char body[4096], err[256];
	size_t i;
	unsigned seed = 11;
	int read = 0, refused = 0, r;

	/* both versions: half the changes each */
	for (i = 0; i < 4000; i++) {
		const char *base = i % 2 ? good_v1 : good;
		size_t len = strlen(base), n = len, k, changes;

		memcpy(body, base, len);
		seed = seed * 1103515245 + 12345;
		for (changes = 1 + (seed >> 16) % 4; changes; changes--) {
			seed = seed * 1103515245 + 12345;
			k = (seed >> 8) % n;
			switch ((seed >> 4) % 4) {
			case 0:		/* a byte */
				body[k] = (char)(seed >> 20);
				break;
			case 1:		/* a digit */
				body[k] = (char)('0' + (seed >> 20) % 10);
				break;
			case 2:		/* a space or a line end */
				body[k] = (seed >> 20) & 1 ? ' ' : '\n';
				break;
			default:	/* a byte gone */
				memmove(body + k, body + k + 1, n - k - 1);
				n--;
			}
		}
		if (n && body[n - 1] != '\n')
			body[n++] = '\n';
		r = try_open(self->path, body, n, err, sizeof(err));
		ASSERT_GE(r, 0) TH_LOG("refused without a message");
		if (r == 1) {
			/* what was read is whole: its exposition reads only
			 * what it holds (ASan) */
			struct blamer_fleet *f = blamer_fleet_open(self->path, err, sizeof(err));

			ASSERT_NE(NULL, f);
			free(text_of(f));
			blamer_fleet_close(f);
		}
		read += r == 1;
		refused += r == 0;
	}
	TH_LOG("%d read, %d refused", read, refused);
	ASSERT_GT(refused, 0);
}

/*
 * The exporters' keyed mix (lib/export/hash.h) spreads keys that differ
 * in their top bits alone over a table's slots, whatever the seed: a heap
 * chooses its node ids and label values, and the fold's indexes probe
 * linearly. The mix before this one put all 4,096 node ids i << 50 (and
 * all label values differing only in their last two bytes) in one slot
 * of a table of 4,096: 1 slot used, the probing quadratic. A random
 * function uses about 2,590 of them.
 */
static size_t slots_used(const uint64_t *h, size_t n, size_t cap)
{
	unsigned char *used = calloc(cap, 1);
	size_t i, k = 0;

	if (!used)
		abort();
	for (i = 0; i < n; i++) {
		k += !used[h[i] & (cap - 1)];
		used[h[i] & (cap - 1)] = 1;
	}
	free(used);
	return k;
}

/*
 * The state's directory is checked before anything is made or removed in
 * it: in a directory others may write (not sticky) the exporter is
 * refused without leaving its lock there or removing a file of its own
 * that looks like a temporary. A sticky one others may write (/tmp,
 * where the prometheus suite keeps a state) is accepted; a squatter who
 * made the state or its lock there first stops the exporter, which then
 * says which file and whose, in one line.
 */
TEST_F(st, the_directory_is_checked_before_the_lock_and_squatters_are_named)
{
	char open_dir[96], sticky[96], path[160], lock[176], tmp[176], err[512];
	struct blamer_fleet *f;
	struct stat st;
	int fd;

	snprintf(open_dir, sizeof(open_dir), "%s/open", self->dir);
	snprintf(sticky, sizeof(sticky), "%s/sticky", self->dir);
	ASSERT_EQ(0, mkdir(open_dir, 0700));
	ASSERT_EQ(0, chmod(open_dir, 0777));
	ASSERT_EQ(0, mkdir(sticky, 0700));
	ASSERT_EQ(0, chmod(sticky, 01777));

	/* others may write it: refused, nothing made, nothing removed */
	snprintf(path, sizeof(path), "%s/f.state", open_dir);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	snprintf(tmp, sizeof(tmp), "%s.tmp-abcdef", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_LE(0, fd);
	close(fd);
	err[0] = '\0';
	f = blamer_fleet_open(path, err, sizeof(err));
	EXPECT_EQ(NULL, f);
	blamer_fleet_close(f);
	EXPECT_NE(NULL, strstr(err, "may be changed by others")) TH_LOG("%s", err);
	EXPECT_NE(0, lstat(lock, &st)) TH_LOG("%s made in a directory refused", lock);
	EXPECT_EQ(0, lstat(tmp, &st)) TH_LOG("%s removed from a directory refused", tmp);

	/* sticky: accepted, the lock made */
	snprintf(path, sizeof(path), "%s/f.state", sticky);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	f = blamer_fleet_open(path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	blamer_fleet_close(f);
	EXPECT_EQ(0, lstat(lock, &st));

	if (geteuid() != 0)
		SKIP(return, "squatters of another uid: as root");
	/* another user's lock, then another user's state: named, with
	 * their owner */
	ASSERT_EQ(0, lchown(lock, 65534, 65534));
	err[0] = '\0';
	f = blamer_fleet_open(path, err, sizeof(err));
	EXPECT_EQ(NULL, f);
	blamer_fleet_close(f);
	EXPECT_NE(NULL, strstr(err, lock)) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "uid 65534")) TH_LOG("%s", err);
	EXPECT_EQ(NULL, strchr(err, '\n')) TH_LOG("%s", err);
	ASSERT_EQ(0, unlink(lock));
	ASSERT_EQ(0, symlink("/nonexistent", lock));
	ASSERT_EQ(0, lchown(lock, 65534, 65534));
	err[0] = '\0';
	f = blamer_fleet_open(path, err, sizeof(err));
	EXPECT_EQ(NULL, f);
	blamer_fleet_close(f);
	EXPECT_NE(NULL, strstr(err, lock)) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "uid 65534")) TH_LOG("%s", err);
	ASSERT_EQ(0, unlink(lock));
	write_state(path, good, strlen(good));
	ASSERT_EQ(0, chown(path, 65534, 65534));
	err[0] = '\0';
	f = blamer_fleet_open(path, err, sizeof(err));
	EXPECT_EQ(NULL, f);
	blamer_fleet_close(f);
	EXPECT_NE(NULL, strstr(err, path)) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "uid 65534")) TH_LOG("%s", err);
	EXPECT_EQ(NULL, strchr(err, '\n')) TH_LOG("%s", err);
}

/* Entries in @dir but "." and "..": -1 if it cannot be read. */
static int entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* Opens @path and commits once (the good state's heap 123 is not in an
 * empty snapshot: its identity goes, the state is written again), after
 * @between (if any) runs; 0, or -1 with *err. */
static int open_and_commit(const char *path, void (*between)(const char *), const char *arg,
			   char *err, size_t errlen)
{
	struct blamer_fleet *f;
	int ret;

	err[0] = '\0';
	f = blamer_fleet_open(path, err, errlen);
	if (!f)
		return -1;
	if (between)
		between(arg);
	ret = fold_nothing(f, err, errlen) < 0 ? -1 : 0;
	blamer_fleet_close(f);
	return ret;
}

static char link_at[160];

/* The symlink link_at made again, pointing at @target. */
static void repoint(const char *target)
{
	char tmp[176];

	snprintf(tmp, sizeof(tmp), "%s.new", link_at);
	if (symlink(target, tmp) || rename(tmp, link_at))
		abort();
}

/*
 * The path to the state is walked a component at a time and its
 * directory held open: the commits go to the directory checked at the
 * open, however the path is re-pointed after (each commit once looked the
 * path up again: rename() by path). A symlink of the caller's (or root's)
 * is followed, relative or absolute, and a path relative to the working
 * directory walked from there. /tmp (root's, sticky) on the path is
 * accepted, and a state kept in /tmp itself.
 */
TEST_F(st, the_directory_checked_at_the_open_is_the_one_committed_to)
{
	char real[96], other[96], path[192], lock[200], err[512], *file;
	struct stat st;

	snprintf(real, sizeof(real), "%s/real", self->dir);
	snprintf(other, sizeof(other), "%s/other", self->dir);
	snprintf(link_at, sizeof(link_at), "%s/link", self->dir);
	ASSERT_EQ(0, mkdir(real, 0700));
	ASSERT_EQ(0, mkdir(other, 0700));
	ASSERT_EQ(0, symlink("real", link_at));	/* relative: to self->dir/real */

	snprintf(path, sizeof(path), "%s/fold.state", real);
	write_state(path, good, strlen(good));
	snprintf(path, sizeof(path), "%s/link/fold.state", self->dir);
	ASSERT_EQ(0, open_and_commit(path, repoint, other, err, sizeof(err))) TH_LOG("%s", err);
	/* the commit is in real/, not in other/ where the link now points */
	snprintf(path, sizeof(path), "%s/fold.state", real);
	file = slurp(path);
	ASSERT_NE(NULL, file);
	EXPECT_NE(NULL, strstr(file, "generation 4\n")) TH_LOG("%s", file);
	EXPECT_EQ(NULL, strstr(file, "\nheap ")) TH_LOG("%s", file);
	EXPECT_EQ(0, entries(other)) TH_LOG("a commit landed in %s", other);

	/* relative to the working directory (the test is its own process) */
	ASSERT_EQ(0, chdir(self->dir));
	repoint(real);	/* absolute */
	write_state(path, good, strlen(good));
	ASSERT_EQ(0, open_and_commit("link/fold.state", NULL, NULL, err, sizeof(err)))
		TH_LOG("%s", err);
	file = slurp(path);
	ASSERT_NE(NULL, file);
	EXPECT_NE(NULL, strstr(file, "generation 4\n")) TH_LOG("%s", file);

	/* a state in /tmp itself (root's and sticky) */
	snprintf(path, sizeof(path), "%s.state", self->dir);
	write_state(path, good, strlen(good));
	EXPECT_EQ(0, open_and_commit(path, NULL, NULL, err, sizeof(err))) TH_LOG("%s", err);
	file = slurp(path);
	EXPECT_NE(NULL, file);
	EXPECT_NE(NULL, file ? strstr(file, "generation 4\n") : NULL);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	EXPECT_EQ(0, lstat(lock, &st));
	unlink(path);
	unlink(lock);
}

/*
 * The reviewer's swap: --state D/home/st/fold.state, where home and the
 * symlink st are another user's (uid 65534) and st points at a directory
 * of root's. Only the directory st led to was checked (stat() follows
 * it), once: that user re-pointed st at a directory of theirs, a commit
 * went there, st was pointed back, and the next start read the state
 * before it (counts of released heaps lost). Now the path is refused at
 * the open, naming the component and its owner, and nothing is made in
 * the directory st points at: another user's directory on the path (they
 * may rename or replace what is in it), another user's symlink even in a
 * directory of root's. A symlink of root's to a directory of root's is
 * followed.
 */
TEST_F(st, another_users_directory_or_symlink_on_the_path_is_refused)
{
	char home[96], real[96], path[192], want[192], err[512];
	struct blamer_fleet *f;

	if (geteuid() != 0)
		SKIP(return, "components of another uid: as root");
	snprintf(home, sizeof(home), "%s/home", self->dir);
	snprintf(real, sizeof(real), "%s/real", self->dir);
	ASSERT_EQ(0, mkdir(real, 0755));
	ASSERT_EQ(0, mkdir(home, 0755));
	ASSERT_EQ(0, chown(home, 65534, 65534));

	/* their directory, their symlink in it: refused at their directory */
	snprintf(path, sizeof(path), "%s/st", home);
	ASSERT_EQ(0, symlink(real, path));
	ASSERT_EQ(0, lchown(path, 65534, 65534));
	snprintf(path, sizeof(path), "%s/st/fold.state", home);
	err[0] = '\0';
	f = blamer_fleet_open(path, err, sizeof(err));
	EXPECT_EQ(NULL, f);
	blamer_fleet_close(f);
	snprintf(want, sizeof(want), "directory %s of uid 65534 ", home);
	EXPECT_NE(NULL, strstr(err, want)) TH_LOG("%s", err);
	EXPECT_EQ(NULL, strchr(err, '\n')) TH_LOG("%s", err);
	EXPECT_EQ(0, entries(real)) TH_LOG("made in %s through another user's path", real);

	/* a directory of root's in their directory: refused all the same */
	snprintf(path, sizeof(path), "%s/sub", home);
	ASSERT_EQ(0, mkdir(path, 0700));
	snprintf(path, sizeof(path), "%s/sub/fold.state", home);
	err[0] = '\0';
	f = blamer_fleet_open(path, err, sizeof(err));
	EXPECT_EQ(NULL, f);
	blamer_fleet_close(f);
	EXPECT_NE(NULL, strstr(err, want)) TH_LOG("%s", err);

	/* their symlink in a directory of root's: refused, named */
	snprintf(path, sizeof(path), "%s/st", self->dir);
	ASSERT_EQ(0, symlink(real, path));
	ASSERT_EQ(0, lchown(path, 65534, 65534));
	snprintf(want, sizeof(want), "symlink %s of uid 65534", path);
	snprintf(path, sizeof(path), "%s/st/fold.state", self->dir);
	err[0] = '\0';
	f = blamer_fleet_open(path, err, sizeof(err));
	EXPECT_EQ(NULL, f);
	blamer_fleet_close(f);
	EXPECT_NE(NULL, strstr(err, want)) TH_LOG("%s", err);
	EXPECT_EQ(NULL, strchr(err, '\n')) TH_LOG("%s", err);
	EXPECT_EQ(0, entries(real)) TH_LOG("made in %s through another user's symlink", real);

	/* root's symlink to root's directory: followed, the commit there */
	snprintf(path, sizeof(path), "%s/st", self->dir);
	ASSERT_EQ(0, lchown(path, 0, 0));
	snprintf(path, sizeof(path), "%s/st/fold.state", self->dir);
	snprintf(want, sizeof(want), "%s/fold.state", real);
	write_state(want, good, strlen(good));
	EXPECT_EQ(0, open_and_commit(path, NULL, NULL, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(2, entries(real));	/* the state and its lock */
}

/* The next fail_dir_fsync fsync()s of a directory fail as a disk's error
 * would (-1: all of them): this program's fsync(), which the library
 * linked into it calls. */
static int fail_dir_fsync;

int fsync(int fd)
{
	struct stat st;

	if (fail_dir_fsync && !fstat(fd, &st) && S_ISDIR(st.st_mode)) {
		if (fail_dir_fsync > 0)
			fail_dir_fsync--;
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_fsync, fd);
}

/*
 * A commit whose rename is done but whose directory's fsync failed may be
 * read back and yet be lost at a crash: folding on from it released the
 * heaps it folded. Now no fold follows until a restart, whose read makes
 * the state durable first.
 */
TEST_F(st, a_commit_not_made_durable_stops_the_folds)
{
	struct blamer_fleet *f;
	char err[512];

	write_state(self->path, good, strlen(good));
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	/* the commit's only: the state read back is fine, and not trusted */
	fail_dir_fsync = 1;
	EXPECT_EQ(-EIO, fold_nothing(f, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "no more folds until a restart")) TH_LOG("%s", err);
	EXPECT_EQ(0, fail_dir_fsync);
	EXPECT_EQ(-EIO, fold_nothing(f, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "restart the exporter")) TH_LOG("%s", err);
	blamer_fleet_close(f);
	/* the restart reads what the rename left, made durable */
	fail_dir_fsync = -1;
	EXPECT_EQ(NULL, blamer_fleet_open(self->path, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "cannot be made durable")) TH_LOG("%s", err);
	fail_dir_fsync = 0;
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	EXPECT_EQ(0, fold_nothing(f, err, sizeof(err))) TH_LOG("%s", err);
	blamer_fleet_close(f);
}

/*
 * The state's directory removed under a serving exporter: the commit
 * fails, and the state read back is gone, which is no new state (an empty
 * remainder would lower every series): no more folds, and it says so.
 */
TEST_F(st, a_state_gone_under_the_exporter_is_no_new_state)
{
	struct blamer_fleet *f;
	char err[512], cmd[128];

	write_state(self->path, good, strlen(good));
	f = blamer_fleet_open(self->path, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	ASSERT_EQ(0, system(cmd));
	EXPECT_GT(0, fold_nothing(f, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "the state is gone")) TH_LOG("%s", err);
	EXPECT_EQ(-EIO, fold_nothing(f, err, sizeof(err)));
	blamer_fleet_close(f);
}

TEST(keys_differing_in_their_top_bits_spread_over_the_slots)
{
	static uint64_t h[4096];
	uint64_t seeds[] = { 0, 1, 0x9e3779b97f4a7c15ull, 0xdeadbeefcafef00dull };
	char v[16];
	size_t i, k;

	for (k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		for (i = 0; i < 4096; i++)
			h[i] = ex_mix(seeds[k], (uint64_t)i << 52 | 0x1234);
		EXPECT_GT(slots_used(h, 4096, 4096), 2000);
		for (i = 0; i < 4096; i++) {
			snprintf(v, sizeof(v), "abcdef%c%c", 33 + (int)(i / 64), 33 + (int)(i % 64));
			h[i] = ex_mix_str(seeds[k], v);
		}
		EXPECT_GT(slots_used(h, 4096, 4096), 2000);
		/* a path's last node, as fleet.c's path_key() hashes it */
		for (i = 0; i < 4096; i++) {
			uint64_t node = (uint64_t)i << 52 | 0x1234;

			h[i] = ex_mix_bytes(ex_mix(ex_mix(seeds[k] ^ 1, 1000), 1), &node, sizeof(node));
		}
		EXPECT_GT(slots_used(h, 4096, 4096), 2000);
	}
}

TEST_HARNESS_MAIN
