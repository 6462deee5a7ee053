"""Placing a job's pods: gangs, topology-aware placement of each system, NUMA, spreading costs."""
