"""A plain Warp or Taichi script for a finding: no harness import, prints the wrong and the right derivative.

The script carries the adapter's translation of the finding's kernel (the `@wp.kernel` or
`@ti.kernel` the harness differentiated, a readable module under .cache/harness/generated/) and
a driver written in the target system's own API, as a user reporting upstream would write it:

- the inputs drawn from the case's arguments (numpy, a fixed seed), a random cotangent `w` for
  every differentiable array and a random direction `v`;
- the system's reverse mode (`wp.Tape` with each array's `.grad` seeded by `w`; `ti.ad.Tape` over
  a loss kernel adding `<w, a>`), giving `<v, J^T w>`;
- central finite differences of `<w, f(x)>` along `v`, in float64 numpy around primal launches of
  the same kernel: the right value;

and prints both with their relative error; it exits 1 when they disagree (the bug shows) and 0 when
they agree. Forward-mode findings are reproduced through the same reverse check (Warp has no forward
mode; Taichi's reverse pass of the same kernel usually shows the same construct's bug, and the
script says so when it does not).
"""
from __future__ import annotations

import json
from pathlib import Path

_FLOAT = ("float32", "float64")

_COMMON = r'''
import importlib.util, pathlib, sys, tempfile
import numpy as np

KERNEL_SOURCE = {source!r}
ARGS = json.loads({args!r})          # name -> {{kind, shape, dtype, values, diff}} in parameter order
THREADS = {threads!r}
DTYPE = {dtype!r}
H = 1e-6 if DTYPE == "float64" else 1e-2
TOL = 1e-4 if DTYPE == "float64" else 2e-2


def load_kernel_module(name):
    # The system reads a kernel's source from its file: write it next to a temporary module.
    path = pathlib.Path(tempfile.mkdtemp()) / (name + "_repro_kernel.py")
    path.write_text(KERNEL_SOURCE)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


rng = np.random.default_rng(0)
values = {{n: np.array(a["values"], dtype=a["dtype"]).reshape(a["shape"]) for n, a in ARGS.items() if a["kind"] == "array"}}
scalars = {{n: a["value"] for n, a in ARGS.items() if a["kind"] == "scalar"}}
diff = [n for n, a in ARGS.items() if a.get("diff")]
w = {{n: rng.normal(size=values[n].shape) for n in diff}}
v = {{n: rng.normal(size=values[n].shape) for n in diff}}


def loss(final):
    return sum(float(np.sum(w[n] * final[n].astype(np.float64))) for n in diff)


def finite_difference():
    plus = {{n: (values[n] + H * v[n]).astype(values[n].dtype) if n in diff else values[n] for n in values}}
    minus = {{n: (values[n] - H * v[n]).astype(values[n].dtype) if n in diff else values[n] for n in values}}
    return (loss(primal(plus)) - loss(primal(minus))) / (2 * H)


def report(ad, fd):
    err = abs(ad - fd) / max(1.0, abs(fd))
    print(f"{{SYSTEM}} reverse mode <v, J^T w> = {{ad:.10g}}")
    print(f"finite differences      = {{fd:.10g}}  (central, h = {{H:g}}, float64 loss)")
    print(f"relative error {{err:.3g}}: " + ("WRONG DERIVATIVE" if err > TOL else "agree"))
    return 1 if err > TOL else 0
'''

_WARP = r'''
import warp as wp
SYSTEM = "Warp " + wp.config.version
wp.config.quiet = True
wp.init()
kernel = getattr(load_kernel_module("warp"), {kernel_name!r})
WP = {{"float32": wp.float32, "float64": wp.float64, "int32": wp.int32, "int64": wp.int64}}


def launch(arrays, tape=None):
    inputs = [arrays[n] if n in arrays else WP[ARGS[n]["dtype"]](scalars[n]) for n in ARGS]
    if tape is None:
        wp.launch(kernel, dim=THREADS, inputs=inputs, device="cpu")
    else:
        with tape:
            wp.launch(kernel, dim=THREADS, inputs=inputs, device="cpu")


def primal(vals):
    arrays = {{n: wp.array(vals[n], dtype=WP[ARGS[n]["dtype"]], device="cpu") for n in vals}}
    launch(arrays)
    return {{n: a.numpy() for n, a in arrays.items()}}


def reverse():
    arrays = {{n: wp.array(values[n], dtype=WP[ARGS[n]["dtype"]], device="cpu", requires_grad=n in diff) for n in values}}
    tape = wp.Tape()
    launch(arrays, tape)
    for n in diff:          # the cotangent of each array's final state; backward leaves d<w, f>/d(initial)
        arrays[n].grad = wp.array(w[n], dtype=WP[ARGS[n]["dtype"]], device="cpu")
    tape.backward()
    return sum(float(np.sum(arrays[n].grad.numpy().astype(np.float64) * v[n])) for n in diff)


sys.exit(report(reverse(), finite_difference()))
'''

