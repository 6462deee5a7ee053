"""Clusters: the GPU catalog and canonical node tables built from real node lists or generated.

Each builder (:func:`gpureplay.cluster.philly.philly_nodes`, ``openb_nodes``, ``pai_nodes``,
``spot_nodes``, ``homogeneous_nodes``) returns a :class:`gpureplay.cluster.nodes.ClusterNodes`
whose table follows ``NODES_SCHEMA`` in :mod:`gpureplay.traces.schema`.
"""
