// SPDX-License-Identifier: MIT
/* Hand-made heaps (testsupport.h says how to use them). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testsupport.h"

void *fx_at(struct fx_heap *h, blamer_ref ref)
{
	return h->slab[blamer_ref_slab(ref)] + blamer_ref_offset(ref);
}

blamer_ref fx_nth_record(struct fx_heap *h, int n)
{
	blamer_ref r = ((struct blamer_block *)fx_at(h, BLAMER_LIST_HEAD_REF))->next;

	while (n-- > 0)
		r = ((struct blamer_block *)fx_at(h, r))->next;
	return r;
}

struct blamer_heap_header *fx_hh(struct fx_heap *h)
{
	return (struct blamer_heap_header *)(h->slab[0] + BLAMER_HEAP_HEADER_OFFSET);
}

void fx_clock(struct fx_heap *h, uint32_t kind, uint64_t anchor_tsc,
	      uint64_t anchor_ns)
{
	struct blamer_heap_header *hh = fx_hh(h);

	hh->clock = kind;
	hh->clock_anchor_tsc = anchor_tsc;
	hh->clock_anchor_ns = anchor_ns;
}

void fx_init(struct fx_heap *h, unsigned nslabs, size_t slab_size,
	     int64_t pid, int64_t stamp)
{
	struct blamer_heap_header *hh;
	struct blamer_block *head;
	unsigned i;

	memset(h, 0, sizeof(*h));
	h->nslabs = nslabs;
	h->pid = pid;
	h->stamp = stamp;
	for (i = 0; i < nslabs; i++) {
		struct blamer_slab_header *sh;

		h->slab[i] = calloc(1, slab_size);
		h->size[i] = slab_size;
		sh = (struct blamer_slab_header *)h->slab[i];
		sh->magic = BLAMER_HEAP_MAGIC;
		sh->version = BLAMER_HEAP_VERSION;
		sh->header_size = sizeof(*sh);
		sh->slab_index = i;
		sh->slab_size = slab_size;
		sh->heap_id = 0x1234abcd5678ef00ull;
		sh->freeptr = i ? sizeof(*sh) : BLAMER_SLAB0_FIRST_RECORD;
	}
	hh = fx_hh(h);
	hh->state = BLAMER_HEAP_READY;
	hh->slab_count = nslabs;
	hh->max_slabs = BLAMER_MAX_SLABS;
	hh->create_time_ns = 1700000000000000000ull;
	hh->list_head = BLAMER_LIST_HEAD_REF;
	hh->list_tail = BLAMER_LIST_HEAD_REF;
	hh->backend = BLAMER_BACKEND_DIR;
	for (i = 0; i < nslabs; i++)
		hh->slab_ids[i] = i;
	head = fx_at(h, BLAMER_LIST_HEAD_REF);
	head->size = sizeof(*head);
	head->cookie = BLAMER_BLOCK_QUEUE;
	head->next = BLAMER_LIST_HEAD_REF;
	h->tail = BLAMER_LIST_HEAD_REF;
}

void fx_free(struct fx_heap *h)
{
	unsigned i;

	for (i = 0; i < h->nslabs; i++)
		free(h->slab[i]);
	memset(h, 0, sizeof(*h));
}

blamer_ref fx_alloc(struct fx_heap *h, uint32_t type, size_t size, int list)
{
	struct blamer_slab_header *sh = (struct blamer_slab_header *)h->slab[h->cur];
	struct blamer_block *b, *t;
	blamer_ref ref;

	size = (size + 7) & ~(size_t)7;
	if (sh->freeptr + size > h->size[h->cur]) {
		fprintf(stderr, "fixture: slab %u full\n", h->cur);
		abort();
	}
	ref = blamer_make_ref(h->cur, sh->freeptr);
	sh->freeptr += size;
	b = fx_at(h, ref);
	b->size = (uint32_t)size;
	b->cookie = BLAMER_BLOCK_COOKIE;
	b->type = type;
	if (list) {
		b->next = BLAMER_LIST_HEAD_REF;
		t = fx_at(h, h->tail);
		t->next = ref;
		h->tail = ref;
		fx_hh(h)->list_tail = ref;
	}
	/* the owner follows the block header in every per-process record */
	{
		struct blamer_owner *o = (struct blamer_owner *)(b + 1);

		o->data_id = 0x42;
		o->pid = h->pid;
		o->create_stamp = h->stamp;
	}
	return ref;
}

