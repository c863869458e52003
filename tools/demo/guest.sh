#!/bin/sh
# tools/demo/guest.sh: the part of `make demo` that runs inside the VM.
#
# tools/demo/run-demo boots a Debian kernel with tools/vm/run and runs this
# script as root, with /bin/blamer (the static CLI) and /bin/demo-app (a
# small application linked with libblamer). Each step says what it is
# about to show, then shows it, so the output reads as a guided tour. A
# failing step stops the tour with a non-zero status.

step() {
	echo
	echo "==> $*"
}

say() {
	echo "    $*"
}

fail() {
	echo "demo: $*" >&2
	exit 1
}

step "The kernel we booted"
uname -sr

step "Load the blamer module with the blamer tool: blamer load /blamer.ko"
say "(on your machine, after installing blamer-dkms, plain \`blamer load\` is modprobe;"
say " here the module built by make is loaded by its path)"
blamer load /blamer.ko || fail "blamer load failed"
ls -l /dev/blamer || fail "/dev/blamer does not exist"

step "What the kernel enforces: blamer status"
say "(slabs are kernel memory: their size, owner and fate are facts, not claims)"
blamer status || fail "blamer status failed"

step "Start an application: a supervisor and 3 workers (demo-app --workers 3 --crash 1)"
say "Each worker records what it is doing (nested activities: request > parse | render),"
say "attributes CPU time and bytes to DAG paths app/worker-N/parse|render, and logs."
say "Worker 1 has a bug: it dereferences NULL in the middle of a render."
rm -f /tmp/demo.ready
demo-app --workers 3 --crash 1 --iterations 8 --ready /tmp/demo.ready &
APP=$!
i=0
while [ ! -s /tmp/demo.ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s /tmp/demo.ready ] || fail "demo-app did not get ready"
set -- $(cat /tmp/demo.ready)
PARENT=$1 W0=$2 W1=$3
say "supervisor pid $PARENT, workers $2 $3 $4"

step "Every heap on the machine, one line each: blamer list"
say "(state comes from the kernel: worker $W1 shows how it died)"
blamer list || fail "blamer list failed"

step "Where the resources went, summed across all processes: blamer blame"
say "(inclusive totals per path of the attribution DAG, largest first)"
blamer blame || fail "blamer blame failed"

step "Everything one worker says about itself: blamer dump $W0"
blamer dump "$W0" || fail "blamer dump failed"

step "A live view, one frame: blamer top --once"
say "(without --once it refreshes every --interval, and at once when a process appears or dies)"
blamer top --once || fail "blamer top failed"

step "The crash: blamer postmortem"
say "(the kernel kept the dead worker's heap: how it ended, what it was doing, its log)"
blamer postmortem || fail "blamer postmortem failed"
blamer postmortem | grep -q "^pid $W1 (demo-app): killed by SIGSEGV" ||
	fail "postmortem does not name worker $W1 and SIGSEGV"

step "For monitoring: blamer export --prometheus (two of its metric families)"
blamer export --prometheus | grep -E '^(# (HELP|TYPE) )?blamer_(process_exit_signal|attribution_cpu_seconds_total)' | head -12

step "Free the dead worker's memory: blamer release $W1"
blamer release "$W1" || fail "blamer release failed"

step "Stop the application (SIGTERM) and unload: blamer unload"
kill "$APP"
wait "$APP"
blamer release --all >/dev/null
blamer list
blamer unload || fail "blamer unload failed"
[ ! -e /dev/blamer ] || fail "/dev/blamer still exists after unload"
echo
echo "That was blamer: activity and resource attribution across processes, live and after a crash."
