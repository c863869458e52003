// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: /proc/blamer, a human-readable listing of every slab for root
 * (mode 0400). One line per slab, the same facts as BLAMER_IOC_LIST, with
 * pids and uids as seen from the reader's namespaces.
 */
#include <linux/proc_fs.h>
#include <linux/seq_file.h>

#include "blamer.h"

static struct proc_dir_entry *blamer_proc;

/*
 * Command names are chosen by the owner (prctl(PR_SET_NAME)): escape
 * blanks, controls and backslashes as octal so that one slab is always
 * one line of space-separated fields.
 */
static void blamer_proc_comm(struct seq_file *m, const char *comm)
{
	for (; *comm; comm++) {
		unsigned char c = *comm;

		if (c <= ' ' || c == '\\' || c >= 0x7f)
			seq_printf(m, "\\%03o", c);
		else
			seq_putc(m, c);
	}
}

static void blamer_proc_exit_text(struct seq_file *m,
				  const struct blamer_slab_info *info)
{
	if (!(info->flags & BLAMER_SLAB_EXITED))
		seq_puts(m, "-");
	else if (info->exit_signal)
		seq_printf(m, "signal=%u%s", info->exit_signal,
			   info->flags & BLAMER_SLAB_COREDUMP ? ",core" : "");
	else
		seq_printf(m, "exit=%d", info->exit_code);
}

static int blamer_proc_show(struct seq_file *m, void *v)
{
	struct blamer_slab_info info;
	struct blamer_status st = { .size = sizeof(st) };
	struct blamer_slab *slab;
	unsigned long id;

	blamer_status(&st);
	seq_printf(m, "# slabs %llu orphans %llu bytes %llu generation %llu\n",
		   st.slabs, st.orphans, st.bytes, st.generation);
	seq_puts(m, "# id size state serial pid start_ns uid comm create_ns orphan_ns exit\n");
	mutex_lock(&blamer_lock);
	xa_for_each(&blamer_slabs, id, slab) {
		memset(&info, 0, sizeof(info));
		blamer_slab_fill_info(slab, NULL, &info);
		seq_printf(m, "%llu %llu %s %llu %d %llu %u ",
			   info.id, info.size,
			   info.state == BLAMER_SLAB_LIVE ? "live" : "orphan",
			   info.owner_serial, info.pid, info.start_time_ns,
			   info.uid);
		blamer_proc_comm(m, info.comm);
		seq_printf(m, " %llu %llu ", info.create_time_ns,
			   info.orphan_time_ns);
		blamer_proc_exit_text(m, &info);
		seq_putc(m, '\n');
	}
	mutex_unlock(&blamer_lock);
	return 0;
}

int blamer_proc_init(void)
{
	blamer_proc = proc_create_single("blamer", 0400, NULL,
					 blamer_proc_show);
	return blamer_proc ? 0 : -ENOMEM;
}

void blamer_proc_exit(void)
{
	proc_remove(blamer_proc);
}
