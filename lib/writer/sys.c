// SPDX-License-Identifier: MIT
/* Random ids and thread ids for the writer. */
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

uint64_t bl_random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = bl_monotonic_ns() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32;
	return v;
}

pid_t bl_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}
