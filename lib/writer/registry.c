// SPDX-License-Identifier: MIT
/*
 * The contexts of this process that are open, under a mutex: the fork
 * handler resets each of them in the child, a thread's exit finds which
 * of the contexts it cached are still open, and a context that finds its
 * own files in its directory asks whether another open context made
 * them. None of that is on a hot path: writers never take this lock.
 */
#include <pthread.h>

#include "atomic.h"
#include "internal.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct blamer *reg_head;		/* under reg_lock */
static uint64_t reg_serial;		/* atomic: the last serial handed out */
static uint32_t reg_modules;		/* written under reg_lock, read atomic:
					 * the open contexts that record modules */

uint64_t bl_registry_serial(void)
{
	/* Relaxed: a serial only needs to be unique. */
	return atomic_fetch_add_explicit(A64(&reg_serial), 1, memory_order_relaxed) + 1;
}

void bl_registry_lock(void)
{
	pthread_mutex_lock(&reg_lock);
}

void bl_registry_unlock(void)
{
	pthread_mutex_unlock(&reg_lock);
}

struct blamer *bl_registry_first(void)
{
	return reg_head;
}

bool bl_registry_alive(struct blamer *b, uint64_t serial)
{
	struct blamer *c;

	for (c = reg_head; c; c = c->next)
		if (c == b && c->serial == serial)
			return true;
	return false;
}

void bl_registry_add(struct blamer *b)
{
	pthread_mutex_lock(&reg_lock);
	b->next = reg_head;
	reg_head = b;
	if (!(b->flags & BLAMER_OPEN_NO_MODULES))
		st_relaxed(A32(&reg_modules), reg_modules + 1);
	pthread_mutex_unlock(&reg_lock);
}

void bl_registry_remove(struct blamer *b)
{
	struct blamer **pp;

	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_head; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			if (!(b->flags & BLAMER_OPEN_NO_MODULES))
				st_relaxed(A32(&reg_modules), reg_modules - 1);
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}

bool bl_registry_wants_modules(void)
{
	/* Relaxed: a hint read before the fork handler's locks (below
	 * them a context's open is ordered anyway; one that races the
	 * fork records no modules in its child: modules.c) */
	return ld_relaxed(A32(&reg_modules)) != 0;
}
