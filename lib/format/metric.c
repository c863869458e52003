// SPDX-License-Identifier: MIT
/*
 * Metrics as both sides of the format see them (metric.h): valid names,
 * histogram buckets, exact sums. No libm: a bucket's bound is a table
 * constant times a power of two, the same bits in every writer and
 * reader whatever maths library either links.
 */
#include <string.h>

#include "heap_format.h"
#include "metric.h"

bool bl_metric_name_ok(const char *s, size_t max, bool colon)
{
	size_t i;

	for (i = 0; i < max && s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		      (colon && c == ':') || (i && c >= '0' && c <= '9')))
			return false;
	}
	return i > 0 && i <= max && !s[i];
}

bool bl_label_reserved(const char *name, bool path)
{
	static const char *const own[] = { "le", "quantile", "pid", "uid", "start_time_ns",
					   "heap", "identity" };
	size_t i;

	if (name[0] == '_' && name[1] == '_')
		return true;
	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(name, own[i]))
			return true;
	return path && !strcmp(name, "path");
}

/*
 * 2^(r/256) for r = 0..256, correctly rounded: the bounds of every
 * exponential schema up to 8 within one power of two (schema s takes
 * every 2^(8-s)-th).
 */
static const double pow2_frac[257] = {
	0x1.0000000000000p+0, 0x1.00b1afa5abcbfp+0, 0x1.0163da9fb3335p+0, 0x1.02168143b0281p+0,
	0x1.02c9a3e778061p+0, 0x1.037d42e11bbccp+0, 0x1.04315e86e7f85p+0, 0x1.04e5f72f654b1p+0,
	0x1.059b0d3158574p+0, 0x1.0650a0e3c1f89p+0, 0x1.0706b29ddf6dep+0, 0x1.07bd42b72a836p+0,
	0x1.0874518759bc8p+0, 0x1.092bdf66607e0p+0, 0x1.09e3ecac6f383p+0, 0x1.0a9c79b1f3919p+0,
	0x1.0b5586cf9890fp+0, 0x1.0c0f145e46c85p+0, 0x1.0cc922b7247f7p+0, 0x1.0d83b23395decp+0,
	0x1.0e3ec32d3d1a2p+0, 0x1.0efa55fdfa9c5p+0, 0x1.0fb66affed31bp+0, 0x1.1073028d7233ep+0,
	0x1.11301d0125b51p+0, 0x1.11edbab5e2ab6p+0, 0x1.12abdc06c31ccp+0, 0x1.136a814f204abp+0,
	0x1.1429aaea92de0p+0, 0x1.14e95934f312ep+0, 0x1.15a98c8a58e51p+0, 0x1.166a45471c3c2p+0,
	0x1.172b83c7d517bp+0, 0x1.17ed48695bbc0p+0, 0x1.18af9388c8deap+0, 0x1.1972658375d2fp+0,
	0x1.1a35beb6fcb75p+0, 0x1.1af99f8138a1cp+0, 0x1.1bbe084045cd4p+0, 0x1.1c82f95281c6bp+0,
	0x1.1d4873168b9aap+0, 0x1.1e0e75eb44027p+0, 0x1.1ed5022fcd91dp+0, 0x1.1f9c18438ce4dp+0,
	0x1.2063b88628cd6p+0, 0x1.212be3578a819p+0, 0x1.21f49917ddc96p+0, 0x1.22bdda27912d1p+0,
	0x1.2387a6e756238p+0, 0x1.2451ffb82140ap+0, 0x1.251ce4fb2a63fp+0, 0x1.25e85711ece75p+0,
	0x1.26b4565e27cddp+0, 0x1.2780e341ddf29p+0, 0x1.284dfe1f56381p+0, 0x1.291ba7591bb70p+0,
	0x1.29e9df51fdee1p+0, 0x1.2ab8a66d10f13p+0, 0x1.2b87fd0dad990p+0, 0x1.2c57e39771b2fp+0,
	0x1.2d285a6e4030bp+0, 0x1.2df961f641589p+0, 0x1.2ecafa93e2f56p+0, 0x1.2f9d24abd886bp+0,
	0x1.306fe0a31b715p+0, 0x1.31432edeeb2fdp+0, 0x1.32170fc4cd831p+0, 0x1.32eb83ba8ea32p+0,
	0x1.33c08b26416ffp+0, 0x1.3496266e3fa2dp+0, 0x1.356c55f929ff1p+0, 0x1.36431a2de883bp+0,
	0x1.371a7373aa9cbp+0, 0x1.37f26231e754ap+0, 0x1.38cae6d05d866p+0, 0x1.39a401b7140efp+0,
	0x1.3a7db34e59ff7p+0, 0x1.3b57fbfec6cf4p+0, 0x1.3c32dc313a8e5p+0, 0x1.3d0e544ede173p+0,
	0x1.3dea64c123422p+0, 0x1.3ec70df1c5175p+0, 0x1.3fa4504ac801cp+0, 0x1.40822c367a024p+0,
	0x1.4160a21f72e2ap+0, 0x1.423fb2709468ap+0, 0x1.431f5d950a897p+0, 0x1.43ffa3f84b9d4p+0,
	0x1.44e086061892dp+0, 0x1.45c2042a7d232p+0, 0x1.46a41ed1d0057p+0, 0x1.4786d668b3237p+0,
	0x1.486a2b5c13cd0p+0, 0x1.494e1e192aed2p+0, 0x1.4a32af0d7d3dep+0, 0x1.4b17dea6db7d7p+0,
	0x1.4bfdad5362a27p+0, 0x1.4ce41b817c114p+0, 0x1.4dcb299fddd0dp+0, 0x1.4eb2d81d8abffp+0,
	0x1.4f9b2769d2ca7p+0, 0x1.508417f4531eep+0, 0x1.516daa2cf6642p+0, 0x1.5257de83f4eefp+0,
	0x1.5342b569d4f82p+0, 0x1.542e2f4f6ad27p+0, 0x1.551a4ca5d920fp+0, 0x1.56070dde910d2p+0,
	0x1.56f4736b527dap+0, 0x1.57e27dbe2c4cfp+0, 0x1.58d12d497c7fdp+0, 0x1.59c0827ff07ccp+0,
	0x1.5ab07dd485429p+0, 0x1.5ba11fba87a03p+0, 0x1.5c9268a5946b7p+0, 0x1.5d84590998b93p+0,
	0x1.5e76f15ad2148p+0, 0x1.5f6a320dceb71p+0, 0x1.605e1b976dc09p+0, 0x1.6152ae6cdf6f4p+0,
	0x1.6247eb03a5585p+0, 0x1.633dd1d1929fdp+0, 0x1.6434634ccc320p+0, 0x1.652b9febc8fb7p+0,
	0x1.6623882552225p+0, 0x1.671c1c70833f6p+0, 0x1.68155d44ca973p+0, 0x1.690f4b19e9538p+0,
	0x1.6a09e667f3bcdp+0, 0x1.6b052fa75173ep+0, 0x1.6c012750bdabfp+0, 0x1.6cfdcddd47645p+0,
	0x1.6dfb23c651a2fp+0, 0x1.6ef9298593ae5p+0, 0x1.6ff7df9519484p+0, 0x1.70f7466f42e87p+0,
	0x1.71f75e8ec5f74p+0, 0x1.72f8286ead08ap+0, 0x1.73f9a48a58174p+0, 0x1.74fbd35d7cbfdp+0,
	0x1.75feb564267c9p+0, 0x1.77024b1ab6e09p+0, 0x1.780694fde5d3fp+0, 0x1.790b938ac1cf6p+0,
	0x1.7a11473eb0187p+0, 0x1.7b17b0976cfdbp+0, 0x1.7c1ed0130c132p+0, 0x1.7d26a62ff86f0p+0,
	0x1.7e2f336cf4e62p+0, 0x1.7f3878491c491p+0, 0x1.80427543e1a12p+0, 0x1.814d2add106d9p+0,
	0x1.82589994cce13p+0, 0x1.8364c1eb941f7p+0, 0x1.8471a4623c7adp+0, 0x1.857f4179f5b21p+0,
	0x1.868d99b4492edp+0, 0x1.879cad931a436p+0, 0x1.88ac7d98a6699p+0, 0x1.89bd0a478580fp+0,
	0x1.8ace5422aa0dbp+0, 0x1.8be05bad61778p+0, 0x1.8cf3216b5448cp+0, 0x1.8e06a5e0866d9p+0,
	0x1.8f1ae99157736p+0, 0x1.902fed0282c8ap+0, 0x1.9145b0b91ffc6p+0, 0x1.925c353aa2fe2p+0,
	0x1.93737b0cdc5e5p+0, 0x1.948b82b5f98e5p+0, 0x1.95a44cbc8520fp+0, 0x1.96bdd9a7670b3p+0,
	0x1.97d829fde4e50p+0, 0x1.98f33e47a22a2p+0, 0x1.9a0f170ca07bap+0, 0x1.9b2bb4d53fe0dp+0,
	0x1.9c49182a3f090p+0, 0x1.9d674194bb8d5p+0, 0x1.9e86319e32323p+0, 0x1.9fa5e8d07f29ep+0,
	0x1.a0c667b5de565p+0, 0x1.a1e7aed8eb8bbp+0, 0x1.a309bec4a2d33p+0, 0x1.a42c980460ad8p+0,
	0x1.a5503b23e255dp+0, 0x1.a674a8af46052p+0, 0x1.a799e1330b358p+0, 0x1.a8bfe53c12e59p+0,
	0x1.a9e6b5579fdbfp+0, 0x1.ab0e521356ebap+0, 0x1.ac36bbfd3f37ap+0, 0x1.ad5ff3a3c2774p+0,
	0x1.ae89f995ad3adp+0, 0x1.afb4ce622f2ffp+0, 0x1.b0e07298db666p+0, 0x1.b20ce6c9a8952p+0,
	0x1.b33a2b84f15fbp+0, 0x1.b468415b749b1p+0, 0x1.b59728de5593ap+0, 0x1.b6c6e29f1c52ap+0,
	0x1.b7f76f2fb5e47p+0, 0x1.b928cf22749e4p+0, 0x1.ba5b030a1064ap+0, 0x1.bb8e0b79a6f1fp+0,
	0x1.bcc1e904bc1d2p+0, 0x1.bdf69c3f3a207p+0, 0x1.bf2c25bd71e09p+0, 0x1.c06286141b33dp+0,
	0x1.c199bdd85529cp+0, 0x1.c2d1cd9fa652cp+0, 0x1.c40ab5fffd07ap+0, 0x1.c544778fafb22p+0,
	0x1.c67f12e57d14bp+0, 0x1.c7ba88988c933p+0, 0x1.c8f6d9406e7b5p+0, 0x1.ca3405751c4dbp+0,
	0x1.cb720dcef9069p+0, 0x1.ccb0f2e6d1675p+0, 0x1.cdf0b555dc3fap+0, 0x1.cf3155b5bab74p+0,
	0x1.d072d4a07897cp+0, 0x1.d1b532b08c968p+0, 0x1.d2f87080d89f2p+0, 0x1.d43c8eacaa1d6p+0,
	0x1.d5818dcfba487p+0, 0x1.d6c76e862e6d3p+0, 0x1.d80e316c98398p+0, 0x1.d955d71ff6075p+0,
	0x1.da9e603db3285p+0, 0x1.dbe7cd63a8315p+0, 0x1.dd321f301b460p+0, 0x1.de7d5641c0658p+0,
	0x1.dfc97337b9b5fp+0, 0x1.e11676b197d17p+0, 0x1.e264614f5a129p+0, 0x1.e3b333b16ee12p+0,
	0x1.e502ee78b3ff6p+0, 0x1.e653924676d76p+0, 0x1.e7a51fbc74c83p+0, 0x1.e8f7977cdb740p+0,
	0x1.ea4afa2a490dap+0, 0x1.eb9f4867cca6ep+0, 0x1.ecf482d8e67f1p+0, 0x1.ee4aaa2188510p+0,
	0x1.efa1bee615a27p+0, 0x1.f0f9c1cb6412ap+0, 0x1.f252b376bba97p+0, 0x1.f3ac948dd7274p+0,
	0x1.f50765b6e4540p+0, 0x1.f6632798844f8p+0, 0x1.f7bfdad9cbe14p+0, 0x1.f91d802243c89p+0,
	0x1.fa7c1819e90d8p+0, 0x1.fbdba3692d514p+0, 0x1.fd3c22b8f71f1p+0, 0x1.fe9d96b2a23d9p+0,
	0x1.0000000000000p+1,
};

