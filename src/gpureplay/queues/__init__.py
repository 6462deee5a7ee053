"""Multi-tenant queues: the queue tree of Kueue, Volcano and KAI, read from real manifests, and fair share.

:mod:`~gpureplay.queues.tree` holds the queue objects and their validation,
:mod:`~gpureplay.queues.manifests` reads Kubernetes YAML into a tree, and
:mod:`~gpureplay.queues.fair_share` is each system's fairness arithmetic over
plain numbers (the rules: docs/engine/queues/; the sources: docs/systems.md).
"""
