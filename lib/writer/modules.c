// SPDX-License-Identifier: MIT
/*
 * Loaded shared objects: path, address range and GNU build ID, from
 * dl_iterate_phdr(). Nothing hooks dlopen()/dlclose(): blamer_open()
 * records them once, and the application calls blamer_modules_refresh()
 * (process.c) after them.
 * A MODULE record changes under its seq (odd while changing); a module
 * that went away keeps its record with loaded = 0, for postmortems, the
 * BL_MODULES_GONE_KEPT most recently unloaded: an older one is made
 * again, under its seq, for a module loaded since (a program that
 * dlopen()s and dlclose()s at new addresses grew a record of 368 bytes a
 * cycle, until its heap was full).
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"

struct mod {
	uint64_t base, size;
	uint32_t build_id_len;
	uint8_t build_id[BLAMER_BUILD_ID_MAX];
	char path[BLAMER_PATH_MAX];
};

struct bl_mod_list {
	struct mod *v;
	size_t n, cap;
};

static void build_id(struct dl_phdr_info *info, const ElfW(Phdr) *ph, struct mod *m)
{
	const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
	const uint8_t *end = p + ph->p_memsz;

	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const void *)p;
		size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
		const uint8_t *d = p + sizeof(*nh) + name;

		if (d + desc > end)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    !memcmp(p + sizeof(*nh), "GNU", 4)) {
			m->build_id_len = nh->n_descsz > BLAMER_BUILD_ID_MAX ? BLAMER_BUILD_ID_MAX
									     : nh->n_descsz;
			memcpy(m->build_id, d, m->build_id_len);
			return;
		}
		p = d + desc;
	}
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bl_mod_list *ms = arg;
	uint64_t lo = UINT64_MAX, hi = 0;
	struct mod *m;
	int i;

	(void)size;
	if (ms->n == ms->cap) {
		size_t cap = ms->cap ? 2 * ms->cap : 32;
		struct mod *v = realloc(ms->v, cap * sizeof(*v));

		if (!v)
			return 1;
		ms->v = v;
		ms->cap = cap;
	}
	m = &ms->v[ms->n];
	memset(m, 0, sizeof(*m));
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD) {
			if (ph->p_vaddr < lo)
				lo = ph->p_vaddr;
			if (ph->p_vaddr + ph->p_memsz > hi)
				hi = ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !m->build_id_len) {
			build_id(info, ph, m);
		}
	}
	if (lo >= hi)
		return 0;
	m->base = info->dlpi_addr + lo;
	m->size = hi - lo;
	if (info->dlpi_name && info->dlpi_name[0]) {
		strncpy(m->path, info->dlpi_name, sizeof(m->path) - 1);
	} else if (ms->n == 0) {
		ssize_t n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);

		if (n > 0)
			m->path[n] = 0;
	}
	if (!m->path[0])
		return 0;	/* the vDSO and other nameless objects */
	ms->n++;
	return 0;
}

static void write_module(struct blamer_module *r, const struct mod *m, uint32_t loaded)
{
	uint32_t seq = ld_relaxed(A32(&r->seq));

	st_relaxed(A32(&r->seq), seq + 1);
	/* Release fence: odd seq before the new contents (seqlock write). */
	atomic_thread_fence(memory_order_release);
	if (m) {
		r->base = m->base;
		r->size = m->size;
		r->build_id_len = m->build_id_len;
		memcpy(r->build_id, m->build_id, sizeof(r->build_id));
		r->path_len = (uint32_t)strnlen(m->path, sizeof(r->path));
		memcpy(r->path, m->path, sizeof(r->path));
	}
	r->loaded = loaded;
	/* Release: contents complete before seq is even again. */
	st_release(A32(&r->seq), seq + 2);
}

/*
 * Which modules of a list a walk of the heap found: a bit each, on the
 * stack for up to SEEN_STACK_BITS modules, else mmap()ed, never malloc()ed:
 * a fork child's first write, a signal handler's maybe, makes its heap and
 * records its modules (bl_modules_record_forked()); a malloc() there that
 * interrupted one of the program's was heap corruption or a hang.
 */
