"""How the engine is compiled: numba's flags, its on-disk cache and one compiler per variant."""
