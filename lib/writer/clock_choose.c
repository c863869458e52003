// SPDX-License-Identifier: MIT
/*
 * Which clock a context's heaps stamp activities with (clock.h), decided
 * once per context at open, off the hot path.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "clock.h"
#include "internal.h"

#define CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/current_clocksource"

/* CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate in every
 * P-, C- and T-state (the kernel's "nonstop_tsc"). */
static bool cpu_tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d;

	if (__get_cpuid_max(0x80000000, NULL) < 0x80000007)
		return false;
	__cpuid(0x80000007, a, b, c, d);
	(void)a; (void)b; (void)c;
	return d & (1u << 8);
#else
	return false;
#endif
}

/*
 * The kernel keeps the TSC as its clocksource only after checking that it
 * is synchronised across CPUs and stable against a watchdog; if it ever
 * stops trusting it, it switches to another one. Its judgement is better
 * than anything a process can measure at startup.
 */
static bool kernel_uses_tsc(void)
{
	char buf[16] = "";
	ssize_t n;
	int fd;

	fd = open(CLOCKSOURCE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n == 4 && !memcmp(buf, "tsc\n", 4);
}

int bl_clock_choose(const char *env, uint32_t *kind)
{
	*kind = BLAMER_CLOCK_MONOTONIC;
	if (!env || !*env || !strcmp(env, "auto")) {
		if (BL_HAVE_TSC && cpu_tsc_invariant() && kernel_uses_tsc())
			*kind = BLAMER_CLOCK_TSC;
		return 0;
	}
	if (!strcmp(env, "monotonic"))
		return 0;
	if (!strcmp(env, "tsc")) {
		if (!BL_HAVE_TSC || !cpu_tsc_invariant())
			return bl_error(EINVAL, "blamer: BLAMER_CLOCK=tsc, but this CPU has no invariant TSC");
		*kind = BLAMER_CLOCK_TSC;
		return 0;
	}
	return bl_error(EINVAL, "blamer: BLAMER_CLOCK must be auto, tsc or monotonic, not \"%.32s\"",
			env);
}