#define SEEN_STACK_BITS	4096u

struct seen {
	uint64_t *bits;
	size_t bytes;		/* mmap()ed; 0: @stack */
	uint64_t stack[SEEN_STACK_BITS / 64];
};

static bool seen_init(struct seen *s, size_t n)
{
	s->bytes = 0;
	s->bits = s->stack;
	if (n > SEEN_STACK_BITS) {
		void *p;

		s->bytes = (n + 63) / 64 * 8;
		p = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return false;
		s->bits = p;	/* zeroed */
		return true;
	}
	memset(s->stack, 0, sizeof(s->stack));
	return true;
}

static bool seen_get(const struct seen *s, size_t i)
{
	return s->bits[i / 64] >> (i % 64) & 1;
}

static void seen_set(struct seen *s, size_t i)
{
	s->bits[i / 64] |= 1ull << (i % 64);
}

static void seen_free(struct seen *s)
{
	if (s->bytes)
		munmap(s->bits, s->bytes);
}

/* The gone records' place in @g, or -1. */
static int gone_at(const struct bl_mod_gone *g, blamer_ref ref)
{
	uint32_t i;

	for (i = 0; i < g->n; i++)
		if (g->ref[i] == ref)
			return (int)i;
	return -1;
}

static void gone_remove(struct bl_mod_gone *g, int at)
{
	memmove(&g->ref[at], &g->ref[at + 1], (g->n - (uint32_t)at - 1) * sizeof(g->ref[0]));
	g->n--;
}

/* @ref just unloaded: the most recent; the oldest beyond the count is
 * no longer kept (a record to make again). */
static void gone_add(struct bl_mod_gone *g, blamer_ref ref)
{
	if (g->n == BL_MODULES_GONE_KEPT)
		gone_remove(g, 0);
	g->ref[g->n++] = ref;
}

/*
 * The heap's MODULE records made to say what @ms holds. No malloc(), no
 * lock, no stdio: async-signal-safe (a fork child's heap, above). One
 * caller at a time (bl_modules_record()'s lock, or the heap being made).
 *
 * A record of a module gone that is no longer kept (gone_add()) is made
 * again for a module loaded since: whole, under its seq, as any change
 * of a MODULE record is (heap-format.rst): a reader copies it as it was
 * or as it is, never torn, and its owner, type and place in the list
 * stay.
 */
static int record(struct blamer *b, const struct bl_mod_list *m)
{
	struct bl_heap *h = &b->heap;
	struct bl_mod_gone *g = &b->mod_gone;
	const struct bl_mod_list ms = *m;
	struct bl_iter it = { 0 };
	struct seen seen;
	blamer_ref ref;
	uint32_t type;
	bool walked = false;
	size_t i;
	int count = 0;

	if (!seen_init(&seen, ms.n))
		return bl_error(ENOMEM, "blamer: no memory for the module list");
	if (g->heap_id != h->heap_id) {
		/* another heap (a fork child's): none of its records gone */
		g->heap_id = h->heap_id;
		g->n = 0;
	}
	/* Update existing records: still loaded, or gone. */
	while ((ref = bl_heap_next(h, &it, &type))) {
		struct blamer_module *r;
		bool found = false;
		int at;

		if (type != BLAMER_REC_MODULE)
			continue;
		r = bl_heap_get(h, ref, BLAMER_REC_MODULE, sizeof(*r));
		if (!r || !ld_acquire(A32(&r->owner.data_id)))
			continue;
		for (i = 0; i < ms.n; i++)
			if (!seen_get(&seen, i) && ms.v[i].base == r->base &&
			    !strncmp(ms.v[i].path, r->path, sizeof(r->path))) {
				seen_set(&seen, i);
				found = true;
				if (!r->loaded) {
					write_module(r, NULL, 1);
					at = gone_at(g, ref);
					if (at >= 0)
						gone_remove(g, at);
				}
				count++;
				break;
			}
		if (!found && r->loaded) {
			write_module(r, NULL, 0);
			gone_add(g, ref);
		}
	}
	/* The new modules: into records gone and no longer kept, while
	 * the walk finds them, then into new records. */
	it = (struct bl_iter){ 0 };
	for (i = 0; i < ms.n; i++) {
		struct blamer_module *r = NULL;

		if (seen_get(&seen, i))
			continue;
		while (!walked) {
			ref = bl_heap_next(h, &it, &type);
			if (!ref) {
				walked = true;
				break;
			}
			if (type != BLAMER_REC_MODULE)
				continue;
			r = bl_heap_get(h, ref, BLAMER_REC_MODULE, sizeof(*r));
			if (r && ld_acquire(A32(&r->owner.data_id)) && !r->loaded &&
			    gone_at(g, ref) < 0)
				break;
			r = NULL;
		}
		if (r) {
			write_module(r, &ms.v[i], 1);
		} else {
			ref = bl_record_new(b, BLAMER_REC_MODULE, sizeof(*r), true);
			if (!ref)
				break;
			r = bl_ptr(h, ref);
			write_module(r, &ms.v[i], 1);
			bl_owner_set(b, &r->owner);
		}
		count++;
	}
	seen_free(&seen);
	return count;
}

