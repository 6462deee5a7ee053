"""Plain-Python reference implementation of the engine semantics (the test oracle).

:mod:`tests.reference.simulator` follows the engine v1 semantics spec in the most
obvious way (its comments cite the spec's section headings: Resources, Rejection at
arrival, Queue order, Gang mode, Pod-by-pod mode, Time and events, Timeline row,
Accounting invariant); :mod:`tests.reference.strategies` builds random and
hand-made canonical inputs for the differential tests that compare it with the
numba engine (``tests/test_differential.py``).
"""
