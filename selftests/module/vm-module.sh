#!/bin/sh
# Guest side of the vm-module-<KVER> suites: runs inside the test VM
# (tools/vm/run) as root and prints TAP. selftests/module/vm-suite adds
# this script as /bin/vm-module with the blamer_test_* programs,
# blamer_slabctl, blamer_fuzz and stress-ng (with its libraries).
#
#   1. load the module with small limits; device mode and parameters
#   2. every kselftest harness program as root, then as the unprivileged
#      user, then the 32-bit builds as root (compat ioctls), if built; the
#      error paths with fault injection where the kernel has it
#   3. cross-user rules between two unprivileged users (as-user/as-user2),
#      a slab whose owner is SIGKILLed, read and released; memory cgroup
#      charges of pages at first touch (the writer's cgroup; a reader
#      allocates nothing, so an orphan whose creator's cgroup is full
#      reads without waiting) and of BLAMER_CREATE_POPULATE slabs (at
#      creation)
#   4. unload: refused while an fd or a mapping is open, orphans freed
#   5. stress-ng's device stressor against /dev/blamer, root and user at
#      once, and blamer_fuzz (a random syscall exerciser), root and user
#      at once
#   6. no kernel message above info level at any point but while
#      blamer_test_fault makes allocations fail (the host runner separately
#      fails the run on any BUG/WARNING/Oops/KASAN report on the console)
set -u -o pipefail

C=/bin/blamer_slabctl
PARAMS="max_slab_bytes=4194304 max_user_bytes=16777216 max_total_bytes=67108864 max_user_orphans=32"
fails=0

check() {	# check DESCRIPTION COMMAND...
	d=$1
	shift
	if "$@"; then
		echo "ok - $d"
	else
		echo "not ok - $d"
		fails=$((fails + 1))
	fi
}
# Prefix kselftest result lines so root and user runs stay distinct.
tag() {
	sed -E "s|^((not )?ok [0-9]+) |\\1 $1: |"
}
# Wait for FILE to hold a line (a background slab holder's ID).
wait_line() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ -s "$1" ]
}
eq() { [ "$1" = "$2" ] || { echo "# got '$1', want '$2'"; return 1; }; }
# The guest's seconds since boot, for the time each part took (TAP
# comments: what a change to the bed's cost is measured against).
since_boot() { read -r up _ </proc/uptime && echo "$up"; }
took() {	# took WHAT START
	echo "# time: $1 $(awk -v a="$2" -v b="$(since_boot)" 'BEGIN { printf "%.1f", b - a }') s"
}

dmesg -c >/dev/null

# The module leaves the device's owner and mode to udev (the shipped rule:
# root:blamer 0660), so devtmpfs creates it root-only. These tests are
# about the per-slab rules, so after each load the test bed opens the
# device to every user, as an administrator could (vm-install tests the
# shipped rule).
open_device() { chmod 0666 /dev/blamer; }
load() { insmod /blamer.ko $PARAMS && open_device; }

# ---- 1. load --------------------------------------------------------------
echo "# part 1 at $(since_boot) s since boot"
check "insmod with parameters" insmod /blamer.ko $PARAMS
check "/dev/blamer is created root-only (crw-------): udev decides, not the module" \
	sh -c 'ls -l /dev/blamer | grep -q "^crw------- *[0-9]* root *root "'
check "a user cannot open the root-only device" \
	sh -c '! as-user sh -c ": </dev/blamer" 2>/dev/null'
open_device
check "parameters readable by any user" \
	eq "$(as-user cat /sys/module/blamer/parameters/max_slab_bytes)" 4194304
check "parameters not writable by users" \
	sh -c '! as-user sh -c "echo 8192 > /sys/module/blamer/parameters/max_slab_bytes" 2>/dev/null'
check "no /proc/blamer" [ ! -e /proc/blamer ]

# ---- 2. harness -----------------------------------------------------------
echo "# part 2 at $(since_boot) s since boot"
# The debug kernels: fewer rounds of blamer_test_ioctl's concurrent churn
# (test_ioctl.c, rounds()): 16 of 40 there, where a round costs five to
# fifteen times a stock kernel's.
case $(uname -r) in
*debug*) export BLAMER_TEST_ROUNDS=16 ;;
esac
for t in ioctl map pages exit owner perm quota race fault; do
	# The error paths make the kernel fail allocations, and the module's
	# load, on purpose: what the kernel says then is kept apart (below).
	[ $t = fault ] && dmesg -r -c >>/tmp/dmesg.kept
	echo "# blamer_test_$t as root"
	t0=$(since_boot)
	BLAMER_KO=/blamer.ko blamer_test_$t 2>&1 | tag "$t/root" ||
		fails=$((fails + 1))
	took "blamer_test_$t as root" "$t0"
	echo "# blamer_test_$t as uid 1000"
	t0=$(since_boot)
	as-user blamer_test_$t 2>&1 | tag "$t/user" || fails=$((fails + 1))
	took "blamer_test_$t as uid 1000" "$t0"
