"""A fake device array module for tests: numpy arrays behind a wall, the way cupy keeps them on a GPU.

`FakeDeviceArray` wraps a numpy array. Arithmetic, ufuncs and numpy functions run on it (through
`__array_ufunc__` / `__array_function__`, as they dispatch to cupy), but nothing converts it to a
host array implicitly: `np.asarray(x)` raises, as cupy's does; mixing it with numpy arrays in one
operation raises, as cupy does. What does reach the host is counted: `.get()` and the backend's
`to_host` record the number of entries, `float()` / `int()` / `bool()` count one scalar each; every
operation computed on fake arrays (each a kernel launch on a GPU) counts in `device_ops`. A test
then states that only scalars and the few worst entries crossed, whatever the size of the arrays.

`FAKE` is the module (`xp`), registered with harness.oracles.arrays; `FakeDeviceBackend` wraps the
simulator backend so the engine launches kernels on the numpy arrays inside.
"""
from __future__ import annotations

import numpy as np

from harness.oracles.arrays import register_array_module


class HostTransferError(TypeError):
    pass


class Transfers:
    """What crossed to the host (sizes of array transfers, how many scalars), what was uploaded, and
    how many operations ran on device arrays."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.arrays: list[int] = []
        self.scalars = 0
        self.uploads: list[int] = []      # sizes of the host arrays the backend copied to the device
        self.device_ops = 0               # operations computed on device arrays (each a launch on a GPU)

    @property
    def largest(self) -> int:
        return max(self.arrays, default=0)


TRANSFERS = Transfers()


def _is_host_array(x) -> bool:
    return isinstance(x, np.ndarray) and x.ndim > 0


def unwrap(x, *, strict: bool = True):
    """numpy values of fake arrays (recursively through lists, tuples and dicts). `strict`: a
    numpy array of one or more dimensions in the same call is an error, as it is for cupy."""
    if isinstance(x, FakeDeviceArray):
        return x._a
    if isinstance(x, (list, tuple)):
        return type(x)(unwrap(v, strict=strict) for v in x)
    if isinstance(x, dict):
        return {k: unwrap(v, strict=strict) for k, v in x.items()}
    if strict and _is_host_array(x):
        raise HostTransferError(f"a host numpy array ({x.shape}) mixed with device arrays")
    return x


def wrap(x):
    if isinstance(x, np.ndarray):
        return FakeDeviceArray(x)
    if isinstance(x, np.generic) and not isinstance(x, (np.str_, np.bytes_)):
        return FakeDeviceArray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(wrap(v) for v in x)
    if isinstance(x, list):
        return [wrap(v) for v in x]
    return x


class FakeDeviceArray(np.lib.mixins.NDArrayOperatorsMixin):
    __slots__ = ("_a", "__weakref__")

    def __init__(self, a: np.ndarray):
        self._a = a

    # ------------------------------------------------------------------ the wall
    def __array__(self, dtype=None, copy=None):
        raise HostTransferError(f"implicit host conversion of a device array of {self._a.size} entries")

    def get(self) -> np.ndarray:
        TRANSFERS.arrays.append(int(self._a.size))
        return np.array(self._a, copy=True)

    def _scalar(self):
        if self._a.size != 1:
            raise HostTransferError(f"a device array of {self._a.size} entries used as one scalar")
        TRANSFERS.scalars += 1
        return self._a.reshape(()).item()

    def __float__(self):
        return float(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def __index__(self):
        return int(self._scalar())

    def __bool__(self):
        return bool(self._scalar())

    def __complex__(self):
        return complex(self._scalar())

    def __format__(self, spec):
        return format(self._scalar(), spec)

    def __repr__(self):
        return f"FakeDeviceArray(shape={self._a.shape}, dtype={self._a.dtype})"

    __str__ = __repr__

    def __iter__(self):
        # rows of a stack of arrays are device arrays; the entries of a vector are a Python loop
        if len(self._a) > 16 and (self._a.ndim == 1 or len(self._a) > 64):
            raise HostTransferError(f"iterating over the {len(self._a)} entries of a device array (a Python loop)")
        return iter([wrap(v) for v in self._a])

    def __len__(self):
        return len(self._a)

    # ------------------------------------------------------------------ numpy protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        TRANSFERS.device_ops += 1
        if "out" in kwargs:
            kwargs["out"] = tuple(unwrap(o) for o in kwargs["out"])
        return wrap(getattr(ufunc, method)(*unwrap(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        TRANSFERS.device_ops += 1
        return wrap(func(*unwrap(args), **unwrap(kwargs)))

    @property
    def __cuda_array_interface__(self):
        face = self._a.__array_interface__
        return {"shape": self._a.shape, "typestr": self._a.dtype.str, "data": face["data"],
                "strides": None if self._a.flags.c_contiguous else self._a.strides, "version": 3}

    # ------------------------------------------------------------------ an ndarray's surface
    shape = property(lambda self: self._a.shape)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    dtype = property(lambda self: self._a.dtype)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: wrap(self._a.T))

    def __getitem__(self, key):
        return wrap(self._a[unwrap(key, strict=False)])

    def __setitem__(self, key, value):
        TRANSFERS.device_ops += 1
        self._a[unwrap(key, strict=False)] = unwrap(value)

    def astype(self, dtype, copy=True):
        TRANSFERS.device_ops += copy or self._a.dtype != np.dtype(dtype)
        return wrap(self._a.astype(dtype, copy=copy))

    def reshape(self, *shape, **kw):
        return wrap(self._a.reshape(*shape, **kw))

    def copy(self):
        TRANSFERS.device_ops += 1
        return wrap(self._a.copy())

    def __getattr__(self, name):          # ravel, sum, max, any, argmax, mean, ...: run inside, wrapped
        method = getattr(self._a, name)
        if not callable(method):
            raise AttributeError(name)
        return _counted(lambda *args, **kwargs: wrap(method(*unwrap(args), **unwrap(kwargs))))


def _counted(fn):
    def call(*args, **kwargs):
        TRANSFERS.device_ops += 1
        return fn(*args, **kwargs)
    return call


class _Namespace:
    """numpy (or one of its submodules) with every function taking and returning fake arrays."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, type(np)):
            return _Namespace(value)
        if isinstance(value, type) or not callable(value):
            return value                      # dtypes, constants
        if self._module is np.lib.stride_tricks:       # views: no operation runs on the device
            return lambda *args, **kwargs: wrap(value(*unwrap(args), **unwrap(kwargs)))
        return _counted(lambda *args, **kwargs: wrap(value(*unwrap(args), **unwrap(kwargs))))


