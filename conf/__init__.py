"""Hydra config tree (a package so Hydra can find it after a normal install)."""
