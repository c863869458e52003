# SPDX-License-Identifier: MIT
# Run by bench/hot-model inside gdb (gdb -x) on `bench --hot`: for each
# write, one whole iteration of its bench loop as the CPU runs it, from
# the write's entry to the next call's entry, the last but one of its
# HOT_CALLS calls (warm: the home claimed, the shard made). Writes one
# file per write to HOT_OUT, each instruction as an assembler line
# llvm-mca reads: calls and returns left out (the same one of each in
# every loop), branch targets replaced by a label (llvm-mca runs the
# lines in order whatever a branch says).
import os
import re

import gdb

OUT = os.environ["HOT_OUT"]
CALLS = 4096
# name, function, and its calls still to come before the write's own
# (the previous trace stopped at the entry of the last but one call of
# the same function: the last is the fixed layout's)
WRITES = [
    ("path_add", "blamer_path_add", 0),
    ("counter_add", "blamer_counter_add", 0),
    ("observe_fixed", "blamer_histogram_observe", 0),
    ("observe_exp", "blamer_histogram_observe", 1),
]
# Not the gauge set: it saves registers on the stack, and llvm-mca has
# no stack engine (each push and pop waits for the last's %rsp), which
# made it read 2.4-3x blamer_path_add() where Intel and AMD run it at
# 0.65-1.16x.


def line(asm):
    asm = re.sub(r"\s*#.*$", "", asm).strip()
    op = asm.split()[0]
    if op.startswith("call") or op.startswith("ret") or op.startswith("nop"):
        return None
    if op.startswith("j"):
        return op + " .Lt"
    return re.sub(r"\s*<[^>]*>", "", asm)


gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("starti")
arch = gdb.selected_frame().architecture()
for name, fn, before in WRITES:
    bp = gdb.Breakpoint(fn, internal=True)
    # the stop at the last but two call: the trace runs to the entry of
    # the last but one (a stop where the breakpoint is set is not a hit)
    bp.ignore_count = CALLS - 3 + before
    gdb.execute("continue")
    entry = int(gdb.parse_and_eval("$pc"))
    lines = []
    for _ in range(2000):
        pc = int(gdb.parse_and_eval("$pc"))
        if pc == entry and lines:
            break
        text = line(arch.disassemble(pc)[0]["asm"])
        if text:
            lines.append(text)
        gdb.execute("stepi", to_string=True)
    else:
        raise gdb.GdbError("%s: no return to its entry" % name)
    bp.delete()
    with open(os.path.join(OUT, name + ".s"), "w") as f:
        f.write("\n".join(lines) + "\n.Lt:\n")
gdb.execute("kill")
