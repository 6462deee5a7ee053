"""Whether and where a pod fits: resources, node and GPU scorers, fit trees, FGD's fragmentation."""