blamer_ref fx_process(struct fx_heap *h, uint32_t phase, const char *cmdline)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_PROCESS, sizeof(struct blamer_process), 1);
	struct blamer_process *p = fx_at(h, ref);
	size_t n = strlen(cmdline) + 1;

	p->phase = phase;
	if (n > BLAMER_CMDLINE_MAX)
		n = BLAMER_CMDLINE_MAX;
	memcpy(p->cmdline, cmdline, n);
	for (size_t i = 0; i < n; i++)
		if (p->cmdline[i] == ' ')
			p->cmdline[i] = '\0';	/* argv joined by NUL */
	p->cmdline_len = (uint32_t)n;
	fx_hh(h)->process = ref;
	return ref;
}

blamer_ref fx_thread(struct fx_heap *h, int64_t tid, const char *name,
		     uint32_t slots)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_THREAD, sizeof(struct blamer_thread) +
				  slots * sizeof(struct blamer_activity), 1);
	struct blamer_thread *t = fx_at(h, ref);

	t->tid = tid;
	t->start_time_ns = 1000;
	t->stack_slots = slots;
	snprintf(t->name, sizeof(t->name), "%s", name);
	return ref;
}

void fx_push(struct fx_heap *h, blamer_ref thread, uint32_t kind,
	     const char *label, uint64_t timestamp, blamer_ref ud)
{
	struct blamer_thread *t = fx_at(h, thread);

	if (t->depth < t->stack_slots) {
		struct blamer_activity *a = &t->stack[t->depth];

		a->kind = kind;
		a->timestamp = timestamp;
		a->calling_address = 0x7f0000000100ull + t->depth * 0x10u; /* in libfoo.so */
		a->user_data = ud;
		strncpy(a->label, label, sizeof(a->label));
	} else {
		t->overflows++;
	}
	t->depth++;
}

blamer_ref fx_userdata(struct fx_heap *h, uint32_t scope, uint32_t capacity,
		       int list)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_USERDATA,
				  sizeof(struct blamer_userdata) + capacity, list);
	struct blamer_userdata *u = fx_at(h, ref);

	u->scope = scope;
	u->capacity = capacity;
	return ref;
}

void fx_field(struct fx_heap *h, blamer_ref ud, uint8_t type, const char *name,
	      const void *val, uint16_t len)
{
	struct blamer_userdata *u = fx_at(h, ud);
	size_t nl = strlen(name), np = (nl + 7) & ~(size_t)7, area = (len + 7u) & ~7u;
	struct blamer_field *f;

	if (u->used + 8 + np + area > u->capacity) {
		fprintf(stderr, "fixture: user data full\n");
		abort();
	}
	f = (struct blamer_field *)(u->fields + u->used);
	f->name_size = (uint8_t)nl;
	f->record_size = (uint16_t)(8 + np + area);
	f->value_size = len;
	memcpy((char *)(f + 1), name, nl);
	memcpy((char *)(f + 1) + np, val, len);
	f->type = type;
	u->used += f->record_size;
}

void fx_field_u64(struct fx_heap *h, blamer_ref ud, const char *n, uint64_t v)
{
	fx_field(h, ud, BLAMER_FIELD_UNSIGNED, n, &v, 8);
}

void fx_field_str(struct fx_heap *h, blamer_ref ud, const char *n, const char *v)
{
	fx_field(h, ud, BLAMER_FIELD_STRING, n, v, (uint16_t)strlen(v));
}

blamer_ref fx_log(struct fx_heap *h, uint32_t slots)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_LOG, sizeof(struct blamer_log) +
				  slots * sizeof(struct blamer_log_slot), 1);
	struct blamer_log *l = fx_at(h, ref);

	l->slot_count = slots;
	return ref;
}

void fx_log_msg(struct fx_heap *h, blamer_ref log, const char *text)
{
	struct blamer_log *l = fx_at(h, log);
	uint64_t n = l->head++;
	struct blamer_log_slot *s = &l->slots[n % l->slot_count];

	s->seq += 2;
	s->number = n;
	s->time_ns = 1700000000000000000ull + n;
	s->len = (uint32_t)strlen(text);
	if (s->len > BLAMER_LOG_MSG_MAX)
		s->len = BLAMER_LOG_MSG_MAX;
	memcpy(s->text, text, s->len);
}

