"""KAI Scheduler: its queue tree's fair shares and session, the reclaim and preempt actions."""