/* One record() at a time: the seqs and b->mod_gone are written by one
 * hand. A fork child's heap is made without it (nobody else can record
 * in a heap being made): it is made new in the child (fork_done()), in
 * case a thread of the parent held it at the fork. */
static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;

int bl_modules_record(struct blamer *b)
{
	struct bl_mod_list ms = { 0 };
	int ret;

	dl_iterate_phdr(collect, &ms);
	pthread_mutex_lock(&record_lock);
	ret = record(b, &ms);
	pthread_mutex_unlock(&record_lock);
	free(ms.v);
	return ret;
}

/*
 * A fork child records its modules from a list its parent took just
 * before the fork, never through dl_iterate_phdr(): glibc (2.36 in
 * Debian 12) does not hold the loader's lock that dl_iterate_phdr()
 * takes across fork(), so a child forked while another thread of the
 * parent was inside dl_iterate_phdr() (an unwinder's lookup, a
 * blamer_modules_refresh()) inherits that lock taken, and its first call
 * would hang for good: the child's first write, which makes its heap.
 *
 * The list is taken before the fork handlers take their locks (the
 * loader's lock is never waited for under ours), handed over under them
 * (bl_modules_fork_stage(): concurrent forks are serialized there), and
 * becomes the child's in its fork handler, where the child has one
 * thread and nothing can be reading the list it replaces; the parent
 * frees its copy. fork_list so changes only in a child's fork handler.
 */
static struct bl_mod_list *fork_next;	/* prepare to parent/child, under the handlers' locks */
static struct bl_mod_list *fork_list;	/* a fork child's: its parent's modules */

static void mods_free(struct bl_mod_list *ms)
{
	if (ms)
		free(ms->v);
	free(ms);
}

struct bl_mod_list *bl_modules_fork_collect(void)
{
	struct bl_mod_list *ms = calloc(1, sizeof(*ms));

	if (ms)
		dl_iterate_phdr(collect, ms);
	return ms;
}

void bl_modules_fork_stage(struct bl_mod_list *ms)
{
	fork_next = ms;
}

void bl_modules_fork_done(bool child)
{
	if (child) {
		pthread_mutex_init(&record_lock, NULL);
		mods_free(fork_list);
		fork_list = fork_next;
	} else {
		mods_free(fork_next);
	}
	fork_next = NULL;
}

int bl_modules_record_forked(struct blamer *b)
{
	/* no list (out of memory at the fork, or no context recorded
	 * modules then: this one was opened as the process forked): none
	 * recorded, rather than a call that may never return;
	 * blamer_modules_refresh() makes them */
	return fork_list ? record(b, fork_list) : 0;
}
