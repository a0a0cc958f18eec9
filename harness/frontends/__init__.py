"""Old package of the broadcast kernel generator (now harness/broadcast); see kernelgen.py here."""
