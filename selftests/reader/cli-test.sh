#!/bin/bash
# cli: every blamer subcommand and its errors, on the dir backend (host).
#   cli-test.sh BLAMER MKHEAP
# Golden files (selftests/reader/golden/) hold normalized output: the live
# fixture's pid becomes LIVEPID, ages become AGE, dates DATE. UPDATE_GOLDEN=1 rewrites them.
set -u
B=$1 MK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
GOLD=$HERE/golden
D=$(mktemp -d /tmp/blamer-cli.XXXXXX)
OUT=$D.out
n=0 fails=0
livepid= uppid=

cleanup() {
	[ -n "$livepid" ] && kill "$livepid" 2>/dev/null
	rm -rf "$D" "$D.out" "$D.out.err" "$D.err" "$D.prom" "$D.live" "$D.c" "$D.help1" "$D.empty" "$D.end" "$D.endpids" \
	      "$D.evil" "$D.evilpid" "$D.future" "$D.futpid" "$D.real" "$D.link" "$D.open" "$D.nohp" \
	      "$D.twins" "$D.long" "$D.up" "$D.upout"
	[ -n "$uppid" ] && kill "$uppid" 2>/dev/null
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$OUT" "$OUT.err" 2>/dev/null | head -30; }

# run EXPECTED_STATUS ARGS...: output in $OUT, stderr in $OUT.err
run() {
	local want=$1
	shift
	"$B" "$@" >"$OUT" 2>"$OUT.err"
	st=$?
	[ "$st" -eq "$want" ]
}

norm() {
	sed -e "s/\b$livepid\b/LIVEPID/g" -e "s/^ *LIVEPID/LIVEPID/" -e "s/ \+LIVEPID/ LIVEPID/" \
	    -e 's/[0-9.]*[smh] ago/AGE ago/g' -e 's/ at [0-9-]* [0-9:]* (/ at DATE (/' \
	    -e 's/since [0-9.]*[smh]/since AGE/g' -e "s|$D|DIR|g" \
	    -e 's/\] [0-9]\{4\}-[0-9-]* [0-9:.]* /] DATE /'
}

# golden NAME: compare normalized $OUT with golden/NAME
golden() {
	local name=$1
	if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
		norm <"$OUT" >"$GOLD/$name"
	fi
	if norm <"$OUT" | diff -u "$GOLD/$name" - >"$OUT.diff"; then
		ok "$name matches golden output"
	else
		n=$((n + 1)); fails=$((fails + 1))
		echo "not ok $n - $name differs from golden output"
		sed 's/^/#   /' "$OUT.diff" | head -40
	fi
	rm -f "$OUT.diff"
}

# err_has STATUS TEXT ARGS...: exits STATUS with a one-line error containing TEXT
err_has() {
	local want=$1 text=$2
	shift 2
	if run "$want" "$@" && [ "$(wc -l <"$OUT.err")" -eq 1 ] && grep -q -- "$text" "$OUT.err"; then
		ok "blamer $* -> status $want, '$text'"
	else
		echo "# got status $st"
		nok "blamer $* -> status $want, '$text'"
	fi
}

echo "TAP version 13"
echo "1..105"

chmod 700 "$D"
"$MK" "$D" dead 3999001 5 1 && "$MK" "$D" dead 3999002 6 2 && "$MK" "$D" corrupt 3999003 7 ||
	{ echo "not ok 1 - fixtures"; exit 1; }
"$MK" "$D" live 3 >"$D.live" &
for _ in $(seq 100); do [ -s "$D.live" ] && break; sleep 0.05; done
livepid=$(cat "$D.live")
[ -n "$livepid" ] || { echo "not ok 1 - live fixture did not start"; exit 1; }
export BLAMER_DIR=$D

run 0 list && golden list.txt
run 0 --backend dir --dir "$D" list && grep -q "LIVEPID\|$livepid" "$OUT" && ok "list with --dir" || nok "list with --dir"
run 0 blame --live-only && golden blame.txt
run 0 blame --dead && golden blame-dead.txt	# the default: --dead is a no-op
run 0 blame --unit bytes && head -1 "$OUT" | grep -q 'bytes\*' && ok "blame --unit bytes sorts by bytes" || nok "blame --unit bytes"
run 0 blame --unit cpu_ns && head -1 "$OUT" | grep -q 'cpu\*' && run 0 blame --unit 1 &&
	head -1 "$OUT" | grep -q 'cpu\*' && ok "blame --unit takes the unit's name and number" || nok "blame --unit cpu_ns"
run 0 blame --dead 3999002 && [ "$(grep -c '^ .* 3999002  claimed  app  *-$' "$OUT")" -eq 1 ] &&
	grep -q '^ *17.0ms *138KiB *1  browser$' "$OUT" && ! grep -q 3999001 "$OUT" &&
	ok "blame PID: the tree and the share of that process only" || nok "blame PID"
run 0 blame --dead && [ "$(sed -n '/PID  IDENTITY COMM  *ROLE$/,$p' "$OUT" | grep -c ' claimed  app  *-$\| claimed  mkheap  *-$')" -eq 3 ] &&
	ok "blame shows each process's share" || nok "blame shares"
err_has 1 "no heap for pid 12345678" blame 12345678
err_has 2 "no measurements in unit" blame --unit furlongs
# two units named alike: the name is refused, the number taken
mkdir -m 700 "$D.twins" && "$MK" "$D.twins" twin-units 3999300 5 &&
	BLAMER_DIR=$D.twins run 2 blame --unit orders && grep -q "several units are named 'orders': give the number" "$OUT.err" &&
	BLAMER_DIR=$D.twins run 0 blame --unit 1007 && head -1 "$OUT" | grep -q 'orders  *orders\*' &&
	ok "blame --unit NAME of two units is refused, the number sorts" || nok "blame --unit of twin names"
run 0 dump 3999001 && golden dump-dead.txt
run 0 dump "$livepid" && grep -q 'thread.*"main": depth 3' "$OUT" && grep -q 'url_id = 77' "$OUT" &&
	grep -q '/browser/tab/frame cpu=15.0ms bytes=192KiB' "$OUT" && ok "dump of a live process" || nok "dump of a live process"
run 0 dump 3999003 && grep -q 'health corrupt: record list loops' "$OUT" && ok "dump names a corrupt heap" || nok "dump corrupt"
run 0 dump && [ "$(grep -c '^pid ' "$OUT")" -eq 4 ] && ok "dump shows all 4 heaps" || nok "dump all"
run 0 postmortem && golden postmortem.txt
# list reads headers only: a heap whose record list loops is not "ok"
# there, it is unchecked (dump, which reads the records, says corrupt)
run 0 list && grep -q '^3999003 app .* unchecked  claimed$' "$OUT" && ! grep -q ' ok ' "$OUT" &&
	ok "list says unchecked, never ok, for records it did not read (a looping list)" ||
	nok "list health of a looping heap"
# a dead heap looks the same in every view: its name, how it ended, its health
run 0 top --once && grep -q '^3999001 app  *-  *dead  *claimed ' "$OUT" &&
	run 0 list && grep -q '^3999001 app  *-  *dead .* unchecked  claimed$' "$OUT" &&
	run 0 blame && ! grep -q '?' "$OUT" &&
	ok "a dead heap not read in full: the same comm and state in top and list" || nok "dead heaps in top vs list"
# Claims look like claims: a dir heap named after pid 1 with pid 1's
# start time is read as pid 1, live (that process runs, and as root, who
# may have made the file), but every view says the identity is the heap's
# word, not the kernel's. (Another user's file making that claim is
# disproved: below.)
mkdir -m 700 "$D.pid1"
ticks=$(sed 's/.*) //' /proc/1/stat | awk '{ print $20 }')
start1=$((ticks * (1000000000 / $(getconf CLK_TCK))))
"$MK" "$D.pid1" dead 1 $start1 1
bad=
[ "$(id -u)" = 0 ] || bad=" (not root: pid 1's uid is not ours)"
BLAMER_DIR=$D.pid1 run 0 list && grep -q '^      1 .* live .* claimed$' "$OUT" || bad="$bad list"
BLAMER_DIR=$D.pid1 run 0 dump 1 && head -1 "$OUT" | grep -q '^pid 1 (.*) uid [0-9]* \[claimed\]: running$' ||
	bad="$bad dump"
BLAMER_DIR=$D.pid1 run 0 top --once && grep -q '^      1 .* live  *claimed ' "$OUT" || bad="$bad top"
BLAMER_DIR=$D.pid1 run 0 blame && grep -q '^ .*       1  claimed  ' "$OUT" || bad="$bad blame"
BLAMER_DIR=$D.pid1 run 0 status && grep -q '^identity: claimed' "$OUT" || bad="$bad status"
BLAMER_DIR=$D.pid1 run 0 list --json && grep -q '"pid":1,.*"kernel_facts":false,.*"claimed":\["pid","uid","comm","start_time_ns","state"' "$OUT" ||
	bad="$bad json"
[ -z "$bad" ] && ok "a dir heap claiming pid 1 is shown as a claim in list, dump, top, blame, status and JSON" ||
	{ [ "$(id -u)" = 0 ] && nok "pid 1 claims:$bad" || ok "# SKIP pid 1 claims$bad"; }
rm -rf "$D.pid1"
# Claims /proc contradicts are disproved, in every view: pid 1 with a
# start time after pid 1's (no other process had pid 1 then), and pid 1
# with its own start time in a file of a uid pid 1 does not run as (as
# root: a directory given to uid 65534, read by its owner's rules). Never
# running, never /proc/1's comm (the heap's argv[0], "app", instead).
mkdir -m 700 "$D.pid1"
"$MK" "$D.pid1" dead 1 $((start1 + 10000000000)) 1
disp() {	# disp DIR WHY: every view says disproved, with WHY
	local dir=$1 why=$2 b=
	BLAMER_DIR=$dir run 0 list && grep -q '^      1 app  *-  *disproved .* disproved$' "$OUT" || b="$b list"
	BLAMER_DIR=$dir run 0 dump 1 &&
		head -1 "$OUT" | grep -q "^pid 1 (app) uid [0-9]* \[claim disproved\]: not the process it claims: $why" ||
		b="$b dump"
	BLAMER_DIR=$dir run 0 postmortem 1 && head -1 "$OUT" | grep -q '^pid 1 (app) \[claim disproved\]: ' ||
		b="$b postmortem"
	BLAMER_DIR=$dir run 0 top --once && grep -q '^      1 app  *-  *disproved  *disproved ' "$OUT" ||
		b="$b top"
	BLAMER_DIR=$dir run 0 list --json &&
		grep -q '"pid":1,.*"state":"dead",.*"disproved":true,"disproved_why":"pid 1 ' "$OUT" ||
		b="$b json"
	BLAMER_DIR=$dir run 0 export --prometheus --per-process &&
		grep -q '^blamer_process_disproved{pid="1",.*} 1$' "$OUT" &&
		grep -q '^blamer_process_live{pid="1",.*} 0$' "$OUT" &&
		grep -q '^blamer_process_info{pid="1",.*,comm="app",role="",instance=""} 1$' "$OUT" || b="$b export"
	echo "$b"
}
bad=$(disp "$D.pid1" "pid 1 has run since [0-9.]*s after boot, before the claimed start at [0-9.]*s")
rm -rf "$D.pid1"
mkdir -m 700 "$D.pid1"
"$MK" "$D.pid1" dead 1 $start1 1
[ "$(id -u)" = 0 ] && chown -R 65534 "$D.pid1"
[ "$(stat -c %u "$D.pid1")" != 0 ] &&
	bad="$bad$(disp "$D.pid1" "pid 1 runs as uid 0, which cannot have made a file of uid [0-9]*")"
[ -z "$bad" ] && ok "claims /proc contradicts (pid 1 started later; pid 1 in another uid's file) are disproved in list, dump, postmortem, top, JSON and export" ||
	nok "disproved claims:$bad"
rm -rf "$D.pid1"
# ... and a true claim is not: a writer of uid 65534 that made itself not
# dumpable (on some kernels its /proc/<pid> is root's then; its uids are
# 65534 all the same) is live, with its comm, read by root from its
# directory
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	mkdir -m 700 "$D.pid1" && chown 65534 "$D.pid1"
	MKHEAP_NOT_DUMPABLE=1 setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$MK" "$D.pid1" live 1 >"$D.livepid" &
	for _ in $(seq 100); do [ -s "$D.livepid" ] && break; sleep 0.05; done
	lp=$(cat "$D.livepid")
	BLAMER_DIR=$D.pid1 run 0 list && grep -q "^ *$lp mkheap  *-  *live .* claimed\$" "$OUT" &&
		ok "a writer of another uid that is not dumpable is live, not disproved" ||
		nok "a writer that is not dumpable"
	kill "$lp" 2>/dev/null
	rm -rf "$D.pid1" "$D.livepid"
else
	ok "# SKIP not root: no other uid to run a writer as"
fi
run 0 postmortem 3999002 && grep -q '^pid 3999002 (app) \[claimed\]: gone, cause unknown' "$OUT" &&
	grep -q 'cache warm' "$OUT" && ! grep -q 3999001 "$OUT" && ok "postmortem PID" || nok "postmortem PID"
err_has 1 "still running" postmortem "$livepid"
err_has 1 "no heap for pid 12345678" dump 12345678
err_has 2 "is not a PID" dump abc
# totals of the live and the dead (15 + 5 + 10 ms); --live-only: the live one's
run 0 top --once && grep -q "^ *$livepid mkheap .*live.*main-loop.*lock-acquire \"cache-lock\"" "$OUT" &&
	grep -q '^cpu  .*30.0ms.*/browser/tab/frame' "$OUT" && run 0 top --once --live-only &&
	grep -q '^cpu  .*15.0ms.*/browser/tab/frame' "$OUT" && ! grep -q 3999001 "$OUT" &&
	ok "top --once: the dead count, --live-only leaves them out" || nok "top --once"
run 0 top --count 2 --interval 0.1 && [ "$(grep -c '^blamer top' "$OUT")" -eq 2 ] &&
	grep -q '30.0ms *0.0%' "$OUT" && ok "top --count 2 shows rates, CPU time as a share of a CPU" ||
	nok "top --count 2"
run 0 top --once --json && [ "$(wc -l <"$OUT")" -eq 1 ] && ok "top --once --json is one document" || nok "top --json"
# A total that grows by more than 2^64 - 1 a second (here by 2^64 - 2
# between frames 0.2 s apart): its RATE/s was a double past 2^64
# converted to uint64_t, undefined (0B on x86). It is shown at its most.
mkdir -m 700 "$D.up"
"$MK" "$D.up" live-up >"$D.upout" & uppid=$!
for _ in $(seq 100); do [ -s "$D.upout" ] && break; sleep 0.05; done
"$B" --dir "$D.up" top --count 10 --interval 0.2 >"$OUT" 2>"$OUT.err" & toppid=$!
for _ in $(seq 100); do grep -q '^blamer top' "$OUT" && break; sleep 0.05; done
kill -USR1 "$uppid"
wait "$toppid"
st=$?
kill "$uppid"
wait "$uppid" 2>/dev/null
uppid=
[ "$st" -eq 0 ] && grep -q '^up$' "$D.upout" && [ "$(grep -c '^blamer top' "$OUT")" -eq 10 ] &&
	grep -q '^bytes  *16EiB  *16EiB  */browser$' "$OUT" &&
	ok "top: a rate past 2^64 - 1 a second is shown at its most" || nok "top: a rate past 2^64 - 1"
rm -rf "$D.up" "$D.upout"
# per process (pid, start time, heap key), dead heaps included
run 0 export --prometheus --per-process &&
	grep -q "^blamer_attribution_cpu_seconds_total{pid=\"$livepid\",start_time_ns=\"[0-9]*\",heap=\"[0-9a-f]*\",identity=\"claimed\",path=\"/browser/tab/frame\"} 0.015000000\$" "$OUT" &&
	grep -q '^blamer_attribution_cpu_seconds_total{pid="3999001",.*path="/browser/tab/frame"} 0.005000000$' "$OUT" &&
	ok "export --per-process: a counter per process, dead ones included" || nok "export --per-process"
# the service's: one series per path and uid, the live and the dead summed
run 0 export &&
	grep -q "^blamer_attribution_cpu_seconds_total{path=\"/browser/tab/frame\",uid=\"$(id -u)\"} 0.030000000\$" "$OUT" &&
	! grep -q 'pid=' "$OUT" &&
	ok "export: the service's series, the live and the dead processes summed, no pid" || nok "export (service)"
run 0 export --prometheus --output "$D.prom" && [ -s "$D.prom" ] && [ ! -s "$OUT" ] &&
	[ "$(stat -c %a "$D.prom")" = 644 ] &&
	! ls "$(dirname "$D")/.$(basename "$D").prom."* >/dev/null 2>&1 &&
	ok "export --output writes atomically, mode 0644, no temporary file left" || nok "export --output"
# past RLIMIT_FSIZE (systemd's LimitFSIZE=): an error, not SIGXFSZ
(ulimit -f 1; "$B" export --prometheus --output "$D.big" >/dev/null 2>"$OUT.err"; echo $? >"$D.rc")
[ "$(cat "$D.rc")" = 1 ] && grep -q "File too large" "$OUT.err" && [ ! -e "$D.big" ] &&
	! ls "$(dirname "$D")/.$(basename "$D").big."* >/dev/null 2>&1 &&
	ok "export --output past RLIMIT_FSIZE: one line, exit 1, no temporary left" ||
	nok "export --output past RLIMIT_FSIZE (status $(cat "$D.rc"))"
rm -f "$D.rc" "$D.big"
# a $STATE_DIRECTORY too long for a path is refused, never cut to another file
STATE_DIRECTORY="/tmp/$(head -c 4100 /dev/zero | tr '\0' a)" run 1 export --interval 1 --output "$D.sd" &&
	grep -q 'STATE_DIRECTORY is too long for a path (4105 bytes)' "$OUT.err" &&
	[ "$(wc -l <"$OUT.err")" = 1 ] &&
	ok "export: a \$STATE_DIRECTORY too long for a path is one line, exit 1" ||
	nok "export: \$STATE_DIRECTORY too long (status $st)"
err_has 2 "port must be 1-65535" export --prometheus --listen 127.0.0.1:0
err_has 2 "port must be 1-65535" export --prometheus --listen :65536
err_has 2 "port must be 1-65535" export --prometheus --listen 127.0.0.1:+80
err_has 2 "port must be 1-65535" export --prometheus --listen "127.0.0.1: 80"
err_has 2 "give ADDR:PORT" export --prometheus --listen 9464
err_has 2 "numeric IPv4" export --prometheus --listen localhost:9464
err_has 2 "give --output FILE too" export --prometheus --interval 1
err_has 2 "give --interval S" export --prometheus --listen 127.0.0.1:9 --output "$D.prom"
run 0 export && grep -q '^# TYPE blamer_heaps gauge$' "$OUT" && run 0 export --prometheus &&
	grep -q '^# TYPE blamer_heaps gauge$' "$OUT" &&
	ok "export without --prometheus writes the one format, Prometheus" || nok "export without a format"
err_has 2 "unknown option '--frobnicate'" list --frobnicate
err_has 2 "unknown backend 'floppy'" --backend floppy list
BLAMER_BACKEND=floppy err_has 1 "BLAMER_BACKEND=floppy: use device, dir or auto" list
err_has 2 "--once does not apply to \`blamer list\`" list --once
err_has 2 "unknown command 'lsit'" lsit
err_has 2 "bad --interval" top --interval 0
# numbers: digits alone, no wrap (4294967297 was --keep-dead 1), no sign
err_has 2 "bad --count '99999999999999999999'" top --count 99999999999999999999
err_has 2 "bad --count ' 2'" top --count " 2"
err_has 2 "bad --keep-dead '4294967297'" export --keep-dead 4294967297
err_has 2 "'+3999001' is not a PID or slab ID" release +3999001
err_has 2 "'18446744073709551616' is not a PID or slab ID" release 18446744073709551616
# an empty name is a mistake, not the default
err_has 2 "bad --dir ''" --dir "" list
err_has 2 "bad --state ''" export --state ""
err_has 2 "bad --output ''" export --output ""
err_has 2 "needs PIDs or slab IDs" release
err_has 1 "still running" release "$livepid"
# A PID no process can have (above the kernel's PID_MAX_LIMIT, 4194304):
# a small number like 777 can be the live fixture's own PID once PIDs wrap.
err_has 1 "no dead process or slab 4194399" release 4194399
run 0 release 3999001 && grep -q 'released pid 3999001 (app) \[claimed\]: 2 slabs' "$OUT" && ! ls "$D"/3999001-* >/dev/null 2>&1 &&
	ok "release PID unlinks its files" || nok "release PID"
run 0 release --all && [ "$(grep -c released "$OUT")" -eq 2 ] && ls "$D"/"$livepid"-* >/dev/null 2>&1 &&
	ok "release --all frees dead heaps only" || nok "release --all"
run 0 status --backend dir && grep -q '^heaps: 1 (0 dead)' "$OUT" && ok "status --backend dir" || nok "status dir"
run 0 status && grep -q "^backend: dir $D\$" "$OUT" && [ ! -s "$OUT.err" ] &&
	ok "status follows BLAMER_DIR" || nok "status with BLAMER_DIR"
(unset BLAMER_DIR; BLAMER_BACKEND=dir run 0 status) && grep -q "^backend: dir /dev/shm/blamer-" "$OUT" &&
	[ ! -s "$OUT.err" ] && ok "status follows BLAMER_BACKEND=dir" || nok "status with BLAMER_BACKEND=dir"
if [ -e /dev/blamer ]; then
	ok "# SKIP /dev/blamer exists on this host"
	ok "# SKIP /dev/blamer exists on this host"
else
	err_has 1 "run \`blamer load\`" --backend device list
	(unset BLAMER_DIR; run 0 status) && grep -q "^backend: dir /dev/shm/blamer-" "$OUT" &&
		[ "$(wc -l <"$OUT.err")" -eq 1 ] && grep -q "module is not loaded" "$OUT.err" &&
		ok "status without the module: the dir backend, and a note saying why" ||
		nok "status without the module"
fi
if [ -e /sys/module/blamer ]; then
	ok "# SKIP module loaded on this host"
else
	err_has 1 "not loaded (nothing to unload)" unload
fi
err_has 1 "not found" load /nonexistent/blamer.ko
# load checks a module's vermagic before the kernel sees it (so this host
# never loads anything): an object with a .modinfo naming another kernel,
# and a file that is no module at all.
printf '%s\n' 'static const char m[] __attribute__((section(".modinfo"), used)) =' \
	'	"license=GPL\0vermagic=1.2.3-blamer-test SMP mod_unload ";' >"$D.c"
if cc -c -o "$D/other.ko" "$D.c" 2>"$OUT.err"; then
	err_has 1 "is built for Linux 1.2.3-blamer-test, this is $(uname -r)" load "$D/other.ko"
else
	nok "cc of a fake module"
fi
echo 'not an ELF file' >"$D/junk.ko"
err_has 1 "is not a kernel module" load "$D/junk.ko"
run 0 --help && grep -q '^  postmortem' "$OUT" && ok "--help lists commands" || nok "--help"
run 0 --version && grep -q '^blamer [0-9]\+\.[0-9]\+\.[0-9]\+ ' "$OUT" && ok "--version" || nok "--version"
run 0 help && grep -q '^  postmortem' "$OUT" && grep -q -- '-j, --json\|blamer help COMMAND' "$OUT" &&
	ok "help lists commands" || nok "help"
for cmd in list dump blame top postmortem release export load unload status help; do
	run 0 "$cmd" --help && cp "$OUT" "$D.help1" && run 0 help "$cmd" && cmp -s "$OUT" "$D.help1" &&
		grep -q "^usage: blamer \[global options\] $cmd" "$OUT" || break
done
[ "$cmd" = help ] && ok "blamer X --help and blamer help X show X's usage and options" ||
	nok "help for $cmd"
run 0 --dir /nonexistent dump --help && grep -q '^usage: blamer .* dump' "$OUT" &&
	ok "a command's --help reads no heaps" || nok "dump --help"
run 0 help top && grep -q 'p  *pause or resume' "$OUT" && grep -q -- '--interval S' "$OUT" &&
	ok "help top lists its keys and options" || nok "help top"
err_has 2 "unknown command 'frob'" help frob
err_has 2 "help takes one command" help list dump
run 0 list -j && head -c1 "$OUT" | grep -q '{' && [ "$(wc -l <"$OUT")" -eq 1 ] &&
	run 0 help list && grep -q -- '-j, --json' "$OUT" && ok "-j is --json, and documented" || nok "-j"
BLAMER_BACKEND=floppy err_has 1 "BLAMER_BACKEND=floppy: use device, dir or auto" --backend dir list
BLAMER_BACKEND=floppy err_has 1 "BLAMER_BACKEND=floppy: use device, dir or auto" status
err_has 1 "/nonexistent does not exist (no heap was ever made there: check --dir)" --dir /nonexistent list
BLAMER_DIR=/nonexistent err_has 1 "check BLAMER_DIR" list
BLAMER_DIR=/nonexistent err_has 1 "check BLAMER_DIR" status
BLAMER_DIR=/nonexistent err_has 1 "check BLAMER_DIR" top --once
# programs of the real library that end without blamer_close(): exit(3),
# exit(0) (a return from main), abort(): the dir heap says which
mkdir -m 700 "$D.end"
(ulimit -c 0; for how in 3 0 abort; do "$MK" "$D.end" end "$how"; done) >"$D.endpids" 2>/dev/null
read -r p3 p0 pa < <(tr '\n' ' ' <"$D.endpids")
BLAMER_DIR=$D.end run 0 list && grep -q "^ *$p3 mkheap  *-  *exit:3 " "$OUT" &&
	grep -q "^ *$p0 mkheap  *-  *exit:0 " "$OUT" && grep -q "^ *$pa mkheap  *-  *dead " "$OUT" &&
	ok "list: exit(3), exit(0) and abort() on the dir backend look different" || nok "list of ended writers"
BLAMER_DIR=$D.end run 0 postmortem "$p3" &&
	grep -q "^pid $p3 (mkheap) \[claimed\]: exited with code 3 (as its heap says" "$OUT" &&
	grep -q '^  ended at [0-9-]* [0-9:]* ([0-9.]*s ago)$' "$OUT" &&
	grep -q '#0 task "last-task" pushed [0-9.]*s ago' "$OUT" &&
	ok "postmortem of exit(3): the code, when, and its last activity's age" || nok "postmortem exit(3)"
BLAMER_DIR=$D.end run 0 postmortem "$p0" && grep -q "exited with code 0 (as its heap says" "$OUT" &&
	ok "postmortem of a return from main without blamer_close(): a clean exit" || nok "postmortem exit(0)"
BLAMER_DIR=$D.end run 0 postmortem "$pa" && grep -q "^pid $pa (mkheap) \[claimed\]: gone, cause unknown" "$OUT" &&
	grep -q '^  last sign of life at .* ago): it ended then or later$' "$OUT" &&
	ok "postmortem of abort(): cause unknown, and its last sign of life" || nok "postmortem abort"
BLAMER_DIR=$D.end run 0 dump "$p3" && grep -q '^  ended at ' "$OUT" && ok "dump says when it ended" || nok "dump ended"
rm -rf "$D.end" "$D.endpids"
# A name full of terminal escape sequences: comm is the name of the file
# executed (here a symlink), argv[0] the path; neither reaches the terminal.
mkdir -m 700 "$D.evil"
evil=$'x\e[2J\e]0;pwn\a'
ln -s "$MK" "$D.evil/$evil"
"$D.evil/$evil" "$D.evil" live 3 >"$D.evilpid" &
(ulimit -c 0; "$D.evil/$evil" "$D.evil" end 0 >/dev/null)
for _ in $(seq 100); do [ -s "$D.evilpid" ] && break; sleep 0.05; done
evilpid=$(cat "$D.evilpid")
clean=1
for args in list "top --once" "top --once --dead" dump "blame --dead" postmortem; do
	# shellcheck disable=SC2086
	BLAMER_DIR=$D.evil run 0 $args || { clean=0; echo "# $args: status $st"; break; }
	if tr -d '\n\t' <"$OUT" | LC_ALL=C grep -q '[[:cntrl:]]'; then
		clean=0; echo "# $args: a control character on stdout"; break
	fi
done
BLAMER_DIR=$D.evil run 0 list && [ "$clean" = 1 ] &&
	[ "$(grep -c ' x?\[2J?\]0;pwn? ' "$OUT")" -eq 2 ] &&
	ok "a name full of escape sequences reaches no view raw (list, top, dump, blame, postmortem)" ||
	nok "escape sequences in names"
[ -n "$evilpid" ] && kill "$evilpid" 2>/dev/null
# OSC 52 (a clipboard write), a carriage return and byte 0xff in a
# process name, in a directory name, in a file name of the directory and
# in the environment: no view, no message writes a byte outside
# printable ASCII (and newlines) to the terminal; every JSON document is
# valid UTF-8.
osc=$'\e]52;c;aGk=\a\r\xff'
E="$D.osc$osc"
mkdir -m 700 "$E" "$D.oscbin"
ln -s "$MK" "$D.oscbin/o$osc"
"$D.oscbin/o$osc" "$E" live 1 >"$D.oscpid" &
(ulimit -c 0; "$D.oscbin/o$osc" "$E" end 0 >/dev/null)
for _ in $(seq 100); do [ -s "$D.oscpid" ] && break; sleep 0.05; done
: >"$E/$osc.0.slab"		# skipped, and the skip reported
dirty=
for args in list "list --json" "top --once" "top --once --json" dump "dump --json" "blame --dead" \
	"blame --json" postmortem "postmortem --json" status "status --json" "export --prometheus" \
	"dump 4194399" "release 4194399"; do
	# shellcheck disable=SC2086
	BLAMER_DIR=$E "$B" $args >"$OUT" 2>"$OUT.err"
	if [ -n "$(LC_ALL=C tr -d '\n\040-\176' <"$OUT.err")" ]; then dirty="$dirty [$args: stderr]"; fi
	case $args in
	*--json*) /usr/bin/python3 -c 'import json, sys
