"""What spreading costs: a job whose pods span several NVLink domains, racks or spines runs slower.

Research simulators model a job placed across servers as a throughput
penalty: Blox (``msr-fiddle/blox``, ``jobs/model.py``, ``placement_penalty``
0.6-0.9 by model) runs a job not consolidated on one server at that share of
its speed (docs/engine/placement.md, "What spreading costs"). Here each topology level of the
nodes table (``nvlink_domain``, ``rack``, ``spine``) has a factor in (0, 1];
when an attempt starts, the job runs at the product of the factors of the
levels whose domains its pods span more than one of, for that whole attempt
(its placement does not change while it runs). The rule in full:
docs/engine/placement.md, "What spreading costs"; the plain-Python twin is
the ``[Spreading cost]`` code of ``tests/reference/simulator.py``.
"""

from __future__ import annotations

from gpureplay.engine.jit.config import kernel
from gpureplay.engine.state.bundles import Cluster, Jobs, JobState, Params, Run, Scratch
from gpureplay.engine.state.layout import (
    D_NVLINKS,
    D_PLACED,
    J_POD0,
    K_STARTS,
    N_NVLINK,
    PF_SPREAD_NVLINK,
)

__all__ = ["SPREAD_LEVELS", "spread_rate"]

#: Topology levels, innermost first: rows ``N_NVLINK + i`` of the node table, ``D_NVLINKS + i`` of a job's
#: state and ``PF_SPREAD_NVLINK + i`` of the settings.
SPREAD_LEVELS = 3


@kernel
def spread_rate(
    params: Params, jobs: Jobs, js: JobState, cl: Cluster, sc: Scratch, run: Run, j: int
) -> float:
    """Count the domains job ``j``'s pods span at each level (``D_NVLINKS`` ...) and return its rate.

    Notes
    -----
    Call once per attempt start, after ``K_STARTS`` moved on: the stamp marks
    the domains this start has counted (``Scratch.domain_mark``), so nothing
    is cleared between starts. The rate is the product of ``spread_rate_L``
    over the levels with more than one domain (1 when every factor is 1).
    """
    stamp = run.counters[K_STARTS]
    pod0 = jobs.ints[J_POD0, j]
    for level in range(SPREAD_LEVELS):
        js.dyn[D_NVLINKS + level, j] = 0
    for p in range(js.dyn[D_PLACED, j]):
        n = js.pod_node[pod0 + p]
        for level in range(SPREAD_LEVELS):
            domain = cl.node_int[N_NVLINK + level, n]
            if sc.domain_mark[level, domain] != stamp:
                sc.domain_mark[level, domain] = stamp
                js.dyn[D_NVLINKS + level, j] += 1
    rate = 1.0
    for level in range(SPREAD_LEVELS):
        if js.dyn[D_NVLINKS + level, j] > 1:
            rate *= params.flt[PF_SPREAD_NVLINK + level]
    return rate