done
echo "# the kernel during blamer_test_fault (failures it was made to have;"
echo "# the stacks of the loads its module_init sweep made again left out):"
dmesg -r -c | grep -E '^<[0-4]>' |
	awk '/\] CPU: [0-9]+ (UID: [0-9]+ )?PID: [0-9]+ Comm: /{ s = 1 } !s { print } /<\/TASK>/{ s = 0 }' |
	sed 's/^/#   /' | head -n 40
for t in ioctl map; do
	if [ -x /bin/blamer_test_${t}32 ]; then
		echo "# blamer_test_${t}32 (compat ioctls) as root"
		blamer_test_${t}32 2>&1 | tag "$t/compat32" ||
			fails=$((fails + 1))
	else
		echo "ok - 32-bit $t run # SKIP no 32-bit build (gcc-multilib)"
	fi
done
check "the tests put the parameters back" \
	eq "$(cat /sys/module/blamer/parameters/max_user_bytes)" 16777216

# ---- 3. cross-user, SIGKILL postmortem ------------------------------------
echo "# part 3 at $(since_boot) s since boot"
rm -f /tmp/h1
as-user $C hold 8192 >/tmp/h1 &
hp=$!
check "as-user holds a live slab" wait_line /tmp/h1
id=$(cat /tmp/h1)
check "as-user2 cannot open as-user's live slab (ENOENT)" \
	eq "$(as-user2 $C map "$id")" ENOENT
check "another as-user process maps it read-only" eq "$(as-user $C map "$id")" ok
check "root maps it (CAP_SYS_PTRACE)" eq "$($C map "$id")" ok
check "as-user2 cannot release it (ENOENT)" eq "$(as-user2 $C release "$id")" ENOENT
check "another process's live slab cannot be released (EBUSY)" \
	eq "$(as-user $C release "$id")" EBUSY
kill -KILL $hp
wait $hp 2>/dev/null
check "as-user2 still cannot open the orphan (ENOENT)" \
	eq "$(as-user2 $C map "$id")" ENOENT
check "as-user maps the orphan, contents intact" eq "$(as-user $C map "$id")" ok
check "as-user2 cannot release the orphan (ENOENT)" \
	eq "$(as-user2 $C release "$id")" ENOENT
check "as-user releases the orphan" eq "$(as-user $C release "$id")" ok
check "a released slab is gone (ENOENT)" eq "$(as-user $C release "$id")" ENOENT

