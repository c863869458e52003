// SPDX-License-Identifier: MIT
/*
 * blamer load [MODULE.ko] [param=value...], blamer unload, blamer status.
 *
 * `blamer load` is `modprobe blamer`: the module installed for the running
 * kernel (by the blamer-dkms package, `dkms install` or `make
 * modules_install`), its dependencies, and the options of modprobe.d
 * (where the package sets reader_gid) followed by the ones given here.
 * A module that is not installed (a build tree's, the test VM's
 * /blamer.ko) is loaded only when its path is given. Either way its
 * vermagic is checked against the running kernel first: the kernel's own
 * refusal is a bare "Exec format error" or "Invalid argument".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "cli.h"
#include "term.h"

#define SYS_MODULE	"/sys/module/blamer"

static bool loaded(void)
{
	return access(SYS_MODULE, F_OK) == 0;
}

static int load_error(int e, const char *what, const char *release)
{
	switch (e) {
	case EPERM:
	case EACCES:
		if (geteuid() != 0)
			return err("loading %s needs root (CAP_SYS_MODULE): run `sudo blamer load`",
				   what);
		return err("the kernel refused %s (lockdown or Secure Boot wants a signed module: enroll the DKMS key with mokutil, see dmesg)",
			   what);
	case EKEYREJECTED:
	case ENOKEY:
		return err("the kernel refused %s: its signature is missing or not trusted (enroll the DKMS key with mokutil, see dmesg)",
			   what);
	case EEXIST:
		return err("module already loaded (see `blamer status`; `blamer unload` first to change parameters)");
	case ENOEXEC:
		return err("%s is not a module for this kernel (Linux %s): build it for this kernel (`make modules`) or install blamer-dkms",
			   what, release);
	case EINVAL:
		return err("%s: the kernel refused it: a bad parameter or a wrong kernel version (see dmesg)",
			   what);
	case ENOENT:
		return err("%s not found: give the path to a blamer.ko (`make modules` builds one)", what);
	case ENOSYS:
		return err("this kernel (Linux %s) cannot load modules: use the dir backend (--backend dir)",
			   release);
	default:
		return err("loading %s failed: %s", what, strerror(e));
	}
}

/* The module's vermagic starts with the release it was built for. */
static int check_vermagic(const char *path, const char *release)
{
	char vm[256], *end;
	int ret = kmod_vermagic(path, vm, sizeof(vm));

	if (ret == -ENOTSUP)
		return 0;	/* unreadable here (compressed): the kernel checks */
	if (ret == -ENODATA || ret == -ENOEXEC)
		return err("%s is not a kernel module (no .modinfo with a vermagic)", path);
	if (ret)
		return load_error(-ret, path, release);
	end = vm + strcspn(vm, " ");
	*end = '\0';
	if (strcmp(vm, release) != 0)
		return err("%s is built for Linux %s, this is %s: build it for this kernel (`make modules`) or install blamer-dkms",
			   path, vm, release);
	return 0;
}

int cmd_load(struct cli *c)
{
	char params[1024] = "", found[4096], opts[1024] = "";
	const char *path = NULL;
	struct utsname u;
	size_t len = 0;
	int i, ret;

	for (i = 0; i < c->nargs; i++) {
		const char *a = c->args[i];

		if (strchr(a, '=')) {
			int n = snprintf(params + len, sizeof(params) - len, "%s%s",
					 len ? " " : "", a);

			if (n < 0 || (size_t)n >= sizeof(params) - len)
				return usage_err("module parameters too long");
			len += (size_t)n;
		} else if (!path) {
			path = a;
		} else {
			return usage_err("give one module path and param=value pairs ('%s' is neither)",
					 a);
		}
	}
	if (uname(&u))
		return err("uname: %s", strerror(errno));
	if (loaded())
		return load_error(EEXIST, "blamer", u.release);
	if (path) {
		ret = check_vermagic(path, u.release);
		if (ret)
			return ret;
	}
	/* /proc/modules exists exactly when the kernel has CONFIG_MODULES */
	if (access("/proc/modules", F_OK) != 0)
		return load_error(ENOSYS, "blamer", u.release);
	if (path) {
		ret = kmod_insert(path, NULL, params);
		if (ret)
			return load_error(-ret, path, u.release);
		tty_printf(stdout, "loaded %s%s%s\n", path, len ? " with " : "", params);
		return EX_OK;
	}
	ret = kmod_lookup("blamer", found, sizeof(found), opts, sizeof(opts));
	if (ret == -ENOTSUP)
		return err("this blamer is built without libkmod: give the module's path (`blamer load path/to/blamer.ko`) or run `modprobe blamer`");
	if (ret == -ENOENT)
		return err("no blamer module is installed for Linux %s: install blamer-dkms or run `make modules_install`, or give a built one's path (`blamer load path/to/blamer.ko`)",
			   u.release);
	if (ret)
		return load_error(-ret, "blamer", u.release);
	ret = check_vermagic(found, u.release);
	if (ret)
		return ret;
	ret = kmod_insert(NULL, "blamer", params);
	if (ret)
		return load_error(-ret, found, u.release);
	tty_printf(stdout, "loaded %s%s%s%s%s\n", found, opts[0] || len ? " with " : "", opts,
		   opts[0] && len ? " " : "", params);
	return EX_OK;
}