static bool is_finite(double x)
{
	return x - x == 0;	/* inf - inf and NaN - NaN are NaN */
}

/* 2^e for -1022 <= e <= 1023: a normal double, made from its bits. */
static double pow2i(int32_t e)
{
	uint64_t bits = (uint64_t)(e + 1023) << 52;
	double d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

static int32_t floor_div(int32_t a, int32_t b)
{
	int32_t q = a / b;

	return (a % b && (a < 0) != (b < 0)) ? q - 1 : q;
}

uint32_t bl_hist_exp_buckets(int32_t schema, int32_t min_exp, int32_t max_exp)
{
	int64_t k;

	if (schema < -4 || schema > 8 || min_exp <= -1022 || max_exp >= 1023 ||
	    min_exp >= max_exp)
		return 0;
	if (schema >= 0) {
		k = (int64_t)(max_exp - min_exp) << schema;
	} else {
		int32_t w = 1 << -schema;

		/* a bucket spans w powers of two, aligned as Prometheus' */
		if (min_exp % w || max_exp % w)
			return 0;
		k = (max_exp - min_exp) / w;
	}
	return k + 2 <= BLAMER_METRIC_BUCKETS_MAX ? (uint32_t)k + 2 : 0;
}

bool bl_hist_ok(const struct bl_hist *h)
{
	uint32_t i;

	if (h->layout == BLAMER_HIST_EXPONENTIAL)
		return h->nbuckets == bl_hist_exp_buckets(h->schema, h->min_exp, h->max_exp);
	if (h->layout != BLAMER_HIST_FIXED || h->nbuckets < 2 ||
	    h->nbuckets > BLAMER_METRIC_BOUNDS_MAX + 1)
		return false;
	for (i = 0; i + 1 < h->nbuckets; i++) {
		double b = h->bounds[i];

		/* finite, strictly ascending (NaN fails both) */
		if (!is_finite(b) || (i && !(b > h->bounds[i - 1])))
			return false;
	}
	return true;
}

/* Exponential: the bound of boundary index k (bucket k - k_lo ends there). */
static double exp_bound(int32_t schema, int32_t k)
{
	if (schema >= 0) {
		int32_t n = 1 << schema, q = floor_div(k, n);

		return pow2_frac[(k - q * n) << (8 - schema)] * pow2i(q);
	}
	return pow2i(k * (1 << -schema));
}

/* The boundary index of 2^min_exp: bucket 0 ends there. */
static int32_t exp_k_lo(const struct bl_hist *h)
{
	return h->schema >= 0 ? h->min_exp * (1 << h->schema) : h->min_exp / (1 << -h->schema);
}

double bl_hist_upper(const struct bl_hist *h, uint32_t i)
{
	if (i + 1 >= h->nbuckets)
		return __builtin_inf();
	if (h->layout == BLAMER_HIST_FIXED)
		return h->bounds[i];
	return exp_bound(h->schema, exp_k_lo(h) + (int32_t)i);
}

uint32_t bl_hist_index(const struct bl_hist *h, double v)
{
	uint32_t lo = 0, hi = h->nbuckets - 1, last = h->nbuckets - 1;
	uint64_t bits;
	int32_t e, k;
	double g;

	if (h->layout == BLAMER_HIST_FIXED) {
		/* the first bound >= v; none: +Inf */
		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (v <= h->bounds[mid])
				hi = mid;
			else
				lo = mid + 1;
		}
		return lo;
	}
	if (!(v > pow2i(h->min_exp)))
		return 0;
	if (v > pow2i(h->max_exp))
		return last;
	/* v = g * 2^e, g in [1, 2): normal (v > 2^min_exp > 2^-1022) */
	memcpy(&bits, &v, sizeof(bits));
	e = (int32_t)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
	memcpy(&g, &bits, sizeof(g));
	if (h->schema >= 0) {
		int32_t n = 1 << h->schema, step = 1 << (8 - h->schema), a = 0, b = n;

		/* the first j in [0, n] with g <= 2^(j/n) */
		while (a < b) {
			int32_t mid = (a + b) / 2;

			if (g <= pow2_frac[mid * step])
				b = mid;
			else
				a = mid + 1;
		}
		k = e * n + a;
	} else {
		int32_t w = 1 << -h->schema;

		k = g == 1.0 ? -floor_div(-e, w) : floor_div(e, w) + 1;
	}
	k -= exp_k_lo(h);
	return k < 1 ? 1 : (uint32_t)k > last - 1 ? last - 1 : (uint32_t)k;
}

