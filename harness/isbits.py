"""The isbits check of kernel arguments (defined in harness/engine/isbits.py); importable from here."""
from .engine.isbits import (  # noqa: F401
    ISBITS_KINDS, MAX_DEPTH, MAX_NESTED, Classification, Offender, check_argument, classify, is_array_like,
    is_number, non_isbits_message, type_name,
)
