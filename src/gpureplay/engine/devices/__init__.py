"""Devices below a whole GPU: shared GPUs (time-slicing, MPS, HAMi) and MIG instances."""