void fx_module(struct fx_heap *h, const char *path, uint64_t base)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_MODULE, sizeof(struct blamer_module), 1);
	struct blamer_module *m = fx_at(h, ref);

	m->loaded = 1;
	m->base = base;
	m->size = 0x1000;
	m->path_len = (uint32_t)strlen(path);
	memcpy(m->path, path, m->path_len);
	m->build_id_len = 4;
	memcpy(m->build_id, "\xde\xad\xbe\xef", 4);
	m->seq = 2;
}

blamer_ref fx_drops(struct fx_heap *h, const char *role, const char *instance,
		    const uint64_t *counts, unsigned n)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_DROPS, sizeof(struct blamer_drops), 1);
	struct blamer_drops *d = fx_at(h, ref);
	struct blamer_process *p = fx_at(h, fx_hh(h)->process);

	memcpy(d->count, counts, n * sizeof(*counts));
	p->drops = ref;
	snprintf(p->role, sizeof(p->role), "%s", role);
	snprintf(p->instance, sizeof(p->instance), "%s", instance);
	p->role_state = BLAMER_ROLE_SET;
	return ref;
}

void fx_child(struct fx_heap *h, int64_t pid, int32_t status, uint32_t state)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_CHILD, sizeof(struct blamer_child), 1);
	struct blamer_child *c = fx_at(h, ref);

	c->child_pid = pid;
	c->launch_time_ns = 1;
	c->exit_time_ns = state == 2 ? 2 : 0;
	c->exit_status = status;
	c->state = state;
}

void fx_node(struct fx_heap *h, uint64_t id, const char *name)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_DAG_NODE, sizeof(struct blamer_dag_node), 1);
	struct blamer_dag_node *n = fx_at(h, ref);

	n->id = id;
	snprintf(n->name, sizeof(n->name), "%s", name);
}

void fx_edge(struct fx_heap *h, uint64_t parent, uint64_t child)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_DAG_EDGE, sizeof(struct blamer_dag_edge), 1);
	struct blamer_dag_edge *e = fx_at(h, ref);

	e->parent_id = parent;
	e->child_id = child;
}

void fx_unit(struct fx_heap *h, uint32_t unit, uint32_t base, const char *name)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_DAG_UNIT, sizeof(struct blamer_dag_unit), 1);
	struct blamer_dag_unit *u = fx_at(h, ref);

	u->unit = unit;
	u->base = base;
	snprintf(u->name, sizeof(u->name), "%s", name);
}

blamer_ref fx_path(struct fx_heap *h, const uint64_t *nodes, uint32_t depth,
		   uint64_t cpu_ns, uint64_t bytes)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_DAG_PATH, sizeof(struct blamer_dag_path), 1);
	struct blamer_dag_path *p = fx_at(h, ref);

	p->depth = depth;
	memcpy(p->nodes, nodes, depth * sizeof(uint64_t));
	p->units[0] = BLAMER_UNIT_CPU_NS;
	p->values[0] = cpu_ns;
	p->units[1] = BLAMER_UNIT_BYTES;
	p->values[1] = bytes;
	return ref;
}

blamer_ref fx_shard(struct fx_heap *h, blamer_ref path, uint64_t claim,
		    uint64_t cpu_ns, uint64_t bytes)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_DAG_SHARD, sizeof(struct blamer_dag_shard), 1);
	struct blamer_dag_shard *s = fx_at(h, ref);
	struct blamer_dag_path *p = fx_at(h, path);

	s->path = path;
	s->claim = claim;
	s->values[0] = cpu_ns;
	s->values[1] = bytes;
	s->next_shard = p->shards;
	p->shards = ref;
	return ref;
}

