"""The isbits classifier (harness/engine/runtime/isbits.py) and the launch check built on it (signature.classify).

What may be passed to a kernel by value, and, for what may not, a message that says where the
offender hides: the argument's 0-based position and parameter name, its type, why, and every
nested offender by path (`.capture`, `[1]`, `['k']`, `[0].f`), as CUDA.jl's KernelError does since
GPUCompiler.jl PR 638 (CUDA.jl issue 2514). Numba-free: no backend is needed.
"""
from __future__ import annotations

import collections
import functools
import math
import re

import numpy as np
import pytest

from harness.core.activity import Active, Const, Duplicated
from harness.core.errors import ActivityError, KernelError, UnsupportedError
from harness.engine.runtime.isbits import MAX_NESTED, check_argument, classify, non_isbits_message, type_name


class Bar:
    """A Julia-style struct type."""

    def __init__(self, a):
        self.a = a


class Holder:
    def __init__(self):
        self.f = Bar
        self.scale = 2.0


class Slotted:
    __slots__ = ("g", "n")

    def __init__(self):
        self.g = len
        self.n = 3


def capture_type(capture):
    def closure(arg):
        return capture(arg) * 2
    return closure


def scale_by(k):
    def closure(arg):
        return arg * k
    return closure


Pair = collections.namedtuple("Pair", "a b")


# ----------------------------------------------------------------------------- isbits values

@pytest.mark.parametrize("value, kind", [
    (1.5, "scalar"), (3, "scalar"), (True, "scalar"), (2 + 1j, "scalar"),
    (np.float32(1.5), "scalar"), (np.int64(-2), "scalar"), (np.bool_(False), "scalar"),
    (2**63 - 1, "scalar"), (-2**63, "scalar"),
    (np.zeros(3), "array"), (np.zeros((2, 3), np.float32).T, "array"),
    (np.zeros(4, dtype=[("a", "f8"), ("b", "i4")]), "array"),
    ((np.zeros(2), 1.0, np.float32(2)), "tuple"), ((), "tuple"), (((1.0, 2.0), np.zeros(1)), "tuple"),
    (Pair(1.0, np.zeros(2)), "tuple"),
    (np.zeros(1, dtype=[("a", "f8"), ("b", "i4")])[0], "record"),
])
def test_isbits_values(value, kind):
    c = classify(value)
    assert c.isbits and c.kind == kind and c.offenders == ()
    assert check_argument(0, "x", value) == kind


def test_cuda_array_interface_objects_are_arrays():
    class DeviceArray:
        __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0, False), "version": 3}
        dtype = np.dtype("float32")
    assert classify(DeviceArray()).kind == "array"


# ----------------------------------------------------------------------------- offenders

@pytest.mark.parametrize("value, type_text, why", [
    (np.float32, "type (numpy.float32)", "compile-time constant"),
    (np.float64, "type (numpy.float64)", "compile-time constant"),
    (Bar, "type (test_isbits.Bar)", "compile-time constant"),
    (np.dtype("float32"), "type (dtype('float32'))", "compile-time constant"),
    (capture_type(Bar), "function (capture_type.<locals>.closure)", "code, not data"),
    (math.sin, "function (sin)", "code, not data"),
    (np.sin, "function (sin)", "code, not data"),
    (lambda a: a, "function (<lambda>)", "code, not data"),
    ([1.0, 2.0], "list", "Python list is a heap object"),
    ({"a": 1.0}, "dict", "Python dict is a heap object"),
    ({1.0}, "set", "Python set is a heap object"),
    ("text", "str", "string"),
    (b"bytes", "bytes", "string"),
    (None, "NoneType", "None has no device representation"),
    (math, "module (math)", "module is not data"),
    (Holder(), "test_isbits.Holder", "instance of a Python class"),
    (np.zeros(2, dtype=object), "numpy.ndarray", "dtype object"),
    (2**64, "int", "does not fit in 64 bits"),
    (np.zeros(1, dtype=[("o", "O")])[0], "numpy.void", "instance of a Python class"),
])
def test_offenders_name_their_type_and_why(value, type_text, why):
    c = classify(value)
    assert not c.isbits and c.kind == "object"
    top = c.offenders[0]
    assert top.path == "" and top.type == type_text, top
    assert why in top.why