_TAICHI = r'''
import taichi as ti
SYSTEM = "Taichi " + ti.__version__ if isinstance(ti.__version__, str) else "Taichi " + ".".join(map(str, ti.__version__))
ti.init(arch=ti.cpu, log_level=ti.ERROR, ad_stack_size=1024)
kernel = getattr(load_kernel_module("taichi"), {kernel_name!r})
TI = {{"float32": ti.f32, "float64": ti.f64, "int32": ti.i32, "int64": ti.i64}}
fields = {{n: ti.field(TI[ARGS[n]["dtype"]], shape=tuple(ARGS[n]["shape"]), needs_grad=n in diff) for n in values}}
weights = {{n: ti.field(ti.f64, shape=tuple(ARGS[n]["shape"])) for n in diff}}
L = ti.field(ti.f64, shape=(), needs_grad=True)


@ti.kernel
def add_loss(a: ti.template(), wa: ti.template()):
    for I in ti.grouped(a):
        L[None] += wa[I] * ti.cast(a[I], ti.f64)


def launch():
    kernel(*[fields[n] if n in fields else scalars[n] for n in ARGS])


def primal(vals):
    for n in vals:
        fields[n].from_numpy(vals[n])
    launch()
    return {{n: fields[n].to_numpy() for n in vals}}


def reverse():
    for n in values:
        fields[n].from_numpy(values[n])
    for n in diff:
        weights[n].from_numpy(w[n])
    with ti.ad.Tape(loss=L):
        launch()
        for n in diff:
            add_loss(fields[n], weights[n])
    return sum(float(np.sum(fields[n].grad.to_numpy().astype(np.float64) * v[n])) for n in diff)


ad = reverse()
sys.exit(report(ad, finite_difference()))
'''


def script(engine: str, translated_source: str, case: dict, dtype: str, threads, title: str) -> str:
    """The reproducer's text for a finding's case (the loaded YAML mapping) and run dtype."""
    args = {}
    rng_values = _values(case, dtype)
    for name, spec in case["args"].items():
        if "scalar" in spec:
            sc = spec["scalar"]
            args[name] = {"kind": "scalar", "value": sc["value"], "dtype": _recast(sc.get("dtype", "float64"), dtype)}
            continue
        arr = spec["array"]
        args[name] = {"kind": "array", "shape": list(arr["shape"]), "dtype": _recast(arr["dtype"], dtype),
                      "values": rng_values[name],
                      "diff": spec.get("activity", "const") in ("duplicated", "duplicated_no_need")}
    body = {"warp": _WARP, "taichi": _TAICHI}[engine]
    head = (f'"""{title}\n\nA plain {"Warp" if engine == "warp" else "Taichi"} reproducer (no harness import), '
            f'generated by harness/fuzz/reproducer.py.\nRun: python THIS_FILE  (exit 1: the derivative is wrong)."""\n'
            "import json\n")
    total = threads if isinstance(threads, int) else _product(threads)
    dim = total if engine == "taichi" or isinstance(threads, int) else tuple(threads)
    kernel_name = case["kernel"].rsplit(":", 1)[1]      # the fuzzer's kernels are all `kernel`; a case's has its own name
    return head + _COMMON.format(source=translated_source, args=json.dumps(args), threads=dim, dtype=dtype) + \
        body.format(kernel_name=kernel_name)


def _recast(declared: str, dtype: str) -> str:
    return dtype if declared in _FLOAT else declared


def _product(values) -> int:
    total = 1
    for v in values:
        total *= int(v)
    return total


def _values(case: dict, dtype: str) -> dict:
    """Each array's initial values as the case draws them (normal, zeros, explicit values)."""
    import numpy as np
    rng = np.random.default_rng(int(case.get("seed", 0)))
    out = {}
    for name, spec in case["args"].items():
        arr = spec.get("array") if isinstance(spec, dict) else None
        if not arr:
            continue
        shape, init = list(arr["shape"]), arr.get("init", "zeros")
        if isinstance(init, dict) and "values" in init:
            vals = np.array(init["values"], dtype=float).reshape(shape)
        elif init == "normal" and _recast(arr["dtype"], dtype) in _FLOAT:
            vals = rng.normal(size=shape)
        else:
            vals = np.zeros(shape)
        out[name] = vals.ravel().tolist()
    return out


def write(path: Path, engine: str, translated: Path, case: dict, dtype: str, threads, title: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script(engine, Path(translated).read_text(), case, dtype, threads, title))
    return path
