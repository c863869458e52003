/* SPDX-License-Identifier: MIT */
/*
 * libblamer: cross-process activity and resource reporting through shared
 * memory. The one public header. See Documentation/library.rst (writer)
 * and Documentation/reader.rst (reader).
 */
#ifndef BLAMER_H
#define BLAMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Writer API (lib/, owned by the writer side) ---- */
#include <sys/types.h>	/* pid_t */

/*
 * A context: one heap of the calling process (the slabs it writes) plus
 * the bookkeeping around it. Every function takes the context first;
 * NULL means the process-default context, created on first use from the
 * environment (BLAMER_BACKEND, BLAMER_DIR) or by blamer_init().
 * Functions returning int return 0 (or a non-negative value) on success
 * and a negative errno on failure; blamer_errmsg() then holds a one-line
 * explanation. Documentation/library.rst is the reference.
 */
struct blamer;

/* Configuration for blamer_open() / blamer_init(); zero means default. */
struct blamer_config {
	int backend;		/* enum blamer_backend; AUTO honours $BLAMER_BACKEND */
	uint32_t max_slabs;	/* slabs the heap may grow to (<= 64); 0: 16 */
	uint64_t slab_size;	/* bytes per slab (page multiple); 0: 1 MiB */
	const char *dir;	/* dir backend: NULL = $BLAMER_DIR or /dev/shm/blamer-<uid> */
	uint32_t stack_depth;	/* activity slots per thread; 0: 16 */
	uint32_t log_slots;	/* log ring size; 0: 64 */
	uint32_t flags;		/* BLAMER_OPEN_* */
	uint32_t reserved;
};
#define BLAMER_OPEN_NO_MODULES	(1u << 0)	/* skip blamer_modules_refresh() at open */

int blamer_open(const struct blamer_config *cfg, struct blamer **out);
/* Marks the heap deleted (a clean exit) and, in the dir backend, removes its files. */
void blamer_close(struct blamer *b);
/* Unmaps without marking anything: the heap stays as if the process died. */
void blamer_abandon(struct blamer *b);

/* Process-default context. */
int blamer_init(const struct blamer_config *cfg);	/* -EBUSY if already set up */
struct blamer *blamer_default(void);	/* creates it on first use; NULL on failure */
void blamer_reset(void);		/* closes the default (tests); next use re-creates */

const char *blamer_errmsg(void);	/* last error of the calling thread */

/* What the context is writing to. */
struct blamer_heap_info {
	int backend;		/* BLAMER_BACKEND_DEVICE or BLAMER_BACKEND_DIR */
	uint32_t slab_count;
	uint32_t max_slabs;
	uint32_t flags;		/* BLAMER_HEAP_F_* below */
	uint64_t slab_size;
	uint64_t heap_id;
	uint64_t bytes_used;
	int64_t pid;
	int64_t start_ns;	/* process start, ns since boot (dir file names) */
	char dir[256];		/* dir backend directory, else "" */
};
int blamer_heap_info(struct blamer *b, struct blamer_heap_info *info);
/* bits of blamer_heap_info.flags */
#define BLAMER_HEAP_F_CORRUPT	(1u << 0)
#define BLAMER_HEAP_F_FULL	(1u << 1)

/* ---- Process ---- */
/* Phases; the same values as lib/heap_format.h (identical redefinitions are fine). */
#define BLAMER_PHASE_UNKNOWN		0u
#define BLAMER_PHASE_LAUNCHED		1u
#define BLAMER_PHASE_MAIN_LOOP		2u
#define BLAMER_PHASE_SHUTTING_DOWN	3u
#define BLAMER_PHASE_EXITED_CLEANLY	4u
#define BLAMER_PHASE_APP_BASE		1000u
int blamer_set_phase(struct blamer *b, uint32_t phase);	/* BLAMER_PHASE_* or >= 1000 */
/* A parent records the children it starts and their end. */
int blamer_process_launched(struct blamer *b, pid_t pid);
/*
 * Call after waitpid(): records the exit status and, in the dir backend,
 * removes the child's heap files if pid AND start time match the launch
 * record (a reused pid with another start time is left alone).
 */
int blamer_process_exited(struct blamer *b, pid_t pid, int wait_status);

/* ---- Thread activity stack (async-signal-safe push/pop) ---- */
#define BLAMER_ACTIVITY_TASK		1u
#define BLAMER_ACTIVITY_LOCK_ACQUIRE	2u
#define BLAMER_ACTIVITY_EVENT_WAIT	3u
#define BLAMER_ACTIVITY_THREAD_JOIN	4u
#define BLAMER_ACTIVITY_PROCESS_WAIT	5u
#define BLAMER_ACTIVITY_GENERIC		6u

