"""Plain-Python reference implementation of the engine semantics (the test oracle).

:mod:`tests.reference.simulator` follows ``/work/briefs/semantics.md`` ("Engine v1
semantics") in the most obvious way; :mod:`tests.reference.strategies` builds random
canonical inputs for the differential tests that compare it with the numba engine.
"""
