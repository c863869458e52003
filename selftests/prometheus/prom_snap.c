// SPDX-License-Identifier: MIT
/*
 * prom-snap: writes the Prometheus exposition of a snapshot made by hand
 * (a snapshot is plain data, include/blamer.h) with everything an
 * attacker can put in one: a comm with byte 0xff, an OSC 52 sequence,
 * quotes, backslashes and a newline; node names with '/', '%' and '@';
 * two nodes of one name; a node named "0x600" beside unnamed node 0x600;
 * one path recorded twice by a process; two heaps claiming one key;
 * named units, one shared by two units. prom-test.sh checks the output.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "blamer.h"

#define N_NODES 9

int main(void)
{
	/* by id, as the reader leaves them */
	static struct blamer_snap_node nodes[N_NODES] = {
		{ 0x10, 0, "root" },
		{ 0x20, 0, "a/b" },
		{ 0x21, 0, "a%2Fb" },
		{ 0x30, 0, "dup" },
		{ 0x31, 0, "dup" },
		{ 0x40, 0, "0x600" },
		{ 0x50, 0, "x@0x31" },
		{ 0x60, 0, "\xc3\xa9t\xc3\xa9" },	/* valid UTF-8 stays */
		{ 0x70, 0, "q\"\\" },		/* the label's quote and escape */
	};
	static struct blamer_snap_path paths[] = {
		{ 2, { 0x10, 0x20 }, 2, { BLAMER_UNIT_CPU_NS, 1007 }, { 1500000000, 1 } },
		{ 2, { 0x10, 0x21 }, 1, { BLAMER_UNIT_CPU_NS }, { 2 } },
		{ 2, { 0x10, 0x30 }, 1, { BLAMER_UNIT_COUNT }, { 3 } },
		{ 2, { 0x10, 0x31 }, 1, { BLAMER_UNIT_COUNT }, { 4 } },
		{ 2, { 0x10, 0x40 }, 1, { BLAMER_UNIT_COUNT }, { 5 } },
		{ 2, { 0x10, 0x600 }, 1, { BLAMER_UNIT_COUNT }, { 6 } },	/* unnamed */
		{ 2, { 0x10, 0x50 }, 1, { BLAMER_UNIT_COUNT }, { 7 } },
		{ 2, { 0x10, 0x60 }, 2, { 1008, 1009 }, { 8, 9 } },
		{ 2, { 0x10, 0x30 }, 1, { BLAMER_UNIT_COUNT }, { 10 } },	/* again */
		{ 1, { 0x10 }, 2, { 1010, 1010 }, { 11, 12 } },	/* one unit twice */
		{ 2, { 0x10, 0x70 }, 2, { BLAMER_UNIT_BYTES, 1011 }, { 13, 14 } },
	};
	static struct blamer_snap_unit_def defs[] = {
		{ 1007, BLAMER_BASE_NONE, "zzz" },	/* another heap's: loses to "requests" */
		{ 1007, BLAMER_BASE_NONE, "requests" },
		{ 1008, BLAMER_BASE_SECONDS, "handling" },
		{ 1009, BLAMER_BASE_NONE, "requests" },	/* a family two units share */
		{ 1011, BLAMER_BASE_NONE, "x{y=\"1\"} 2\n#" },	/* not a name: left unnamed */
	};
	static struct blamer_snap_process procs[3];
	struct blamer_snapshot s;

	memset(&s, 0, sizeof(s));
	s.backend = BLAMER_BACKEND_DIR;
	s.procs = procs;
	s.nprocs = 3;
	s.nodes = nodes;
	s.nnodes = N_NODES;
	s.unit_defs = defs;
	s.nunit_defs = sizeof(defs) / sizeof(defs[0]);
	procs[0].pid = 4242;
	procs[0].start_time_ns = 77;
	procs[0].heap_key = 0xabc;
	procs[0].state = BLAMER_PROC_LIVE;
	strcpy(procs[0].comm, "\xff\x1b]52;c;QQ\x07\"\\\nz\r");
	procs[0].have_record = true;
	procs[0].paths = paths;
	procs[0].npaths = sizeof(paths) / sizeof(paths[0]);
	/* the same key again (a crafted directory): exported once */
	procs[1] = procs[0];
	strcpy(procs[1].comm, "twin");
	/* the longest key there can be */
	procs[2].pid = INT32_MIN;
	procs[2].start_time_ns = UINT64_MAX;
	procs[2].heap_key = UINT64_MAX;
	procs[2].state = BLAMER_PROC_DEAD;
	procs[2].kernel_facts = true;
	strcpy(procs[2].comm, "kernel-said");
	procs[2].paths = paths;
	procs[2].npaths = 1;
	return blamer_snapshot_write_prometheus(&s, stdout) ? 1 : 0;
}
