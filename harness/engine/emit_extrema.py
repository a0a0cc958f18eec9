"""Differentiating atomic max/min through the winning thread.

The final value of `cuda.atomic.max(A, i, v)` is the largest of A's initial value and every
thread's v, so its derivative flows to one contributor: the winner. Which thread won is known only
after the whole grid ran, so two passes launch first, replaying the kernel without its stores:
pass 1 computes the final values into a scratch copy S of A, pass 2 picks the lowest thread id
among the threads whose v equals S[i] into W[i] (a tie with A's initial value I[i] leaves it the
winner). The derivative kernel then moves A[i]'s tangent or cotangent to or from the winner only.
A mixin of `codegen.Emitter`; the launcher allocates S, I and W and runs the passes.
"""
from __future__ import annotations

from .ir import Atomic, If, Store
from .syntax import atom, index_text

GLOBAL_THREAD_ID = ("((cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z))"
                    " * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) + cuda.threadIdx.x"
                    " + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z))")


class ExtremumEmitter:
    def extremum_params(self) -> list[str]:
        return [f"_x{name}{k}" for k in range(len(self.extrema)) for name in ("S", "I", "W")]

    def is_extremum(self, s) -> bool:
        return isinstance(s, Atomic) and id(s) in self.extrema

    def stored_value(self, s: Atomic) -> str:
        """The value as the array holds it: compare in the array's dtype, or a float64 value that
        was rounded into a float32 array would never equal the final element."""
        return f"{self.ir.param(s.array).dtype}({atom(s.value)})"

    def won(self, s: Atomic) -> str:
        """This thread's value became the final one (and the initial value did not keep it)."""
        k, idx, v = self.extrema[id(s)], index_text(s.index), self.stored_value(s)
        return f"{v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}] and _xW{k}[{idx}] == {GLOBAL_THREAD_ID}"

    def extremum_tangent(self, s: Atomic):
        self.line(f"if {self.won(s)}:")
        for j in self.lanes():
            value = self.d(s.value, j) if self.is_varied(s.value) else "0"
            self.line(f"    {self.d(s.array, j)}[{index_text(s.index)}] = {value}")

    def extremum_adjoint(self, s: Atomic):
        self.line(f"if {self.won(s)}:   # the winner takes the final element's cotangent")
        for j in self.lanes():
            shadow = f"{self.d(s.array, j)}[{index_text(s.index)}]"
            if self.is_varied(s.value):
                self.line(f"    {self.d(s.value, j)} += {shadow}")
            self.line(f"    {shadow} = 0")

    def extremum_pass(self, stmts, phase: int):
        """Pass 1 (phase 1): S[i] = the final value. Pass 2: W[i] = the lowest winning thread.
        The kernel is replayed without stores to its parameter arrays."""
        params = {p.name for p in self.ir.params}
        for s in stmts:
            if isinstance(s, If):
                self.emit_if(s, lambda: (self.extremum_pass(s.body, phase), self.primal_phis(s.phis, 1)),
                             lambda: (self.extremum_pass(s.orelse, phase), self.primal_phis(s.phis, 2)))
            elif isinstance(s, Atomic):
                if not self.is_extremum(s):
                    continue
                k, idx, v = self.extrema[id(s)], index_text(s.index), self.stored_value(s)
                if phase == 1:
                    self.line(f"cuda.atomic.{s.op}(_xS{k}, {self.atomic_index(s.index)}, {v})")
                else:
                    self.line(f"if {v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}]:")
                    self.line(f"    cuda.atomic.min(_xW{k}, {self.atomic_index(s.index)}, {GLOBAL_THREAD_ID})")
            elif isinstance(s, Store) and s.array in params:
                continue
            else:
                self.primal(s)