for l in open(sys.argv[1], "rb"): json.loads(l.decode("utf-8"))' "$OUT" 2>/dev/null ||
			dirty="$dirty [$args: not UTF-8 JSON]" ;;
	export*) ;;	# the Prometheus exporter has its own sanitizer
	*) [ -z "$(LC_ALL=C tr -d '\n\040-\176' <"$OUT")" ] || dirty="$dirty [$args: stdout]" ;;
	esac
done
for env in "BLAMER_DIR=$E/missing" "BLAMER_BACKEND=$osc"; do
	env "$env" "$B" list >"$OUT" 2>"$OUT.err"
	[ -s "$OUT.err" ] && [ -z "$(LC_ALL=C tr -d '\n\040-\176' <"$OUT.err")" ] || dirty="$dirty [$env]"
done
"$B" dump "$osc" >"$OUT" 2>"$OUT.err"
[ -z "$(LC_ALL=C tr -d '\n\040-\176' <"$OUT.err")" ] || dirty="$dirty [an argument]"
# a newline in a name quoted by a message cannot forge a second line
BLAMER_DIR=$'/nonexistent\nblamer: forged' "$B" list >"$OUT" 2>"$OUT.err"
[ "$(wc -l <"$OUT.err")" -eq 1 ] && ! grep -q '^blamer: forged' "$OUT.err" || dirty="$dirty [a newline]"
BLAMER_DIR=$E run 0 list
[ -z "$dirty" ] && [ "$(grep -c '^ *[0-9]* o?]52;c;aGk=???' "$OUT")" -eq 2 ] &&
	ok "OSC 52, CR and 0xff in names, paths, the environment: only printable ASCII reaches the terminal, JSON is UTF-8" ||
	{ echo "#$dirty"; nok "OSC 52 / CR / 0xff"; }