blamer_ref fx_metric_def(struct fx_heap *h, const char *name, uint32_t kind,
			 uint32_t mode, const char *labels, uint32_t nlabels,
			 const double *bounds, uint32_t nb)
{
	blamer_ref ref = fx_alloc(h, BLAMER_REC_METRIC_DEF, sizeof(struct blamer_metric_def_rec), 1);
	struct blamer_metric_def_rec *d = fx_at(h, ref);
	size_t i, at = 0;

	d->kind = kind;
	d->gauge_mode = mode;
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->help, sizeof(d->help), "help of %s", name);
	for (i = 0; i < nlabels; i++) {
		size_t n = strlen(labels + at) + 1;

		memcpy(d->labels + at, labels + at, n);
		at += n;
	}
	d->nlabels = nlabels;
	if (kind == BLAMER_METRIC_HISTOGRAM && nb) {
		d->layout = BLAMER_HIST_FIXED;
		d->nbuckets = nb + 1;
		memcpy(d->bounds, bounds, nb * sizeof(double));
	} else if (kind == BLAMER_METRIC_HISTOGRAM) {
		d->layout = BLAMER_HIST_EXPONENTIAL;
		d->min_exp = 0;
		d->max_exp = 4;
		d->nbuckets = 6;
	}
	return ref;
}

uint32_t fx_metric_words(struct fx_heap *h, blamer_ref def)
{
	struct blamer_metric_def_rec *d = fx_at(h, def);

	return d->kind == BLAMER_METRIC_HISTOGRAM ? 1 + d->nbuckets : 1;
}

blamer_ref fx_metric(struct fx_heap *h, blamer_ref def, const char *values,
		     size_t vlen, double first, const uint64_t *counts)
{
	uint32_t n = fx_metric_words(h, def), i;
	blamer_ref ref = fx_alloc(h, BLAMER_REC_METRIC, sizeof(struct blamer_metric_rec) + 8 * n, 1);
	struct blamer_metric_rec *m = fx_at(h, ref);

	m->def = def;
	memcpy(m->values, values, vlen);
	m->nvalues = n;
	memcpy(&m->value[0], &first, 8);
	for (i = 1; counts && i < n; i++)
		m->value[i] = counts[i - 1];
	return ref;
}

blamer_ref fx_metric_shard(struct fx_heap *h, blamer_ref m, double first,
			   const uint64_t *counts)
{
	struct blamer_metric_rec *r = fx_at(h, m);
	uint32_t n = r->nvalues, i;
	blamer_ref ref = fx_alloc(h, BLAMER_REC_METRIC_SHARD,
				  sizeof(struct blamer_metric_shard) + 8 * n, 1);
	struct blamer_metric_shard *s = fx_at(h, ref);

	r = fx_at(h, m);
	s->metric = m;
	s->nvalues = n;
	s->claim = 7;
	memcpy(&s->value[0], &first, 8);
	for (i = 1; counts && i < n; i++)
		s->value[i] = counts[i - 1];
	s->next_shard = r->shards;
	r->shards = ref;
	return ref;
}

