#!/bin/sh
# tools/demo/guest.sh: the part of `make demo` that runs inside the VM.
#
# tools/demo/run-demo boots a Debian kernel with tools/vm/run and runs this
# script as root. Each step prints what it is about to do, then does it,
# so the output reads as a short guided tour. A failing step stops the
# tour with a non-zero status (the VM runner passes it to the host).
#
# Stage 1 (foundation): the module loads and exposes its device and
# parameters. Later stages add writers, the blamer CLI and exporters.

step() {
	echo
	echo "==> $*"
}

fail() {
	echo "demo: $*" >&2
	exit 1
}

step "The kernel we booted"
uname -sr

step "Load the blamer module: insmod /blamer.ko"
[ -f /blamer.ko ] || fail "no /blamer.ko in the VM (build it: make modules)"
insmod /blamer.ko || fail "insmod failed"
lsmod | grep '^blamer ' || fail "blamer is not listed by lsmod"

step "Its character device: ls -l /dev/blamer"
# devtmpfs creates the node as soon as the misc device registers.
ls -l /dev/blamer || fail "/dev/blamer does not exist"

step "Its parameters (limits the kernel enforces): /sys/module/blamer/parameters"
if [ -d /sys/module/blamer/parameters ]; then
	grep . /sys/module/blamer/parameters/*
else
	echo "(the module has no parameters)"
fi

step "Unload it again: rmmod blamer"
rmmod blamer || fail "rmmod failed"
[ ! -e /dev/blamer ] || fail "/dev/blamer still exists after rmmod"
echo "done: /dev/blamer is gone"
