"""Turn a job's whole-GPU count into a gang of identical pods.

Public traces (Philly, ITP, Helios) record how many GPUs a job used, not how
its workers were laid out. A Kubernetes replay needs pods: a pod lives on one
node, so a job asking for more GPUs than a node holds must be split.
"""

from __future__ import annotations

import polars as pl

from gpureplay.errors import InputError


def split_gpus_into_pods(num_gpus: pl.Expr, max_gpus_per_pod: int) -> tuple[pl.Expr, pl.Expr]:
    """Split ``num_gpus`` whole GPUs into the fewest equal pods of at most ``max_gpus_per_pod`` GPUs.

    A job asking for ``G`` GPUs becomes ``p`` pods of ``G / p`` GPUs each, ``p`` being the
    smallest divisor of ``G`` with ``p >= ceil(G / max_gpus_per_pod)``; equivalently each pod
    gets the largest divisor of ``G`` that is ``<= max_gpus_per_pod``.

    Parameters
    ----------
    num_gpus
        Integer expression: GPUs the job asks for.
    max_gpus_per_pod
        GPUs one pod may hold (the GPUs of one node, 8 for a DGX-class server). ``1`` gives one
        1-GPU pod per GPU, like PyTorchJob workers launched one per GPU.

    Returns
    -------
    tuple of polars.Expr
        ``(num_pods, gpu_milli)``, both Int32. ``G == 0`` gives one pod of 0 milli-GPU (a CPU-only
        job). A negative ``G`` gives one pod of ``G * 1000`` milli-GPU and a null ``G`` gives nulls,
        so that :func:`gpureplay.traces.schema.validate_jobs` reports the row; values whose
        milli-GPU does not fit Int32 also become null and are reported there.

    Raises
    ------
    InputError
        When ``max_gpus_per_pod < 1`` (named as ``trace.max_gpus_per_pod``).

    Notes
    -----
    Equal pods keep the gang homogeneous, as Kubeflow's PyTorchJob/MPIJob and Volcano's
    vcjob tasks are (one pod template with ``replicas``). Taking the largest divisor rather than
    ``min(G, max)`` per pod avoids a ragged last pod: 12 GPUs on 8-GPU nodes is 2 pods of 6 (as
    Philly placed such jobs on two machines), not 8 + 4. The divisor search is ``max_gpus_per_pod``
    nested ``when`` branches, so it stays one vectorised expression.

    Examples
    --------
    >>> df = pl.DataFrame({"gpus": [1, 2, 8, 12, 16, 13, 0]})
    >>> pods, milli = split_gpus_into_pods(pl.col("gpus"), 8)
    >>> df.select(pods.alias("num_pods"), milli.alias("gpu_milli")).rows()
    [(1, 1000), (1, 2000), (1, 8000), (2, 6000), (2, 8000), (13, 1000), (1, 0)]
    >>> pods, milli = split_gpus_into_pods(pl.col("gpus"), 1)
    >>> df.select(pods, milli).rows()[:4]
    [(1, 1000), (2, 1000), (8, 1000), (12, 1000)]
    """
    if isinstance(max_gpus_per_pod, bool) or not isinstance(max_gpus_per_pod, int) or max_gpus_per_pod < 1:
        raise InputError.single(
            f"must be a whole number >= 1, got {max_gpus_per_pod!r}",
            "config",
            key="trace.max_gpus_per_pod",
        )
    gpus = num_gpus.cast(pl.Int64)
    # Zero and negative counts pass through unchanged so validation sees (and reports) them.
    largest_divisor = pl.lit(None, dtype=pl.Int64)
    # Built inside out, so the outermost test is the largest candidate and wins.
    for per_pod in range(1, max_gpus_per_pod + 1):
        largest_divisor = (
            pl.when(gpus % per_pod == 0).then(pl.lit(per_pod, dtype=pl.Int64)).otherwise(largest_divisor)
        )
    gpus_per_pod = pl.when(gpus <= 0).then(gpus).otherwise(largest_divisor)
    num_pods = pl.when(gpus <= 0).then(pl.lit(1, dtype=pl.Int64)).otherwise(gpus // gpus_per_pod)
    return (
        num_pods.cast(pl.Int32, strict=False),
        (gpus_per_pod * 1000).cast(pl.Int32, strict=False),
    )
