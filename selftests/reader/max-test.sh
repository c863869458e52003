#!/bin/bash
# reader-max: one valid heap as large as the reader reads in every
# dimension at once (mkheap DIR max: 65,536 threads, 1,000 of them 1,024
# deep with every activity pushed from inside one of 65,536 modules, a
# wrapped 65,536-slot log ring, 65,536 children, DAG nodes, edges and
# paths of depth 8, 4,096 fields of process, global and activity data;
# about 200 MiB). Every command that reads it runs under generous limits
# of CPU time and address space (ulimit -t, -v): a reader that is
# quadratic anywhere (a walk of every module per activity took minutes
# here) is killed and fails; one linear in the records passes in
# seconds. The times and peak RSS are printed, not asserted (bench/
# measures CPU time per heap byte).
#   max-test.sh BLAMER MKHEAP
set -u
B=$1 MK=$2
CPU_LIMIT=${MAX_TEST_CPU:-60}		# seconds of CPU per command
VM_LIMIT=${MAX_TEST_VM:-3145728}	# KiB of address space per command
D=$(mktemp -d "${TMPDIR:-/tmp}/blamer-max.XXXXXX")
O=$(mktemp "${TMPDIR:-/tmp}/blamer-max-time.XXXXXX")
trap 'rm -rf "$D" "$O" "$O.time"' EXIT

cmds=("list" "dump" "dump --json" "postmortem" "postmortem --json"
      "top --once --dead" "top --once --dead --json" "blame --dead" "blame --dead --json"
      "export --prometheus")
echo "TAP version 13"
echo "1..$((${#cmds[@]} + 2))"
if ! "$MK" "$D" max 3000001 7; then
	echo "not ok 1 - the maximal heap could not be written"
	exit 1
fi
held=$(du -sk "$D" | cut -f1)
echo "ok 1 - the maximal heap: $held KiB in $(ls "$D" | wc -l) slab files"

n=2
for c in "${cmds[@]}"; do
	# shellcheck disable=SC2086  # $c is the command and its options
	bytes=$( ( ulimit -t "$CPU_LIMIT" -v "$VM_LIMIT"
		   /usr/bin/time -f '%U %S %M' -o "$O.time" "$B" --dir "$D" $c 2>/dev/null | wc -c
		   exit "${PIPESTATUS[0]}" ) )
	rc=$?
	read -r u s m < <(tail -n 1 "$O.time" 2>/dev/null) || { u=? s=? m=?; }
	if [ $rc -eq 0 ] && [ "$bytes" -gt 0 ]; then
		echo "ok $n - $c: ${u}s user ${s}s sys, peak RSS $((m / 1024)) MiB, $bytes bytes of output"
	else
		echo "not ok $n - $c: exit status $rc (over ${CPU_LIMIT}s of CPU or ${VM_LIMIT} KiB?), ${u}s user"
	fi
	n=$((n + 1))
done

# every activity's address was looked up in the module table: the dump
# names a module for each of the 1,024,000
got=$( ( ulimit -t "$CPU_LIMIT"; "$B" --dir "$D" dump 2>/dev/null ) | grep -c ' from libm[0-9]*\.so+0x10$')
if [ "$got" = 1024000 ]; then
	echo "ok $n - dump names the module of all 1,024,000 activities"
else
	echo "not ok $n - dump named the module of $got activities, not 1,024,000"
fi
