#!/bin/bash
# scripts/deps.sh: install every Debian 12 package blamer needs.
#
# Idempotent: asks dpkg what is missing and only then runs apt-get
# (update + install, as root or through sudo). Prints nothing when there
# is nothing to do. Kernel packages: 6.1 (linux-*-amd64, the bookworm
# default) and 6.12 (linux-*-6.12-amd64, from bookworm-security/updates).
set -eu
{ # parsed as a whole before it runs, so editing this file cannot break a run in progress

pkgs=(
	# build
	build-essential make gcc libc6-dev pkg-config git
	# 32-bit static test binaries (the module's compat ioctl path)
	gcc-multilib
	# kernels: headers to build the module, images to boot in the VM;
	# stock and PREEMPT_RT
	linux-headers-amd64 linux-headers-6.12-amd64
	linux-image-amd64 linux-image-6.12-amd64
	linux-headers-rt-amd64 linux-headers-6.12-rt-amd64
	linux-image-rt-amd64 linux-image-6.12-rt-amd64
	# kernel source tarballs: kselftest harness, checkpatch, and the
	# debug kernels (scripts/debug-kernel), with what building them needs
	linux-source-6.1 linux-source-6.12 xz-utils zstd perl
	bc flex bison libelf-dev libssl-dev
	# kernel checks
	sparse
	# VM test bed (tools/vm/run): qemu, busybox initramfs, cpio, flock
	qemu-system-x86 busybox-static cpio util-linux kmod
	# library and tools; lttng-tools lets `make bench` time an enabled
	# LTTng-UST tracepoint
	libkmod-dev liblttng-ust-dev lttng-tools
	# bench/hot-model: llvm-mca models the writes on CPUs not here, from
	# the instructions gdb traces
	llvm-14 gdb
	# tests: sanitizers and fuzzing, memory checks, stress, the syscall
	# fuzzer trinity
	clang libclang-rt-14-dev valgrind stress-ng trinity
	# documentation and exporters; the JSON schema's validator; the real
	# Prometheus server and node_exporter the export is tested against
	man-db python3 python3-prometheus-client python3-docutils python3-jsonschema
	prometheus prometheus-node-exporter
	# the prometheus-server suite scrapes and queries with curl; the
	# systemd-unit suite checks the unit with systemd-analyze; reader-max
	# reads CPU time and peak RSS with /usr/bin/time
	curl systemd time
	# the Python binding (bindings/python): Debian's python3 headers and
	# its debug build (reference counts in the tests), the Debian
	# packaging of python3-blamer, strace (no system call on the hot
	# path), and gunicorn and uWSGI with Flask for the real-server tests
	python3-dev python3-dbg dh-python strace gunicorn python3-flask
	uwsgi-core uwsgi-plugin-python3
	# installing (selftests/install): DKMS, building and checking the
	# Debian packages, what their maintainer scripts and the tests use
	dkms dh-dkms debhelper dpkg-dev lintian adduser udev bash-completion
)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case $st in
	ii*) ;;
	*) missing+=("$p") ;;
	esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || {
		echo "deps: need root to install: ${missing[*]}" >&2
		exit 1
	}
	sudo=sudo
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# Debian's kernel packages write an initramfs for each kernel image (some
# 27 s each, 4 images). The test bed boots its own (tools/vm/run), so on
# CI, whose machine never boots them, INITRD=No skips that (the
# initramfs-tools hook honours it); anywhere else they get theirs, as
# any kernel package would, since one of them may become the default boot.
initrd=
[ "${CI:-}" = true ] && initrd=INITRD=No
$sudo env $initrd apt-get install -y -qq --no-install-recommends "${missing[@]}"
exit
}
