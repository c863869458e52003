#!/bin/bash
# cli: every blamer subcommand and its errors, on the dir backend (host).
#   cli-test.sh BLAMER MKHEAP
# Golden files (selftests/reader/golden/) hold normalized output: the live
# fixture's pid becomes LIVEPID, ages become AGE. UPDATE_GOLDEN=1 rewrites them.
set -u
B=$1 MK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
GOLD=$HERE/golden
D=$(mktemp -d /tmp/blamer-cli.XXXXXX)
OUT=$D.out
n=0 fails=0
livepid=

cleanup() {
	[ -n "$livepid" ] && kill "$livepid" 2>/dev/null
	rm -rf "$D" "$D.out" "$D.err" "$D.prom" "$D.live"
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
	sed -e "s/\b$livepid\b/LIVEPID/g" -e "s/^ *LIVEPID/LIVEPID/" -e 's/[0-9.]*[smh] ago/AGE ago/g' \
	    -e 's/since [0-9.]*[smh]/since AGE/g' -e "s|$D|DIR|g"
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
echo "1..39"

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
run 0 blame && golden blame.txt
run 0 blame --dead && golden blame-dead.txt
run 0 blame --unit bytes && head -1 "$OUT" | grep -q 'bytes\*' && ok "blame --unit bytes sorts by bytes" || nok "blame --unit bytes"
err_has 2 "no measurements in unit" blame --unit furlongs
run 0 dump 3999001 && golden dump-dead.txt
run 0 dump "$livepid" && grep -q 'thread.*"main": depth 3' "$OUT" && grep -q 'url_id = 77' "$OUT" &&
	grep -q '/browser/tab/frame cpu_ns=15.0ms bytes=192Ki' "$OUT" && ok "dump of a live process" || nok "dump of a live process"
run 0 dump 3999003 && grep -q 'health corrupt: record list loops' "$OUT" && ok "dump names a corrupt heap" || nok "dump corrupt"
run 0 dump && [ "$(grep -c '^pid ' "$OUT")" -eq 4 ] && ok "dump shows all 4 heaps" || nok "dump all"
run 0 postmortem && golden postmortem.txt
run 0 postmortem 3999002 && grep -q '^pid 3999002 (app): gone, cause unknown' "$OUT" &&
	grep -q 'cache warm' "$OUT" && ! grep -q 3999001 "$OUT" && ok "postmortem PID" || nok "postmortem PID"
err_has 1 "still running" postmortem "$livepid"
err_has 1 "no heap for pid 12345678" dump 12345678
err_has 2 "is not a PID" dump abc
run 0 top --once && grep -q "^ *$livepid mkheap .*live.*main-loop.*lock-acquire \"cache-lock\"" "$OUT" &&
	grep -q 'cpu_ns.*15.0ms.*/browser/tab/frame' "$OUT" && ok "top --once" || nok "top --once"
run 0 top --count 2 --interval 0.1 && [ "$(grep -c '^blamer top' "$OUT")" -eq 2 ] &&
	grep -q '0.0us *0.0us\|15.0ms *0.0us' "$OUT" && ok "top --count 2 shows rates" || nok "top --count 2"
run 0 top --once --json && [ "$(wc -l <"$OUT")" -eq 1 ] && ok "top --once --json is one document" || nok "top --json"
run 0 export --prometheus && grep -q '^blamer_attribution_cpu_seconds_total{path="/browser/tab/frame"} 0.015000000$' "$OUT" &&
	ok "export --prometheus" || nok "export --prometheus"
run 0 export --prometheus --output "$D.prom" && [ -s "$D.prom" ] && [ ! -s "$OUT" ] &&
	! ls "$D.prom".tmp.* >/dev/null 2>&1 && ok "export --output writes atomically" || nok "export --output"
err_has 2 "needs a format" export
err_has 2 "unknown option '--frobnicate'" list --frobnicate
err_has 2 "unknown backend 'floppy'" --backend floppy list
BLAMER_BACKEND=floppy err_has 1 "BLAMER_BACKEND=floppy: use device, dir or auto" list
err_has 2 "--once does not apply to \`blamer list\`" list --once
err_has 2 "unknown command 'lsit'" lsit
err_has 2 "bad --interval" top --interval 0
err_has 2 "needs PIDs or slab IDs" release
err_has 1 "still running" release "$livepid"
# A PID no process can have (above the kernel's PID_MAX_LIMIT, 4194304):
# a small number like 777 can be the live fixture's own PID once PIDs wrap.
err_has 1 "no dead process or slab 4194399" release 4194399
run 0 release 3999001 && grep -q 'released pid 3999001 (app): 2 slabs' "$OUT" && ! ls "$D"/3999001-* >/dev/null 2>&1 &&
	ok "release PID unlinks its files" || nok "release PID"
run 0 release --all && [ "$(grep -c released "$OUT")" -eq 2 ] && ls "$D"/"$livepid"-* >/dev/null 2>&1 &&
	ok "release --all frees dead heaps only" || nok "release --all"
run 0 status --backend dir && grep -q '^heaps: 1 (0 dead)' "$OUT" && ok "status --backend dir" || nok "status dir"
if [ -e /dev/blamer ]; then
	ok "# SKIP /dev/blamer exists on this host"
	ok "# SKIP /dev/blamer exists on this host"
else
	err_has 1 "run \`blamer load\`" --backend device list
	err_has 1 "not loaded (run \`blamer load\`" status
fi
if [ -e /sys/module/blamer ]; then
	ok "# SKIP module loaded on this host"
else
	err_has 1 "not loaded (nothing to unload)" unload
fi
err_has 1 "not found" load /nonexistent/blamer.ko
run 0 --help && grep -q '^  postmortem' "$OUT" && ok "--help lists commands" || nok "--help"
BLAMER_DIR=$D/none run 0 list && [ "$(wc -l <"$OUT")" -eq 1 ] && ok "missing directory lists nothing" || nok "missing dir"

[ "$fails" -eq 0 ]
