#!/bin/sh
# fleet: folds that are killed. Rounds of short-lived workers (fleet-worker:
# every way a worker ends), each followed by an exporter killed in the
# middle of its fold: by the test hook at each step of the transaction
# (BLAMER_TEST_FOLD_ABORT: 1 after the remainder is computed, 2 after the
# temporary file is written, 3 after its fsync, 4 after the rename, 5 after
# the directory's fsync, 6 after the first release) and by SIGKILL at
# random moments; then an exporter that finishes. After every round the
# service's series must be exactly what the workers added (check.py, or
# `fleet-worker check` where there is no Python): nothing counted twice,
# nothing lost, the same series, the dead heaps released but the
# --keep-dead last, no temporary file left. Then the state as untrusted
# input: a state file cut short, changed, writable by others, with two
# names, or held by another exporter, is refused with one line and status
# 1, and the state reads as before after.
#   fold-crash-test.sh BLAMER FLEET_WORKER [ROUNDS]
# The backend is the environment's (the VM runs it on /dev/blamer, with
# busybox: POSIX sh, no Python).
set -u
B=$1 W=$2 ROUNDS=${3:-40}
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d /tmp/blamer-fold.XXXXXX)
trap 'rm -rf "$D"' EXIT
mkdir -m 0700 "$D/heaps" "$D/state"
[ "${BLAMER_BACKEND:-}" = device ] || export BLAMER_BACKEND=dir BLAMER_DIR="$D/heaps"
S=$D/state/fold.state
if [ -x /usr/bin/python3 ] && [ -f "$HERE/check.py" ]; then
	CHECK="/usr/bin/python3 $HERE/check.py"
else
	CHECK="$W check"
fi
echo "TAP version 13"
echo "1..20"
n=0 t=0

ok() { t=$((t + 1)); echo "ok $t - $*"; }
nok() { t=$((t + 1)); echo "not ok $t - $*"; }
# rnd SEED MAX: a number below MAX (awk: busybox's sh may have no $RANDOM)
rnd() { awk -v s="$1" -v m="$2" 'BEGIN { srand(s); print int(rand() * m) }'; }

# check KEEP: the exposition of an exporter that finishes is exact for $n workers
check() {
	"$B" export --state "$S" --keep-dead "$1" >"$D/out" 2>"$D/err" &&
		$CHECK "$D/out" "$n" >"$D/why"
}

heaps() {
	if [ "${BLAMER_BACKEND:-}" = device ]; then
		"$B" list 2>/dev/null | awk 'NR > 1' | wc -l
	else
		ls "$D/heaps" | sed 's/\..*//' | sort -u | wc -l
	fi
}

aborts=0 kills=0 bad= steps=
seed=$(date +%s)
echo "# seed $seed"
round=0
while [ "$round" -lt "$ROUNDS" ]; do
	round=$((round + 1))
	k=$(($(rnd "$seed$round" 5) + 1))
	"$W" "$k" "$n" 2>/dev/null || { bad="fleet-worker failed"; break; }
	n=$((n + k))
	keep=$(rnd "$seed${round}k" 3)
	step=$((round % 8))
	if [ "$step" -ge 1 ] && [ "$step" -le 6 ]; then
		BLAMER_TEST_FOLD_ABORT=$step "$B" export --state "$S" --keep-dead "$keep" \
			>/dev/null 2>&1
		st=$?
		# abort() at the step (134), or the fold had nothing to reach it
		if [ "$st" -ge 128 ]; then
			aborts=$((aborts + 1))
			steps="$steps $step"
		elif [ "$st" != 0 ]; then
			bad="round $round: hook $step: status $st"
			break
		fi
	else
		# SIGKILL somewhere in the fold (or before, or after)
		"$B" export --state "$S" --keep-dead "$keep" >/dev/null 2>&1 &
		p=$!
		sleep "0.00$(($(rnd "$seed${round}s" 9) + 1))"
		kill -9 "$p" 2>/dev/null && kills=$((kills + 1))
		wait "$p" 2>/dev/null
	fi
	if ! check "$keep"; then
		bad="round $round ($n workers, step $step): $(cat "$D/why" "$D/err")"
		break
	fi
	# the folded heaps released but the last $keep (and the master's own)
	h=$(heaps)
	if [ "$h" -gt $((keep + 2)) ]; then
		bad="round $round: $h heaps left, --keep-dead $keep"
		break
	fi
