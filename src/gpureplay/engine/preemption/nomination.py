"""Nominated nodes: a preemptor's room is kept from lower-priority pods while its victims terminate.

After DefaultPreemption evicts victims for a pod, kube-scheduler sets the
pod's ``status.nominatedNodeName``; until the pod is bound, every later pod of
lower priority is filtered on that node as if the nominated pod already ran
there (``RunFilterPluginsWithNominatedPods`` / ``addNominatedPods`` in
``pkg/scheduler/framework/runtime/framework.go``; docs/systems.md, "kube-scheduler"
§6.2). Without it, a lower-priority pod takes the room the preemptor counted
on during the victims' grace period, the preemptor evicts again when they are
gone, and the cycle can repeat for ever.

The engine nominates every pod of the preemptor that its trial placed (each
to its trial node) when the eviction happens, and clears lower-priority
nominations on those nodes (as kube does). An entry hides, from pods of
strictly lower priority, its CPU, memory, milli-GPU and whole GPUs on its
node: kube's NodeResourcesFit on the node's requested totals with the
nominated pods' requests added (a scalar check; the nominated pod's own GPUs
are not chosen yet). Equal-priority pods ignore each other's entries (kube
adds nominated pods of equal priority too; a job's own entries must not
block it and the fit rule does not know which job asks). A nomination ends
when the preemptor starts, when it is evicted itself, or when it is visited
at the end of the first cycle after every victim terminated (it had that
cycle to bind; a new search in it replaces the nomination).
"""

from __future__ import annotations

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Classes, Cluster, Jobs, JobState, Run
from gpureplay.engine.state.layout import (
    C_CPU,
    C_K,
    C_KIND,
    C_MEM,
    C_MILLI,
    C_PRIO,
    D_PLACED,
    D_WAITING,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    J_CLASS,
    J_CPU,
    J_K,
    J_KIND,
    J_MEM,
    J_MILLI,
    J_POD0,
    J_PRIO,
    K_PVERSION,
    K_VERSION,
    KIND_NONE,
    KIND_WHOLE,
    NOM_CLASS,
    NOM_CPU,
    NOM_FIELDS,
    NOM_JOB,
    NOM_MEM,
    NOM_MILLI,
    NOM_NODE,
    NOM_PRIO,
    NOM_WHOLE,
)


@inline_kernel
def outranks(cl: Cluster, cs: Classes, e: int, c: int) -> bool:
    """Whether nomination entry ``e`` hides its room from class ``c``: a higher priority (a KAI preemptor's
    pipelined pods, ``NOM_ALL``, every priority), never the preemptor's own class."""
    return bool(cl.nominees[NOM_PRIO, e] > cs.ints[C_PRIO, c] and cl.nominees[NOM_CLASS, e] != c)


@inline_kernel
def nominated_for(cl: Cluster, cs: Classes, c: int) -> bool:
    """Whether some nomination outranks class ``c`` (its pods must then be filtered node by node)."""
    for e in range(1, cl.nominees[NOM_JOB, 0] + 1):  # noqa: SIM110 (no generators in kernels)
        if outranks(cl, cs, e, c):
            return True
    return False