# ---- 3b. memory cgroup accounting ------------------------------------------
echo "# part 3b at $(since_boot) s since boot"
# Pages come at a writer's first touch, charged to its cgroup; readers
# map holes as the shared zero-filled hole page and allocate nothing;
# BLAMER_CREATE_POPULATE charges every page at creation.
cg=/sys/fs/cgroup/blamer-test
rcg=/sys/fs/cgroup/blamer-reader
# run_in CGROUP OUT CMD...: CMD in CGROUP in the background, stdout to OUT.
run_in() {
	c=$1 o=$2
	shift 2
	rm -f "$o"
	sh -c "echo \$\$ >$c/cgroup.procs && exec $*" >"$o" &
}
# Wait for FILE to hold a line matching PATTERN.
wait_grep() {
	i=0
	while ! grep -q "$1" "$2" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	grep -q "$1" "$2"
}
mem() { cat "$1/memory.current"; }
if mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup &&
	echo +memory >/sys/fs/cgroup/cgroup.subtree_control && mkdir $cg $rcg &&
	echo 6M >$cg/memory.max; then
	# A lazy slab: charged as its pages are written.
	before=$(mem $cg)
	run_in $cg /tmp/c1 $C holdlazy 4194304
	cp=$!
	check "a holder of an untouched 4 MiB slab runs in a cgroup with memory.max=6M" \
		wait_line /tmp/c1
	id=$(head -n 1 /tmp/c1)
	created=$(mem $cg)
	kill -USR1 $cp
	check "it writes every page" wait_grep '^written$' /tmp/c1
	written=$(mem $cg)
	# memory.current moves in per-CPU batches of up to 64 pages: the
	# checks leave that much room.
	echo "# memory.current $before -> $created (created) -> $written (written)"
	check "an untouched 4 MiB slab charges its creator's cgroup under 1 MiB" \
		[ "$created" -lt 1048576 ]
	check "... and at least 4 MiB once every page is written" \
		[ "$written" -ge 4194304 ]
	kill -KILL $cp
	wait $cp 2>/dev/null
	check "the orphan stays charged" [ "$(mem $cg)" -ge 4194304 ]
	check "release the orphan" eq "$($C release "$id")" ok
	check "its pages are uncharged (freed)" [ "$(mem $cg)" -lt 4194304 ]

	# A root reader in another cgroup reads every page of it: holes.
	run_in $cg /tmp/c1 $C holdlazy 4194304
	cp=$!
	check "a holder of another untouched 4 MiB slab" wait_line /tmp/c1
	id=$(head -n 1 /tmp/c1)
	before=$(mem $cg)
	rbefore=$(mem $rcg)
	run_in $rcg /tmp/r1 $C readall "$id"
	rp=$!
	check "a root reader in another cgroup reads every page (zeroes)" \
		wait_grep '^ok$' /tmp/r1
	after=$(mem $cg)
	rafter=$(mem $rcg)
	echo "# owner's memory.current $before -> $after, reader's $rbefore -> $rafter"
	check "the owner's cgroup holds under 1 MiB before the reader" \
		[ "$before" -lt 1048576 ]
	check "a reader allocates no page: the owner's cgroup still holds under 1 MiB" \
		[ "$after" -lt 1048576 ]
	check "... and the reader's under 1 MiB" [ "$rafter" -lt 1048576 ]
	kill -USR1 $cp
	check "the owner writes every page after the reader mapped them as holes" \
		wait_grep '^written$' /tmp/c1
	check "... charged to the owner's cgroup" [ "$(mem $cg)" -ge 4194304 ]
	check "a new reader sees every page written" eq "$($C map "$id")" ok
	kill -KILL $rp $cp
	wait $rp $cp 2>/dev/null
	check "release that orphan" eq "$($C release "$id")" ok
	check "its pages are uncharged" [ "$(mem $cg)" -lt 4194304 ]

	# An orphan whose creator's cgroup is at memory.max with nothing
	# left in it to kill: reading its unwritten pages once made the
	# reader's faults charge that cgroup, fail and retry forever.
	echo 2M >$cg/memory.max
	id=$(sh -c "echo \$\$ >$cg/cgroup.procs && exec $C touch 4194304 1048576")
	echo "# the creator's cgroup: memory.current $(mem $cg), memory.max $(cat $cg/memory.max)"
	check "a creator with memory.max=2M leaves a 4 MiB orphan, 1 MiB written" \
		[ -n "$id" ]
	oom0=$(sed -n 's/^oom //p' $cg/memory.events)
	echo 1M >$rcg/memory.max
	run_in $rcg /tmp/r1 $C readall "$id"
	rp=$!
	check "root, in a cgroup of 1 MiB, reads every page of it without hanging" \
		wait_grep '^ok$' /tmp/r1
	check "... and the full cgroup saw no new OOM" \
		eq "$(sed -n 's/^oom //p' $cg/memory.events)" "$oom0"
	kill -KILL $rp
	wait $rp 2>/dev/null
	check "release that orphan" eq "$($C release "$id")" ok
	echo 6M >$cg/memory.max
	echo max >$rcg/memory.max

	# BLAMER_CREATE_POPULATE: charged at creation, ENOMEM beyond memory.max.
	before=$(mem $cg)
	run_in $cg /tmp/c1 $C holdpop 4194304
	cp=$!
	check "a holder of a populated 4 MiB slab" wait_line /tmp/c1
	id=$(cat /tmp/c1)
	after=$(mem $cg)
	echo "# memory.current $before -> $after"
	check "a populated 4 MiB slab is charged to the creator's cgroup at creation" \
		[ "$after" -ge 4194304 ]
	check "a populated slab beyond memory.max fails with ENOMEM" \
		eq "$(sh -c "echo \$\$ >$cg/cgroup.procs && exec $C createpop 4194304")" ENOMEM
	check "... without an OOM kill" grep -q '^oom_kill 0$' $cg/memory.events
	kill -KILL $cp
	wait $cp 2>/dev/null
	check "the orphan stays charged" \
		[ "$(mem $cg)" -ge 4194304 ]
	check "release the orphan" eq "$($C release "$id")" ok
	check "its pages are uncharged (freed)" \
		[ "$(mem $cg)" -lt 4194304 ]
	rmdir $cg $rcg
else
	echo "ok - memory cgroup accounting # SKIP no cgroup2 memory controller"
fi

# ---- 4. unload --------------------------------------------------------------
echo "# part 4 at $(since_boot) s since boot"
exec 3</dev/blamer
check "module refcount held by an open fd" \
	sh -c '[ "$(cat /sys/module/blamer/refcnt)" -ge 1 ]'
