#!/bin/sh
# vm-reader-*: the blamer CLI against /dev/blamer in the VM, as root and as
# two unprivileged users: load/status/unload, list/dump/blame/top/export,
# postmortem after SIGSEGV and SIGKILL with the kernel's exit facts,
# release, and what each user may see. Prints TAP; runs as root in the guest.
n=0
fails=0
OUT=/tmp/out
export OUT

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
has() { grep -q -- "$1" $OUT; }
wait_file() { i=0; while [ ! -s "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; [ -s "$1" ]; }
# A killed process has released its files (so the kernel orphaned its
# slabs) once it is a zombie or gone; a fixed sleep is a guess under TCG.
# namers ROOT_ARGS USER_ARGS: selftests/reader/namer.c as root and as
# the user, each given "NODE NAME UNIT UNITNAME BASE"; their pids in NR, NU
namers() {
	rm -f /tmp/ready-nr /tmp/ready-nu
	namer $1 /tmp/ready-nr &
	as-user namer $2 /tmp/ready-nu &
	wait_file /tmp/ready-nr
	wait_file /tmp/ready-nu
	NR=$(cat /tmp/ready-nr) NU=$(cat /tmp/ready-nu)
}
# end_all PID...: ends them, reaps every child, releases every heap
end_all() {
	kill "$@" 2>/dev/null
	wait 2>/dev/null
	blamer release --all >/dev/null 2>&1
}
wait_gone() {
	i=0
	while [ $i -lt 100 ]; do
		st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 0
		[ "$st" = Z ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

echo "TAP version 13"
echo "1..38"

t "status before load: the dir backend, and a note to run blamer load" sh -c 'blamer status >$OUT 2>$OUT.e && grep -q "^backend: dir" $OUT && grep -q "blamer load" $OUT.e'
t "list on the device before load says to run blamer load" sh -c 'blamer --backend device list 2>&1 | grep -q "blamer load"'
t "the static build loads by path only, and says so" sh -c '! blamer load 2>$OUT.e; grep -q "without libkmod: give the module.s path" $OUT.e'
# The module leaves the device root-only for udev to set owner and mode;
# the test bed has no udev and opens it to every user.
t "blamer load /blamer.ko" sh -c 'blamer load /blamer.ko max_user_orphans=64 && chmod 0666 /dev/blamer'
t "status shows limits and parameters" sh -c 'blamer status && blamer status | grep -q "^  max_user_orphans *64"'
t "a second load is refused clearly" sh -c '! blamer load 2>$OUT.e; grep -q "already loaded" $OUT.e'

# top sleeps in poll(): a new heap must wake it long before --interval 30
blamer top --interval 30 --count 2 --json >/tmp/top.out 2>&1 &
TOP=$!
sleep 1
demo-app --workers 1 --iterations 2 --ready /tmp/ready0 &
APP0=$!
i=0
while [ "$(wc -l </tmp/top.out)" -lt 2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
cp /tmp/top.out $OUT.t
t "top wakes on a new heap (poll on /dev/blamer), not after --interval" sh -c "[ \$(wc -l <$OUT.t) -eq 2 ]"
kill $TOP $APP0 2>/dev/null
wait $APP0 2>/dev/null
blamer release --all >/dev/null 2>&1

# root's app: 3 workers, worker 1 dies of SIGSEGV mid-render
demo-app --workers 3 --crash 1 --iterations 6 --ready /tmp/ready &
APP=$!
wait_file /tmp/ready
set -- $(cat /tmp/ready)
PARENT=$1 W0=$2 W1=$3 W2=$4
t "list shows the 3 live processes and the crashed one" sh -c "blamer list | tee $OUT.l; [ \$(grep -c ' live ' $OUT.l) -eq 3 ] && grep -q '^ *$W1 .*killed:SEGV' $OUT.l"
t "postmortem names the crashed worker and SIGSEGV" sh -c "blamer postmortem | tee /dev/stderr | grep -q '^pid $W1 (demo-app): killed by SIGSEGV (signal 11)'"
t "postmortem shows its last activity (render) and log" sh -c "blamer postmortem $W1 > $OUT.p; grep -q 'task \"render\"' $OUT.p && grep -q 'bad pointer' $OUT.p"
t "dump of a worker: phase, idle activity, attribution" sh -c "blamer dump $W0 | tee $OUT.d; grep -q 'phase: main-loop' $OUT.d && grep -q 'idle-wait' $OUT.d && grep -q '/app/worker-0/render' $OUT.d"
t "blame sums workers under app" sh -c "blamer blame | tee $OUT.b; grep -q '^ .* app\$' $OUT.b && grep -q 'worker-2' $OUT.b"
t "dump --json carries kernel facts" sh -c "blamer dump $W1 --json | grep -q '\"kernel_facts\":true,\"exited\":true,\"exit_code\":0,\"exit_signal\":11'"
# facts look like facts: the kernel vouches for pid, comm, uid and exit
t "the kernel's facts: IDENTITY kernel in list and top, no [claimed] in dump, claimed only cmdline and phase in JSON" sh -c "blamer list | grep -q '^ *$W0 demo-app .* kernel\$' && blamer top --once | grep -q '^ *$W0 demo-app  *-  *live  *kernel ' && blamer dump $W0 | head -1 | grep -q '^pid $W0 (demo-app) uid 0: running\$' && blamer dump $W0 --json | grep -q '\"kernel_facts\":true,.*\"claimed\":\[\"cmdline\",\"phase\"\]'"
# the kernel's comm is the name of the file executed: OSC 52 (a clipboard
# write), CR and byte 0xff reach no view raw; JSON stays ASCII
OSC=$(printf 'o\033]52;c;aGk=\007\r\377')
ln -s /bin/demo-app "/tmp/$OSC"
"/tmp/$OSC" --workers 1 --iterations 4 --ready /tmp/ready-osc >/dev/null 2>&1 &
OSCAPP=$!
wait_file /tmp/ready-osc
t "a process named with OSC 52, CR and 0xff: only printable ASCII in list, top, dump, postmortem, blame and JSON" sh -c "for a in list 'top --once' dump postmortem blame 'dump --json' 'list --json'; do blamer \$a >$OUT.x 2>&1 || exit 1; [ -z \"\$(tr -d '\n\040-\176' <$OUT.x)\" ] || exit 1; done; blamer list | grep -q '^ *$OSCAPP o?\]52;c;aGk=??? '"
t "export --prometheus: identity=\"kernel\" on every process's series, the OSC 52 comm printable ASCII" sh -c "blamer export --prometheus --per-process >$OUT.x || exit 1; [ -z \"\$(tr -d '\n\040-\176' <$OUT.x)\" ] || exit 1; grep -q '^blamer_process_info{.*identity=\"kernel\",comm=\"o?]52;c;aGk=???\",role=\"\",instance=\"\"} 1' $OUT.x && ! grep '^blamer_[a-z_]*{pid=' $OUT.x | grep -vq 'identity=\"kernel\"'"
kill $OSCAPP 2>/dev/null
t "top --once and a polled frame" sh -c "blamer top --once | grep -q 'idle-wait' && blamer top --count 2 --interval 0.2 | grep -c '^blamer top' | grep -q 2"
t "export --prometheus has the exit signal" sh -c "blamer export --prometheus --per-process | grep -q '^blamer_process_exit_signal{pid=\"$W1\".*} 11'"
t "export: the service's series, attribution summed by path and uid, processes by role and state" sh -c "blamer export >$OUT.x || exit 1; grep -q '^blamer_attribution_[a-z_]*_total{path=\"/[^\"]*\",uid=\"[0-9]*\"} ' $OUT.x && grep -q '^blamer_processes{role=\".*\",state=\"dead\",uid=\"[0-9]*\"} [1-9]' $OUT.x && ! grep -q 'start_time_ns=' $OUT.x"

# SIGKILL a worker: the kernel records it
kill -9 $W2
wait_gone $W2
t "postmortem after SIGKILL" sh -c "blamer postmortem $W2 | grep -q 'killed by SIGKILL (signal 9)'"
# a serving exporter decodes a dead heap once and writes its text once
# (BLAMER_READ_KEEP_DEAD, blamer_prom_cache): what it writes of the dead
# must be what a one-off export reads from the slabs
blamer export --prometheus --per-process --interval 0.2 --output /tmp/kept.prom &
EXP=$!
sleep 2
blamer export --prometheus --per-process >/tmp/fresh.prom
t "a serving exporter's series of dead processes are a fresh export's" sh -c "grep -E 'pid=\"($W1|$W2)\"' /tmp/kept.prom >$OUT.k; grep -E 'pid=\"($W1|$W2)\"' /tmp/fresh.prom >$OUT.f; [ \$(grep -c _total $OUT.k) -gt 2 ] && cmp $OUT.k $OUT.f"
kill $EXP 2>/dev/null
wait $EXP 2>/dev/null

# permissions: an unprivileged user sees its own heaps, not root's
as-user demo-app --workers 1 --iterations 4 --ready /tmp/ready-u &
wait_file /tmp/ready-u
set -- $(cat /tmp/ready-u)
UP=$1 UW=$2
t "user sees its own processes only" sh -c "as-user blamer list | tee $OUT.u; grep -q '^ *$UP ' $OUT.u && ! grep -q '^ *$PARENT ' $OUT.u"
t "user cannot dump root's process" sh -c "as-user blamer dump $PARENT 2>&1 | grep -q 'no heap for pid $PARENT'"
t "another user sees neither" sh -c "as-user2 blamer list > $OUT.o; ! grep -q '^ *$UP ' $OUT.o && ! grep -q '^ *$PARENT ' $OUT.o"
t "root sees everyone" sh -c "blamer list | grep -q '^ *$UP ' && blamer list | grep -q '^ *$PARENT '"
kill -9 $UW
wait_gone $UW
t "user's postmortem of its own SIGKILLed worker" sh -c "as-user blamer postmortem $UW | grep -q 'killed by SIGKILL'"
t "other user cannot release it" sh -c "! as-user2 blamer release $UW"
t "user releases its own dead worker" sh -c "as-user blamer release $UW | grep -q 'released pid $UW' && ! blamer list | grep -q '^ *$UW '"
t "root releases the crashed worker" sh -c "blamer release $W1 && ! blamer list | grep -q '^ *$W1 '"
t "unload while in use is refused with a hint" sh -c "blamer unload 2>&1 | grep -q 'in use'"

end_all $APP $UP
# names are per uid: a user's heap naming root's node "svc" PWNED and
# unit 1000 "aaa" in seconds changes no name or number of root's; the
# views summing both uids show what both name alike (namer), else ids
# and numbers (svc, unit 1000)
namers "svc svc 1000 requests none" "svc PWNED 1000 aaa seconds"
t "dump: each process with its own uid's names (root's /namer/svc requests=, the user's /namer/PWNED aaa= in seconds)" sh -c "blamer dump $NR >$OUT.0 && blamer dump $NU >$OUT.1 && cat $OUT.0 $OUT.1 && grep -q '^    /namer/svc requests=1500000000\$' $OUT.0 && grep -q 'namer_events_total{path=\"/namer/svc\"} = 7' $OUT.0 && ! grep -q 'PWNED\\|aaa' $OUT.0 && grep -q '^    /namer/PWNED aaa=1.50s\$' $OUT.1 && grep -q 'namer_events_total{path=\"/namer/PWNED\"} = 7' $OUT.1"
t "blame and top over both uids: namer by name, svc and unit 1000 by id and number, each series its uid's" sh -c "blamer blame >$OUT.b && blamer top --once >$OUT.t && cat $OUT.b $OUT.t && grep -q ' namer\$' $OUT.b && ! sed '/^KIND/,\$d' $OUT.b | grep -q 'PWNED\\|aaa\\| svc\$' && grep -q 'unit1000' $OUT.b && grep -q '3000000000 .* 0x[0-9a-f]*\$' $OUT.b && grep -q 'namer_events_total{path=\"/namer/svc\"} = 7 uid 0' $OUT.b && grep -q 'namer_events_total{path=\"/namer/PWNED\"} = 7 uid 1000' $OUT.b && ! grep -q aaa $OUT.t && grep -q '^unit1000 .* 3000000000 .* /namer/0x[0-9a-f]*\$' $OUT.t"
t "JSON: a process's paths its uid's names, attribution unnamed where the uids differ" sh -c "blamer dump $NR --json >$OUT.j && grep -q '\"names\":\\[\"namer\",\"svc\"\\],\"values\":\\[{\"unit\":1000,\"unit_name\":\"requests\"' $OUT.j && blamer blame --json | sed 's/\"service\":.*//' >$OUT.j && cat $OUT.j && grep -q '\"namer\"' $OUT.j && grep -q '\"unit_name\":\"unit1000\"' $OUT.j && ! grep -q 'PWNED\\|\"aaa\"\\|\"requests\"\\|\"svc\"' $OUT.j"
end_all $NR $NU
# a user naming a node and unit that only root's process walks and
# measures in, naming neither, names nothing of root's there either
namers "quiet - 1001 - none" "quiet hushed 1001 a seconds"
t "names only another user gives for what root uses unnamed: blame and top show the id and unit1001, plain numbers" sh -c "blamer blame >$OUT.b && blamer top --once >$OUT.t && cat $OUT.b $OUT.t && ! sed '/^KIND/,\$d' $OUT.b | grep -q 'hushed\\|3\\.00s\\| a\\*' && grep -q 'unit1001' $OUT.b && grep -q '3000000000 .* 0x[0-9a-f]*\$' $OUT.b && ! sed '/^KIND/,\$d' $OUT.t | grep -q 'hushed\\|3\\.00s' && grep -q '^unit1001 .* 3000000000 .* /namer/0x[0-9a-f]*\$' $OUT.t"
end_all $NR $NU
t "unload after the apps ended" sh -c "blamer unload && ! test -e /dev/blamer"
# the dynamically linked build loads through libkmod (by name, then paths)
t "libkmod build: with nothing installed, load says what to install" sh -c '! blamer-kmod load 2>$OUT.e && grep -q "no blamer module is installed for Linux $(uname -r): install blamer-dkms" $OUT.e'
t "libkmod build: load by path" sh -c "blamer-kmod load /blamer.ko max_user_orphans=8 && blamer-kmod status | grep -q '^  max_user_orphans *8'"
t "libkmod build: unload" sh -c "blamer-kmod unload && ! test -e /dev/blamer"
[ $fails -eq 0 ]