/* POS layouts' last bound is below 2^1023 (as a key: 2^1023's bits,
 * positive), so +Inf and NaN lie 2 cells past it (metric.h). */
#define POS_LAST_MAX	((1ull << 63) | 0x7fe0000000000000ull)

/* Fixed bounds @key (@nb of them) in cells of 2^@shift keys with @more
 * further compares can be looked up as POS (metric.h). */
static bool pos_layout(const uint64_t *key, uint32_t nb, uint32_t shift, uint32_t more)
{
	return key[0] >> 63 && key[nb - 1] < POS_LAST_MAX && !more && shift <= BL_HIST_POS_SHIFT;
}

/* Fixed bounds, keys in cells of 2^@shift from the first: the most
 * bounds in one cell, less one. */
static uint32_t fixed_more(const uint64_t *key, uint32_t nb, uint32_t shift)
{
	uint32_t i, run = 0, most = 0;

	for (i = 1; i < nb; i++) {
		run = ((key[i] - key[0]) >> shift) == ((key[i - 1] - key[0]) >> shift) ? run + 1 : 0;
		most = run > most ? run : most;
	}
	return most;
}

/* Fixed bounds: their keys into @key (then UINT64_MAX); the shift of
 * the cells and the compares past a cell's into *shift, *more. */
