/* SPDX-License-Identifier: MIT */
/*
 * The blamer command: shared options and helpers. One file per
 * subcommand (cmd_*.c); every view is a function of one snapshot.
 */
#ifndef BLAMER_CLI_H
#define BLAMER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "blamer.h"

/* exit codes */
#define EX_OK		0
#define EX_FAIL		1	/* the command could not do its job */
#define EX_USAGE	2	/* bad flags or arguments */

/* option bits, so each command can reject flags that are not its own */
#define OPT_JSON	(1u << 0)
#define OPT_ONCE	(1u << 1)
#define OPT_INTERVAL	(1u << 2)
#define OPT_PROM	(1u << 3)
#define OPT_OUTPUT	(1u << 4)
#define OPT_COUNT	(1u << 5)
#define OPT_ALL		(1u << 6)
#define OPT_UNIT	(1u << 7)
#define OPT_DEAD	(1u << 8)	/* dir: read dead heaps too */
#define OPT_LISTEN	(1u << 9)	/* export: serve HTTP */
#define OPT_PER_PROCESS	(1u << 10)	/* export: each process's own series */
#define OPT_STATE	(1u << 11)	/* export: the fold state file */
#define OPT_KEEP	(1u << 12)	/* export: folded dead heaps kept */
#define OPT_LIVE_ONLY	(1u << 13)	/* blame, top: leave dead processes out */
#define OPT_BY		(1u << 14)	/* blame, top: totals by role */

struct cli {
	const char *cmd;
	enum blamer_backend backend;
	const char *dir;
	uint32_t seen;		/* OPT_* given */
	bool json;
	bool once;
	double interval;	/* seconds */
	long count;		/* top: frames, 0 = forever */
	const char *output;
	const char *unit;
	bool dead;
	const char *listen;	/* export --listen ADDR:PORT */
	bool per_process;	/* export --per-process */
	const char *state;	/* export --state PATH */
	bool state_used;	/* export: a fold state is in use */
	unsigned keep;		/* export --keep-dead N */
	bool live_only;		/* --live-only */
	bool by_role;		/* --by role */
	char **args;		/* positional arguments after the command */
	int nargs;
};

/* Print "blamer: <msg>" to stderr; returns EX_FAIL for `return err(...)`. */
int err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A decimal number of digits alone (no sign, space or overflow), at most
 * @max, into @v: false if @text is not one. */
bool parse_number(const char *text, unsigned long long max, unsigned long long *v);

/* Directory entries the reader skipped, one line each on stderr. */
void report_skipped(const struct blamer_snapshot *s);
/*
 * What each view does not print, left undecoded (BLAMER_READ_NO_*):
 * blame shows the attribution tree; top and export per-process lines
 * (top the current activity too) and the attribution totals.
 */
#define READ_FOR_BLAME	(BLAMER_READ_NO_THREADS | BLAMER_READ_NO_USERDATA | \
			 BLAMER_READ_NO_MODULES | BLAMER_READ_NO_LOG | BLAMER_READ_NO_CHILDREN)
#define READ_FOR_TOP	(BLAMER_READ_NO_USERDATA | BLAMER_READ_NO_MODULES | \
			 BLAMER_READ_NO_LOG | BLAMER_READ_NO_CHILDREN)
#define READ_FOR_EXPORT	(READ_FOR_TOP | BLAMER_READ_NO_STACKS)
/* $BLAMER_BACKEND as the library reads it: 0 (and the backend in @out
 * if not NULL), or -1 if it names no backend. */
/* The dir backend was asked for (option or environment), not fallen
 * back to. */
bool dir_asked(const struct cli *c);
/* EX_OK, or an error if @r is a directory named by --dir or $BLAMER_DIR
 * that does not exist. */
int check_source(const struct cli *c, struct blamer_reader *r);
/* The one line saying a snapshot of @r found no heaps (stderr; not with
 * --json), with the module hint when the dir backend was a fallback. */
void note_empty(const struct cli *c, const struct blamer_reader *r);
/* The soft limit of descriptors raised to the hard one, for a reader
 * that serves or refreshes (export --listen/--interval, top). */
void raise_nofile(void);
/* Open the reader and take a snapshot (flags: BLAMER_READ_*); with no
 * heaps, note_empty(). */
int take(struct cli *c, uint32_t flags, struct blamer_reader **r,
	 struct blamer_snapshot **s);
/* Parse PID arguments; each must name a process of s, else error. The
 * pids come sorted, each once. */
int parse_pids(struct cli *c, const struct blamer_snapshot *s, int32_t **pids,
	       size_t *npids);
/* @pid is one of @pids (parse_pids()'s, sorted), or there are none. */
bool pid_wanted(const int32_t *pids, size_t n, int32_t pid);
/* The index of the first process of @pid in s->procs (sorted by pid), or
 * where it would be (s->nprocs if past the end). */
size_t proc_first(const struct blamer_snapshot *s, int32_t pid);

void fmt_bytes(char *buf, size_t len, uint64_t v);
/*
 * Whose names the functions below show (of nodes and application units,
 * and a unit's base): a process's or a series' uid, the names its uid's
 * heaps give (blamer_snap_uid_node_name()), or ALL_UIDS in the views
 * that sum every process, the names every uid gives alike
 * (blamer_snap_node_name()): no user's heap names or scales another
 * user's numbers. JSON and Prometheus show the same.
 */
#define ALL_UIDS (-1LL)
/* A measurement as people read it: cpu_ns (and an application unit in
 * seconds) as time, bytes as sizes. */
void fmt_value(const struct blamer_snapshot *s, int64_t uid, char *buf, size_t len,
	       uint32_t unit, uint64_t v);