done
if [ -z "$bad" ]; then
	ok "$ROUNDS rounds, $n workers: every series exact after every killed fold ($aborts killed at a step:$steps; $kills by SIGKILL)"
else
	nok "killed folds: $bad"
fi
left=$(ls -A "$D/state" | grep -v '^fold\.state$' | grep -v '^fold\.state\.lock$')
if [ -z "$left" ]; then
	ok "no temporary state file left behind"
else
	nok "state directory: $left"
fi
if [ "$(stat -c %a "$S")" = 600 ] && [ "$(stat -c %u "$S")" = "$(id -u)" ]; then
	ok "the state is the exporter's, mode 0600"
else
	nok "state mode $(stat -c %a "$S") owner $(stat -c %u "$S")"
fi
# every heap folded and released: the remainder alone gives the same
"$W" 3 "$n" 2>/dev/null && n=$((n + 3))
if check 0 && [ "$(heaps)" -le 1 ] && grep -q '^blamer_folded_heaps_total ' "$D/out"; then
	ok "every dead heap folded and released: the series unchanged"
else
	nok "fold all: $(cat "$D/why" "$D/err")"
fi

# The state as untrusted input: each refused, with one line and status 1.
refused() {
	"$B" export --state "$S" >"$D/out" 2>"$D/err"
	st=$?
	if [ "$st" = 1 ] && [ "$(wc -l <"$D/err")" = 1 ] && grep -q "$2" "$D/err"; then
		ok "a state $1 is refused: $(cat "$D/err")"
	else
		nok "a state $1: status $st: $(cat "$D/err")"
	fi
}
cp "$S" "$D/good"
size=$(stat -c %s "$S")
head -c $((size - 10)) "$D/good" >"$S"
refused "cut short" "not whole"
cp "$D/good" "$S"
printf '~' | dd of="$S" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
refused "with a byte changed" "not whole"
cp "$D/good" "$S" && chmod 0620 "$S"
refused "others may write" "refused"
chmod 0600 "$S"
ln "$S" "$D/state/alias"
refused "with two names" "refused"
rm -f "$D/state/alias"
# another exporter holding the state: this one may not fold into it
cp "$D/good" "$S"
"$B" export --state "$S" --interval 1 --output "$D/serving.prom" 2>/dev/null &
holder=$!
i=0
while [ ! -s "$D/serving.prom" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
refused "in use by another exporter" "in use by another exporter"
kill -TERM "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
# and the good state still reads: nothing was folded meanwhile
if check 0; then
	ok "after the refusals the state reads as it was: the series exact"
else
	nok "after refusals: $(cat "$D/why" "$D/err")"
fi
# A new state in a directory others may change: refused before anything
# is folded (the next start would refuse the file, its counts stranded).
mkdir -m 0777 "$D/open"
if "$B" export --state "$D/open/new.state" --keep-dead 0 >"$D/out" 2>"$D/err"; then
	nok "a new state in a directory others may change was taken"
elif grep -q "may be changed by others" "$D/err" && [ ! -e "$D/open/new.state" ]; then
	ok "a new state in a directory others may change is refused: $(cat "$D/err")"
else
	nok "a new state in an open directory: $(cat "$D/err")"
fi
# An operator's copies beside the state (6 characters after a dot, as a
# commit's temporary file has) are not taken for temporaries and removed.
cp "$S" "$D/state/fold.state.backup" && cp "$S" "$D/state/fold.state.broken"
check 0 >/dev/null 2>&1
if [ -f "$D/state/fold.state.backup" ] && [ -f "$D/state/fold.state.broken" ]; then
	ok "an exporter's start leaves the operator's copies of the state alone"
else
	nok "an exporter's start removed: $(cd "$D/state" && ls -A)"
fi
rm -f "$D/state/fold.state.backup" "$D/state/fold.state.broken"
# A writer in another pid namespace, under a pid /proc here does not show
# (40000): its heap's lock says it runs, so it is counted and neither
# folded nor released (a fold once unlinked such a heap mid-run).
if [ "${BLAMER_BACKEND:-}" = dir ] && [ "$(id -u)" = 0 ] &&
	unshare --pid --fork true 2>/dev/null; then
	mkdir -m 0700 "$D/ns"
	BLAMER_DIR=$D/ns unshare --pid --fork --mount-proc sh -c \
		"echo 39999 >/proc/sys/kernel/ns_last_pid; '$W' hold 5; true" 2>/dev/null &
	holder=$!
	i=0
	while [ -z "$(ls "$D/ns")" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 0.5
	BLAMER_DIR=$D/ns "$B" export --state "$D/state/ns.state" --keep-dead 0 >"$D/ns.out" 2>&1
	files=$(ls "$D/ns" | wc -l)
	wait "$holder"
	if [ "$files" -ge 1 ] && grep -q '^jobs_total{uid="0"} 1$' "$D/ns.out"; then
		ok "a writer in another pid namespace is counted, not folded nor released"
	else
		nok "a writer in another pid namespace: $files files left; $(grep -v '^#' "$D/ns.out" | head -3)"
	fi
else
	ok "# SKIP a writer in another pid namespace: needs the dir backend, root and unshare"
fi
# The state folds the heaps of one source: an exporter of another
# directory with it folds nothing (a fold there, then here again, counted
# the kept heaps twice), and the state's own source reads exact after.
if [ "${BLAMER_BACKEND:-}" = dir ]; then
	mkdir -m 0700 "$D/elsewhere"
	BLAMER_DIR=$D/elsewhere "$W" hold 0
	BLAMER_DIR=$D/elsewhere "$B" export --state "$S" --keep-dead 0 >"$D/out" 2>"$D/other"
	if grep -q "holds the heaps of" "$D/other" && [ -n "$(ls "$D/elsewhere")" ] && check 2; then
		ok "a state is not folded into from another directory: $(cat "$D/other")"
	else
		nok "another directory's fold: $(cat "$D/other" "$D/why")"
	fi
	rm -rf "$D/elsewhere"
else
	ok "# SKIP another directory's heaps: the dir backend's"
fi
# Dead heaps whose jobs_total is defined otherwise than the remainder's (a
# redeploy gave it a label): the remainder cannot keep their values, so
# they are neither folded nor released, and count while they are there
# (a fold once recorded them as folded and threw their counts away).
if [ "${BLAMER_BACKEND:-}" = dir ]; then
	mkdir -m 0700 "$D/cf"
	# the remainder's jobs_total: no label
	BLAMER_DIR=$D/cf "$W" hold 0
	BLAMER_DIR=$D/cf "$B" export --state "$D/state/cf.state" --keep-dead 0 >/dev/null 2>&1
	BLAMER_DIR=$D/cf "$W" hold 0 a && BLAMER_DIR=$D/cf "$W" hold 0 a
	BLAMER_DIR=$D/cf "$B" export --state "$D/state/cf.state" --keep-dead 0 >"$D/cf.out" 2>&1
	files=$(ls "$D/cf" | sed 's/\..*//' | sort -u | wc -l)
	if [ "$files" = 2 ] &&
		grep -q "^jobs_total{route=\"a\",uid=\"$(id -u)\"} 2\$" "$D/cf.out"; then
		ok "heaps defining a metric otherwise than the remainder are kept and counted, not folded"
	else
		nok "a metric defined otherwise: $files heaps left; $(grep -v '^#' "$D/cf.out" | head -5)"
	fi
else
	ok "# SKIP heaps defining a metric otherwise: the test counts the dir backend's files"
fi
# A kept heap (--keep-dead) the reader misses for one fold (a read that
# failed; here its files moved away and back) keeps its identity in the
# state: the next fold skips it (its identity was dropped, and the heap,
# never released, was folded again: counted twice).
if [ "${BLAMER_BACKEND:-}" = dir ]; then
	mkdir -m 0700 "$D/kp" "$D/kp-away"
	BLAMER_DIR=$D/kp "$W" hold 0
	BLAMER_DIR=$D/kp "$B" export --state "$D/state/kp.state" --keep-dead 1 >/dev/null 2>&1
	mv "$D/kp/"* "$D/kp-away/"
	BLAMER_DIR=$D/kp "$B" export --state "$D/state/kp.state" --keep-dead 1 >/dev/null 2>&1
	mv "$D/kp-away/"* "$D/kp/"
	BLAMER_DIR=$D/kp "$B" export --state "$D/state/kp.state" --keep-dead 1 >"$D/kp.out" 2>&1
	if grep -q "^jobs_total{uid=\"$(id -u)\"} 1\$" "$D/kp.out" &&
		grep -q '^blamer_folded_heaps_total 1$' "$D/kp.out"; then
		ok "a kept heap missed for one fold is not folded again"
	else
		nok "a kept heap missed once: $(grep -E '^(jobs|blamer_folded)' "$D/kp.out")"
	fi
else
	ok "# SKIP a kept heap missed for one fold: the test moves the dir backend's files"
fi
# Heaps that choose many label values: three dead heaps of 3,000 series
# each, overlapping by half, fold into 6,000 series, each exactly the sum
# of its heaps' (the fold finds a heap's series by a keyed hash; a walk of
# the remainder per series made such folds quadratic: 3 heaps of 32,000
# took 22 s, now 0.3 s).
if [ "${BLAMER_BACKEND:-}" = dir ]; then
	mkdir -m 0700 "$D/many"
	for first in 0 1500 3000; do BLAMER_DIR=$D/many "$W" many 3000 $first; done
	BLAMER_DIR=$D/many "$B" export --state "$D/state/many.state" --keep-dead 0 >/dev/null 2>&1
	BLAMER_DIR=$D/many "$B" export --state "$D/state/many.state" --keep-dead 0 >"$D/many.out" 2>&1
	got=$(awk '/^label_total\{/ { n++; s += $2 } END { print n + 0, s + 0 }' "$D/many.out")
	want=$(awk 'BEGIN { for (f = 0; f <= 3000; f += 1500) for (k = f; k < f + 3000; k++) s += 1 + k % 7; print 6000, s }')
	if [ "$got" = "$want" ] && [ -z "$(ls "$D/many")" ]; then
		ok "three heaps of 3,000 label values each fold exactly into 6,000 series ($got)"
	else
		nok "many label values: series and sum $got, want $want; $(ls "$D/many" | wc -l) files left"
	fi
else
	ok "# SKIP many label values: the test counts the dir backend's files"
fi
# A uid's series in the remainder are bounded ($BLAMER_FOLD_MAX_SERIES):
# of the same three heaps under a bound of 4,000, the first folds (3,000)
# and the two that would pass it stay, counted (the totals exact), not
# released; a bad bound is refused in one line.
if [ "${BLAMER_BACKEND:-}" = dir ]; then
	mkdir -m 0700 "$D/cap"
	for first in 0 1500 3000; do BLAMER_DIR=$D/cap "$W" many 3000 $first; done
	BLAMER_DIR=$D/cap BLAMER_FOLD_MAX_SERIES=4000 "$B" export --state "$D/state/cap.state" \
		--keep-dead 0 >"$D/cap.out" 2>&1
	got=$(awk '/^label_total\{/ { n++; s += $2 } END { print n + 0, s + 0 }' "$D/cap.out")
	heaps=$(ls "$D/cap" | sed 's/\..*//' | sort -u | wc -l)
	BLAMER_DIR=$D/cap BLAMER_FOLD_MAX_SERIES=0 "$B" export --state "$D/state/cap.state" \
		>/dev/null 2>"$D/cap.err"
	st=$?
	if [ "$got" = "$want" ] && [ "$heaps" = 2 ] &&
		grep -q '^blamer_folded_heaps_total 1$' "$D/cap.out" && [ "$st" = 1 ] &&
		[ "$(wc -l <"$D/cap.err")" = 1 ]; then
		ok "a uid's series in the remainder are bounded: 1 heap folded, 2 kept and counted ($got); $(cat "$D/cap.err")"
	else
		nok "the bound: series and sum $got, want $want; $heaps heaps left; status $st; $(grep '^blamer_folded' "$D/cap.out") $(cat "$D/cap.err")"
	fi
else
	ok "# SKIP a uid's series bounded: the test counts the dir backend's files"
fi
# A uid's bytes in the state are bounded too ($BLAMER_FOLD_MAX_BYTES):
# attribution paths were not bounded at all (nor were long label values
# but by their count), so one user's heaps grew the state, which every
# start reads and every commit writes whole, until a start refused it.
# Three heaps of 200 paths of depth 2 (at most 155 bytes each: 31,000 a
# heap) under a bound of 65,536: two fold, the third is held (counted,
# not released, in blamer_fold_held_heaps), the totals exact; the old
# fold took all three. A bad bound is refused in one line.
if [ "${BLAMER_BACKEND:-}" = dir ]; then
	mkdir -m 0700 "$D/bytes"
	for first in 0 200 400; do BLAMER_DIR=$D/bytes "$W" paths 200 $first; done
	BLAMER_DIR=$D/bytes BLAMER_FOLD_MAX_BYTES=65536 "$B" export \
		--state "$D/state/bytes.state" --keep-dead 0 >"$D/bytes.out" 2>&1
	got=$(awk '/^blamer_attribution_cpu_seconds_total\{/ { n++; s += $2 * 1e9 } END { printf "%d %d\n", n, s + 0.5 }' "$D/bytes.out")
	want=$(awk 'BEGIN { for (k = 0; k < 600; k++) s += 1 + k % 7; print 600, s }')
	heaps=$(ls "$D/bytes" | sed 's/\..*//' | sort -u | wc -l)
	BLAMER_DIR=$D/bytes BLAMER_FOLD_MAX_BYTES=65535 "$B" export \
		--state "$D/state/bytes.state" >/dev/null 2>"$D/bytes.err"
	st=$?
	if [ "$got" = "$want" ] && [ "$heaps" = 1 ] &&
		grep -q '^blamer_folded_heaps_total 2$' "$D/bytes.out" &&
		grep -q '^blamer_fold_held_heaps 1$' "$D/bytes.out" && [ "$st" = 1 ] &&
		[ "$(wc -l <"$D/bytes.err")" = 1 ]; then
		ok "a uid's bytes in the state are bounded: 2 heaps of paths folded, 1 held and counted ($got); $(cat "$D/bytes.err")"
	else
		nok "the bytes bound: paths and sum $got, want $want; $heaps heaps left; status $st; $(grep -E '^blamer_fold(ed|_held)' "$D/bytes.out" | tr '\n' ' ') $(cat "$D/bytes.err")"
	fi
else
	ok "# SKIP a uid's bytes bounded: the test counts the dir backend's files"
fi
# Two users name a metric alike on the device (uid 1000: jobs_total with a
# label, two heaps; uid 1001: jobs_total without, three heaps): each
# user's series merge under the user's own definition, none a conflict,
# as the reader merges them (an export without a state) and through a
# fold (the definition most processes gave once won over all users:
# uid 1000's series were left out).
if [ "${BLAMER_BACKEND:-}" = device ] && command -v as-user >/dev/null; then
	chmod 0666 /dev/blamer
	for i in 1 2; do as-user "$W" hold 0 a; done
	for i in 1 2 3; do as-user2 "$W" hold 0; done
	"$B" export >"$D/uids.out" 2>&1
	"$B" export --state "$D/state/uids.state" --keep-dead 0 >>"$D/uids.out" 2>&1
	if [ "$(grep -c '^jobs_total{route="a",uid="1000"} 2$' "$D/uids.out")" = 2 ] &&
		[ "$(grep -c '^jobs_total{uid="1001"} 3$' "$D/uids.out")" = 2 ] &&
		[ "$(grep -c '^blamer_metric_conflicts 0$' "$D/uids.out")" = 2 ]; then
		ok "two users' definitions of one name: each user's series under its own, read and folded"
	else
		nok "two users' definitions: $(grep -E '^(jobs_total|blamer_metric_conflicts)' "$D/uids.out" | tr '\n' ' ')"
	fi
else
	ok "# SKIP two users' definitions of one name: the device's, in the VM (as-user)"
fi
exit 0
