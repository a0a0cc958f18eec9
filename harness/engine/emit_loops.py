"""Emitting loops: the plain loop (forward kernels, primal replays), the taped forward sweep of a
reverse kernel, and the reverse loop that restores each iteration from the tape, replays the body
without its stores and runs the body's adjoint. A mixin of `codegen.Emitter`.
"""
from __future__ import annotations

from .ir import Alloc, Assign, Atomic, If, Loop, Store, walk
from .syntax import atom
from .types import is_float


class LoopEmitter:
    def loop_head(self, s: Loop):
        if s.kind == "for":
            self.line(f"for {s.var} in range({atom(s.start)}, {atom(s.stop)}, {s.step}):" + self.comment_line(s.line))
        else:
            self.line("while True:" + self.comment_line(s.line))

    def plain_loop(self, s: Loop, emit_block, tangents: bool):
        """The loop as written (no tape): header, exit test, body, then the carried registers."""
        self.loop_head(s)
        self.depth += 1
        if s.kind == "while":
            emit_block(s.header)
            self.line(f"if not {atom(s.cond)}:")
            self.line("    break")
        emit_block(s.body)
        self.carry_moves(s, tangents=tangents)
        self.depth -= 1

    def carry_moves(self, s: Loop, tangents: bool):
        """Registers take their end-of-body values all at once (a swap must not see itself)."""
        if not s.carried:
            return
        regs = ", ".join(r for r, _ in s.carried)
        vals = ", ".join(atom(v) for _, v in s.carried)
        self.line(f"{regs} = {vals}")
        if tangents:
            pairs = [(r, v) for r, v in s.carried if r in self.varied]
            for j in self.lanes():
                if pairs:
                    lhs = ", ".join(self.d(r, j) for r, _ in pairs)
                    rhs = ", ".join(self.d(v, j) if self.is_varied(v) else f"{self.ftype(r)}(0.0)" for r, v in pairs)
                    self.line(f"{lhs} = {rhs}")

    def tape_name(self, name: str) -> str:
        return f"_tape_{name.lstrip('_')}"

    def taped(self, s: Loop) -> list[str]:
        """Values the reverse sweep restores per iteration: the registers and the taped loads."""
        return [r for r, _ in s.carried] + sorted(s.taped_loads)

    def tape_declarations(self, stmts):
        for s in walk(stmts):
            if isinstance(s, Loop):
                for name in self.taped(s):
                    t = self.ir.types.get(name, "int64")
                    dtype = t if is_float(t) else "int64"
                    self.line(f"{self.tape_name(name)} = cuda.local.array({self.tape_size}, {dtype})")

    def loop_sweep(self, s: Loop, stores: bool):
        """The loop run forward in a reverse kernel, recording each iteration on the tape."""
        n = f"_n{s.id}"
        self.line(f"{n} = 0")
        self.loop_head(s)
        self.depth += 1
        if s.kind == "while":
            self.replay_block(s.header, None, stores, record=n, loop=s)
            self.line(f"if not {atom(s.cond)}:")
            self.line("    break")
        self.line(f"if {n} < {self.tape_size}:")
        self.depth += 1
        for name in [r for r, _ in s.carried]:
            self.line(f"{self.tape_name(name)}[{n}] = {name}")
        self.line("pass")
        self.depth -= 1
        self.line("else:")
        self.line(f"    {self.prefix}tape_overflow[0] = {s.line}")
        self.replay_block(s.body, None, stores, record=n, loop=s)
        self.carry_moves(s, tangents=False)
        self.line(f"{n} += 1")
        self.depth -= 1

    def replay_block(self, stmts, tape_index, stores: bool, record: str | None = None, loop: Loop | None = None):
        """Primal statements. With tape_index, taped loads come from the tape instead of memory;
        with record, taped loads are also written to it; stores only when `stores`."""
        for s in stmts:
            if isinstance(s, Loop):
                self.loop_sweep(s, stores)
            elif isinstance(s, If):
                self.emit_if(s, lambda: (self.replay_block(s.body, tape_index, stores, record, loop),
                                         self.primal_phis(s.phis, 1)),
                             lambda: (self.replay_block(s.orelse, tape_index, stores, record, loop),
                                      self.primal_phis(s.phis, 2)))
            elif isinstance(s, Atomic) and s.target in self.taped_loads and tape_index is not None:
                self.line(f"{s.target} = {self.tape_name(s.target)}[{tape_index}]")   # its old value
            elif isinstance(s, (Store, Atomic)):
                if stores:
                    self.primal(s)
                if stores and record and isinstance(s, Atomic) and s.target in loop.taped_loads:
                    self.line(f"if {record} < {self.tape_size}:")
                    self.line(f"    {self.tape_name(s.target)}[{record}] = {s.target}")
            elif isinstance(s, Alloc):
                self.primal(s)
                self.shadow_alloc(s, zero=True)
            elif isinstance(s, Assign) and tape_index is not None and s.target in self.taped_loads:
                self.line(f"{s.target} = {self.tape_name(s.target)}[{tape_index}]")
            else:
                self.primal(s)
                if record and isinstance(s, Assign) and loop is not None and s.target in loop.taped_loads:
                    self.line(f"if {record} < {self.tape_size}:")
                    self.line(f"    {self.tape_name(s.target)}[{record}] = {s.target}")

    def reverse_loop(self, s: Loop):
        n, r = f"_n{s.id}", f"_r{s.id}"
        self.line(f"for {r} in range(min({n}, {self.tape_size}) - 1, -1, -1):" + self.comment_line(s.line))
        self.depth += 1
        if s.kind == "for":
            self.line(f"{s.var} = {atom(s.start)} + {r} * {s.step}")
        tape = self.emitters["tape-index"](self, s)
        for name in [reg for reg, _ in s.carried]:
            self.line(f"{name} = {self.tape_name(name)}[{tape}]")
        self.emitters["replay-iteration"](self, s, tape)
        carried = {reg for reg, _ in s.carried}
        local = sorted(v for v in self.varied if v in self.assigned_in(s) and v not in carried)
        for name in local:                     # body values are fresh every iteration
            for j in self.lanes():
                self.line(f"{self.d(name, j)} = {self.ftype(name)}(0.0)")
        pairs = [(reg, nxt) for reg, nxt in s.carried if reg in self.varied]
        for j in self.lanes():
            for k, (reg, _) in enumerate(pairs):
                self.line(f"_c{k} = {self.d(reg, j)}")
                self.line(f"{self.d(reg, j)} = {self.ftype(reg)}(0.0)")
            for k, (reg, nxt) in enumerate(pairs):
                if self.is_varied(nxt):
                    self.line(f"{self.d(nxt, j)} += _c{k}")
        self.reverse(s.body)
        self.reverse(s.header)
        self.line("pass")
        self.depth -= 1

    def assigned_in(self, s: Loop) -> set[str]:
        out = set()
        for t in walk(list(s.header) + list(s.body)):
            if isinstance(t, Assign):
                out.add(t.target)
            elif isinstance(t, If):
                out |= {p[0] for p in t.phis}
            elif isinstance(t, Loop):
                out |= {reg for reg, _ in t.carried}
        return out
