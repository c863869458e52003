#!/bin/sh
# Guest side of vm-install-<KVER> (selftests/install/vm-install): the
# packages' files on a booted kernel. Runs as root in the test VM, prints TAP.
#
#   1. Debian's systemd-udevd runs with the package's rule: the real
#      path from the kernel's uevent to the device's owner and mode.
#   2. `blamer load` (the package's tool, libkmod) loads the module DKMS
#      built, by name, with reader_gid from modprobe.d.
#   3. /dev/blamer is root:blamer 0660; alice (in blamer) writes a heap,
#      bob (in no group) cannot open the device, carol (blamer and
#      blamer-readers) reads alice's heap, alice does not see carol's.
#   4. blamer load refuses, in one line that says what to do: a module
#      of another kernel, a file that is no module, a user who is not
#      root, a kernel with no blamer module installed.
n=0
fails=0
OUT=/tmp/out

t() {	# t DESCRIPTION COMMAND...: the command's status decides
	desc=$1
	shift
	n=$((n + 1))
	if "$@" >$OUT 2>&1; then
		echo "ok $n - $desc"
	else
		fails=$((fails + 1))
		echo "not ok $n - $desc"
		sed 's/^/#   /' $OUT | head -25
	fi
}
# as USER CMD: CMD run by sh as USER with the groups /etc/group gives
# USER (busybox su as root: initgroups, no password). Writers in the
# background use su directly: su and sh exec, so $! is the writer's pid.
as() { u=$1; shift; su -s /bin/sh "$u" -c "$*"; }
gid() { sed -n "s/^$1:x:\\([0-9]*\\):.*/\\1/p" /etc/group; }
# wait_heap PID: the device lists a heap of PID (root sees every heap)
wait_heap() {
	i=0
	while [ $i -lt 100 ]; do
		blamer --backend device list 2>/dev/null | grep -q "^ *$1 " && return 0
		sleep 0.1
		i=$((i + 1))
	done
	cat /tmp/*.log
	return 1
}
lists() { as "$1" blamer --backend device list | grep -q "^ *$2 "; }

rel=$(uname -r)
dev=$(gid blamer)
rd=$(gid blamer-readers)
echo "TAP version 13"
echo "1..16"

# systemd-udevd is a name udevadm answers to (Debian links it so).
ln -s udevadm /bin/systemd-udevd
mkdir -p /run/udev
t "systemd-udevd runs, with the package's 60-blamer.rules" systemd-udevd --daemon
t "blamer load is modprobe: the DKMS module of $rel, with reader_gid=$rd from modprobe.d" \
	sh -c "blamer load >$OUT.l 2>&1; cat $OUT.l; grep -qxF \
		-e 'loaded /lib/modules/$rel/updates/dkms/blamer.ko with reader_gid=$rd' \
		-e 'loaded /lib/modules/$rel/updates/dkms/blamer.ko.xz with reader_gid=$rd' $OUT.l"
t "the module's reader_gid is the group blamer-readers ($rd)" \
	sh -c "cat /sys/module/blamer/parameters/reader_gid; [ \"\$(cat /sys/module/blamer/parameters/reader_gid)\" = $rd ]"
udevadm settle --timeout=30
t "udev gave /dev/blamer to root:blamer ($dev), mode 0660" \
	sh -c "ls -ln /dev/blamer; ls -ln /dev/blamer | grep -Eq '^crw-rw---- +1 +0 +$dev '"

su -s /bin/sh alice -c "BLAMER_BACKEND=device exec hello 60" >/tmp/alice.log 2>&1 &
A=$!
t "alice (group blamer) writes a heap on the device" wait_heap $A
t "the kernel records alice's uid (1000) as the heap's owner" \
	sh -c "blamer --backend device dump $A --json | grep -q '\"uid\":1000'"
bob_cannot_write() {
	as bob "BLAMER_BACKEND=device hello 1" >$OUT.b 2>&1
	st=$?
	cat $OUT.b
	[ $st -ne 0 ] && grep -qi 'permission denied' $OUT.b
}
t "bob (no group) cannot write one: the device is closed to him" bob_cannot_write
bob_cannot_list() {
	! as bob blamer --backend device list 2>$OUT.e
	st=$?
	cat $OUT.e
	[ $st -eq 0 ] && [ "$(wc -l <$OUT.e)" = 1 ] && grep -q 'group blamer' $OUT.e
}
t "bob cannot list heaps either, and the one-line error names the group to join" bob_cannot_list
su -s /bin/sh carol -c "BLAMER_BACKEND=device exec hello 60" >/tmp/carol.log 2>&1 &
C=$!
t "carol (blamer, blamer-readers) writes a heap" wait_heap $C
t "carol reads alice's heap (reader_gid)" lists carol $A
alice_sees_own_only() { lists alice $A && ! lists alice $C; }
t "alice sees her own heap but not carol's (she is no reader)" alice_sees_own_only
kill $A $C 2>/dev/null
wait
t "the module of another kernel is refused before the kernel sees it, in one line" \
	sh -c "blamer unload && ! blamer load /other-kernel.ko 2>$OUT.e; cat $OUT.e;
		[ \$(wc -l <$OUT.e) = 1 ] && grep -q 'is built for Linux [^ ]*, this is $rel' $OUT.e"
t "after a reload through modprobe the device is root:blamer 0660 again" \
	sh -c "blamer load >/dev/null && udevadm settle && ls -ln /dev/blamer | grep -Eq '^crw-rw---- +1 +0 +$dev ' && blamer unload"
# one_line PATTERN: $OUT.e (a command's stderr) is one line matching PATTERN
one_line() { cat $OUT.e; [ "$(wc -l <$OUT.e)" = 1 ] && grep -q "$1" $OUT.e; }
not_a_module() { ! blamer load /etc/passwd 2>$OUT.e && one_line 'is not a kernel module'; }
t "a file that is no module is refused in one line" not_a_module
alice_cannot_load() { ! as alice blamer load 2>$OUT.e && one_line 'needs root.*sudo blamer load'; }
t "alice (group blamer, not root) cannot load it: one line says to use sudo" alice_cannot_load
# With the kernel's module tree hidden, modprobe finds no blamer.
no_module() {
	mount -t tmpfs none /lib/modules/$rel || return 1
	! blamer load 2>$OUT.e
	st=$?
	umount /lib/modules/$rel
	[ $st -eq 0 ] && one_line "no blamer module is installed for Linux $rel: install blamer-dkms"
}
t "with no module installed for this kernel, one line names blamer-dkms" no_module
[ $fails -eq 0 ]
