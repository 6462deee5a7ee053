"""NVIDIA MIG: the slice geometry of each GPU model, its maximal layouts, and mig-parted configs.

:mod:`~gpureplay.mig.geometry` holds the placement rule on one GPU (the one
the engine applies per GPU), :mod:`~gpureplay.mig.layouts` enumerates the
maximal layouts of a model, and :mod:`~gpureplay.mig.parted` reads and checks
mig-parted style configs. The facts come from the GPU catalog
(``cluster/gpu_models.toml``) and nowhere else.
"""
