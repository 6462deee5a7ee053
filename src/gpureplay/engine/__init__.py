"""numba kernels of the replay engine (v2): state bundles, resources, placement, queues, events, preemption.

Nothing here reads files, configs or DataFrames: kernels take arrays, scalars
and named bundles of arrays (:mod:`gpureplay.engine.state.bundles`); the boundary that
builds them is :mod:`gpureplay.replay`.
"""
