# SPDX-License-Identifier: MIT
"""The part of Debian's Python that bench/prom_mp_metrics.py uses, for
the VM of make bench-fleet-device: the whole standard library is 108 MB,
which the guest would unpack from its initramfs at every boot.

    /usr/bin/python3 vm-python-tree.py PROM_MP_METRICS_PY OUT

Runs the script in this interpreter (2 processes' files, in a scratch
directory), then copies every file of a module it imported, below
/usr/lib/python3*, into OUT at the same path, with os.py (the landmark
by which the interpreter finds its prefix) and the lib-dynload
directory. Prints the extension modules (.so) copied, one a line: the
VM copies the shared libraries they need (tools/vm/run --add-dynamic).
"""
import os
import runpy
import shutil
import sys
import tempfile


def main():
    script, out = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        argv, stdout = sys.argv, sys.stdout
        sys.argv = [script, d, "2"]
        sys.stdout = open(os.devnull, "w")
        try:
            runpy.run_path(script, run_name="__main__")
        finally:
            sys.stdout.close()
            sys.argv, sys.stdout = argv, stdout
    stdlib = os.path.dirname(os.__file__)
    files = {os.path.join(stdlib, "os.py")}
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if f and f.startswith("/usr/lib/python3"):
            files.add(f)
    os.makedirs(out + os.path.join(stdlib, "lib-dynload"), exist_ok=True)
    for f in sorted(files):
        dst = out + f
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(f, dst)
        if f.endswith(".so"):
            print(f)


if __name__ == "__main__":
    main()
