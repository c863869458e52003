// SPDX-License-Identifier: GPL-2.0
/*
 * vm_warn_test: a module whose only job is to WARN when loaded.
 *
 * The VM runner's self-test loads it to prove that a kernel warning on the
 * console fails a run even when the guest command itself succeeds. Never
 * load it anywhere else.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init vm_warn_test_init(void)
{
	WARN(1, "vm_warn_test: deliberate warning for the VM runner self-test\n");
	return 0;
}

static void __exit vm_warn_test_exit(void)
{
}

module_init(vm_warn_test_init);
module_exit(vm_warn_test_exit);

MODULE_DESCRIPTION("Deliberately WARNs on load to test blamer's VM runner");
MODULE_LICENSE("GPL");
