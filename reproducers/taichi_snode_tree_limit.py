"""Taichi 1.7.4 (CPU and CUDA): the 513th SNode tree of a program kills the process with SIGSEGV.

Every `ti.field` declared after a kernel has run goes into a new SNode tree; a program has room for
512 of them, and Taichi neither frees a tree when its fields are garbage, nor raises an error when
the room is gone: the next field's first use writes past the runtime's table of trees. A test
harness, a notebook or a fuzzer that declares fields as it goes dies after a few hundred of them.
The harness's adapter works around it with ti.reset() (harness/adapters/taichi_adapter.py).

Run: python reproducers/taichi_snode_tree_limit.py [--arch cuda]
  exit 0 and "survived" on a fixed Taichi; on 1.7.4 the fields are declared in a child process,
  which dies (SIGSEGV) after printing "declared 512 fields", and the script says so and ends
  with exit status 1.  With --reset-every 400 it survives on 1.7.4 as well.
Found by the harness's whole-corpus run through Taichi (CI, 2026-12-02): a pytest-xdist worker died
in a run that was not at fault. No harness import.
Upstream: the 512-tree limit is https://github.com/taichi-dev/taichi/issues/4033 (open); issue 8355
shows it raised as a RuntimeError, which 1.7.4 on the CPU does not do before the segfault.
"""
import argparse
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="cpu", choices=("cpu", "cuda"))
parser.add_argument("--fields", type=int, default=600)
parser.add_argument("--reset-every", type=int, default=0, help="ti.reset() after this many fields (0: never)")
parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
options = parser.parse_args()

if not options.child:
    # the crash kills the process that declares the fields: run them in a child and report its death
    child = subprocess.run([sys.executable, __file__, "--child", *sys.argv[1:]])
    if child.returncode < 0:
        print(f"the process declaring the fields died with signal {-child.returncode}: the bug is present")
        sys.exit(1)
    sys.exit(child.returncode)

import taichi as ti  # noqa: E402  (in the child only)

init = dict(arch=ti.cuda if options.arch == "cuda" else ti.cpu, log_level=ti.ERROR)
ti.init(**init)

for n in range(1, options.fields + 1):
    if options.reset_every and n % options.reset_every == 0:
        ti.reset()
        ti.init(**init)
    f = ti.field(ti.f64, shape=(4,))
    f.fill(float(n))                   # a kernel launch: the field's tree is materialized here
    assert f[0] == float(n)
    if n % 64 == 0:
        print(f"declared {n} fields", flush=True)
print(f"survived: {options.fields} fields")