@inline_kernel
def nominated_limit(cl: Cluster, cs: Classes, c: int, n: int, limit: int) -> int:
    """``limit`` capped by the pods of class ``c`` node ``n`` takes with its outranking nominations added.

    Notes
    -----
    kube-scheduler's NodeResourcesFit with nominated pods (``addNominatedPods``):
    for each resource the pod requests, the node's free amount minus the
    nominated pods' requests must cover it. The GPU is counted as milli-GPU,
    and a whole-GPU pod also needs whole GPUs beyond the nominated ones.
    """
    count = cl.nominees[NOM_JOB, 0]
    if count == 0:
        return limit
    cpu = 0
    mem = 0
    milli = 0
    whole = 0
    seen = False
    for e in range(1, count + 1):
        if cl.nominees[NOM_NODE, e] != n or not outranks(cl, cs, e, c):
            continue
        seen = True
        cpu += cl.nominees[NOM_CPU, e]
        mem += cl.nominees[NOM_MEM, e]
        milli += cl.nominees[NOM_MILLI, e]
        whole += cl.nominees[NOM_WHOLE, e]
    if not seen:
        return limit
    cap = limit
    if cs.ints[C_CPU, c] > 0:
        cap = min(cap, (cl.node_free[F_CPU, n] - cpu) // cs.ints[C_CPU, c])
    if cs.ints[C_MEM, c] > 0:
        cap = min(cap, (cl.node_free[F_MEM, n] - mem) // cs.ints[C_MEM, c])
    kind = cs.ints[C_KIND, c]
    if kind != KIND_NONE:
        cap = min(cap, (cl.node_free[F_MILLI, n] - milli) // cs.ints[C_MILLI, c])
    if kind == KIND_WHOLE:
        cap = min(cap, (cl.node_free[F_WHOLE, n] - whole) // cs.ints[C_K, c])
    return max(cap, 0)


@kernel
def nominate(jobs: Jobs, js: JobState, cl: Cluster, run: Run, j: int, first: int) -> None:
    """Nominate job ``j``'s pods ``first..placed-1`` (its trial placement) to the nodes they were tried on."""
    end_nomination(cl, run, j)  # a search after its victims were gone replaces its nomination
    count = cl.nominees[NOM_JOB, 0]
    pod0 = jobs.ints[J_POD0, j]
    whole = jobs.ints[J_K, j] if jobs.ints[J_KIND, j] == KIND_WHOLE else 0
    for p in range(first, js.dyn[D_PLACED, j]):
        count += 1
        cl.nominees[NOM_JOB, count] = j
        cl.nominees[NOM_NODE, count] = js.pod_node[pod0 + p]
        cl.nominees[NOM_PRIO, count] = jobs.ints[J_PRIO, j]
        cl.nominees[NOM_CPU, count] = jobs.ints[J_CPU, j]
        cl.nominees[NOM_MEM, count] = jobs.ints[J_MEM, j]
        cl.nominees[NOM_MILLI, count] = jobs.ints[J_MILLI, j]
        cl.nominees[NOM_WHOLE, count] = whole
        cl.nominees[NOM_CLASS, count] = jobs.ints[J_CLASS, j]
    cl.nominees[NOM_JOB, 0] = count
    clear_outranked(jobs, cl, run, j)


@kernel
def clear_outranked(jobs: Jobs, cl: Cluster, run: Run, j: int) -> None:
    """Drop the nominations of lower priority on the nodes job ``j`` was just nominated to.

    kube-scheduler's ``prepareCandidate`` clears the nominated node of the
    lower-priority pods nominated to the node it preempts on
    (``getLowerPriorityNominatedPods``): they would no longer fit there.
    """
    prio = jobs.ints[J_PRIO, j]
    removed = 0
    e = 1
    while e <= cl.nominees[NOM_JOB, 0]:
        if (
            cl.nominees[NOM_JOB, e] == j
            or cl.nominees[NOM_PRIO, e] >= prio
            or not nominated_to(cl, j, cl.nominees[NOM_NODE, e])
        ):
            e += 1
        else:
            drop_entry(cl, e)
            removed += 1
    room_back(run, removed)


@inline_kernel
def nominated_to(cl: Cluster, j: int, n: int) -> bool:
    """Whether job ``j`` holds a nomination on node ``n``."""
    for e in range(1, cl.nominees[NOM_JOB, 0] + 1):
        if cl.nominees[NOM_JOB, e] == j and cl.nominees[NOM_NODE, e] == n:
            return True
    return False


@kernel
def end_stale_nominations(js: JobState, cl: Cluster, run: Run) -> int:
    """At the end of a cycle: drop the nominations of jobs whose victims have all terminated.

    Such a job had this cycle to bind with its room kept; it did not (kube
    clears the nominated node of a pod whose attempt fails and whose
    preemption finds nothing), so the room is everyone's again. Returns the
    number of jobs whose nomination ended: a change, as the room it frees may
    fit a pod at the next periodic cycle (which must then not be skipped).
    """
    ended = 0
    e = 1
    while e <= cl.nominees[NOM_JOB, 0]:
        j = cl.nominees[NOM_JOB, e]
        if js.dyn[D_WAITING, j] == 0:
            end_nomination(cl, run, j)  # moves other entries into slot e: look at it again
            ended += 1
        else:
            e += 1
    return ended


@kernel
def end_nomination(cl: Cluster, run: Run, j: int) -> None:
    """Drop job ``j``'s nominations; the room they hid may now fit pods that failed (a new version)."""
    removed = 0
    e = 1
    while e <= cl.nominees[NOM_JOB, 0]:
        if cl.nominees[NOM_JOB, e] != j:
            e += 1
        else:
            drop_entry(cl, e)
            removed += 1
    room_back(run, removed)


@inline_kernel
def drop_entry(cl: Cluster, e: int) -> None:
    """Remove entry ``e``: the last entry moves into its slot."""
    count = cl.nominees[NOM_JOB, 0]
    for f in range(NOM_FIELDS):
        cl.nominees[f, e] = cl.nominees[f, count]
    cl.nominees[NOM_JOB, 0] = count - 1


@inline_kernel
def room_back(run: Run, removed: int) -> None:
    """Removed nominations hid room: failed classes may fit, failed searches may succeed (new versions)."""
    if removed > 0:
        run.counters[K_VERSION] += 1
        run.counters[K_PVERSION] += 1