/* The column title of a unit: "cpu" (its values are times), "bytes",
 * "count", the name the heaps give it (blamer_dag_unit(), as JSON and
 * Prometheus use it), else "unitN"; returns @buf. */
const char *unit_label(const struct blamer_snapshot *s, int64_t uid, uint32_t unit, char *buf,
		       size_t len);
/* @text names @unit: its label, its name (cpu_ns) or its number. */
bool unit_is(const struct blamer_snapshot *s, int64_t uid, uint32_t unit, const char *text);
void fmt_age(char *buf, size_t len, uint64_t now_ns, uint64_t then_ns);
/* "killed by SIGSEGV (core dumped)", "exited with code 3", ... */
void fmt_end(char *buf, size_t len, const struct blamer_snap_process *p);
/* "  ended at DATE (AGE ago)" or the best the backend knows, for a dead
 * process; nothing for a live one. */
void print_end_time(FILE *f, const struct blamer_snapshot *s,
		    const struct blamer_snap_process *p);
const char *state_short(const struct blamer_snap_process *p, char *buf, size_t len);
const char *phase_str(uint32_t phase, char *buf, size_t len);
void print_fields(FILE *f, const char *indent, const struct blamer_snap_fields *fs);
/*
 * What every view shows of a process, decided once, so a heap looks the
 * same in list, top, dump, blame, postmortem and release (and as the
 * JSON says it: health by blamer_health_name(), identity by
 * kernel_facts):
 *   proc_comm      its comm, "?" if none is known
 *   proc_identity  "kernel" when the kernel vouches for pid, uid, start
 *                  time, comm, state and exit (the device backend),
 *                  "claimed" when they are the heap's word (dir backend),
 *                  "disproved" when /proc contradicts that word
 *   proc_tag       "", " [claimed]" or " [claim disproved]", after
 *                  "pid N (comm) uid U"
 *   proc_health    the health's one name ("unchecked": records not read)
 */
const char *proc_comm(const struct blamer_snap_process *p);
/* its role and instance as "worker/2" (made printable), "-" if none */
const char *proc_role(const struct blamer_snap_process *p, char *buf, size_t len);
/* " [cut]" after a value or label its writer had to cut, else "" */
const char *cut_mark(bool cut);
/* "dropped: N writes not recorded in full (reason n, ...)" if any */
void print_drops(FILE *f, const char *indent, const uint64_t *drops, uint64_t total);
/* A log message's CLOCK_REALTIME as local "YYYY-MM-DD HH:MM:SS.mmm". */
const char *fmt_log_time(char *buf, size_t len, uint64_t realtime_ns);
const char *proc_identity(const struct blamer_snap_process *p);
const char *proc_tag(const struct blamer_snap_process *p);
const char *proc_health(const struct blamer_snap_process *p);
/* "module+0xoffset" from the process's module list, else hex. */
void fmt_addr(char *buf, size_t len, const struct blamer_snap_process *p, uint64_t addr);
/* One activity of a stack, "#DEPTH kind \"label\" VERB AGE ago from ADDR
 * data=..", and its fields indented under it: as dump and postmortem
 * show a thread's stack. */
void print_activity(FILE *f, const char *indent, const struct blamer_snapshot *s,
		    const struct blamer_snap_process *p, size_t depth,
		    const struct blamer_snap_activity *a, const char *verb);
void print_path(FILE *f, const struct blamer_snapshot *s, int64_t uid, const uint64_t *nodes,
		uint32_t depth);

/* metrics.c: the programs' metrics as text. */
/* The snapshot's merged series, one a line (@uids: say whose; @procs: the
 * processes each merges). */
void print_series(FILE *f, const struct blamer_snapshot *s, bool uids, bool procs);
/* One merged series as "name{labels} = value" (not yet made printable). */
void fmt_series(char *buf, size_t len, const struct blamer_snapshot *s,
		const struct blamer_snap_series *x);
/* One process's own series, one a line after @indent. */
void print_process_metrics(FILE *f, const char *indent, const struct blamer_snapshot *s,
			   const struct blamer_snap_process *p);
/* The processes by role: live, dead, threads, busy threads. */
void print_roles(FILE *f, const struct blamer_snapshot *s);

int cmd_list(struct cli *c);
int cmd_dump(struct cli *c);
int cmd_blame(struct cli *c);
int cmd_top(struct cli *c);
int cmd_postmortem(struct cli *c);
int cmd_release(struct cli *c);
int cmd_export(struct cli *c);
int cmd_load(struct cli *c);
int cmd_unload(struct cli *c);
int cmd_status(struct cli *c);
/* cmd_kmod.c: whether the blamer module is loaded (/sys/module/blamer). */
bool module_loaded(void);

/*
 * kmod_*.c: libkmod (dynamic build) or raw syscalls (static build, which
 * can only load a module by path). Each returns 0 or a negative errno.
 *   kmod_lookup   the module NAME installed for the running kernel (as
 *                 modprobe finds it): its path and its modprobe.d options;
 *                 -ENOENT if not installed, -ENOTSUP in the static build
 *   kmod_vermagic the vermagic string of the module file PATH; -ENODATA if
 *                 it has none, -ENOEXEC if PATH is not a module, -ENOTSUP
 *                 if this build cannot read it (compressed, static build)
 *   kmod_insert   insert the file PATH, or (PATH NULL) probe the installed
 *                 NAME: dependencies first, modprobe.d options then PARAMS
 */
int kmod_lookup(const char *name, char *path, size_t pathlen, char *opts, size_t optslen);
int kmod_vermagic(const char *path, char *buf, size_t len);
int kmod_insert(const char *path, const char *name, const char *params);
int kmod_remove(const char *name);

#endif /* BLAMER_CLI_H */
