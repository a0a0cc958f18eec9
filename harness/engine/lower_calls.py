"""Lowering of calls: math and casts become primitives, device functions are inlined (each a
child compile job), custom rules replace a body's derivative, CUDA intrinsics (atomics, shuffles,
barriers, shared and local arrays) become IR statements, and device-side `autodiff` becomes a
`Nested` statement.

A mixin of `normalize.Lowerer`: it uses the lowerer's environment, names and types.
"""
from __future__ import annotations

import ast

from .control import RET, prepare_body
from .frontend import FUNCTIONS, resolve_global
from .ir import Alloc, Assign, Atomic, Barrier, Param, Prim, Special, walk
from .rules import arity_problem


class CallLowering:
    def resolve_call(self, node):
        """('rule', name) | ('cuda', 'cuda.x') | ('device', fn) | ('autodiff', None) | ('activity', cls)."""
        f = node.func
        obj = None
        if isinstance(f, ast.Attribute):
            d = self.dotted(f)
            if d is None:
                return None
            kind, parts, mod = d
            if kind == "cuda":
                return "cuda", "cuda." + ".".join(parts)
            obj = mod
            for p in parts:
                obj = getattr(obj, p, None)
        elif isinstance(f, ast.Name):
            if f.id in self.env or f.id in self.arrays:
                return None
            try:
                obj = resolve_global(self.src, f.id)
            except KeyError:
                return None
        if obj is None:
            return None
        name = FUNCTIONS.get(id(obj))
        if name is None and type(obj).__module__.startswith("numba.core.types"):
            name = f"cast_{obj}"              # numba.float32(x) and friends
        if name is not None:
            return "rule", name
        from ..core import activity
        from . import device
        if obj is device.autodiff:
            return "autodiff", None
        if isinstance(obj, type) and issubclass(obj, (activity.Const, activity.Duplicated, activity.Active)):
            return "activity", obj
        try:
            from .frontend import python_function
            return "device", python_function(obj)
        except TypeError:
            return None

    def call(self, node, out, nvalues: int = 1, as_list: bool = False):
        """Lower a call; returns one atom, or with as_list the list of its result atoms."""
        if node.keywords:
            raise self.err(node, "keyword arguments are not supported in kernel calls")
        resolved = self.resolve_call(node)
        if resolved is None:
            raise self.err(node, f"call to `{ast.unparse(node.func)}` is not supported by the AD transform yet")
        kind, what = resolved
        if kind == "device":
            results = self.device_call(what, node, out)
            if nvalues == -1:
                return None
            if as_list:
                return results
            if len(results) != 1:
                raise self.err(node, f"{what.__name__} returns {len(results)} values; unpack them")
            return results[0] if nvalues == 1 else results
        if kind == "autodiff":
            targets = self.autodiff_call(node, out)
            if nvalues == -1 or as_list:
                return None if nvalues == -1 else targets
            if len(targets) != 1:
                raise self.err(node, f"this autodiff call returns {len(targets)} values; unpack them")
            return targets[0]
        if kind == "cuda":
            return self.cuda_call(what, node, out)
        if kind != "rule":
            raise self.err(node, f"`{ast.unparse(node.func)}` is not supported here")
        name = what
        problem = arity_problem(name, len(node.args))
        if problem:
            raise self.err(node, f"`{ast.unparse(node.func)}` {problem}")
        args = tuple(self.expr(a, out) for a in node.args)
        if name in ("min", "max") and len(args) > 2:        # min(a, b, c) -> min(min(a, b), c)
            acc = args[0]
            for a in args[1:]:
                acc = self.emit_assign(out, self.temp(), Prim(name, (acc, a)))
            return acc
        if name == "cast_int64" and len(args) == 1 and self.atom_type(args[0]).startswith("float"):
            name = "trunc_int"
        return self.emit_assign(out, self.temp(), Prim(name, args))

    def cuda_call(self, name, node, out):
        if name in ("cuda.grid", "cuda.gridsize"):
            n = self.literal_int(node.args[0])
            if n != 1:
                raise self.err(node, f"{name}({n}) returns a tuple: unpack it, e.g. i, j = {name}({n})")
            return self.emit_assign(out, self.temp(), Special("grid.0" if name == "cuda.grid" else "gsize.0"))
        if name == "cuda.syncthreads":
            if self.depth_ctl:
                raise self.err(node, "cuda.syncthreads() under a condition or in a dynamic loop is not supported "
                                     "(every thread must reach the barrier; early returns before it count too)")
            out.append(Barrier(self.line))
            return None
        if name.startswith("cuda.atomic."):
            op = name.rsplit(".", 1)[1]
            if op not in ("add", "sub", "max", "min"):
                raise self.err(node, f"cuda.atomic.{op} cannot be differentiated: its result depends on the "
                                     "order in which threads arrive (only add, sub, max and min are supported)")
            arr, idx, val = node.args
            if not (isinstance(arr, ast.Name) and arr.id in self.arrays):
                raise self.err(node, "the first argument of an atomic must be an array")
            index = self.index_atoms(self.params[self.arrays[arr.id]], idx, node, out)
            value = self.expr(val, out)
            target = self.temp()
            out.append(Atomic(op, self.arrays[arr.id], index, value, target, self.line))
            self.types[target] = self.params[self.arrays[arr.id]].dtype
            return target
        if name in ("cuda.shfl_sync", "cuda.shfl_up_sync", "cuda.shfl_down_sync", "cuda.shfl_xor_sync"):
            mask, value, lane = (self.expr(a, out) for a in node.args)
            op = name[len("cuda."):-len("_sync")]
            t = self.temp()
            out.append(Assign(t, Prim(op, (mask, value, lane)), self.line))
            self.types[t] = self.atom_type(value)
            return t
        if name in ("cuda.shared.array", "cuda.local.array"):
            raise self.err(node, f"{name}(...) must be assigned to a name")
        raise self.err(node, f"`{name}` is not supported by the AD transform yet")

    def alloc(self, name: str, call, out):
        space = "shared" if "shared" in ast.unparse(call.func) else "local"
        if self.depth_ctl and space == "shared":
            raise self.err(call, "declare shared arrays at the top level of the kernel")
        shape_node, dtype_node = call.args[0], call.args[1] if len(call.args) > 1 else None
        for kw in call.keywords:
            if kw.arg == "shape":
                shape_node = kw.value
            elif kw.arg == "dtype":
                dtype_node = kw.value
        dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
        shape = tuple(self.literal_int(d) for d in dims)
        dtype = self.dtype_of(dtype_node)
        local = self.fresh(name) if name in self.taken else name
        self.taken.add(local)
        p = Param(local, space, dtype, len(shape), shape)
        self.params[local] = p
        self.arrays[name] = local
        self.local_arrays.append(p)
        out.append(Alloc(p, self.line))

    def dtype_of(self, node) -> str:
        import numpy as np
        obj = None
        if isinstance(node, ast.Name):
            obj = resolve_global(self.src, node.id) if node.id not in self.env else None
        elif isinstance(node, ast.Attribute):
            d = self.dotted(node)
            if d:
                obj = d[2]
                for p in d[1]:
                    obj = getattr(obj, p, None)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            return np.dtype(node.value).name
        if obj is None:
            raise self.err(node, "array dtype must be a numba or numpy type")
        try:
            return np.dtype(str(obj) if type(obj).__module__.startswith("numba") else obj).name
        except TypeError:
            raise self.err(node, f"unknown dtype {ast.unparse(node)}") from None

    # -- device functions: inlined, each recorded as a child compile job
    def device_call(self, fn, node, out) -> list:
        from .custom import rule_for
        rule = rule_for(fn)
        if rule is None:
            return self.inline(fn, node.args, out, node)
        operands = [self.expr(a, out) for a in node.args]
        self.nodiff_depth += 1
        value = self.inline(fn, operands, out, node)
        if len(value) != 1:
            raise self.err(node, f"a custom rule needs {fn.__name__} to return one value")
        partials = self.inline(rule.partials, operands + value, out, node)
        self.nodiff_depth -= 1
        if len(partials) != len(operands):
            raise self.err(node, f"the rule for {fn.__name__} returns {len(partials)} partial(s) "
                                 f"for {len(operands)} operand(s)")
        t = self.temp()
        out.append(Assign(t, Prim("custom", tuple(value) + tuple(operands), tuple(partials)), self.line))
        self.types[t] = self.atom_type(value[0])
        return [t]

    def inline(self, fn, args, out, node) -> list:
        """Lower `fn`'s body in place with its parameters bound to `args` (AST nodes or atoms)."""
        from .frontend import parse_kernel
        src = parse_kernel(fn)
        if src.name in self.call_stack:
            raise self.err(node, f"recursive call to {src.name} cannot be differentiated")
        if len(args) != len(src.params):
            raise self.err(node, f"{src.name} takes {len(src.params)} arguments, {len(args)} given")
        arrays, scalars = {}, []
        for pname, a in zip(src.params, args):
            if isinstance(a, ast.Name) and a.id in self.arrays:
                arrays[pname] = self.arrays[a.id]
            else:
                scalars.append((pname, a if not isinstance(a, ast.AST) else self.expr(a, out)))
        saved = (self.src, self.env, self.arrays, self.prefix, self.line)
        self.calls.append((src.name, self.call_stack[-1], self.line))
        self.call_stack.append(src.name)
        self.prefix = f"{self.prefix}{src.name}_"
        self.env = {}
        for pname, atom_ in scalars:
            self.env[pname] = self.emit_assign(out, self.fresh(pname), Prim("copy", (atom_,)))
        self.src, self.arrays = src, arrays
        body = self.block(prepare_body(src, values=True))
        for t in walk(body):                   # refusals name the helper's file, not the caller's
            if getattr(t, "file", None) is None:
                t.file = src.file
        out.extend(body)
        results = []
        k = 0
        while f"{RET}{k}" in self.env:
            results.append(self.env[f"{RET}{k}"])
            k += 1
        self.call_stack.pop()
        self.src, self.env, self.arrays, self.prefix, self.line = saved
        return results

    # -- device-side autodiff
    def autodiff_call(self, node, out):
        from .ir import Nested
        if len(node.args) < 2:
            raise self.err(node, "autodiff(mode, f, args...) needs a mode and a function")
        mode = self._mode_of(node.args[0])
        resolved = self.resolve_call(ast.Call(node.args[1], [], [])) if isinstance(node.args[1], (ast.Name, ast.Attribute)) else None
        if not resolved or resolved[0] != "device":
            raise self.err(node.args[1], "autodiff's second argument must name a device function")
        fn = resolved[1]
        args = []
        for a in node.args[2:]:
            act = self.resolve_call(a) if isinstance(a, ast.Call) else None
            cls = act[1] if act and act[0] == "activity" else None
            if cls is None:               # a bare value is Const, as in the host API
                args.append(self._nested_value("const", a, None, out))
                continue
            name = {"Const": "const", "Duplicated": "duplicated", "DuplicatedNoNeed": "duplicated_no_need",
                    "Active": "active"}.get(cls.__name__)
            if name is None:
                raise self.err(a, f"{cls.__name__} is not supported inside autodiff")
            shadow = a.args[1] if name.startswith("duplicated") and len(a.args) > 1 else None
            if name.startswith("duplicated") and shadow is None:
                raise self.err(a, f"{cls.__name__} needs a value and its shadow")
            args.append(self._nested_value(name, a.args[0], shadow, out))
        targets = []
        from .frontend import parse_kernel
        returns_value = any(isinstance(r, ast.Return) and r.value is not None
                            and not (isinstance(r.value, ast.Constant) and r.value.value is None)
                            for r in ast.walk(parse_kernel(fn).tree))
        n_out = sum(1 for x in args if x.activity == "active") if mode == "reverse" else int(returns_value)
        for _ in range(n_out):
            t = self.temp()
            targets.append(t)
        nested = Nested(mode, fn, args, targets, self.line)
        out.append(nested)
        self.nested.append(nested)
        for t in targets:
            self.types[t] = "float64"          # refined by the engine once f's types are known
        return targets

    def _mode_of(self, node) -> str:
        if isinstance(node, ast.Constant) and node.value in ("forward", "reverse"):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            obj = None
            if isinstance(node, ast.Name) and node.id not in self.env:
                try:
                    obj = resolve_global(self.src, node.id)
                except KeyError:
                    pass
            elif isinstance(node, ast.Attribute):
                base = node.value
                if isinstance(base, ast.Name):
                    try:
                        obj = getattr(resolve_global(self.src, base.id), node.attr, None)
                    except KeyError:
                        pass
            if obj in ("forward", "reverse"):
                return obj
        raise self.err(node, "autodiff's mode must be Forward or Reverse (from harness.device)")

    def _nested_value(self, activity, value_node, shadow_node, out):
        from .ir import NestedArg
        if isinstance(value_node, ast.Name) and value_node.id in self.arrays:
            shadow = None
            if shadow_node is not None:
                if not (isinstance(shadow_node, ast.Name) and shadow_node.id in self.arrays):
                    raise self.err(shadow_node, "the shadow of an array must be an array parameter")
                shadow = self.arrays[shadow_node.id]
            return NestedArg(activity, self.arrays[value_node.id], shadow, is_array=True)
        value = self.expr(value_node, out)
        shadow = self.expr(shadow_node, out) if shadow_node is not None else None
        return NestedArg(activity, value, shadow, is_array=False)

