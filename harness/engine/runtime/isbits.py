"""Can a Python value be passed to a kernel by value ("isbits", in Julia's word)?

A kernel argument must be plain data with a fixed layout: a device array (a pointer plus shape and
strides), a number, or a tuple or numpy record of such values. Everything else is refused at launch,
before anything is compiled, with a message that names what is wrong and where it hides inside the
value, in the manner of CUDA.jl's `KernelError: passing non-bitstype argument ... .f is of type
Type{Bar} which is not isbits` (CUDA.jl issue 2514, GPUCompiler.jl PR 638). numba's own answer to a
type passed as an argument is `NotImplementedError: (class(float32), <class 'numpy.float32'>)`.

    classify(value)                 -> Classification(kind, offenders)
    check_argument(pos, name, value) -> the kind, or raises KernelError

Paths of nested offenders are relative to the argument: `[1]` (a tuple or list member), `.f` (an
attribute, a namedtuple field, or a variable captured by a closure), `['k']` (a dict value);
they chain, e.g. `[0].capture`.

Nothing here imports numba: the classifier must run before a backend is chosen.
"""
from __future__ import annotations

import functools
import types as pytypes
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from harness.core.errors import KernelError

ISBITS_KINDS = ("array", "scalar", "tuple", "record")
MAX_DEPTH = 6                       # how deep nested offenders are searched
MAX_NESTED = 8                      # how many nested offenders a message lists

_WHY = {
    "type": "a type is a compile-time constant, not data; it can only be compiled into the kernel",
    "function": "a function is code, not data; it can only be compiled into the kernel",
    "module": "a module is not data",
    "container": "a Python {kind} is a heap object; pass a device array or a tuple of isbits values",
    "string": "a string is a heap object with no device representation",
    "none": "None has no device representation; leave the argument out",
    "object": "an instance of a Python class is a heap object; only device arrays, numbers, and "
              "tuples or records of them are isbits",
    "object_array": "its elements are Python objects (dtype object)",
    "host_array": "a host array; copy it to the device first",
    "bigint": "the integer {value} does not fit in 64 bits",
    "members": "it holds {n} non-isbits member{s}",
}


@dataclass(frozen=True)
class Offender:
    """One non-isbits value: where it is inside the argument ('' for the argument itself), what it
    is, and why it cannot be passed."""
    path: str
    type: str
    why: str

    def describe(self) -> str:
        return f"{self.path} is of type {self.type}, which is not isbits: {self.why}"


@dataclass(frozen=True)
class Classification:
    """`kind` is one of ISBITS_KINDS when the value is isbits; otherwise `offenders` starts with the
    value itself (path '') followed by the offenders nested inside it, outermost first."""
    kind: str
    offenders: tuple[Offender, ...] = ()
    more: int = 0                     # nested offenders found beyond MAX_NESTED

    @property
    def isbits(self) -> bool:
        return not self.offenders

    @property
    def nested(self) -> tuple[Offender, ...]:
        return self.offenders[1:]


# ----------------------------------------------------------------------------- naming

def type_name(value: Any) -> str:
    """What a value is, in the words of the error messages: `type (numpy.float64)`,
    `function (make.<locals>.closure)`, `dict`, `kernels.broadcast.Holder`."""
    if isinstance(value, type):
        return f"type ({_qualified(value)})"
    if _is_numba_type(value) or isinstance(value, np.dtype):
        return f"type ({value!r})"
    if isinstance(value, functools.partial):
        inner = getattr(value.func, "__qualname__", None) or type(value.func).__name__
        return f"function (functools.partial of {inner})"
    if _is_function(value):
        fn = _underlying_function(value)
        label = getattr(fn, "__qualname__", None) or getattr(value, "__qualname__", None) \
            or type(value).__name__
        return f"function ({label})"
    if isinstance(value, pytypes.ModuleType):
        return f"module ({value.__name__})"
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return f"namedtuple ({_qualified(type(value))})"
    return _qualified(type(value))


def _qualified(cls: type) -> str:
    module = getattr(cls, "__module__", None)
    qual = getattr(cls, "__qualname__", cls.__name__)
    if module in (None, "builtins"):
        return qual
    if module.startswith("numpy"):
        module = "numpy"              # numpy.float64, not numpy.core.multiarray.float64
    return f"{module}.{qual}"


def _is_numba_type(value) -> bool:
    return type(value).__module__.startswith("numba.core.types") and not isinstance(value, type)


def _is_function(value) -> bool:
    if isinstance(value, (pytypes.FunctionType, pytypes.BuiltinFunctionType, pytypes.MethodType,
                          functools.partial, np.ufunc)):
        return True
    # numba dispatchers (cuda.jit, device functions) and the simulator's FakeCUDAKernel
    return any(isinstance(getattr(value, attr, None), pytypes.FunctionType) for attr in ("py_func", "fn"))


def _underlying_function(value):
    if isinstance(value, pytypes.FunctionType):
        return value
    if isinstance(value, pytypes.MethodType):
        return value.__func__
    for attr in ("py_func", "fn"):
        inner = getattr(value, attr, None)
        if isinstance(inner, pytypes.FunctionType):
            return inner
    return value


def is_array_like(value) -> bool:
    """A numpy array or anything exposing `__cuda_array_interface__` (cupy, numba device arrays)."""
    return isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__")


def is_number(value) -> bool:
    return isinstance(value, (bool, int, float, complex, np.bool_, np.number))


