"""Activity annotations (defined in harness/core/activity.py, shared with the engine)."""
from .core.activity import (  # noqa: F401
    Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed, activity_name, map_arrays, unwrap,
)