static void fixed_plan(const struct bl_hist *h, uint64_t *key, uint32_t *shift, uint32_t *more)
{
	uint32_t nb = h->nbuckets - 1, i, s, m, top;
	uint64_t span;

	for (i = 0; i < nb; i++) {
		double b = h->bounds[i] == 0 ? 0.0 : h->bounds[i];	/* -0.0: +0.0 */
		uint64_t bits;

		memcpy(&bits, &b, sizeof(bits));
		key[i] = bl_hist_key(bits);
	}
	key[nb] = UINT64_MAX;
	span = key[nb - 1] - key[0];
	/* the finest cells that fit, then as coarse as keeps as few bounds
	 * per cell: fewer cells, fewer cache lines an observation may touch */
	for (s = 0; (span >> s) + 2 > BL_HIST_CELLS; s++)
		;
	m = fixed_more(key, nb, s);
	/* a layout POS can look up (bounds >= +0, none closer than a cell)
	 * keeps it: its cells stop growing at 2^BL_HIST_POS_SHIFT keys */
	top = pos_layout(key, nb, s, m) ? BL_HIST_POS_SHIFT : 63;
	while (s < top && fixed_more(key, nb, s + 1) == m)
		s++;
	*shift = s;
	*more = m;
}

uint32_t bl_hist_fast_cells(const struct bl_hist *h)
{
	uint64_t key[BLAMER_METRIC_BOUNDS_MAX + 1];
	uint32_t s, m;

	if (h->layout == BLAMER_HIST_EXPONENTIAL)
		return h->schema >= 0 ? BL_HIST_EXP_CELLS : 0;
	fixed_plan(h, key, &s, &m);
	return (uint32_t)((key[h->nbuckets - 2] - key[0]) >> s) + 2;
}

