// SPDX-License-Identifier: GPL-2.0
/*
 * vm_warn_test: a module whose only job is to make the kernel complain
 * when loaded, in the way the parameter "what" names:
 *
 *   warn    WARN() (the default)
 *   ubsan   a shift out of bounds, which UBSAN reports (debug kernels)
 *   kfence  a use-after-free of an object KFENCE sampled (kernels with
 *           KFENCE; tools/vm/run turns sampling on)
 *
 * The VM runner's self-test and the test bed's bed-bites suites load it to
 * prove that each kind of report on the console fails a run even when the
 * guest command itself succeeds. Never load it anywhere else.
 */
#include <linux/bug.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kfence.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

static char what[8] = "warn";
module_param_string(what, what, sizeof(what), 0444);
MODULE_PARM_DESC(what, "The complaint to cause: warn, ubsan or kfence");

static int shift = 40;
module_param(shift, int, 0444);
MODULE_PARM_DESC(shift, "The shift count of the ubsan case (out of bounds if >= 32)");

/*
 * KFENCE guards one allocation per sample interval, the first one after
 * its timer fires: allocate until one is its, then read it after freeing
 * it. On a loaded host the guest's timers starve, hence the generous limit
 * of 60 s.
 */
static void vm_warn_test_kfence(void)
{
	unsigned long end = jiffies + 60 * HZ;
	char *p;

	while (time_before(jiffies, end)) {
		p = kmalloc(32, GFP_KERNEL);
		if (!p)
			return;
		if (is_kfence_address(p)) {
			kfree(p);
			pr_info("vm_warn_test: freed KFENCE object reads %d\n",
				READ_ONCE(p[0]));
			return;
		}
		kfree(p);
		usleep_range(1000, 2000);
	}
	pr_info("vm_warn_test: no KFENCE allocation in 60 s\n");
}

static int __init vm_warn_test_init(void)
{
	if (!strcmp(what, "ubsan"))
		pr_info("vm_warn_test: 1 << %d is %d\n", shift, 1 << shift);
	else if (!strcmp(what, "kfence"))
		vm_warn_test_kfence();
	else
		WARN(1, "vm_warn_test: deliberate warning for the VM runner self-test\n");
	return 0;
}

static void __exit vm_warn_test_exit(void)
{
}

module_init(vm_warn_test_init);
module_exit(vm_warn_test_exit);

MODULE_DESCRIPTION("Deliberately makes the kernel complain on load, to test blamer's VM runner");
MODULE_LICENSE("GPL");
