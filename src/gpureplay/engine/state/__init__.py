"""The engine's state: named bundles of arrays, their row layout, heaps, timers and random draws."""