static void fast_init_fixed(struct bl_hist_fast *f, struct bl_hist_table *t,
			    const struct bl_hist *h)
{
	uint32_t nb = h->nbuckets - 1, i, c, s, more;

	fixed_plan(h, t->key, &s, &more);
	f->mode = more ? BL_HIST_FAST_FIXED_MORE : BL_HIST_FAST_FIXED;
	if (pos_layout(t->key, nb, s, more))
		f->mode = BL_HIST_FAST_POS + s;
	f->cell = t->cell;
	f->kmin = t->key[0];
	f->shift = s;
	f->more = more;
	f->lastcell = ((t->key[nb - 1] - f->kmin) >> s) + 1;
	f->key = t->key;
	for (c = 0, i = 0; c <= f->lastcell; c++) {
		uint64_t off = UINT64_MAX;

		/* i: the bounds in cells before c, the first candidate */
		while (i < nb && ((t->key[i] - f->kmin) >> s) < c)
			i++;
		if (i < nb && ((t->key[i] - f->kmin) >> s) == c)
			off = t->key[i] - f->kmin;
		t->cell[c].off = off;
		t->cell[c].j = i;
	}
	if (bl_hist_fast_pos(f))
		f->kmin ^= 1ull << 63;	/* the first bound's bits */
}

