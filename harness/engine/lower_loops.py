"""Lowering of loops: small static ranges and literal tuples are unrolled; other `for` and `while`
loops become `Loop` nodes whose reassigned scalars are loop-carried registers.

A mixin of `normalize.Lowerer`: it uses the lowerer's environment, names and types.
"""
from __future__ import annotations

import ast

from .control import BREAK, SKIP, _assigned_names, _has_jump, _uses, lower_jumps
from .ir import Lit, Loop, Prim
from .types import promote_pair

UNROLL_LIMIT = 16            # static range loops up to this trip count are unrolled


class LoopLowering:
    # -- loops
    def for_loop(self, s: ast.For, out):
        it = s.iter
        if s.orelse:
            raise self.err(s, "`for ... else` is not supported")
        if isinstance(it, (ast.Tuple, ast.List)) and isinstance(s.target, ast.Name) and not _has_jump(s.body):
            for elt in it.elts:              # `for d in (16, 8, 4)`: unrolled over the literal values
                self.env[s.target.id] = self.expr(elt, out, target=self.fresh(s.target.id))
                out.extend(self.block(s.body))
            return
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not it.keywords and 1 <= len(it.args) <= 3):
            raise self.err(s, "only `for v in range(...)` loops are supported")
        if not isinstance(s.target, ast.Name):
            raise self.err(s.target, "the loop variable must be a single name")
        args = list(it.args)
        step_node = args[2] if len(args) == 3 else ast.Constant(1)
        start_node = args[0] if len(args) >= 2 else ast.Constant(0)
        stop_node = args[1] if len(args) >= 2 else args[0]
        step = self.literal_int(step_node) if not (isinstance(step_node, ast.UnaryOp)
                                                   and isinstance(step_node.operand, ast.Constant)) \
            else -self.literal_int(step_node.operand)
        if step == 0:
            raise self.err(step_node, "range() step must not be zero")
        start, stop = self.expr(start_node, out), self.expr(stop_node, out)
        if isinstance(start, Lit) and isinstance(stop, Lit) and not _has_jump(s.body):
            count = len(range(start.value, stop.value, step))
            if count <= UNROLL_LIMIT:          # small static loops: unrolled, pure SSA, no tape
                for value in range(start.value, stop.value, step):
                    self.env[s.target.id] = self.emit_assign(out, self.fresh(s.target.id), Prim("copy", (Lit(value),)))
                    out.extend(self.block(s.body))
                return
        brk, skip = self.jump_flags()
        body = lower_jumps(s.body, self.src, brk, skip)
        self.loop(s, out, "for", body, start=start, stop=stop, step=step, var=s.target.id, brk=brk)

    def while_loop(self, s: ast.While, out):
        if s.orelse:
            raise self.err(s, "`while ... else` is not supported")
        brk, skip = self.jump_flags()
        body = lower_jumps(s.body, self.src, brk, skip)
        self.loop(s, out, "while", body, test=s.test, brk=brk)

    def jump_flags(self) -> tuple[str, str]:
        self.njumps += 1
        return f"{BREAK}{self.njumps}", f"{SKIP}{self.njumps}"

    def loop(self, s, out, kind, body, *, start=None, stop=None, step=1, var=None, test=None, brk=BREAK):
        """Lower a dynamic loop. Registers for every scalar the body reassigns are created before
        the loop; their types may widen in the body (s = 0; s += x[k]), in which case the body is
        lowered again with the wider type so no float is mistaken for an integer."""
        assigned = _assigned_names(body) | ({brk} if _uses(body, brk) else set())
        carried_vars = sorted(v for v in assigned if v in self.env or v == brk)
        if brk in carried_vars and brk not in self.env:
            self.env[brk] = self.emit_assign(out, self.fresh(brk), Prim("copy", (Lit(False),)))
        line = self.line
        widened: dict[str, str] = {}
        for _attempt in range(3):
            snapshot = self.snapshot()
            pre: list = []
            registers = {}
            for v in carried_vars:
                reg = self.fresh(v)
                self.emit_assign(pre, reg, Prim("copy", (self.env[v],)))
                if v in widened:
                    self.types[reg] = widened[v]
                registers[v] = reg
                self.env[v] = reg
            loop_var = self.fresh(var) if var else None
            if loop_var:
                self.types[loop_var] = "int64"
                self.env[var] = loop_var
            header, cond = [], None
            if test is not None:
                cond = self.expr(ast.copy_location(ast.BoolOp(ast.And(), [
                    ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load())), test]), test)
                    if brk in carried_vars else test, header)
            self.depth_ctl += 1
            lowered = self.block(body)
            self.depth_ctl -= 1
            carried = [(registers[v], self.env[v]) for v in carried_vars if self.env[v] != registers[v]]
            changed = {v: self.types[registers[v]] for v in carried_vars
                       if promote_pair(self.types[registers[v]], self.atom_type(self.env[v])) != self.types[registers[v]]}
            if not changed:
                break
            for v in changed:
                widened[v] = promote_pair(self.types[registers[v]], self.atom_type(self.env[v]))
            self.restore(snapshot)
        else:
            raise self.err(s, "loop-carried types did not settle")
        self.nloops += 1
        out.extend(pre)
        out.append(Loop(kind, lowered, carried, line, self.nloops, var=loop_var, start=start, stop=stop,
                        step=step, header=header, cond=cond))
        for v in carried_vars:
            self.env[v] = registers[v]       # after the loop a register holds the final value
        if var:
            self.env.pop(var, None)          # Python leaves it defined; kernels rarely rely on it
        self.line = line

    def snapshot(self):
        """Everything lowering a loop body changes, so that the body can be lowered again (a loop
        whose carried types widen); tests/test_pipeline.py checks no attribute is left out."""
        return (dict(self.env), dict(self.versions), set(self.taken), self.ntemp, dict(self.types),
                set(self.temps), len(self.calls), len(self.nested), set(self.nodiff), self.nloops, self.njumps,
                len(self.local_arrays), dict(self.params), dict(self.arrays))

    def restore(self, snap):
        (self.env, self.versions, self.taken, self.ntemp, self.types, self.temps, ncalls, nnested, self.nodiff,
         self.nloops, self.njumps, nlocal, self.params, self.arrays) = snap
        del self.calls[ncalls:]
        del self.nested[nnested:]
        del self.local_arrays[nlocal:]

