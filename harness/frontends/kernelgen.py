"""Old import path, kept because every generated broadcast kernel (.cache/harness/generated) imports
`resolve` from here, and the generator still writes this line so that generated kernels stay
byte-identical across the layout change. Drop after 2027-03-01, together with the line in
harness/broadcast/kernelgen.py that writes it (which changes every generated broadcast kernel once)."""
from harness.broadcast.kernelgen import resolve  # noqa: F401
