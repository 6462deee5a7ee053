"""Volcano: the proportion plugin's session, the enqueue, preempt and reclaim actions."""
