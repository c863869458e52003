// SPDX-License-Identifier: MIT
/*
 * Seeds for fuzz/corpus: valid heaps from the fixture builder and
 * truncated / looping variants (of the record list and of a path's shard
 * chain), in the fuzz input format (byte 0 = slab count - 1, then the
 * slabs back to back; heaps-* files: byte 0 = 4 | heap count - 1, then
 * heaps of one slab of the same size, read as processes of one snapshot).
 * `make fuzz-corpus` rewrites them; v2-* files are heaps of older format
 * versions, kept as they were written.
 */
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "testsupport.h"

static int put(const char *dir, const char *name, struct fx_heap *h, size_t cut)
{
	char path[4096];
	unsigned char n = (unsigned char)(h->nslabs - 1);
	FILE *f;
	unsigned i;
	size_t total = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(&n, 1, 1, f);
	for (i = 0; i < h->nslabs; i++) {
		size_t len = h->size[i];

		if (cut && total + len > cut)
			len = cut > total ? cut - total : 0;
		fwrite(h->slab[i], 1, len, f);
		total += len;
	}
	return fclose(f);
}

/* @n heaps of one slab each, all of one size, as processes of one
 * snapshot (testsupport's fuzz_one(): byte 0 bit 2). */
static int put_heaps(const char *dir, const char *name, struct fx_heap *hs, unsigned n)
{
	unsigned char b = (unsigned char)(4 | (n - 1));
	char path[4096];
	unsigned i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(&b, 1, 1, f);
	for (i = 0; i < n; i++)
		fwrite(hs[i].slab[0], 1, hs[i].size[0], f);
	return fclose(f);
}

/*
 * A service's workers: three heaps of the same definitions and series in
 * the same order (a definition decoded once, label values shared with the
 * heap before, a series merged through its sibling's); and two whose
 * series are in another order, one value the other's prefix. Pids and
 * starts are those fuzz_one() names the files with.
 */
static int heaps(const char *dir)
{
	struct fx_heap hs[3];
	blamer_ref d;
	int ret, i;

	for (i = 0; i < 3; i++)
		fx_metrics(&hs[i], 3999701 + i, 1 + i, 1 + (uint64_t)i);
	ret = put_heaps(dir, "heaps-siblings", hs, 3);
	for (i = 0; i < 3; i++)
		fx_free(&hs[i]);
	for (i = 0; i < 2; i++) {
		fx_init(&hs[i], 1, 4096, 3999701 + i, 1 + i);
		fx_process(&hs[i], 2, "svc");
		d = fx_metric_def(&hs[i], "reqs", BLAMER_METRIC_COUNTER, 0, "route\0code", 2, NULL, 0);
		fx_metric(&hs[i], d, i ? "/b\0" "500" : "/a\0" "200", 7, 1, NULL);
		fx_metric(&hs[i], d, i ? "/a\0" "2000" : "/b\0" "500", i ? 8 : 7, 2, NULL);
	}
	ret |= put_heaps(dir, "heaps-swapped", hs, 2);
	for (i = 0; i < 2; i++)
		fx_free(&hs[i]);
	return ret;
}

/*
 * Small heaps of each class that once made the reader spend far more
 * than the heap holds (selftests/reader/amplify_test.c has them full
 * size): one record referenced from every activity slot, a freeptr
 * claiming far more than the slab, many deep paths, many minimal thread
 * records, a long list of retired records, a log ring and big fields.
 */
