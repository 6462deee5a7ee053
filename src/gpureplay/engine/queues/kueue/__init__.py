"""Kueue: ClusterQueues and cohorts, flavors, classical and fair preemption, admission by quota."""