def test_type_argument_message_beats_numbas_notimplementederror():
    """numba answers a type argument with `NotImplementedError: (class(float32), <class
    'numpy.float32'>)`; ours says which argument, what it is and why."""
    with pytest.raises(KernelError) as info:
        check_argument(1, "T", np.float32)
    err = info.value
    assert (err.argument, err.param) == (1, "T")
    assert str(err) == ("passing non-bitstype argument: argument 1 ('T') is of type type (numpy.float32), "
                        "which is not isbits: a type is a compile-time constant, not data; it can only be "
                        "compiled into the kernel")


def test_closure_capturing_a_type_names_the_captured_variable():
    """CUDA.jl issue 2514: `.capture is of type Type{Bar}`."""
    with pytest.raises(KernelError) as info:
        check_argument(3, "f", capture_type(Bar))
    err = info.value
    assert (err.argument, err.param) == (3, "f")
    message = str(err)
    assert message.startswith("passing non-bitstype argument: argument 3 ('f') is of type function "
                              "(capture_type.<locals>.closure), which is not isbits: a function is code")
    assert "; nested: .capture is of type type (test_isbits.Bar), which is not isbits" in message


def test_closure_over_isbits_values_is_still_a_function():
    c = classify(scale_by(2.0))
    assert [o.path for o in c.offenders] == [""]        # nothing nested offends; the function does


@pytest.mark.parametrize("value, paths, top", [
    ((np.zeros(2), np.float64), ["", "[1]"], "tuple"),
    ((1.0, (2.0, [3.0])), ["", "[1]", "[1][1]"], "tuple"),
    (Pair(1.0, str), ["", ".b"], "namedtuple (test_isbits.Pair)"),
    (Holder(), ["", ".f"], "test_isbits.Holder"),
    (Slotted(), ["", ".g"], "test_isbits.Slotted"),
    ({"k": np.float64, "ok": 1.0}, ["", "['k']"], "dict"),
    ([1.0, capture_type(np.float32)], ["", "[1]", "[1].capture"], "list"),
    ((capture_type(np.float64), np.zeros(3)), ["", "[0]", "[0].capture"], "tuple"),
    (functools.partial(max, Bar, 1.0), ["", ".func", ".args[0]"],
     "function (functools.partial of max)"),
    (Holder().__init__, ["", ".__self__", ".__self__.f"], "function (Holder.__init__)"),
])
def test_nested_offenders_have_paths(value, paths, top):
    c = classify(value)
    assert c.offenders[0].type == top
    assert [o.path for o in c.offenders] == paths


def test_tuple_counts_its_offending_members():
    c = classify((np.float64, 1.0, [2.0], np.zeros(1)))
    assert c.offenders[0].why == "it holds 2 non-isbits members"
    message = non_isbits_message(1, "bc", c)
    assert message.startswith("passing non-bitstype argument: argument 1 ('bc') is of type tuple, which is not "
                              "isbits: it holds 2 non-isbits members; nested: [0] is of type type (numpy.float64)")
    assert "; [2] is of type list, which is not isbits" in message


def test_nested_offenders_are_capped():
    c = classify([np.float32] * (MAX_NESTED + 5))
    assert len(c.nested) == MAX_NESTED and c.more == 5
    assert non_isbits_message(0, "xs", c).endswith("; and 5 more")


def test_cycles_terminate():
    a = Holder()
    a.me = a
    b = []
    b.append(b)
    assert [o.path for o in classify(a).offenders] == ["", ".f", ".me"]
    assert not classify(b).isbits


