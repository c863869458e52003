// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: planted bugs, built only by the test bed (make ... BLAMER_PLANT=y,
 * see tools/vm/tests/bed-bites). Each is one kind of bug the debug kernels
 * must catch; the test passes only if the run fails with the sanitizer's
 * report, so a test bed that stops catching bugs is noticed. The module
 * parameter plant chooses the bug: none, uaf, lock or sleep.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include "plant.h"

static char plant[8] = "none";
module_param_string(plant, plant, sizeof(plant), 0444);
MODULE_PARM_DESC(plant, "Test bed only: the bug to plant (none, uaf, lock, sleep)");

static DEFINE_MUTEX(blamer_plant_a);
static DEFINE_MUTEX(blamer_plant_b);
static DEFINE_SPINLOCK(blamer_plant_spin);

static bool blamer_planted(const char *bug)
{
	return !strcmp(plant, bug);
}

/* lock: open takes a then b ... */
void blamer_plant_open(void)
{
	if (!blamer_planted("lock"))
		return;
	mutex_lock(&blamer_plant_a);
	mutex_lock(&blamer_plant_b);
	mutex_unlock(&blamer_plant_b);
	mutex_unlock(&blamer_plant_a);
}

/*
 * ... and release takes b then a: lockdep sees the inversion without the
 * two ever racing. uaf: release reads the context it has just freed.
 * sleep: release allocates with GFP_KERNEL, which may sleep, under a
 * spinlock.
 */
void blamer_plant_release(const void *freed)
{
	if (blamer_planted("lock")) {
		mutex_lock(&blamer_plant_b);
		mutex_lock(&blamer_plant_a);
		mutex_unlock(&blamer_plant_a);
		mutex_unlock(&blamer_plant_b);
	} else if (blamer_planted("uaf")) {
		pr_info("planted use-after-free reads %d\n",
			READ_ONCE(*(const char *)freed));
	} else if (blamer_planted("sleep")) {
		void *p;

		spin_lock(&blamer_plant_spin);
		p = kmalloc(64, GFP_KERNEL);
		spin_unlock(&blamer_plant_spin);
		kfree(p);
	}
}
