"""Compile jobs: every compilation the engine performs, recorded as a tree.

A launch in a derivative mode creates a root job for the kernel's derivative; device-side
`autodiff` calls add child jobs (the nested derivative and the primal it replays), which must
inherit the parent's target configuration. Cases assert on this tree with `jobs:` patterns.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from harness.core.target import TargetConfig
from harness.core.records import JobRecord

_ids = itertools.count(1)


@dataclass
class CompilerJob:
    function: str
    mode: str                         # primal | forward | reverse
    config: TargetConfig
    kernel: bool = True               # an entry point (True) or a device function (False)
    parent: "CompilerJob | None" = None
    source: str | None = None         # generated source file, when there is one
    id: int = field(default_factory=lambda: next(_ids))

    children: list = field(default_factory=list)

    def child(self, function: str, mode: str, config: TargetConfig, **kw) -> "CompilerJob":
        job = CompilerJob(function, mode, config, kernel=False, parent=self, **kw)
        self.children.append(job)
        return job

    def descendants(self) -> list["CompilerJob"]:
        out = []
        for c in self.children:
            out.append(c)
            out += c.descendants()
        return out

    def tree(self) -> list["CompilerJob"]:
        return [self] + self.descendants()

    def record(self) -> JobRecord:
        return JobRecord(id=self.id, function=self.function, mode=self.mode, target=self.config.target,
                         config=self.config.as_dict(), parent=self.parent.id if self.parent else None,
                         parent_function=self.parent.function if self.parent else None,
                         kernel=self.kernel, source=self.source)