int cmd_unload(struct cli *c)
{
	int ret;

	if (c->nargs)
		return usage_err("unload takes no arguments");
	if (!loaded())
		return err("the blamer module is not loaded (nothing to unload)");
	ret = kmod_remove("blamer");
	if (ret == -EBUSY || ret == -EAGAIN || ret == -EWOULDBLOCK)
		return err("module in use: processes still have /dev/blamer open or slabs mapped (stop them first)");
	if (ret == -EPERM || ret == -EACCES)
		return err("unloading modules needs root (CAP_SYS_MODULE): run `sudo blamer unload`");
	if (ret)
		return err("unloading failed: %s", strerror(-ret));
	printf("unloaded blamer\n");
	return EX_OK;
}

/* The writes every heap could not record in full, summed by reason. */
static void print_all_drops(const struct blamer_backend_status *st)
{
	if (st->dropped)
		printf("heaps that dropped writes: %llu\n", (unsigned long long)st->dropping_heaps);
	print_drops(stdout, "", st->drops, st->dropped);
	if (!st->dropped)
		printf("dropped: nothing (every write was recorded in full)\n");
}

int cmd_status(struct cli *c)
{
	struct blamer_reader_opts o = { .backend = c->backend, .dir = c->dir };
	struct blamer_backend_status st;
	struct blamer_reader *r;
	char e[512], b1[32], b2[32], b3[32], b4[32];
	size_t i;
	int ret;

	if (c->nargs)
		return usage_err("status takes no arguments");
	/* the backend every other command would use */
	r = blamer_reader_open(&o, e, sizeof(e));
	if (!r)
		return err("%s", e);
	ret = check_source(c, r);
	if (!ret && blamer_reader_status(r, &st, e, sizeof(e)))
		ret = err("%s", e);
	if (!ret && !c->json && st.backend == BLAMER_BACKEND_DIR && !dir_asked(c))
		fprintf(stderr, "blamer: %s: showing the dir backend\n", loaded() ?
			"the module is loaded but /dev/blamer is missing" :
			"/dev/blamer is absent (the module is not loaded: `blamer load` loads it)");
	blamer_reader_close(r);
	if (ret)
		return ret;
	if (c->json) {
		blamer_status_write_json(&st, stdout);
		return EX_OK;
	}
	print_all_drops(&st);
	if (st.backend == BLAMER_BACKEND_DIR) {
		fmt_bytes(b1, sizeof(b1), st.bytes);
		tty_printf(stdout, "backend: dir %s\n", st.source);
		printf("heaps: %llu (%llu dead)\nbytes: %s\n", (unsigned long long)st.heaps,
		       (unsigned long long)st.dead, b1);
		printf("identity: claimed (each heap's pid, uid, start time, state and command line are its files' word)\n");
		return EX_OK;
	}
	fmt_bytes(b1, sizeof(b1), st.user_bytes);
	fmt_bytes(b2, sizeof(b2), st.max_slab_bytes);
	fmt_bytes(b3, sizeof(b3), st.max_user_bytes);
	fmt_bytes(b4, sizeof(b4), st.max_total_bytes);
	tty_printf(stdout, "module: loaded, %s\n", st.source);
	printf("identity: kernel (pid, uid, start time, comm and exit status are the kernel's facts)\n");
	printf("your slabs: %llu (%llu orphaned, at most %llu kept), %s of %s\n",
	       (unsigned long long)st.user_slabs, (unsigned long long)st.user_orphans,
	       (unsigned long long)st.max_user_orphans, b1, b3);
	/* Device-wide counts only for those who may read every slab. */
	if (st.device_totals) {
		fmt_bytes(b1, sizeof(b1), st.bytes);
		printf("all slabs: %llu (%llu orphaned), %s of %s\n",
		       (unsigned long long)st.slabs, (unsigned long long)st.orphans, b1, b4);
	}
	printf("limits: %s per slab, %s per user, %s in all\nparameters:\n", b2, b3, b4);
	for (i = 0; i < st.nparams; i++)
		tty_printf(stdout, "  %-20s %s\n", st.params[i].name, st.params[i].value);
	return EX_OK;
}