/*
 * Pushes an activity of @kind on the calling thread's stack with a
 * timestamp, the caller's address and two words of kind-specific data
 * (lock address, pid, task id...). @label: static text, first 16 bytes
 * kept. Returns the new depth (> stack depth: counted as overflow, not
 * recorded) or a negative errno. No lock, no malloc, no system call
 * after the thread's first push.
 */
int blamer_push(struct blamer *b, uint32_t kind, const char *label,
		uint64_t data0, uint64_t data1);
void blamer_pop(struct blamer *b);
int blamer_thread_set_name(struct blamer *b, const char *name);

/* ---- Typed user data ---- */
#define BLAMER_DATA_GLOBAL	1u	/* about the application: readers merge across processes */
#define BLAMER_DATA_PROCESS	2u	/* about this process */
#define BLAMER_DATA_ACTIVITY	3u	/* about the calling thread's top activity */

/*
 * Handle to one field, for updates without a name lookup. It points into
 * the heap: valid until the scope ends (pop, close). After fork() the
 * child's old handles write to private scratch memory, not the parent.
 */
struct blamer_value;

struct blamer_value *blamer_set_bool(struct blamer *b, unsigned scope, const char *name, bool v);
struct blamer_value *blamer_set_char(struct blamer *b, unsigned scope, const char *name, char v);
struct blamer_value *blamer_set_int(struct blamer *b, unsigned scope, const char *name, int64_t v);
struct blamer_value *blamer_set_uint(struct blamer *b, unsigned scope, const char *name, uint64_t v);
struct blamer_value *blamer_set_double(struct blamer *b, unsigned scope, const char *name, double v);
/* Strings and raw bytes: the first set decides the capacity (longer later values are cut). */
struct blamer_value *blamer_set_string(struct blamer *b, unsigned scope, const char *name, const char *v);
struct blamer_value *blamer_set_raw(struct blamer *b, unsigned scope, const char *name,
				    const void *v, size_t len);
/* References to memory outside the heap: only address and size are stored. */
struct blamer_value *blamer_set_string_ref(struct blamer *b, unsigned scope, const char *name,
					   const char *addr, size_t len);
struct blamer_value *blamer_set_raw_ref(struct blamer *b, unsigned scope, const char *name,
					const void *addr, size_t len);

/* Fast in-place updates through a handle (type must match: else no-op). */
void blamer_value_bool(struct blamer_value *h, bool v);
void blamer_value_int(struct blamer_value *h, int64_t v);
void blamer_value_uint(struct blamer_value *h, uint64_t v);
void blamer_value_double(struct blamer_value *h, double v);
void blamer_value_add(struct blamer_value *h, int64_t delta);	/* SIGNED/UNSIGNED, atomic */
void blamer_value_string(struct blamer_value *h, const char *v);

/* ---- Modules and log ---- */
/* Re-reads the loaded shared objects; call after dlopen()/dlclose(). Returns the count. */
int blamer_modules_refresh(struct blamer *b);
/* Appends a message to the bounded ring of recent messages. */
int blamer_log(struct blamer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Attribution DAG ---- */
/* A stable 64-bit node id: FNV-1a 64 of @name, the same in every process. */
uint64_t blamer_dag_id(const char *name);
int blamer_dag_node(struct blamer *b, uint64_t id, uint32_t node_type, const char *name);
int blamer_dag_link(struct blamer *b, uint64_t parent_id, uint64_t child_id);

/*
 * A path: node ids from the root to a node, as actually walked, with up to
 * 8 measurements whose units are given by @units (BLAMER_UNIT_* or >= 1000).
 * Finds the existing record for the same path and units or makes one.
 */
/* Units; the same values as lib/heap_format.h. */
#define BLAMER_UNIT_NONE	0u
#define BLAMER_UNIT_CPU_NS	1u
#define BLAMER_UNIT_BYTES	2u
#define BLAMER_UNIT_COUNT	3u
#define BLAMER_UNIT_APP_BASE	1000u

struct blamer_path;
struct blamer_path *blamer_path_get(struct blamer *b, const uint64_t *ids, unsigned depth,
				    const uint32_t *units, unsigned nunits);
/* Atomic add; @unit_index < nunits of blamer_path_get(). Lock-free, no syscall. */
void blamer_path_add(struct blamer_path *p, unsigned unit_index, uint64_t value);

/* ---- end of writer API ---- */

/* ---- Reader API (lib/reader*.c, owned by the reader side) ---- */

/* ---- end of reader API ---- */

#ifdef __cplusplus
}
#endif

#endif /* BLAMER_H */
