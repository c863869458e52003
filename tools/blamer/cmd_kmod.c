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

bool module_loaded(void)
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
	if (module_loaded())
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
	if (!module_loaded())
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

