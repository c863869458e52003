// SPDX-License-Identifier: MIT
/* Module loading through libkmod (the normal, dynamically linked build). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libkmod.h>

#include "cli.h"

int kmod_insert(const char *path, const char *name, const char *params, char *how,
		size_t howlen)
{
	struct kmod_ctx *ctx = kmod_new(NULL, NULL);
	struct kmod_module *mod = NULL;
	int ret;

	if (!ctx)
		return -ENOMEM;
	if (path) {
		ret = kmod_module_new_from_path(ctx, path, &mod);
		if (ret == 0)
			ret = kmod_module_insert_module(mod, 0, params);
	} else {
		ret = kmod_module_new_from_name(ctx, name, &mod);
		/* a name that modules.dep does not know has no path: not installed */
		if (ret == 0 && !kmod_module_get_path(mod))
			ret = -ENOENT;
		if (ret == 0) {
			snprintf(how, howlen, "%s", kmod_module_get_path(mod));
			ret = kmod_module_probe_insert_module(mod, 0, params, NULL, NULL, NULL);
			if (ret > 0)
				ret = -EEXIST;
		}
	}
	kmod_module_unref(mod);
	kmod_unref(ctx);
	return ret < 0 ? ret : 0;
}

int kmod_remove(const char *name)
{
	struct kmod_ctx *ctx = kmod_new(NULL, NULL);
	struct kmod_module *mod = NULL;
	int ret;

	if (!ctx)
		return -ENOMEM;
	ret = kmod_module_new_from_name(ctx, name, &mod);
	if (ret == 0)
		ret = kmod_module_remove_module(mod, KMOD_REMOVE_NOWAIT);
	kmod_module_unref(mod);
	kmod_unref(ctx);
	return ret < 0 ? ret : 0;
}
