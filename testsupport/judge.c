// SPDX-License-Identifier: MIT
/* The fuzz judge (testsupport.h says what it promises). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testsupport.h"

bool fuzz_output_is_clean(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t len, k;

		if (c < 0x80) {
			if ((c < 0x20 && c != '\n') || c == 0x7f)
				return false;
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, cp = c & 0x07;
		else
			return false;
		if (n - i < len)
			return false;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
		i += len;
	}
	return true;
}

static int fuzz_cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool fuzz_series_are_unique(char *text)
{
	size_t n = 0, cap = 0, i;
	char **lines = NULL, *p, *nl;
	bool ok = true;

	for (p = text; *p; p = nl + 1) {
		char *sp;

		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		sp = strrchr(p, ' ');
		if (*p == '#' || !sp)
			continue;
		*sp = '\0';
		if (n == cap) {
			char **more = realloc(lines, (cap = cap ? 2 * cap : 64) * sizeof(*lines));

			if (!more) {
				free(lines);
				return true;	/* no memory: nothing to judge */
			}
			lines = more;
		}
		lines[n++] = p;
	}
	if (n)
		qsort(lines, n, sizeof(*lines), fuzz_cmp_line);
	for (i = 1; i < n && ok; i++)
		ok = strcmp(lines[i - 1], lines[i]) != 0;
	free(lines);
	return ok;
}

bool fuzz_cached_differs(const struct blamer_snapshot *s, const char *want,
			 size_t wlen)
{
	struct blamer_prom_cache *c = blamer_prom_cache_new();
	bool differs = false;
	char *buf = NULL;
	size_t len, cap = 0;
	int round;

	for (round = 0; c && round < 2 && !differs; round++)
		if (!blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap))
			differs = len != wlen || memcmp(buf, want, len);
	free(buf);
	blamer_prom_cache_free(c);
	return differs;
}

int fuzz_exports_are_clean(const struct blamer_snapshot *s)
{
	int ret = 0;
	int fmt;

	/* JSON, the per-process exposition, the service's (aggregate) one */
	for (fmt = 0; fmt < 3; fmt++) {
		char *buf = NULL;
		size_t len = 0, cap = 0;
		FILE *f = fmt < 2 ? open_memstream(&buf, &len) : NULL;

		if (fmt < 2 && !f)
			return 0;	/* no memory: nothing to judge */
		if (fmt == 0)
			blamer_snapshot_write_json(s, f, 0, NULL, 0);
		else if (fmt == 1)
			blamer_snapshot_write_prometheus(s, f);
		else if (blamer_fleet_prometheus_text(NULL, s, &buf, &len, &cap))
			len = 0;
		if (fmt == 2 && buf) {	/* a string, as open_memstream() gives */
			char *z = realloc(buf, len + 1);

			if (!z) {
				free(buf);
				return 0;
			}
			buf = z;
			buf[len] = '\0';
		}
		if ((fmt == 2 || fclose(f) == 0) && !fuzz_output_is_clean((const unsigned char *)buf, len)) {
			fprintf(stderr, "fuzz: the %s output is not clean UTF-8 text\n",
				fmt == 0 ? "JSON" : "Prometheus");
			ret = -1;
		} else if (fmt == 2 && buf && !fuzz_series_are_unique(buf)) {
			fprintf(stderr, "fuzz: the service's exposition names a series twice\n");
			ret = -1;
		} else if (fmt == 1 && buf && fuzz_cached_differs(s, buf, len)) {
			fprintf(stderr, "fuzz: a long-lived exporter's cache wrote another text\n");
			ret = -1;
		} else if (fmt == 1 && buf && !fuzz_series_are_unique(buf)) {	/* cuts buf */
			fprintf(stderr, "fuzz: the Prometheus output names a series twice\n");
			ret = -1;
		}
		free(buf);
	}
	return ret;
}

/* The slab file of made-up dead process @i in @dir (pid and start as
 * the corpus's heaps of several processes claim them: mkcorpus.c). */
static void heap_path(char *path, size_t len, const char *dir, size_t i)
{
	snprintf(path, len, "%s/%d-%d.0.slab", dir, 3999701 + (int)i, 1 + (int)i);
}

/*
 * The input as @n heaps of one slab each, of made-up dead processes, read
 * by the dir backend in one snapshot: what the reader shares from heap to
 * heap (a definition decoded once, a label value equal to the one in the
 * same place of the heap before, the series that heap's metric went to)
 * is only reached with more than one heap.
 */
static int fuzz_heaps(const uint8_t *data, size_t size, size_t n)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	char dir[] = "/dev/shm/blamer-fuzz-XXXXXX", path[sizeof(dir) + 64], e[256];
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	size_t chunk = size / n, i, off;
	int ret = 0;

	/* a directory of the input's own (the fuzzer may end at any
	 * input: nothing is left for it to remove), on tmpfs as the dir
	 * backend's heaps are (a disk's writeback stalled inputs for
	 * seconds), else in /tmp */
	if (!mkdtemp(dir)) {
		memcpy(dir, "/tmp/blamer-fuzz-XXXXXX", sizeof("/tmp/blamer-fuzz-XXXXXX"));
		if (!mkdtemp(dir))
			return 0;	/* nowhere to write: nothing to judge */
	}
	for (i = 0, off = 0; i < n; i++) {
		size_t len = i == n - 1 ? size - off : chunk;
		int fd;

		heap_path(path, sizeof(path), dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			goto out;
		if (write(fd, data + off, len) != (ssize_t)len) {
			close(fd);
			goto out;
		}
		close(fd);
		off += len;
	}
	o.dir = dir;
	r = blamer_reader_open(&o, e, sizeof(e));
	if (!r)
		goto out;
	if (blamer_reader_snapshot(r, &s, e, sizeof(e)) == 0) {
		ret = fuzz_exports_are_clean(s);
		blamer_snapshot_free(s);
	}
	blamer_reader_close(r);
out:
	for (i = 0; i < n; i++) {
		heap_path(path, sizeof(path), dir, i);
		unlink(path);
	}
	rmdir(dir);
	return ret;
}

int fuzz_one(const uint8_t *data, size_t size)
{
	struct blamer_mem_slab slabs[4];
	struct blamer_snapshot *s;
	uint8_t *copy[4] = { 0 };
	size_t n, chunk, i, off;
	int ret = 0;

	if (size < 1)
		return 0;
	n = (size_t)(data[0] % 4) + 1;
	if (data[0] & 4)	/* n heaps, not n slabs of one */
		return fuzz_heaps(data + 1, size - 1, n);
	data++;
	size--;
	chunk = size / n;
	for (i = 0, off = 0; i < n; i++) {
		size_t len = i == n - 1 ? size - off : chunk;

		/* private copies: exact-size allocations so ASan sees overreads */
		copy[i] = malloc(len ? len : 1);
		if (!copy[i])
			goto out;
		memcpy(copy[i], data + off, len);
		slabs[i].data = copy[i];
		slabs[i].size = len;
		off += len;
	}
	if (blamer_snapshot_from_memory(slabs, n, &s) == 0) {
		ret = fuzz_exports_are_clean(s);
		blamer_snapshot_free(s);
	}
out:
	for (i = 0; i < n; i++)
		free(copy[i]);
	return ret;
}