void fx_metrics(struct fx_heap *h, int64_t pid, int64_t stamp, uint64_t scale)
{
	static const double b[2] = { 0.1, 1 };
	uint64_t lc[3] = { 1 * scale, 2 * scale, 0 }, sc[6] = { 0, 0, 1, 0, 0, 0 };
	blamer_ref reqs, lat, size, gauge, s;

	fx_init(h, 1, 16384, pid, stamp);
	fx_process(h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
	reqs = fx_metric_def(h, "reqs", BLAMER_METRIC_COUNTER, 0, "route", 1, NULL, 0);
	lat = fx_metric_def(h, "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, b, 2);
	size = fx_metric_def(h, "size", BLAMER_METRIC_HISTOGRAM, 0, "", 0, NULL, 0);
	gauge = fx_metric_def(h, "inflight", BLAMER_METRIC_GAUGE, BLAMER_GAUGE_SUM, "", 0, NULL, 0);
	s = fx_metric(h, reqs, "/a", 3, 2.0 * scale, NULL);
	fx_metric_shard(h, s, 0.5 * scale, NULL);
	fx_metric(h, reqs, "/b", 3, 1.0 * scale, NULL);
	s = fx_metric(h, lat, "", 0, 0.05 * scale, lc);
	fx_metric_shard(h, s, 0.25, lc);
	fx_metric(h, size, "", 0, 3, sc);
	fx_metric(h, gauge, "", 0, (double)scale, NULL);
}

void fx_standard(struct fx_heap *h, int64_t pid, int64_t stamp,
		 uint64_t scale)
{
	uint64_t p1[] = { FX_ROOT }, p2[] = { FX_ROOT, FX_TAB }, p3[] = { FX_ROOT, FX_TAB, FX_FRAME },
		 p4[] = { FX_ROOT, FX_GPU };
	blamer_ref t1, t2, ud, gd, ad, log, frame;
	uint64_t one = 1;

	fx_init(h, 2, FX_SLAB, pid, stamp);
	fx_process(h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/app --worker 1");
	ud = fx_userdata(h, BLAMER_DATA_PROCESS, 256, 1);
	fx_field_u64(h, ud, "requests", 12 * scale);
	fx_field_str(h, ud, "role", "worker");
	((struct blamer_process *)fx_at(h, fx_hh(h)->process))->user_data = ud;
	gd = fx_userdata(h, BLAMER_DATA_GLOBAL, 128, 1);
	fx_field(h, gd, BLAMER_FIELD_BOOL, "debug", &one, 1);
	((struct blamer_process *)fx_at(h, fx_hh(h)->process))->global_data = gd;
	t1 = fx_thread(h, pid, "main", 4);
	ad = fx_userdata(h, BLAMER_DATA_ACTIVITY, 64, 0);
	fx_field_u64(h, ad, "url_id", 77);
	fx_push(h, t1, BLAMER_ACTIVITY_TASK, "main-loop", 100, 0);
	fx_push(h, t1, BLAMER_ACTIVITY_TASK, "handle-request", 200, ad);
	fx_push(h, t1, BLAMER_ACTIVITY_LOCK_ACQUIRE, "cache-lock", 300, 0);
	/* the lock's address: what a postmortem of a hang asks first */
	((struct blamer_thread *)fx_at(h, t1))->stack[2].data[0] = 0x55d0c0ffee40ull;
	t2 = fx_thread(h, pid + 1, "io", 2);
	fx_push(h, t2, BLAMER_ACTIVITY_EVENT_WAIT, "epoll", 150, 0);
	fx_module(h, "/usr/lib/libfoo.so", 0x7f0000000000ull);
	log = fx_log(h, 4);
	((struct blamer_process *)fx_at(h, fx_hh(h)->process))->log = log;
	fx_log_msg(h, log, "started");
	fx_log_msg(h, log, "listening on :80");
	fx_log_msg(h, log, "cache warm");
	h->cur = 1;	/* the rest in the second slab */
	fx_child(h, pid + 100, 11, 2);	/* killed by SIGSEGV */
	fx_node(h, FX_ROOT, "browser");
	fx_node(h, FX_TAB, "tab");
	fx_node(h, FX_FRAME, "frame");
	fx_node(h, FX_GPU, "gpu");
	fx_edge(h, FX_ROOT, FX_TAB);
	fx_edge(h, FX_TAB, FX_FRAME);
	fx_edge(h, FX_ROOT, FX_GPU);
	fx_path(h, p1, 1, 1000000 * scale, 4096 * scale);
	fx_path(h, p2, 2, 2000000 * scale, 0);
	frame = fx_path(h, p3, 3, 2000000 * scale, 16384 * scale);
	fx_path(h, p4, 2, 500000 * scale, 1024 * scale);
	fx_shard(h, frame, 0, 1000000 * scale, 16384 * scale);	/* released */
	fx_shard(h, frame, (uint64_t)pid, 2000000 * scale, 32768 * scale);
	h->cur = 0;
}

void fx_mem(struct fx_heap *h, struct blamer_mem_slab *out)
{
	unsigned i;

	for (i = 0; i < h->nslabs; i++) {
		out[i].data = h->slab[i];
		out[i].size = h->size[i];
	}
}

int fx_write_dir(struct fx_heap *h, const char *dir, int64_t pid,
		 uint64_t start)
{
	char path[4096];
	unsigned i;

	for (i = 0; i < h->nslabs; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/%lld-%llu.%u.slab", dir, (long long)pid,
			 (unsigned long long)start, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		if (write(fd, h->slab[i], h->size[i]) != (ssize_t)h->size[i]) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

uint64_t fx_start_ns(pid_t pid)
{
	char buf[1024], path[64], *p;
	unsigned long long st = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	p = strrchr(buf, ')') + 2;
	for (i = 3; i < 22; i++)
		p = strchr(p, ' ') + 1;
	sscanf(p, "%llu", &st);
	return st * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

uint64_t fx_self_start_ns(void)
{
	return fx_start_ns(getpid());
}
