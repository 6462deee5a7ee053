"""Taking resources back: priority preemption, idle reclaim, nominated nodes."""