/* Candidates 2^62 below bucket 0: with the exponent's part (at most
 * 2^14 either way for a mode below BL_HIST_FAST_EXP) still below it. */
const struct bl_hist_cell bl_hist_no_cells[BL_HIST_EXP_CELLS] = {
	[0 ... BL_HIST_EXP_CELLS - 1] = { .off = UINT64_MAX, .j = -(INT64_C(1) << 62) }
};

void bl_hist_fast_none(struct bl_hist_fast *f)
{
	memset(f, 0, sizeof(*f));
	f->mode = BL_HIST_FAST_NONE;
	f->ecell = bl_hist_no_cells;
}

void bl_hist_fast_init(struct bl_hist_fast *f, struct bl_hist_table *t, const struct bl_hist *h)
{
	uint32_t c, j, n;
	int64_t k_lo;

	bl_hist_fast_none(f);
	f->last = h->nbuckets - 1;
	if (h->layout != BLAMER_HIST_EXPONENTIAL) {
		fast_init_fixed(f, t, h);
		return;
	}
	k_lo = exp_k_lo(h);
	if (h->schema < 0) {
		f->mode = BL_HIST_FAST_EXP_WIDE;
		f->shift = (uint32_t)-h->schema;
		f->n = k_lo;
		return;
	}
	f->mode = BL_HIST_FAST_EXP + (uint32_t)h->schema;
	f->ecell = t->cell;
	n = 1u << h->schema;
	for (c = 0, j = 0; c < BL_HIST_EXP_CELLS; c++) {
		uint64_t off = UINT64_MAX, bits;
		double thr;

		/* the first threshold 2^(j/n) at or past the cell's start */
		while (pow2_frac[j << (8 - h->schema)] < 1.0 + (double)c / BL_HIST_EXP_CELLS)
			j++;
		thr = pow2_frac[j << (8 - h->schema)];
		memcpy(&bits, &thr, sizeof(bits));
		if (j < n && thr < 1.0 + (double)(c + 1) / BL_HIST_EXP_CELLS)
			off = bits << (64 - BL_HIST_EXP_LOW);
		/* bucket = biased exponent * n + this: (e - 1023) * n + j - k_lo */
		t->cell[c].off = off;
		t->cell[c].j = (int64_t)j - 1023 * (int64_t)n - k_lo;
	}
}

/* ---- exact sums (CPython's math.fsum) ---- */

void blamer_exact_sum_add(struct blamer_exact_sum *f, double x)
{
	uint32_t i, j;

	if (!is_finite(x)) {
		f->special = f->has_special ? f->special + x : x;
		f->has_special = true;
		return;
	}
	for (i = j = 0; j < f->n; j++) {
		double y = f->p[j], t, hi, lo;

		if ((x < 0 ? -x : x) < (y < 0 ? -y : y)) {
			t = x;
			x = y;
			y = t;
		}
		hi = x + y;
		lo = y - (hi - x);
		if (lo != 0.0)
			f->p[i++] = lo;
		x = hi;
	}
	if (!is_finite(x)) {	/* the finite sum overflowed */
		f->special = f->has_special ? f->special + x : x;
		f->has_special = true;
		f->n = 0;
		return;
	}
	if (i < BL_FSUM_PARTIALS) {
		f->p[i++] = x;
	} else {
		/* not reached: partials do not overlap; stay bounded anyway */
		f->p[i - 1] += x;
	}
	f->n = i;
}

double blamer_exact_sum_value(const struct blamer_exact_sum *f)
{
	double hi = 0.0, lo = 0.0, x, y, yr;
	uint32_t n = f->n;

	if (f->has_special)
		return f->special;
	if (!n)
		return 0.0;
	hi = f->p[--n];
	/* from the top, until the sum becomes inexact */
	while (n > 0) {
		x = hi;
		y = f->p[--n];
		hi = x + y;
		yr = hi - x;
		lo = y - yr;
		if (lo != 0.0)
			break;
	}
	/* half-even rounding across partials: the rest may tip a tie */
	if (n > 0 && ((lo < 0.0 && f->p[n - 1] < 0.0) || (lo > 0.0 && f->p[n - 1] > 0.0))) {
		y = lo * 2.0;
		x = hi + y;
		yr = x - hi;
		if (y == yr)
			hi = x;
	}
	return hi;
}
