/* SPDX-License-Identifier: MIT */
/*
 * The exporters' keyed hash (prom_cache.c, prom_guard.c, prom_metric.c,
 * fleet.c): what
 * they hash comes from heaps, which choose their label values and names,
 * so every table is keyed with a secret seed of its own. Private to
 * lib/export.
 */
#ifndef BLAMER_EXPORT_HASH_H
#define BLAMER_EXPORT_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

/*
 * @x into @h: the word xored in, then MurmurHash3's 64-bit finalizer, in
 * which every bit of the input moves every bit of the output (the two
 * right shifts by 33 bring the high bits down before each multiply).
 * The mix this replaced (add, one multiply, h ^ h >> 29) left the low k
 * bits of its output a function of the low 29 + k bits of its input only:
 * keys differing in their top bits alone (node ids i << 50, label values
 * differing in their last bytes) fell into one slot of a table of up to
 * 2^21 slots whatever the seed, and its linear probing went quadratic
 * (a dead heap of 16,000 such paths folded in 0.93 s, not 0.08 s).
 */
static inline uint64_t ex_mix(uint64_t h, uint64_t x)
{
	h ^= x;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
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

/*
 * A table's secret seed: the kernel's random bytes; without entropy yet
 * (early boot), the clock and @salt's address, still not one a heap can
 * know in advance.
 */
static inline uint64_t ex_seed(const void *salt)
{
	struct timespec t;
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed))
		return seed;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return ex_mix((uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 32, (uint64_t)(uintptr_t)salt);
}

#endif /* BLAMER_EXPORT_HASH_H */
