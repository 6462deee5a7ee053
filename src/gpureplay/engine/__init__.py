"""numba kernels of the replay engine: state layout, placement, queues, cycles, the event loop.

Nothing here reads files, configs or DataFrames: kernels take arrays and
scalars only (see :mod:`gpureplay.replay` for the boundary that builds them).
"""
