// SPDX-License-Identifier: MIT
/*
 * Module loading with the raw finit_module/delete_module system calls,
 * for the static build (Debian ships libkmod only as a shared library;
 * the static build runs in the test VM). Same interface as
 * kmod_libkmod.c, but it loads by path only: finding the installed
 * module, its modprobe.d options and dependencies is modprobe's job, and
 * reimplementing part of it would load differently from modprobe.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "cli.h"

/* Larger than any module we would load; a bound for reading a file. */
#define KMOD_MAX_FILE	(64u << 20)

int kmod_lookup(const char *name, char *path, size_t pathlen, char *opts, size_t optslen)
{
	(void)name, (void)path, (void)pathlen, (void)opts, (void)optslen;
	return -ENOTSUP;
}

static int read_file(const char *path, unsigned char **data, size_t *size)
{
	struct stat st;
	size_t got = 0;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > KMOD_MAX_FILE) {
		close(fd);
		return -ENOEXEC;
	}
	*size = (size_t)st.st_size;
	*data = malloc(*size ? *size : 1);
	if (!*data) {
		close(fd);
		return -ENOMEM;
	}
	while (got < *size) {
		ssize_t n = read(fd, *data + got, *size - got);

		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			close(fd);
			free(*data);
			return -e;
		}
		got += (size_t)n;
	}
	close(fd);
	return 0;
}

/*
 * The "vermagic=" string of the .modinfo section of an ELF64 module.
 * Every offset and size comes from the file, so each is checked against
 * the file's size before use.
 */
static int elf_vermagic(const unsigned char *d, size_t size, char *buf, size_t len)
{
	static const char key[] = "vermagic=";
	const Elf64_Ehdr *eh = (const void *)d;
	const Elf64_Shdr *sh, *strs;
	size_t i, off;

	if (size < sizeof(*eh) || memcmp(d, ELFMAG, SELFMAG) || d[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shstrndx >= eh->e_shnum ||
	    eh->e_shoff % _Alignof(Elf64_Shdr) ||
	    eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
		return -ENOEXEC;
	sh = (const void *)(d + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	if (strs->sh_offset > size || strs->sh_size > size - strs->sh_offset)
		return -ENOEXEC;
	for (i = 0; i < eh->e_shnum; i++) {
		const char *p;

		if (sh[i].sh_name >= strs->sh_size ||
		    strs->sh_size - sh[i].sh_name < sizeof(".modinfo") ||
		    sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
			continue;
		if (memcmp(d + strs->sh_offset + sh[i].sh_name, ".modinfo",
			   sizeof(".modinfo")) != 0)
			continue;
		/* NUL-separated key=value strings; the last may lack its NUL */
		p = (const char *)d + sh[i].sh_offset;
		for (off = 0; off < sh[i].sh_size; ) {
			size_t n = strnlen(p + off, sh[i].sh_size - off);

			if (n > sizeof(key) - 1 && memcmp(p + off, key, sizeof(key) - 1) == 0) {
				snprintf(buf, len, "%.*s", (int)(n - (sizeof(key) - 1)),
					 p + off + sizeof(key) - 1);
				return 0;
			}
			off += n + 1;
		}
		return -ENODATA;
	}
	return -ENODATA;
}

int kmod_vermagic(const char *path, char *buf, size_t len)
{
	static const unsigned char xz[] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	static const unsigned char zst[] = { 0x28, 0xb5, 0x2f, 0xfd };
	static const unsigned char gz[] = { 0x1f, 0x8b };
	unsigned char *d = NULL;
	size_t size = 0;
	int ret;

	ret = read_file(path, &d, &size);
	if (ret)
		return ret;
	if ((size >= sizeof(xz) && !memcmp(d, xz, sizeof(xz))) ||
	    (size >= sizeof(zst) && !memcmp(d, zst, sizeof(zst))) ||
	    (size >= sizeof(gz) && !memcmp(d, gz, sizeof(gz))))
		ret = -ENOTSUP;		/* compressed: the kernel checks it */
	else
		ret = elf_vermagic(d, size, buf, len);
	free(d);
	return ret;
}

int kmod_insert(const char *path, const char *name, const char *params)
{
	int fd, ret;

	(void)name;
	if (!path)
		return -ENOTSUP;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = (int)syscall(SYS_finit_module, fd, params ? params : "", 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

int kmod_remove(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}