# ----------------------------------------------------------------------------- classification

def classify(value: Any, *, is_array: Callable[[Any], bool] | None = None) -> Classification:
    """Classify `value`. `is_array` says which arrays live on the device (the backend's own test);
    by default any numpy array or `__cuda_array_interface__` object counts."""
    is_array = is_array or is_array_like
    walker = _Walker(is_array)
    kind, why = walker.own(value)
    if why is None:
        return Classification(kind)
    top = Offender("", type_name(value), why)
    return Classification("object", (top,) + tuple(walker.found[:MAX_NESTED]),
                          more=max(0, len(walker.found) - MAX_NESTED))


class _Walker:
    def __init__(self, is_array):
        self.is_array = is_array
        self.found: list[Offender] = []
        self.stack: set[int] = set()

    def own(self, value, path: str = "", depth: int = 0) -> tuple[str, str | None]:
        """(kind, None) when isbits, else ('object', why); nested offenders land in self.found."""
        if isinstance(value, type) or _is_numba_type(value) or isinstance(value, np.dtype):
            return "object", _WHY["type"]
        if value is None:
            return "object", _WHY["none"]
        if isinstance(value, (str, bytes)):
            return "object", _WHY["string"]
        if is_number(value):
            if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**64:
                return "object", _WHY["bigint"].format(value=value)
            return "scalar", None
        if isinstance(value, np.void):
            if value.dtype.names is None or value.dtype.hasobject:
                return "object", _WHY["object"]
            return "record", None
        if is_array_like(value):
            dtype = getattr(value, "dtype", None)
            if dtype is not None and np.dtype(dtype).hasobject:
                return "object", _WHY["object_array"]
            return ("array", None) if self.is_array(value) else ("object", _WHY["host_array"])
        if isinstance(value, pytypes.ModuleType):
            return "object", _WHY["module"]
        if id(value) in self.stack or depth >= MAX_DEPTH:
            return ("tuple", None) if isinstance(value, tuple) else ("object", _WHY["object"])
        self.stack.add(id(value))
        try:
            if isinstance(value, tuple):
                names = getattr(type(value), "_fields", None)
                bad = 0
                for k, item in enumerate(value):
                    child = f"{path}.{names[k]}" if names else f"{path}[{k}]"
                    bad += self.child(item, child, depth)
                if bad:
                    return "object", _WHY["members"].format(n=bad, s="s" * (bad != 1))
                return "tuple", None
            if _is_function(value):
                self.children(_function_parts(value), path, depth)
                return "object", _WHY["function"]
            if isinstance(value, (list, dict, set, frozenset, bytearray)):
                if isinstance(value, dict):
                    self.children(((f"[{k!r}]", v) for k, v in value.items()), path, depth)
                elif isinstance(value, list):
                    self.children(((f"[{k}]", v) for k, v in enumerate(value)), path, depth)
                return "object", _WHY["container"].format(kind=type(value).__name__)
            self.children(_attributes(value), path, depth)
            return "object", _WHY["object"]
        finally:
            self.stack.discard(id(value))

    def child(self, value, path: str, depth: int) -> int:
        """Classify a nested value; record it when it offends. Returns 1 if it offended."""
        at = len(self.found)
        kind, why = self.own(value, path, depth + 1)
        if why is None:
            return 0
        # the offender goes before the offenders found inside it (outermost first)
        self.found.insert(at, Offender(path, type_name(value), why))
        return 1

    def children(self, parts, path: str, depth: int) -> None:
        for suffix, item in parts:
            self.child(item, f"{path}{suffix}", depth)


def _function_parts(value):
    """The data a function carries: a closure's captured variables, a bound method's self,
    a partial's bound arguments."""
    if isinstance(value, functools.partial):
        yield ".func", value.func
        for k, a in enumerate(value.args):
            yield f".args[{k}]", a
        for k, a in (value.keywords or {}).items():
            yield f".keywords[{k!r}]", a
        return
    if isinstance(value, pytypes.MethodType):
        yield ".__self__", value.__self__
    fn = _underlying_function(value)
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, cells):
            try:
                yield f".{name}", cell.cell_contents
            except ValueError:        # an empty cell: the variable was never assigned
                continue


def _attributes(value):
    seen = set()
    for name, item in (getattr(value, "__dict__", None) or {}).items():
        seen.add(name)
        yield f".{name}", item
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()) or ():
            if name in seen or name.startswith("__"):
                continue
            seen.add(name)
            if hasattr(value, name):
                yield f".{name}", getattr(value, name)


# ----------------------------------------------------------------------------- messages

def non_isbits_message(position: int, name: str, classification: Classification) -> str:
    top = classification.offenders[0]
    text = (f"passing non-bitstype argument: argument {position} ('{name}') is of type {top.type}, "
            f"which is not isbits: {top.why}")
    if classification.nested:
        text += "; nested: " + "; ".join(o.describe() for o in classification.nested)
        if classification.more:
            text += f"; and {classification.more} more"
    return text


def check_argument(position: int, name: str, value: Any, *,
                   is_array: Callable[[Any], bool] | None = None) -> str:
    """The argument's kind (array, scalar, tuple, record), or KernelError naming its 0-based
    position, its parameter name, its type, why it is refused, and the offenders nested in it."""
    classification = classify(value, is_array=is_array)
    if not classification.isbits:
        raise KernelError(non_isbits_message(position, name, classification),
                          argument=position, param=name)
    return classification.kind
