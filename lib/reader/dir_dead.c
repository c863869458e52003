// SPDX-License-Identifier: MIT
/*
 * Dir backend, what the files say of a dead process: when it was last
 * seen (the exit its writer recorded, or else the latest sign of life its
 * files and records show), whether its heap is another boot's, and
 * whether its files have been quiet long enough to keep its decoding.
 */
#include <fcntl.h>
#include <time.h>
#include <sys/stat.h>

#include "internal.h"
#include "where.h"

/* @t if it is later than @best but not past @now: the future is no evidence. */
static uint64_t later(uint64_t best, uint64_t t, uint64_t now)
{
	return t > best && t <= now ? t : best;
}

/*
 * The latest sign of life of a dead process: its files' modification
 * times (the exit, if recorded), its heap's creation, log messages,
 * children, activity pushes and thread starts (CLOCK_MONOTONIC, taken to
 * CLOCK_REALTIME at today's offset: a clock step since makes it off).
 */
void rd_dir_last_seen(struct blamer_snap_process *p, uint64_t mtime_ns)
{
	uint64_t t = 0, m = 0, now = bl_clock_ns(CLOCK_REALTIME);
	uint64_t mono = bl_clock_ns(CLOCK_MONOTONIC);
	size_t i, j;

	/* a file's times and the heap's are its writer's to set: a time past
	 * now is a lie or another clock's, and not believed */
	if (p->exited && mtime_ns > now) {
		/* the moment of its exit is the lie: what else it shows came
		 * before, and would be shown as that moment */
		p->last_seen_ns = 0;
		return;
	}
	t = later(t, mtime_ns, now);
	t = later(t, p->heap_create_time_ns, now);
	for (i = 0; i < p->nlogs; i++)
		t = later(t, p->logs[i].time_ns, now);
	for (i = 0; i < p->nchildren; i++) {
		t = later(t, p->children[i].launch_time_ns, now);
		t = later(t, p->children[i].exit_time_ns, now);
	}
	for (i = 0; i < p->nthreads; i++) {
		if (p->threads[i].start_time_ns > m)
			m = p->threads[i].start_time_ns;
		for (j = 0; j < p->threads[i].nacts; j++)
			if (p->threads[i].acts[j].time_ns > m)
				m = p->threads[i].acts[j].time_ns;
	}
	/* a monotonic time past now is another boot's: no evidence */
	if (m && m + (now - mono) > t && m <= mono)
		t = m + (now - mono);
	p->last_seen_ns = t;
}

/*
 * Was heap @f made before this boot? Its first file's ctime (which only
 * the kernel sets) is older than the boot: its pid and start time are
 * another boot's, and /proc of this one neither proves nor disproves them
 * (a directory kept across reboots: /dev/shm is not).
 */
bool rd_dir_before_boot(struct rd_dirwalk *d, const struct rd_dfile *f)
{
	uint64_t boot = bl_clock_ns(CLOCK_REALTIME) - bl_clock_ns(CLOCK_BOOTTIME);
	char name[BL_SLAB_NAME_MAX];
	struct stat st;

	rd_dfile_name(name, f);
	return !fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) && bl_ts_ns(&st.st_ctim) < boot;
}

/*
 * Have the files not changed for a second? File times are coarse (a
 * clock tick): a file written again within the tick it was read in could
 * look unchanged, so a heap is kept only once its files are quiet (a
 * time in the future is not quiet either).
 */
bool rd_dir_quiet(const struct rd_kept_slab *ks, uint32_t n)
{
	uint64_t t = bl_clock_ns(CLOCK_REALTIME);
	uint32_t i;

	for (i = 0; i < n; i++)
		if (ks[i].v[3] + 1000000000u > t || ks[i].v[4] + 1000000000u > t)
			return false;
	return true;
}