static int amplifiers(const char *dir)
{
	struct fx_heap h;
	blamer_ref ud, t, log;
	char name[8];
	int ret = 0, i, k;

	fx_init(&h, 1, 32 << 10, 9, 9);
	fx_process(&h, 2, "fanout");
	ud = fx_userdata(&h, BLAMER_DATA_ACTIVITY, 64 * 24, 1);
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "%c%c", 'a' + i % 26, 'a' + i / 26 % 26);
		fx_field_u64(&h, ud, name, (uint64_t)i);
	}
	for (k = 0; k < 8; k++) {
		t = fx_thread(&h, 100 + k, "fan", 16);
		for (i = 0; i < 16; i++)
			fx_push(&h, t, BLAMER_ACTIVITY_TASK, "same", 1, ud);
	}
	ret |= put(dir, "amp-fanout", &h, 0);
	/* the same heap claiming 256 MiB used */
	((struct blamer_slab_header *)h.slab[0])->freeptr = 256u << 20;
	ret |= put(dir, "amp-freeptr-claim", &h, 0);
	fx_free(&h);

	fx_init(&h, 1, 16 << 10, 10, 10);
	fx_process(&h, 2, "paths");
	for (i = 0; i < 32; i++) {
		uint64_t nodes[8];
		int d;

		for (d = 0; d < 8; d++)
			nodes[d] = 0x9e3779b97f4a7c15ull * (uint64_t)(i * 8 + d + 1);
		fx_path(&h, nodes, 8, 1, 1);
	}
	ret |= put(dir, "amp-paths", &h, 0);
	fx_free(&h);

	fx_init(&h, 1, 16 << 10, 11, 11);
	fx_process(&h, 2, "threads");
	for (i = 0; ((struct blamer_slab_header *)h.slab[0])->freeptr +
		    sizeof(struct blamer_thread) <= (16u << 10); i++)
		fx_thread(&h, i + 1, "t", 0);
	ret |= put(dir, "amp-threads", &h, 0);
	fx_free(&h);

	fx_init(&h, 1, 16 << 10, 12, 12);
	fx_process(&h, 2, "retired");
	while (((struct blamer_slab_header *)h.slab[0])->freeptr + 48 <= (16u << 10))
		fx_alloc(&h, ~(uint32_t)BLAMER_REC_THREAD, 48, 1);
	ret |= put(dir, "amp-retired", &h, 0);
	fx_free(&h);

	fx_init(&h, 1, 16 << 10, 13, 13);
	fx_process(&h, 2, "log");
	log = fx_log(&h, 64);
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->log = log;
	for (i = 0; i < 80; i++)
		fx_log_msg(&h, log, "a log line of a hostile heap, as long as they come.....");
	ret |= put(dir, "amp-log", &h, 0);
	fx_free(&h);
	return ret;
}

/* Unit names: good ones, one named twice, bad ones, and more than a heap
 * may have units. */
static int units(const char *dir)
{
	struct fx_heap h;
	uint32_t i;
	int ret;

	fx_init(&h, 1, 8 << 10, 14, 14);
	fx_process(&h, 2, "units");
	fx_unit(&h, 1007, BLAMER_BASE_NONE, "requests");
	fx_unit(&h, 1007, BLAMER_BASE_BYTES, "requests_again");
	fx_unit(&h, 1008, BLAMER_BASE_SECONDS, "handling");
	fx_unit(&h, 1009, 9, "bad_base");
	fx_unit(&h, 1010, BLAMER_BASE_NONE, "Bad/Name");
	fx_unit(&h, 1, BLAMER_BASE_NONE, "builtin");
	for (i = 0; i < 12; i++)
		fx_unit(&h, 2000 + i, BLAMER_BASE_BYTES, "many");
	ret = put(dir, "dag-units", &h, 0);
	fx_free(&h);
	return ret;
}

/*
 * Strings that once reached a terminal or an exporter raw: an OSC 52
 * clipboard write, CR, DEL, byte 0xff and a lone UTF-8 continuation in
 * every kind of name and text, quotes and backslashes, a '/' and a '%'
 * inside node names, two nodes of one name, and a node named "0x600"
 * beside an unnamed node 0x600. The harness checks that every exporter's
 * output stays valid UTF-8 with no control bytes.
 */
static int hostile_strings(const char *dir)
{
	static const char nasty[] = "\x1b]52;c;aGk=\a\r\x7f\xff\x80\"\\";
	uint64_t a[] = { 0x100 }, b[] = { 0x100, 0x200 }, c[] = { 0x100, 0x300 },
		 d[] = { 0x100, 0x600 }, e[] = { 0x100, 0x601 };
	struct fx_heap h;
	blamer_ref t, ud, log;
	int ret;

	fx_init(&h, 1, 8 << 10, 15, 15);
	fx_process(&h, 2, "\x1b]52;c;aGk=\a \r\xff");
	ud = fx_userdata(&h, BLAMER_DATA_PROCESS, 256, 1);
	fx_field_str(&h, ud, nasty, nasty);
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ud;
	t = fx_thread(&h, 15, nasty, 2);
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, nasty, 1, 0);
	log = fx_log(&h, 2);
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->log = log;
	fx_log_msg(&h, log, nasty);
	fx_module(&h, nasty, 0x7f0000000000ull);
	fx_node(&h, 0x100, "a/b%c");
	fx_node(&h, 0x200, "dup");
	fx_node(&h, 0x300, "dup");
	fx_node(&h, 0x601, "0x600");
	fx_node(&h, 0x602, nasty);
	fx_path(&h, a, 1, 1, 1);
	fx_path(&h, b, 2, 2, 2);
	fx_path(&h, c, 2, 3, 3);
	fx_path(&h, d, 2, 4, 4);
	fx_path(&h, e, 2, 5, 5);
	ret = put(dir, "hostile-strings", &h, 0);
	fx_free(&h);
	return ret;
}

/* Format 3: a role, drop counters (one of a reason newer than the
 * reader), a cut string and a full 80-byte label marked cut. */
