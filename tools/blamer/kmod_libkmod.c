// SPDX-License-Identifier: MIT
/*
 * Module loading through libkmod (the normal, dynamically linked build):
 * the same lookup, configuration and dependency handling as modprobe(8).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libkmod.h>

#include "cli.h"

int kmod_lookup(const char *name, char *path, size_t pathlen, char *opts, size_t optslen)
{
	struct kmod_ctx *ctx = kmod_new(NULL, NULL);
	struct kmod_module *mod = NULL;
	const char *p, *o;
	int ret;

	if (!ctx)
		return -ENOMEM;
	ret = kmod_module_new_from_name(ctx, name, &mod);
	/* a name that modules.dep does not know has no path: not installed */
	p = ret == 0 ? kmod_module_get_path(mod) : NULL;
	if (ret == 0 && !p)
		ret = -ENOENT;
	if (ret == 0) {
		size_t n;

		o = kmod_module_get_options(mod);
		snprintf(path, pathlen, "%s", p);
		snprintf(opts, optslen, "%s", o ? o : "");
		n = strlen(opts);
		while (n && opts[n - 1] == ' ')
			opts[--n] = '\0';
	}
	kmod_module_unref(mod);
	kmod_unref(ctx);
	return ret < 0 ? ret : 0;
}

int kmod_vermagic(const char *path, char *buf, size_t len)
{
	struct kmod_ctx *ctx = kmod_new(NULL, NULL);
	struct kmod_module *mod = NULL;
	struct kmod_list *info = NULL, *l;
	int ret;

	if (!ctx)
		return -ENOMEM;
	ret = kmod_module_new_from_path(ctx, path, &mod);
	if (ret == 0)
		ret = kmod_module_get_info(mod, &info);
	if (ret >= 0) {
		ret = -ENODATA;
		kmod_list_foreach(l, info) {
			if (strcmp(kmod_module_info_get_key(l), "vermagic") == 0) {
				snprintf(buf, len, "%s", kmod_module_info_get_value(l));
				ret = 0;
				break;
			}
		}
	} else if (ret != -ENOENT && ret != -EACCES && ret != -ENOMEM) {
		/* libkmod says EINVAL, ENODATA, ... for a file that is no ELF module */
		ret = -ENOEXEC;
	}
	kmod_module_info_free_list(info);
	kmod_module_unref(mod);
	kmod_unref(ctx);
	return ret;
}

int kmod_insert(const char *path, const char *name, const char *params)
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
		if (ret == 0 && !kmod_module_get_path(mod))
			ret = -ENOENT;
		if (ret == 0) {
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
