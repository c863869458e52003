#!/bin/bash
# reader-scale: the cost of a snapshot grows with live data, not with dead
# history (Prometheus multiprocess mode took 40 s for 6,800 leftover files).
#   scale-test.sh BLAMER MKHEAP [NDEAD]
# Times `blamer blame` (live heaps read in full, dead ones from their file
# names only), `blamer list` (headers of every heap) and `blamer dump`
# (everything, on demand) with 0 and NDEAD dead heaps next to 4 live ones.
# The times are reported, not asserted (machines differ); what is asserted
# is that every heap is accounted for.
set -u
B=$1 MK=$2 NDEAD=${3:-2000}
D=$(mktemp -d /tmp/blamer-scale.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$D" "$D".live*' EXIT
export BLAMER_DIR=$D
for i in 1 2 3 4; do
	"$MK" "$D" live 1 >"$D.live$i" &
	pids+=($!)
done
for i in 1 2 3 4; do
	for _ in $(seq 100); do [ -s "$D.live$i" ] && break; sleep 0.05; done
done

ms() {	# ms CMD...: wall time of the best of 3 runs, in milliseconds
	local best=999999 t0 t1 i
	for i in 1 2 3; do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		(( (t1 - t0) / 1000000 < best )) && best=$(( (t1 - t0) / 1000000 ))
	done
	echo $best
}

echo "TAP version 13"
echo "1..2"
b0=$(ms "$B" blame) l0=$(ms "$B" list) d0=$(ms "$B" dump)
for ((i = 0; i < NDEAD; i++)); do
	"$MK" "$D" dead $((3000000 + i)) 7 1 || { echo "not ok 1 - fixtures"; exit 1; }
done
b1=$(ms "$B" blame) l1=$(ms "$B" list) d1=$(ms "$B" dump)
echo "# 4 live heaps, 0 dead:      blame ${b0} ms, list ${l0} ms, dump ${d0} ms"
echo "# 4 live heaps, $NDEAD dead ($((2 * NDEAD)) files): blame ${b1} ms, list ${l1} ms, dump ${d1} ms"
n=$("$B" list | tail -n +2 | wc -l)
if [ "$n" -eq $((NDEAD + 4)) ]; then
	echo "ok 1 - list accounts for all $n heaps"
else
	echo "not ok 1 - list shows $n heaps, expected $((NDEAD + 4))"
fi
procs=$("$B" blame | awk 'NR == 2 { print $3 }')
if [ "$procs" = 4 ]; then
	echo "ok 2 - blame sums the 4 live heaps only (dead ones need --dead)"
else
	echo "not ok 2 - blame counted $procs processes"
fi