static int format3(const char *dir)
{
	uint64_t counts[BLAMER_DROP_SLOTS] = { 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 7 };
	char label[BLAMER_LABEL_MAX + 1];
	struct fx_heap h;
	blamer_ref t, ud;
	int ret;

	fx_init(&h, 1, 8 << 10, 21, 21);
	fx_process(&h, 2, "v3");
	fx_drops(&h, "worker", "3", counts, BLAMER_DROP_SLOTS);
	ud = fx_userdata(&h, BLAMER_DATA_PROCESS, 128, 1);
	fx_field_str(&h, ud, "client", "127.0.0.");
	((struct blamer_field *)((struct blamer_userdata *)fx_at(&h, ud))->fields)->value_size |=
		BLAMER_VALUE_CUT;
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ud;
	t = fx_thread(&h, 21, "main", 2);
	memset(label, 'q', BLAMER_LABEL_MAX);
	label[BLAMER_LABEL_MAX] = 0;
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, label, 1, 0);
	((struct blamer_thread *)fx_at(&h, t))->stack[0].flags = BLAMER_ACT_F_LABEL_CUT;
	ret = put(dir, "v3-role-drops", &h, 0);
	fx_free(&h);
	return ret;
}

int main(int argc, char **argv)
{
	struct fx_heap h;
	const char *dir = argc > 1 ? argv[1] : "fuzz/corpus";
	int ret = 0;

	ret |= units(dir);
	ret |= hostile_strings(dir);
	ret |= format3(dir);
	fx_standard(&h, 100, 200, 1);
	ret |= put(dir, "standard", &h, 0);
	ret |= put(dir, "truncated-1000", &h, 1000);
	ret |= put(dir, "truncated-5000", &h, 5000);
	((struct blamer_block *)fx_at(&h, BLAMER_LIST_HEAD_REF))->next = BLAMER_LIST_HEAD_REF + 24;
	fx_free(&h);

	fx_init(&h, 1, 4096, 7, 7);
	fx_process(&h, 2, "tiny");
	ret |= put(dir, "tiny", &h, 0);
	{
		blamer_ref t = fx_thread(&h, 7, "t", 2), ud;

		fx_push(&h, t, BLAMER_ACTIVITY_TASK, "a", 1, 0);
		fx_push(&h, t, BLAMER_ACTIVITY_TASK, "b", 2, 0);
		fx_push(&h, t, BLAMER_ACTIVITY_TASK, "c", 3, 0);	/* overflow */
		ud = fx_userdata(&h, BLAMER_DATA_PROCESS, 128, 1);
		fx_field_u64(&h, ud, "n", 5);
		fx_field_str(&h, ud, "s", "hello");
		((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ud;
		ret |= put(dir, "thread-userdata", &h, 0);
		/* the same, stamped with a TSC: the reader converts */
		fx_clock(&h, BLAMER_CLOCK_TSC, 1000000, 2000000);
		ret |= put(dir, "thread-tsc", &h, 0);
		fx_clock(&h, BLAMER_CLOCK_MONOTONIC, 0, 0);
		/* a self loop */
		((struct blamer_block *)fx_at(&h, t))->next = t;
		ret |= put(dir, "loop", &h, 0);
	}
	fx_free(&h);

	fx_init(&h, 1, 4096, 8, 8);
	fx_process(&h, 2, "shards");
	{
		uint64_t ids[2] = { FX_ROOT, FX_TAB };
		blamer_ref p = fx_path(&h, ids, 2, 100, 4096), s;

		fx_shard(&h, p, 8, 20, 512);
		s = fx_shard(&h, p, 0, 3, 64);
		ret |= put(dir, "shards", &h, 0);
		/* the newest shard links back to itself */
		((struct blamer_dag_shard *)fx_at(&h, s))->next_shard = s;
		ret |= put(dir, "shard-loop", &h, 0);
	}
	fx_free(&h);

	/* metrics: definitions, series with shards; a shard chain that loops;
	 * a series whose definition reference points into its own record */
	fx_metrics(&h, 11, 11, 3);
	ret |= put(dir, "v3-metrics", &h, 0);
	ret |= put(dir, "v3-metrics-truncated", &h, 3000);
	{
		blamer_ref r = ((struct blamer_block *)fx_at(&h, BLAMER_LIST_HEAD_REF))->next;
		int i;

		for (i = 0; i < 6; i++)	/* process, 4 definitions, the first series' shard */
			r = ((struct blamer_block *)fx_at(&h, r))->next;
		((struct blamer_metric_shard *)fx_at(&h, r))->next_shard = r;
		ret |= put(dir, "v3-metric-shard-loop", &h, 0);
	}
	fx_free(&h);
	ret |= amplifiers(dir);
	ret |= heaps(dir);
	if (ret)
		perror("mkcorpus");
	return ret ? 1 : 0;
}
