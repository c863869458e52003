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
	pthread_mutex_unlock(&reg_lock);
}

void bl_registry_remove(struct blamer *b)
{
	struct blamer **pp;

	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_head; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}
