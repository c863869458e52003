/* SPDX-License-Identifier: MIT */
/*
 * The exporters' keyed hash (prom_cache.c, prom_guard.c, fleet.c): what
 * they hash comes from heaps, which choose their label values and names,
 * so every table is keyed with a secret seed of its own. Private to
 * lib/export.
 */
#ifndef BLAMER_EXPORT_HASH_H
#define BLAMER_EXPORT_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t ex_mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

/* @n bytes at @p, their length first (so "a" then "bc" is not "ab", "c"). */
static inline uint64_t ex_mix_bytes(uint64_t h, const void *p, size_t n)
{
	const char *c = p;
	uint64_t w;
	size_t i;

	h = ex_mix(h, n);
	for (i = 0; i < n; i += 8) {
		w = 0;
		memcpy(&w, c + i, n - i < 8 ? n - i : 8);
		h = ex_mix(h, w);
	}
	return h;
}

static inline uint64_t ex_mix_str(uint64_t h, const char *s)
{
	return ex_mix_bytes(h, s, strlen(s));
}

#endif /* BLAMER_EXPORT_HASH_H */
