/* SPDX-License-Identifier: MIT */
/*
 * The one place where plain fields of the mapped heap are viewed as C11
 * atomics. The heap format (heap_format.h) uses plain fixed-size integers
 * so that its layout is a contract; the writer accesses the fields the
 * format marks "atomic" only through these casts. On every ABI we build
 * for (gcc/clang, x86-64 and other 64-bit Linux), _Atomic uintN_t has the
 * size, alignment and representation of uintN_t and is lock-free, which
 * the asserts below check; a lock-based atomic in shared memory would be
 * meaningless to the other process.
 *
 * Memory orders are chosen at each use and explained there.
 */
#ifndef BLAMER_ATOMIC_H
#define BLAMER_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>

_Static_assert(sizeof(_Atomic uint16_t) == 2 && ATOMIC_SHORT_LOCK_FREE == 2, "u16 atomics");
_Static_assert(sizeof(_Atomic uint32_t) == 4 && ATOMIC_INT_LOCK_FREE == 2, "u32 atomics");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics");
_Static_assert(sizeof(_Atomic uint8_t) == 1 && ATOMIC_CHAR_LOCK_FREE == 2, "u8 atomics");

#define A8(p)	((_Atomic uint8_t *)(p))
#define A16(p)	((_Atomic uint16_t *)(p))
#define A32(p)	((_Atomic uint32_t *)(p))
#define A64(p)	((_Atomic uint64_t *)(p))

#define ld_relaxed(p)		atomic_load_explicit((p), memory_order_relaxed)
#define ld_acquire(p)		atomic_load_explicit((p), memory_order_acquire)
#define st_relaxed(p, v)	atomic_store_explicit((p), (v), memory_order_relaxed)
#define st_release(p, v)	atomic_store_explicit((p), (v), memory_order_release)

#endif /* BLAMER_ATOMIC_H */
