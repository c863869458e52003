// SPDX-License-Identifier: MIT
/*
 * blamer load [MODULE.ko] [param=value...], blamer unload, blamer status.
 *
 * Which module load uses, first match wins:
 *   1. an explicit path argument (anything ending in .ko or containing /);
 *   2. the installed module "blamer" (modules.dep of the running kernel,
 *      via libkmod; the static build looks in /lib/modules/R/{extra,updates});
 *   3. ./build/kmod-<major.minor>/blamer.ko of a source tree (cwd);
 *   4. /blamer.ko (the test VM's location).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "cli.h"

#define SYS_MODULE	"/sys/module/blamer"

static bool loaded(void)
{
	return access(SYS_MODULE, F_OK) == 0;
}

static int load_error(int e, const char *what)
{
	switch (e) {
	case EPERM:
	case EACCES:
		return err("loading %s needs root (CAP_SYS_MODULE): run `sudo blamer load`", what);
	case EEXIST:
		return err("module already loaded (see `blamer status`; `blamer unload` first to change parameters)");
	case ENOEXEC:
		return err("%s is not a module for this kernel (build it with `make KVER=...`)", what);
	case EINVAL:
		return err("%s: the kernel refused it: bad parameter or wrong kernel version (see dmesg)",
			   what);
	case ENOENT:
		return err("%s not found: give the path to blamer.ko (built by `make`)", what);
	default:
		return err("loading %s failed: %s", what, strerror(e));
	}
}

int cmd_load(struct cli *c)
{
	char params[1024] = "", how[256] = "", cand[256];
	const char *path = NULL;
	struct utsname u;
	unsigned maj = 0, min = 0;
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
	if (loaded())
		return load_error(EEXIST, "blamer");
	if (path) {
		ret = kmod_insert(path, NULL, params, how, sizeof(how));
		if (ret)
			return load_error(-ret, path);
		printf("loaded %s%s%s\n", path, len ? " with " : "", params);
		return EX_OK;
	}
	ret = kmod_insert(NULL, "blamer", params, how, sizeof(how));
	if (ret == 0) {
		printf("loaded %s%s%s\n", how, len ? " with " : "", params);
		return EX_OK;
	}
	if (ret != -ENOENT)
		return load_error(-ret, how[0] ? how : "blamer");
	if (uname(&u) == 0 && sscanf(u.release, "%u.%u", &maj, &min) == 2) {
		snprintf(cand, sizeof(cand), "build/kmod-%u.%u/blamer.ko", maj, min);
		if (access(cand, R_OK) == 0) {
			ret = kmod_insert(cand, NULL, params, how, sizeof(how));
			if (ret)
				return load_error(-ret, cand);
			printf("loaded %s%s%s\n", cand, len ? " with " : "", params);
			return EX_OK;
		}
	}
	if (access("/blamer.ko", R_OK) == 0) {
		ret = kmod_insert("/blamer.ko", NULL, params, how, sizeof(how));
		if (ret)
			return load_error(-ret, "/blamer.ko");
		printf("loaded /blamer.ko%s%s\n", len ? " with " : "", params);
		return EX_OK;
	}
	return err("no blamer module installed for this kernel and no build/kmod-%u.%u/blamer.ko here: give its path (`blamer load path/to/blamer.ko`)",
		   maj, min);
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
	if (st.backend == BLAMER_BACKEND_DIR) {
		fmt_bytes(b1, sizeof(b1), st.bytes);
		printf("backend: dir %s\nheaps: %llu (%llu dead)\nbytes: %s\n", st.source,
		       (unsigned long long)st.heaps, (unsigned long long)st.dead, b1);
		return EX_OK;
	}
	fmt_bytes(b1, sizeof(b1), st.user_bytes);
	fmt_bytes(b2, sizeof(b2), st.max_slab_bytes);
	fmt_bytes(b3, sizeof(b3), st.max_user_bytes);
	fmt_bytes(b4, sizeof(b4), st.max_total_bytes);
	printf("module: loaded, %s\n", st.source);
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
		printf("  %-20s %s\n", st.params[i].name, st.params[i].value);
	return EX_OK;
}