check "rmmod fails while an fd is open" sh -c '! rmmod blamer 2>/tmp/rmmod.err'
sed 's/^/# /' /tmp/rmmod.err
exec 3<&-
check "rmmod succeeds after close" rmmod blamer
check "reload" load
rm -f /tmp/m1
$C mapheld 4096 >/tmp/m1 &
mp=$!
check "a process keeps only a mapping" wait_line /tmp/m1
check "rmmod fails while a mapping exists" sh -c '! rmmod blamer 2>/dev/null'
kill -KILL $mp
wait $mp 2>/dev/null
check "after the mapping is gone, an orphan remains" eq "$($C count)" 1
$C orphans 3 >/dev/null
check "orphans counted" eq "$($C count)" 4
# A live slab without any file: its creator closed and unmapped all.
rm -f /tmp/k1
$C keep 4096 >/tmp/k1 &
lp=$!
check "a creator that closed and unmapped everything" wait_line /tmp/k1
check "its slab is still counted" eq "$($C count)" 5
# Pages a pipe holds outlive the slab, its account and the module.
rm -f /tmp/s1
$C splicehold 16384 >/tmp/s1 &
sp=$!
check "a process keeps only a pipe of a released slab's pages" \
	wait_grep '^held$' /tmp/s1
check "rmmod with orphans and fileless live slabs succeeds" rmmod blamer
kill $lp 2>/dev/null
wait $lp 2>/dev/null
kill -USR1 $sp
check "after the unload the pipe still reads the slab's bytes" \
	wait_grep '^ok$' /tmp/s1
wait $sp 2>/dev/null
reload_empty() { load && eq "$($C count)" 0; }
check "reload starts empty (orphans were freed)" reload_empty

# ---- 5. stress-ng -------------------------------------------------------------
echo "# part 5 at $(since_boot) s since boot"
# Root's run and a user's go at once: each has its seconds, and the two
# users' calls meet on the device's shared lists and limits.
if command -v stress-ng >/dev/null; then
	as-user stress-ng --dev 2 --dev-file /dev/blamer --timeout 8s --temp-path /tmp >/tmp/sng-user.log 2>&1 &
	up=$!
	check "stress-ng --dev on /dev/blamer as root" \
		sh -c 'stress-ng --dev 2 --dev-file /dev/blamer --timeout 8s --temp-path /tmp --metrics-brief >/tmp/sng.log 2>&1 || { cat /tmp/sng.log; false; }'
	sed 's/^/# /' /tmp/sng.log
	wait $up
	us=$?
	check "stress-ng --dev on /dev/blamer as user, beside root's" \
		sh -c "[ $us -eq 0 ] || { cat /tmp/sng-user.log; false; }"
else
	echo "ok - stress-ng # SKIP stress-ng not in the guest"
fi
# ---- 5b. random exerciser ------------------------------------------------------
echo "# part 5b at $(since_boot) s since boot"
seed=$(date +%s)
as-user blamer_fuzz 10 4 $((seed + 100)) >/tmp/fuzz-user.log 2>&1 &
up=$!
check "blamer_fuzz 10 s, 4 processes, as root (seed $seed)" \
	blamer_fuzz 10 4 "$seed"
wait $up
us=$?
sed 's/^#* */# as user: /' /tmp/fuzz-user.log
check "blamer_fuzz 10 s, 4 processes, as user, beside root's (seed $((seed + 100)))" \
	[ "$us" -eq 0 ]
check "the device still lists after fuzzing" sh -c "$C count >/dev/null"
check "rmmod at the end" rmmod blamer

# ---- 6. kernel log ------------------------------------------------------------
echo "# part 6 at $(since_boot) s since boot"
# Raw levels <0>..<4> are emerg..warning. Loading any out-of-tree,
# unsigned module makes the module loader itself warn about the taint.
# Under TCG on a busy host the emulated clock stalls now and then, and
# the timekeeping code says so (clocksource watchdog, slow hrtimer
# interrupt, and on PREEMPT_RT kernels the real-time throttling of the
# threaded interrupt handlers): noise from the emulator, not from this
# module.
{ cat /tmp/dmesg.kept 2>/dev/null; dmesg -r; } |
	grep -v -e 'loading out-of-tree module taints kernel' \
	-e 'module verification failed' \
	-e ' clocksource: ' -e ' hrtimer: interrupt took ' \
	-e ' sched: RT throttling activated' >/tmp/dmesg
if grep -E '^<[0-4]>' /tmp/dmesg >/tmp/loud; then
	sed 's/^/# /' /tmp/loud
	check "no kernel message above info level" false
else
	check "no kernel message above info level" true
fi
[ $fails -eq 0 ]