kill "$(cat "$D.oscpid")" 2>/dev/null
rm -rf "$E" "$D.oscbin" "$D.oscpid"
# A dead heap that claims a time of death in the future (its files' times
# are its writer's to set): not believed, never "? ago".
mkdir -m 700 "$D.future"
(ulimit -c 0; "$MK" "$D.future" end 7 >"$D.futpid" 2>/dev/null)
futpid=$(cat "$D.futpid")
touch -d '+1 year' "$D.future/$futpid"-*
BLAMER_DIR=$D.future run 0 postmortem "$futpid" && grep -q "exited with code 7" "$OUT" &&
	! grep -q '? ago\|ended at [0-9]' "$OUT" && grep -q '^  ended at an unknown time' "$OUT" &&
	BLAMER_DIR=$D.future run 0 list --json && grep -q '"last_seen_ns":"\?0"\?[,}]' "$OUT" &&
	ok "a time of death in the future is not believed" || nok "time of death in the future"
rm -rf "$D.evil" "$D.evilpid" "$D.future" "$D.futpid"
# BLAMER_DIR at a place the library never writes: a symlink (to a good
# directory), a directory others can write: refused, one line.
mkdir -m 700 "$D.real"
ln -s "$D.real" "$D.link"
BLAMER_DIR=$D.link err_has 1 "$D.link is a symlink: refused" list
BLAMER_DIR=$D.link err_has 1 "is a symlink" release --all
mkdir -m 777 "$D.open"
BLAMER_DIR=$D.open err_has 1 "$D.open is writable by group or others" list
# A directory name longer than the 255 bytes the library keeps was cut to
# them: `--dir A/sub release --all` released the heaps of A, a directory
# never named. Refused, in one line; A itself (255 bytes) is read whole.
long=$D.long/$(printf 'p%.0s' $(seq $((255 - ${#D} - 6))))
mkdir -m 700 "$D.long" "$long" "$long/sub" && "$MK" "$long" dead 3999006 5 1 >/dev/null
err_has 1 "directory name too long (259 bytes, at most 255)" --dir "$long/sub" release --all
BLAMER_DIR=$long/sub err_has 1 "directory name too long" list
[ "${#long}" -eq 255 ] && ls "$long" | grep -q '^3999006-' && run 0 --dir "$long" list &&
	grep -q '^ *3999006 ' "$OUT" && ok "a directory name of 255 bytes is read, its heaps kept" ||
	nok "a directory name of 255 bytes"
if [ "$(id -u)" = 0 ] && [ -d "$D.real" ]; then
	# someone else's directory: root may read it (an administrator
	# looking at a user's heaps); its files must be its owner's: a file
	# of another uid is planted, skipped and said so
	"$MK" "$D.real" dead 3999004 5 1 && chown -R 65534 "$D.real" &&
	"$MK" "$D.real" dead 3999005 5 1 &&
	BLAMER_DIR=$D.real run 0 list && grep -q '^ *3999004 .* unchecked  claimed$' "$OUT" &&
	! grep -q '^ *3999005 ' "$OUT" &&
	grep -q 'skipped .*/3999005-5.0.slab: owned by another user' "$OUT.err" &&
	BLAMER_DIR=$D.real run 0 dump && ! grep -q 'pid 3999005' "$OUT" &&
		ok "another user's directory: read as its owner's; a file of another uid is planted, never read" ||
		nok "another user's directory"
else
	ok "# SKIP not root: cannot make a directory of another user"
fi
# every command that reads heaps, every such mistake: status 1, nothing
# on stdout, one line on stderr
bad=
for env in BLAMER_BACKEND=floppy BLAMER_DIR=/nonexistent BLAMER_DIR=$D.link BLAMER_DIR=$D.open \
	BLAMER_DIR=$long/sub; do
	for args in list "list --json" dump blame "top --once" postmortem "release --all" \
		"export --prometheus" status "status --json"; do
		# shellcheck disable=SC2086
		env "$env" "$B" $args >"$OUT" 2>"$OUT.err"
		st=$?
		[ "$st" -eq 1 ] && [ ! -s "$OUT" ] && [ "$(wc -l <"$OUT.err")" -eq 1 ] ||
			bad="$bad [$env $args: status $st]"
	done
done
[ -z "$bad" ] && ok "a bad backend or directory: every command says so in one line, status 1" ||
	{ echo "#$bad"; nok "a bad backend or directory, for every command"; }
rm -rf "$D.real" "$D.link" "$D.open"
mkdir -m 700 "$D.empty"
BLAMER_DIR=$D.empty run 0 dump && [ ! -s "$OUT" ] && [ "$(wc -l <"$OUT.err")" -eq 1 ] &&
	grep -q "^blamer: no heaps in $D.empty\$" "$OUT.err" &&
	ok "dump with no heaps: one line, on stderr only" || nok "dump with no heaps"
BLAMER_DIR=$D.empty run 0 list && [ "$(wc -l <"$OUT")" -eq 1 ] && [ "$(wc -l <"$OUT.err")" -eq 1 ] &&
	ok "list with no heaps: the header, and one line on stderr" || nok "list with no heaps"
rmdir "$D.empty"

# Files that hold no heap (0 bytes, or zeros where the header would be)
# are one count, not a process each: one line on stderr, no row, one
# number in JSON and Prometheus, one in top's title.
mkdir -m 700 "$D.nohp"
"$MK" "$D.nohp" empty 300 && "$MK" "$D.nohp" empty 300 64 3100000 &&
	"$MK" "$D.nohp" dead 3999011 5 1 && bad=
nf=$(ls "$D.nohp" | grep -c '^3[01]00[0-9]*-7.0.slab$')
BLAMER_DIR=$D.nohp run 0 list && [ "$(wc -l <"$OUT")" -eq 2 ] && grep -q '^ *3999011 ' "$OUT" &&
	[ "$(wc -l <"$OUT.err")" -eq 1 ] &&
	grep -q "^blamer: skipped $nf files of $D.nohp that hold no heap" "$OUT.err" || bad="$bad list"
BLAMER_DIR=$D.nohp run 0 list --json && grep -q "\"empty_files\":\"$nf\"" "$OUT" &&
	[ "$(grep -o '"pid":' "$OUT" | wc -l)" -eq 1 ] || bad="$bad json"
BLAMER_DIR=$D.nohp run 0 export --prometheus --per-process && grep -q "^blamer_empty_files $nf\$" "$OUT" &&
	[ "$(grep -c '^blamer_process_info{' "$OUT")" -eq 1 ] || bad="$bad export"
BLAMER_DIR=$D.nohp run 0 top --once --dead && head -1 "$OUT" | grep -q ", $nf empty files skipped\$" &&
	[ "$(grep -c '^ *3[01]00[0-9]* ' "$OUT")" -eq 0 ] || bad="$bad top"
[ -z "$bad" ] && [ "$nf" -eq 600 ] && ok "$nf files without a heap: one count in list, JSON, export and top, no rows" ||
	nok "files without a heap ($nf):$bad"
rm -rf "$D.nohp"

[ "$fails" -eq 0 ]