def test_host_arrays_are_refused_where_the_backend_wants_device_arrays():
    def on_device(value):
        return hasattr(value, "__cuda_array_interface__")
    c = classify((np.zeros(2), 1.0), is_array=on_device)
    assert [o.path for o in c.offenders] == ["", "[0]"]
    assert "a host array; copy it to the device first" in c.offenders[1].why


def test_type_name():
    assert type_name(np.float64) == "type (numpy.float64)"
    assert type_name(1.0) == "float"
    assert type_name(np.float32(1)) == "numpy.float32"
    assert type_name(capture_type(Bar)) == "function (capture_type.<locals>.closure)"


# ----------------------------------------------------------------------------- the launch check

class HostBackend:
    """Enough of a backend for signature.classify: numpy arrays are device arrays."""
    name = "host"

    def is_array(self, value):
        return isinstance(value, np.ndarray)


def _classify(args, mode="primal", params=None):
    from harness.engine.runtime.signature import classify as classify_args
    params = params or [f"p{k}" for k in range(len(args))]
    return classify_args(HostBackend(), params, tuple(args), mode)


def test_launch_refuses_a_type_with_position_and_name():
    with pytest.raises(KernelError) as info:
        _classify([np.zeros(3), np.float64, np.zeros(3)], params=["out", "T", "x"])
    assert (info.value.argument, info.value.param) == (1, "T")
    assert re.match(r"passing non-bitstype argument: argument 1 \('T'\) is of type type \(numpy\.float64\)",
                    str(info.value))


def test_launch_refuses_nested_offenders_in_every_mode():
    for mode in ("primal", "forward", "reverse"):
        with pytest.raises(KernelError, match=r"argument 2 \('s'\) is of type test_isbits\.Holder.*"
                                              r"nested: \.f is of type type \(test_isbits\.Bar\)"):
            _classify([np.zeros(3), np.zeros(3), Holder()], mode, ["out", "x", "s"])


def test_launch_accepts_tuples_in_primal_launches():
    x, y = np.zeros(3), np.ones((2, 2), np.float32).T
    infos = _classify([np.zeros(3), (x, y, np.float32(2.0), 3)], params=["out", "bc"])
    bc = infos[1]
    assert bc.kind == "tuple" and [m.kind for m in bc.members] == ["array", "array", "scalar", "scalar"]
    assert [m.dtype for m in bc.members] == ["float64", "float32", "float32", "int64"]
    assert bc.members[1].layout == "A" and bc.dtype == "(float64[1d,C], float32[2d,A], float32, int64)"
    # the plan cache distinguishes tuples by their members
    other = _classify([np.zeros(3), (x, x, np.float32(2.0), 3)], params=["out", "bc"])[1]
    assert bc.type_key() != other.type_key()


def test_launch_refuses_tuples_in_derivative_modes_and_with_activities():
    with pytest.raises(UnsupportedError, match=r"argument 1 \('bc'\) is a tuple: derivative launches"):
        _classify([np.zeros(3), (np.zeros(3),)], "reverse", ["out", "bc"])
    with pytest.raises(ActivityError, match="always const") as info:
        _classify([np.zeros(3), Duplicated((np.zeros(3),), (np.zeros(3),))], params=["out", "bc"])
    assert info.value.param == "bc"


def test_launch_refuses_records_and_complex_numbers_clearly():
    record = np.zeros(1, dtype=[("a", "f8")])[0]
    with pytest.raises(UnsupportedError, match="numpy record"):
        _classify([record])
    with pytest.raises(KernelError, match=r"argument 0 \('p0'\) is of type complex, which this launcher cannot pass"):
        _classify([1 + 2j])


def test_arrays_and_scalars_are_unchanged():
    infos = _classify([Duplicated(np.zeros(3), np.zeros(3)), Active(np.float32(2.0)), Const(np.zeros(2, np.int32))],
                      "reverse", ["out", "a", "idx"])
    assert [(i.kind, i.activity) for i in infos] == [("array", "duplicated"), ("scalar", "active"),
                                                     ("array", "const")]
