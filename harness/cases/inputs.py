"""Build a case's argument values on the host, reproducibly from its seed.

Knows the case records and numpy; knows nothing of numba or of the backends.
"""
from __future__ import annotations

import builtins
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.cases.allowed_types import ALLOWED_TYPES, describe_allowed
from harness.core.errors import CaseError
from harness.core.rng_states import STATE_DTYPE_NAME, seeded_states
from harness.model import ArgSpec, ArraySpec, KernelRef

# The project's kernel files, imported once per process (as Python imports a module once): a
# broadcast kernel generated around a case's function resolves it in this very module object.
_modules: dict[str, Any] = {}


def import_file(file: Path):
    """The module of a Python file, imported by path once per process."""
    key = str(Path(file).resolve())
    if key not in _modules:
        spec = importlib.util.spec_from_file_location(f"harness_kernels.{Path(key).stem}", key)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[key] = module
    return _modules[key]


def load_kernel(ref: KernelRef | str, root: Path):
    """A case's kernel `kernels/file.py:name`, from a file inside the project (harness.engine.runtime.cache
    loads the engine's generated files; this loads the user's)."""
    if isinstance(ref, str):
        path, _, name = ref.partition(":")
        ref = KernelRef(path, name)
    file = (root / ref.path).resolve()
    if root.resolve() not in file.parents:
        raise CaseError(f"kernel file {ref.path} is outside the project", key="kernel")
    module = import_file(file)
    try:
        return getattr(module, ref.function)
    except AttributeError:
        raise CaseError(f"{ref.path} has no function '{ref.function}'", key="kernel") from None


def resolve_type(name: str):
    """An allowed `type:` name -> the type object. Looked up in the allow-list's fixed namespaces
    (builtins, numpy, numba.types), never imported by name: a case cannot reach other modules."""
    if name not in ALLOWED_TYPES:
        raise CaseError(f"'{name}' is not an allowed type ({describe_allowed()})", key="type")
    namespace, attr = ALLOWED_TYPES[name]
    if namespace == "builtins":
        value = vars(builtins)[attr]
    elif namespace == "numpy":
        value = getattr(np, attr)
    else:
        import numba.types                      # the backend has configured numba by now
        value = getattr(numba.types, attr)
    return value


def init_array(spec: ArraySpec, rng: np.random.Generator, shape=None) -> np.ndarray:
    shape = tuple(spec.shape) if shape is None else shape
    if spec.dtype == STATE_DTYPE_NAME:                  # generator states: seeded as numba seeds them
        return seeded_states(int(np.prod(shape)), **spec.init["rng_states"]).reshape(shape)
    dtype = np.dtype(spec.dtype)
    init = spec.init
    if init == "zeros":
        data = np.zeros(shape)
    elif init == "ones":
        data = np.ones(shape)
    elif init == "arange":
        data = np.arange(int(np.prod(shape))).reshape(shape)
    elif init == "normal":
        data = rng.standard_normal(shape)
    elif isinstance(init, dict) and "uniform" in init:
        lo, hi = init["uniform"]
        data = rng.uniform(lo, hi, shape)
    elif isinstance(init, dict) and "normal" in init:
        mu, sigma = init["normal"]
        data = rng.normal(mu, sigma, shape)
    elif isinstance(init, dict) and "values" in init:
        data = np.asarray(init["values"]).reshape(shape)
    else:
        raise CaseError(f"unknown array init {init!r}", key="init")
    if dtype == np.bool_:
        return (np.asarray(data) != 0) if init != "normal" else data > 0
    return np.asarray(data).astype(dtype)


def with_layout(spec: ArraySpec, rng: np.random.Generator) -> np.ndarray:
    """The argument's values, as a view with the requested memory layout."""
    layout = spec.layout or {}
    shape = tuple(spec.shape)
    if "transpose" in layout:
        axes = tuple(layout["transpose"])
        inverse = tuple(np.argsort(axes))
        base = init_array(spec, rng, tuple(shape[a] for a in inverse))
        return base.transpose(axes)
    if "strides" in layout:
        steps = tuple(int(s) for s in layout["strides"])        # in elements, per dimension
        extent = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, steps))
        base = init_array(ArraySpec((extent,), spec.dtype, spec.init), rng)
        item = base.dtype.itemsize
        start = sum((n - 1) * -s for n, s in zip(shape, steps) if s < 0)   # negative strides walk back
        return np.lib.stride_tricks.as_strided(base[start:], shape, tuple(s * item for s in steps))
    if "broadcast" in layout:
        base = init_array(spec, rng, tuple(layout["broadcast"]))
        return np.broadcast_to(base, shape)
    if "offset" in layout:
        k = int(layout["offset"])
        flat = init_array(ArraySpec((int(np.prod(shape)) + k,), spec.dtype, spec.init), rng)
        return flat[k:].reshape(shape)
    return init_array(spec, rng)


def laid_out(values: np.ndarray, layout: dict) -> np.ndarray:
    """A fresh host array holding `values` (the elements the kernel sees) stored with `layout`
    (strides, transpose or offset): how a case gives a shadow a layout of its own."""
    values = np.asarray(values)
    spec = ArraySpec(tuple(values.shape), str(values.dtype), "zeros", layout)
    out = with_layout(spec, np.random.default_rng(0))
    out[...] = values
    return out


@dataclass
class HostArg:
    spec: ArgSpec
    value: Any                        # numpy array, numpy scalar, type object or function


def build_args(specs: tuple[ArgSpec, ...], seed: int, root: Path) -> list[HostArg]:
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        if spec.alias is not None:
            value = None                  # the very buffer of another argument: filled in below
        elif spec.kind == "array":
            value = with_layout(spec.array, rng)
        elif spec.kind == "scalar":
            value = np.dtype(spec.dtype or "float64").type(spec.value)
        elif spec.kind == "type":
            value = resolve_type(spec.value)
        elif spec.kind == "function":
            value = load_kernel(spec.value, root)
        else:
            raise CaseError(f"unknown argument kind {spec.kind}", key=spec.name)
        out.append(HostArg(spec, value))
    by_name = {a.spec.name: a.value for a in out}
    for a in out:
        if a.spec.alias is not None:
            a.value = by_name[a.spec.alias]
    return out