class _Random:
    class RandomState:
        def __init__(self, seed):
            self._rs = np.random.RandomState(seed)

        def standard_normal(self, size=None, dtype=np.float64):
            return wrap(np.asarray(self._rs.standard_normal(size), dtype=dtype))


class FakeDeviceModule(_Namespace):
    """The `xp` of fake device arrays: numpy's functions, behind the wall."""
    ndarray = FakeDeviceArray
    random = _Random()

    def __init__(self):
        super().__init__(np)

    def asarray(self, x, dtype=None):
        if isinstance(x, FakeDeviceArray):
            return x if dtype is None or x.dtype == np.dtype(dtype) else x.astype(dtype)
        return wrap(np.array(unwrap(x, strict=False), dtype=dtype, copy=True))       # an upload

    def array(self, x, dtype=None, copy=True):
        return wrap(np.array(unwrap(x, strict=False), dtype=dtype, copy=True))

    def asnumpy(self, x):
        return x.get() if isinstance(x, FakeDeviceArray) else np.asarray(x)


FAKE = FakeDeviceModule()
register_array_module(FakeDeviceArray, FAKE)


class FakeDeviceBackend:
    """The simulator backend with its arrays behind the wall: what the engine, the adapter and the
    oracles see are fake device arrays; the simulator launches on the numpy arrays inside."""

    def __init__(self, sim):
        self._sim = sim
        self.launches = 0

    def __getattr__(self, name):
        return getattr(self._sim, name)

    def asarray(self, host):
        TRANSFERS.uploads.append(int(host.size))
        return wrap(self._sim.asarray(host))

    def zeros(self, shape, dtype):
        return wrap(np.zeros(shape, dtype))

    def to_host(self, arr):
        return arr.get() if isinstance(arr, FakeDeviceArray) else self._sim.to_host(arr)

    def is_array(self, value) -> bool:
        return isinstance(value, FakeDeviceArray)

    def launch(self, compiled, grid, block, args):
        self.launches += 1
        return self._sim.launch(compiled, grid, block, [unwrap(a, strict=False) for a in args])

    def prepare_launch(self, compiled, grid, block, args):
        return lambda: self.launch(compiled, grid, block, args)
