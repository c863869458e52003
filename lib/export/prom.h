/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus exporter's parts (prom.c is the model): prom_text.c
 * makes the text (a buffer, numbers, the one escaper), prom_path.c the
 * path labels. Private to lib/export.
 */
#ifndef BLAMER_PROM_H
#define BLAMER_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "blamer.h"

struct prom_label {
	const char *name;
	const char *value;
};

/*
 * The exposition is made in memory: a scrape of 1,000 processes is some
 * 70,000 lines, and per-character stdio calls cost more than the
 * snapshot. Into a FILE it goes out in PROM_OUT_CHUNK pieces; for an HTTP
 * answer it is kept whole.
 */
struct prom_out {
	char *p;
	size_t len, cap;
	bool oom;
	FILE *f;	/* if set, written out in PROM_OUT_CHUNK pieces: memory stays flat */
};

#define PROM_OUT_CHUNK	(256u << 10)

/* ---- prom_text.c ---- */
bool prom_room(struct prom_out *o, size_t n);	/* false: out of memory or a write failed */
void prom_put(struct prom_out *o, const void *s, size_t n);
void prom_puts(struct prom_out *o, const char *s);
void prom_putc(struct prom_out *o, char c);
void prom_u64(struct prom_out *o, uint64_t v);
void prom_ns(struct prom_out *o, uint64_t v);	/* nanoseconds as "S.NNNNNNNNN" */
size_t prom_utf8_seq(const unsigned char *s, uint32_t *cp);
bool prom_is_control(uint32_t cp);
/* The one escaper of label values (@help: of HELP text). */
void prom_escape(struct prom_out *o, const char *str, bool help);
void prom_family(struct prom_out *o, const char *name, const char *type, const char *help);
void prom_labels(struct prom_out *o, const struct prom_label *l, size_t n);
void prom_sample_u64(struct prom_out *o, const char *name, const struct prom_label *l, size_t n,
		     uint64_t v);

/* ---- prom_path.c ---- */
/* Enough for one element: 32 bytes each percent-encoded, "@0x" and an id. */
#define ELEM_MAX (3 * 32 + 24)

/*
 * The snapshot's nodes as path elements, each made once: whether
 * another node has the same name, and its element when made.
 */
struct prom_names {
	const struct blamer_snapshot *s;
	bool *shared;		/* by index of s->nodes */
	uint32_t *off;		/* by index: where its element is in pool, +1; 0: not yet */
	uint32_t *len;		/* by index: its length there */
	struct prom_out pool;	/* the elements made, escaped */
};

bool prom_names_init(struct prom_names *nm, const struct blamer_snapshot *s);
void prom_names_free(struct prom_names *nm);
/* path="/e/e/..." of @p, unambiguous for any node names. */
void prom_path_label(struct prom_out *o, struct prom_names *nm, const struct blamer_snap_path *p);

#endif /* BLAMER_PROM_H */
