// SPDX-License-Identifier: MIT
/* Random ids, thread ids, signals held and file sizes allowed, for the writer. */
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
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

void bl_signals_hold(sigset_t *old)
{
	sigset_t all;

	/* SIGKILL and SIGSTOP cannot be held, nor glibc's own (it leaves
	 * them out); a fault raised while held kills, as unhandled. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
}

void bl_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

bool bl_fsize_allows(uint64_t end)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	       end <= (uint64_t)rl.rlim_cur;
}

bool bl_sigxfsz_pending(void)
{
	sigset_t p;

	return !sigpending(&p) && sigismember(&p, SIGXFSZ);
}

void bl_sigxfsz_take_back(bool was_pending)
{
	static const struct timespec now;
	sigset_t s;

	/* one already pending was someone else's: it stays */
	if (was_pending)
		return;
	sigemptyset(&s);
	sigaddset(&s, SIGXFSZ);
	sigtimedwait(&s, NULL, &now);
}
