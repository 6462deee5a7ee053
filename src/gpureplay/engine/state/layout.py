"""Row layout of the engine's tables and the integer codes kernels use.

Every table is a 2-D ``int64`` or ``float64`` array with one *row per field*
and one column per entity (job, class, node, GPU, tenant), so a field is a
contiguous row: ``cl.node_free[F_WHOLE, n]`` is node ``n``'s count of wholly
free GPUs. Tables travel in the named bundles of
:mod:`gpureplay.engine.state.bundles`; the constants below name their rows. numba
freezes module-level integers into the compiled code, so they cost nothing.

Entities
--------
job
    One row of the canonical jobs table, in input order (``j``).
class
    Pending jobs that fit or fail together on any state: same tenant, same
    priority, same preemption rights and the same demand (gang mode:
    ``(gpu_milli, gpu_mem, cpu, mem, model mask, num_pods)``; pod-by-pod mode
    the pod shape without ``num_pods``).
tenant
    The queue a job is submitted to (the ``queue`` column).
node, GPU
    Nodes in the row order of the canonical nodes table; GPUs of node ``n``
    are ``node_int[N_GPU0, n] + 0 .. num_gpus - 1`` (a global GPU index).
pod
    Pod ``p`` of job ``j`` is global pod ``jobs.int[J_POD0, j] + p``; a
    whole-GPU pod of ``k`` GPUs owns ``k`` GPU slots from ``J_SLOT0``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Array types of the kernels' signatures.
Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
Float64Array = npt.NDArray[np.float64]

#: Milli-GPU of one whole card.
WHOLE = 1000
#: Capacity used for CPU or memory a node list does not give: never constrains.
BIG = 1 << 62
#: Allowed-model mask meaning "any model".
ALL_MODELS = (1 << 64) - 1
#: Most distinct GPU models a cluster may have (one bit each in a uint64 mask).
MAX_MODELS = 64

# --- pod kinds (the resource model's dispatch; see gpureplay.engine.fit.resources) ----------------------
KIND_NONE = 0  # gpu_milli == 0: CPU and memory only
KIND_SHARE = 1  # 0 < gpu_milli < 1000: a share of one GPU (milli and GPU memory)
KIND_WHOLE = 2  # gpu_milli >= 1000: k wholly free GPUs of one node

# --- jobs.int: static per-job integers ------------------------------------------------------------
J_ID = 0  # job_id (the engine's tie-break key)
J_PODS = 1  # num_pods
J_MILLI = 2  # gpu_milli per pod
J_GMEM = 3  # gpu_mem_mib per GPU (null -> 0)
J_CPU = 4  # cpu_milli per pod
J_MEM = 5  # mem_mib per pod
J_PRIO = 6  # priority
J_K = 7  # GPU slots per pod: m/1000 for whole pods, 1 for fractional, 0 for GPU-less pods
J_KIND = 8  # KIND_* of its pods
J_CLASS = 9  # pending class
J_RCLASS = 10  # rejection class (shape incl. num_pods)
J_POS = 11  # position in the class-sorted static order
J_TENANT = 12  # queue (tenant) index
J_POD0 = 13  # first global pod
J_SLOT0 = 14  # first GPU slot
J_CAN_PREEMPT = 15  # 1: may evict lower-priority jobs (PriorityClass preemptionPolicy != Never)
J_PREEMPTIBLE = 16  # 1: may be evicted
J_PRIO_RANK = 17  # rank of its priority among the trace's distinct priorities (0: lowest)
JOB_INT_FIELDS = 18

# --- jobs.flt: static per-job floats --------------------------------------------------------------
JF_SUBMIT = 0
JF_WORK = 1  # duration: seconds of work at full speed
JF_CKPT = 2  # checkpoint interval, seconds of progress (inf: never checkpoints)
JF_OVERHEAD = 3  # restart overhead of every attempt after the first, seconds
JF_KEY1 = 4  # static queue key, first component (see gpureplay.engine.pending)
JF_KEY2 = 5  # static queue key, second component
JOB_FLOAT_FIELDS = 6

# --- jobs.idle: ReclaimIdleResource's per-job inputs (preemption: reclaim_idle; one column otherwise) ---
# A job's usage while it works (the workload's utilisation model), then 0 from I_AFTER seconds into each
# attempt; and its PriorityClass's annotations (docs/systems.md, "scheduler-plugins").
I_GPU = 0  # DCGM_FI_PROF_GR_ENGINE_ACTIVE of its GPUs while it works (ratio 0..1; 0 for GPU-less pods)
I_CPU = 1  # CPU cores per pod while it works
I_AFTER = 2  # seconds after each start when its usage drops to 0 (inf: never)
I_POLICY = 3  # 1: it has a PriorityClass (whose annotations follow); 0: none (never exempt)
I_MIN_PRIO = 4  # minimum-preemptable-priority
I_TOLERATION = 5  # toleration-seconds (negative: tolerates forever)
I_CPU_WINDOW = 6  # cpu-idle-seconds
I_GPU_WINDOW = 7  # gpu-idle-seconds
I_CPU_THRESHOLD = 8  # cpu-idle-usage-threshold (cores)
I_GPU_THRESHOLD = 9  # gpu-idle-usage-threshold (ratio)
IDLE_FIELDS = 10

# --- js.dyn: per-job dynamic integers ----------------------------------------------------------------
D_STATUS = 0  # S_* code
D_PLACED = 1  # pods placed (gang: 0 or num_pods)
D_SPANNED = 2  # distinct nodes when the current attempt started
D_ATTEMPTS = 3  # attempts begun (an attempt begins when the first pod is placed)
D_GEN = 4  # generation of the completion entry; bumped to invalidate it (lazy deletion)
D_PREEMPTIONS = 5  # times the job was evicted
D_WAITING = 6  # victims this job evicted that still hold resources (it does not preempt again meanwhile)
D_NOMINATOR = 7  # terminating: the job it was evicted for (-1: none)
D_OVER = 8  # 1: pending in its class's overflow list (requeued with a new key), 0: in the static set
D_RATE_MARK = 9  # the K_SHARE_CHANGES stamp of the last change that re-rated it (once per change)
D_NVLINKS = 10  # distinct NVLink domains when the current attempt started (gpureplay.engine.placement.spread)
D_RACKS = 11  # distinct racks then
D_SPINES = 12  # distinct spines then
D_ADMIT_FAILS = 13  # kubelet admission failures (Topology Manager: TopologyAffinityError)
D_READY_TIMEOUTS = 14  # Kueue waitForPodsReady: admissions that timed out before all its pods were placed
D_RESERVED = 15  # 1: Kueue admitted it by quota and its reservation still counts its unplaced pods
D_FLAVOR = 16  # Kueue: the flavor slot of each resource r (GPU, CPU, memory) in bits FLAVOR_BITS * r up
JOB_DYN_FIELDS = 17
FLAVOR_BITS = 8  # bits per resource in D_FLAVOR (at most 2^8 - 1 flavor slots)
#: A D_FLAVOR slot no quota row has: the resource counts on no row (a preemption simulation's other
#: resources).
FLAVOR_NONE = (1 << FLAVOR_BITS) - 1
#: ``KueueState.flv_policy`` bits per ClusterQueue (``spec.flavorFungibility``): ``whenCanBorrow:
#: TryNextFlavor``, ``whenCanPreempt: TryNextFlavor``, ``preference: PreemptionOverBorrowing``, and whether
#: its assignment weighs preemption modes (it preempts and a resource group lists several flavors).
FP_BORROW_NEXT = 1
FP_PREEMPT_NEXT = 2
FP_PREEMPTION_OVER = 4
FP_MODES = 8

# --- js.time: per-job dynamic floats -----------------------------------------------------------------
T_FIRST_START = 0  # start of the first attempt that ran (nan: never ran)
T_START = 1  # start of the current/last attempt's run (all pods placed)
T_FINISH = 2  # running: projected finish; finished: finish time
T_LEFT = 3  # work left when the current attempt started (seconds at full speed)
T_PROGRESS0 = 4  # when the current attempt starts making progress (start + restart overhead)
T_PEND_SINCE = 5  # when the job last became pending
T_PENDING = 6  # accumulated pending time (first wait + every requeue)
T_LOST = 7  # lost GPU-seconds (work rolled back to a checkpoint, restore overhead, termination grace)
T_KEY1 = 8  # current queue key (see JF_KEY1/2; changed by a requeue)
T_KEY2 = 9
T_HOLD0 = 10  # when the current attempt's first pod was placed
T_END = 11  # when the job finished (nan otherwise)
T_EVICTED = 12  # terminating: when it was evicted
T_RATE = 13  # running: seconds of work done per second now (1: full speed; below 1 when slowed down)
T_RATE_T = 14  # running: when the current rate began to apply (>= T_PROGRESS0)
T_DONE = 15  # running: work done in this attempt up to T_RATE_T
T_WORK_DONE = 16  # work done over the attempts that ended (progress, rolled-back work included)
T_SHARE_DELAY = 17  # seconds the job's progress was stretched by sharing, up to T_RATE_T
T_ADMITTED = 18  # Kueue admission by quota: when its quota was reserved (its pods' creation)
JOB_TIME_FIELDS = 19

# Job status codes (every job is in exactly one).
S_FUTURE = 0  # not yet submitted
S_QUEUED = 1  # pending (pod-by-pod: possibly partly placed)
S_RUNNING = 2
S_FINISHED = 3
S_REJECTED = 4
S_TERMINATING = 5  # evicted: holds its resources until its termination grace period ends
S_BACKOFF = 6  # its pods failed kubelet admission: out of the queue until the Job controller's back-off ends
S_FAILED = 7  # more admission failures than its backoff_limit (or Kueue deactivated it)
S_ADMITTED = 8  # Kueue admitted it by quota: its pods wait for kube-scheduler (some may be placed)

# Rejection reasons, checked in this order at arrival.
R_NONE = 0
R_NO_MODEL = 1
R_POD_TOO_LARGE = 2
R_GANG_TOO_LARGE = 3
R_SHARED_TOO_LARGE = 4  # failRequestsGreaterThanOne: a pod asks more than one replica (kubelet admission)
R_TOPOLOGY_TOO_LARGE = 5  # a required topology level none of whose domains holds the job, even empty
R_NUMA_TOO_LARGE = 6  # NUMA-aware scheduling: no NUMA node of an empty node holds one pod alone
R_SLICE_SIZE = 7  # Kueue deactivates a workload whose slice size does not divide its pods

# Attempt end reasons (attempts.parquet).
END_FINISHED = 0
END_PREEMPTED = 1
END_OPEN = 2  # still holding when the run ended (resolved to unfinished/deadlocked at the boundary)
END_PODS_READY = 3  # Kueue waitForPodsReady: its pods were not all placed within the timeout

# --- classes.int: static per-class integers -------------------------------------------------------
C_MILLI = 0
C_GMEM = 1
C_CPU = 2
C_MEM = 3
C_PODS = 4  # pods placed together (pod-by-pod: 1)
C_K = 5
C_START = 6  # class-sorted static positions [C_START, C_END)
C_END = 7
C_EXACT = 8  # 1: plain whole-GPU pods, no CPU/memory/GPU-memory limit (histogram bound exact)
C_TENANT = 9
C_PRIO = 10
C_CAN_PREEMPT = 11
C_KIND = 12
C_TAS_MODE = 13  # TM_* topology request of the class's jobs (topology-aware scheduling)
C_TAS_LEVEL = 14  # LEVEL_* the request names
C_TAS_SLICE_LEVEL = 15  # LEVEL_* of Kueue's PodSet slices (LEVEL_NODE with size 1: no slices)
C_TAS_SLICE_SIZE = 16  # pods per slice (1: no slices)
CLASS_INT_FIELDS = 17

# Topology requests (Kueue's PodSet topology annotations) and the levels they name, outermost first.
TM_NONE = 0  # no request: Kueue's implied unconstrained request; the node scorer elsewhere
TM_REQUIRED = 1
TM_PREFERRED = 2
TM_UNCONSTRAINED = 3
LEVEL_SPINE = 0
LEVEL_RACK = 1
LEVEL_NVLINK = 2
LEVEL_NODE = 3
TAS_LEVELS = 4

# --- classes.task_int: FGD's task classes (the workload's typical pods) ------------------------------
TK_CPU = 0  # milli-CPU per pod
TK_GPUS = 1  # GPUs per pod (0: CPU-only)
TK_MILLI = 2  # milli-GPU per GPU (0: CPU-only)
TASK_INT_FIELDS = 3

# --- pend.cls: per-class dynamic integers ------------------------------------------------------------
CD_PENDING = 0  # pending jobs in the class (static set + overflow)
CD_APOS = 1  # index in the active-class list, -1 when not active
CD_FAIL = 2  # release version at which the class was seen not to fit (-1: never)
CD_CUR = 3  # cycle cursor in the static set (class-sorted position, -1: exhausted)
CD_RESV = 4  # EASY: stamp at which a job of the class was refused for delaying the reservation
CD_OVER = 5  # jobs in the overflow list
CD_OCUR = 6  # cycle cursor in the overflow list (index, -1: exhausted)
CD_PFAIL = 7  # preemption version at which no job of the class could preempt (-1: never)
CLASS_DYN_FIELDS = 8

# --- rejection classes -----------------------------------------------------------------------------
RC_MILLI = 0
RC_GMEM = 1
RC_CPU = 2
RC_MEM = 3
RC_PODS = 4
RC_K = 5
RCLASS_INT_FIELDS = 6

# --- cl.node_int: static per-node integers ------------------------------------------------------------
N_GPUS = 0
N_GPU_MEM = 1  # memory of one GPU
N_CPU = 2  # capacity (BIG when unknown)
N_MEM = 3
N_MODEL = 4  # model code, -1 when the node has no GPU model
N_GPU0 = 5  # first global GPU index
N_SLOTS = 6  # pods one GPU may hold at once (HAMi deviceSplitCount; BIG: no limit)
N_SHARE_MEM = 7  # SHARE_MEM_*: GPU memory a shared pod that names none takes on this node
N_REPLICAS = 8  # devices each physical GPU is advertised as (time-slicing / MPS replicas; 1: none)
N_REPLICA_ALLOC = 9  # REPLICA_* rule of the node's device plugin
N_MIG_COMPUTE = 10  # compute slices of each MIG instance (device) of the node; 0: whole GPUs
N_MIG_SLICES = 11  # compute slices of the node's GPU model (7 on A100 / H100); 0: whole GPUs
N_MIG_MASK = (
    12  # 1: MIG instances on the slice mask (dynamic or mixed strategy, gpureplay.engine.devices.mig)
)
N_NVLINK = 13  # the node's NVLink domain, numbered 0.. in order of first appearance (what spreading costs)
N_RACK = 14  # its rack, numbered the same way
N_SPINE = 15  # its spine
NODE_INT_FIELDS = 16

# GPU memory of a shared pod whose trace gives none (``gpu_mem_mib`` null).
SHARE_MEM_NONE = 0  # none: only its milli is booked
SHARE_MEM_PROPORTIONAL = 1  # gpu_milli / 1000 of the GPU's memory, floored (HAMi gpumem-percentage)
SHARE_MEM_FULL = 2  # the whole GPU's memory (HAMi's default when a pod sets neither gpumem nor a percentage)

# --- cl.node_free: per-node free capacity (kept incrementally) ----------------------------------------
F_CPU = 0
F_MEM = 1
F_WHOLE = 2  # GPUs with free_milli == 1000
F_MILLI = 3  # sum of free_milli over the node's GPUs
# No wholly free GPU of the node has a global index below this one: where a search for whole GPUs starts, so
# that a node of thousands of GPUs is not scanned from its first GPU for every pod (issue 46).
F_WHOLE_LO = 4
NODE_FREE_FIELDS = 5

# --- cl.gpu_free ------------------------------------------------------------------------------------
G_MILLI = 0
G_MEM = 1
G_SLOTS = 2  # pods the GPU may still take (N_SLOTS minus the pods on it)
G_MIG = 3  # dynamic MIG: the GPU's memory slices held by instances (bit i: slice i); 0 elsewhere
# mig_reconfigure: idle (gpureplay.engine.devices.repartition): the GPU's own layout as a word of 8 bytes,
# byte s the instance starting at slice s (memory slices | compute slices << 4; 0: none starts there); 0 while
# the GPU is down for re-partitioning; -1 elsewhere (a shape's own allowed starts apply)
G_LAYOUT = 4
G_NEXT = 5  # the layout a GPU in downtime gets when it ends (-1: not in downtime)
GPU_FREE_FIELDS = 6

# --- classes.mig[c, model]: the MIG instance a pod of class c is given on a GPU of that model ----------
# A value >= 0 is an instance shape (gpureplay.engine.devices.mig): bits 0-7 the allowed start slots, 8-11 the
# memory slices, 12-15 the compute slices, bit 16 set when the highest free start is taken first, bit 17 set
# when the placement growing the GPU's FGD slice fragmentation least is taken (mig_placement: fgd).
MIG_NONE = -1  # no dynamic MIG here: the pod kind's own rules
MIG_WHOLE = -2  # dynamic-MIG replay on a whole-GPU node: a fractional pod takes one whole GPU
MIG_SIZE_SHIFT = 8
MIG_COMPUTE_SHIFT = 12
MIG_HIGH_FIRST = 1 << 16
MIG_FGD = 1 << 17
MIG_MEMORY_SLICES = 8  # memory slices of a MIG GPU (A100 / H100 / H200)
MIG_SLICE_MILLI = (
    125  # milli-GPU booked per memory slice held (1000 / 8: exact, so a GPU's milli stays exact)
)

# --- cl.totals: cluster-wide aggregates ------------------------------------------------------------
TOT_FREE_WHOLE = 0  # wholly free GPUs
TOT_ALLOC = 1  # allocated milli-GPU
TOTAL_FIELDS = 2

# --- cl.nominees: pods nominated to a node while their preemptor's victims terminate ----------------
# Column 0 holds the count (row NOM_JOB), entries are columns 1..count; the array is shared by the
# current state and the EASY projection, so both always see the live nominations.
NOM_JOB = 0  # the preemptor (job index)
NOM_NODE = 1
NOM_PRIO = 2  # its priority: pods of strictly lower priority see the entry
NOM_CPU = 3
NOM_MEM = 4
NOM_MILLI = 5  # milli-GPU of the pod
NOM_WHOLE = 6  # whole GPUs of the pod (0 for a shared or GPU-less pod)
NOM_CLASS = 7  # the preemptor's class: its own class never sees the entry
NOM_FIELDS = 8
#: ``NOM_PRIO`` of a KAI preemptor's pipelined pods: every other class sees them
#: (gpureplay.engine.queues.kai.evict).
NOM_ALL = 1 << 40

# --- node types (rejection checks on the empty cluster) --------------------------------------------
NT_MODEL = 0
NT_GPUS = 1
NT_GPU_MEM = 2
NT_CPU = 3
NT_MEM = 4
NT_COUNT = 5
NODE_TYPE_FIELDS = 6

# --- run.counters ----------------------------------------------------------------------------------------
K_VERSION = 0  # bumped whenever resources are released; class failures hold within a version
K_PVERSION = 1  # bumped when the set of possible victims can grow (starts, releases)
K_NACTIVE = 2  # classes with pending jobs
K_NRUN = 3  # running jobs
K_NPEND = 4  # pending jobs
K_CYCLES = 5
K_TRIED = 6  # placement attempts (gang: jobs, pod-by-pod: pods)
K_EVENTS = 7  # distinct event times processed
K_STAMP = 8  # EASY: changes to the current or projected state within a cycle
K_STARTS = 9  # attempts started so far
K_RESV_HEAD = 10  # EASY: job holding the reservation kept from the last cycle (-1: none)
K_RESV_STARTS = 11  # EASY: the reservation stamp (gang.reservation_stamp) when that reservation was computed
K_RESV_HOLD = 12  # EASY: the head's pod capacity on the kept projection
K_NTERM = 13  # terminating jobs
K_PREEMPTIONS = 14  # evictions so far
K_ATTEMPTS = 15  # attempt rows written
K_NRUNHEAP = 16  # entries in the completion heap (valid and stale)
K_NTIMERS = 17  # entries in the timer heap (valid and stale)
K_TIMER_SEQ = 18  # timers pushed so far (the timer heap's tie-break)
K_REQUEUE_SEQ = 19  # requeues so far
K_NTOUCHED = 20  # nodes in the touched list (debug checks)
K_PREEMPT_TRIES = 21  # preemption searches run
K_SHARE_CHANGES = 22  # starts / stops on GPUs shared by replicas (the stamp of D_RATE_MARK)
K_MIG_RECONFIG = 23  # MIG re-partitionings started (mig_reconfigure: idle)
N_COUNTERS = 24

# --- run.clock: float64 scalars of the event loop, kept between chunks ----------------------------------
X_INTEGRAL = 0  # allocated milli-GPU x seconds up to X_SEG_T (up to X_NOW once the run is over)
X_NOW = 1  # last event time processed (the result's end time)
X_ERROR_T = 2  # time at which an invariant check failed
X_NEXT_SAMPLE = 3  # time of the next sample
X_TICK_T = 4  # periodic: time of the next tick
X_NEXT_T = 5  # paused: the next event time, beyond the chunk's stop time
X_WINDOW_INTEGRAL = 6  # allocated milli-GPU x seconds inside the measurement window
X_SAMPLE_INTERVAL = 7  # current sample interval (widened when the timeline would exceed its bound)
X_LOST = 8  # lost GPU-seconds so far
X_MIG_READY = 9  # the earliest end of a MIG re-partitioning downtime (inf: none under way)
X_WAKE = 10  # reclaim_idle / KAI minruntime: the next time a running job stops being exempt or protected
X_SEG_T = 11  # start of the allocation segment not yet in X_INTEGRAL: the last time the allocation changed
X_SEG_LEVEL = 12  # allocated milli-GPU over that segment
CLOCK_FIELDS = 13

# --- run.cursor: int64 scalars of the event loop, kept between chunks -----------------------------------
L_ARRIVAL = 0  # jobs admitted so far = position of the next one in arrival order
L_SAMPLE_K = 1  # index of the next sample on the current grid
L_TICK_K = 2  # periodic: index of the next tick
L_CYCLE_OWED = 3  # periodic: 1 when a change has not been seen by a cycle yet
L_IDLE = 4  # periodic: 1 when the last cycle changed nothing and nothing changed since
L_PROCESSED = 5  # 1 once an event time has been processed
L_SAMPLES = 6  # timeline rows written
L_STATUS = 7  # ADV_* outcome of the last advance
L_WIDENINGS = 8  # times the sample interval was doubled
L_MIDPASS = 9  # 1: paused for room in the middle of an event time (resume with its next pass)
L_FIRST_PASS = 10  # with L_MIDPASS: whether that next pass is the event time's first
CURSOR_FIELDS = 11

# Outcome of one advance (a chunk of simulated time).
ADV_PAUSED = 0  # every event time <= the stop time is processed; more remain
ADV_DONE = 1  # the run has ended
ADV_FAILED = 2  # a debug invariant check failed (error record set); the run stops
ADV_GROW = 3  # a result buffer needs room before the next event time; grow it and call again
ADV_LIVELOCK = 4  # the evictions passed P_MAX_EVICTIONS: preemptions evict without end; the run stops

# --- params.codes: policy codes (values of the Policy enums) -----------------------------------------
P_ORDER = 0
P_GANG = 1
P_NODE = 2  # node scorer (gpureplay.engine.fit.scoring)
P_GPU = 3  # GPU scorer for shared pods
P_BACKFILL = 4
P_DEPTH = 5
P_PREEMPT = 6  # PREEMPT_* mode
P_REQUEUE = 7  # REQUEUE_* rule
P_MIN_CANDIDATES = 8  # DefaultPreemption minCandidateNodesAbsolute
P_CANDIDATE_PCT = 9  # DefaultPreemption minCandidateNodesPercentage
P_SELECTOR = 10  # tenant selector (gpureplay.engine.pending)
P_DEBUG = 11
P_MAX_SAMPLES = 12
P_SEED = 13  # low 63 bits of the seed (the counter-based generator's key)
P_TIES = 14  # TIES_* rule between equally scored nodes
P_SPLIT = 15  # pods per GPU (device split count); 0: no limit
P_SHARE_MEM = 16  # SHARE_MEM_* rule
P_SHARING = 17  # SHARING_* mode of the device plugin
P_REPLICA_ALLOC = 18  # REPLICA_* rule: which replica devices a pod gets
P_REPLICAS = 19  # devices each GPU is advertised as (1: no sharing by replicas)
P_DEMAND = 20  # DEMAND_* rule: what a pod of a shared GPU would use alone
P_MIG_DEMAND = 21  # MIG_DEMAND_* rule: which instances a job that names no profile may take
P_MIG_PLACEMENT = 22  # MIG_HAMI / MIG_LOWEST_START / MIG_FGD_PLACEMENT: where a dynamic instance goes
P_FAIL_MULTI = 23  # 1: a pod asking more than one replica fails admission (failRequestsGreaterThanOne)
P_MAX_EVICTIONS = 24  # evictions beyond which the replay returns ADV_LIVELOCK (set by the compile step)
P_MIG_RECONFIG = 25  # 1: idle MIG GPUs are re-partitioned (mig_reconfigure: idle)
P_TAS = 26  # TAS_* topology-aware gang placement
P_TAS_PROFILE = 27  # PROFILE_* Kueue TAS profile
P_TOPO_MGR = 28  # TOPO_MGR_* kubelet Topology Manager policy
P_CPU_MGR = 29  # 1: CPU manager static policy (exclusive CPUs give NUMA hints)
P_NUMA_AWARE = 30  # 1: the scheduler filters nodes by NUMA fit (NodeResourceTopologyMatch)
P_BACKOFF_LIMIT = 31  # a job fails after more admission failures than this
P_QUEUES = 32  # 1: a queue model admits jobs: classes are kept per tenant; 2: KAI, also per preemptibility
P_QUOTA_ONLY = 33  # 1: Kueue admits by quota alone; kube-scheduler then places the pods one by one
P_READY_LIMIT = 34  # waitForPodsReady requeuingStrategy.backoffLimitCount (-1: unset, requeued forever)
P_BLOCK_ADMISSION = 35  # 1: waitForPodsReady.blockAdmission
POLICY_FIELDS = 36

TOPO_MGR_NONE = 0
TOPO_MGR_BEST_EFFORT = 1
TOPO_MGR_RESTRICTED = 2
TOPO_MGR_SINGLE_NUMA = 3
UNBOUNDED_CPUS = 1 << 40  # a NUMA node's CPUs when the node's CPU capacity is unknown (sums stay exact)
MAX_NUMA = 8  # the kubelet's max-allowable-numa-nodes: masks of NUMA nodes fit one small integer
BACKOFF_BASE_S = 10.0  # the Job controller's pod-failure back-off: 10 s, doubled per failure ...
BACKOFF_MAX_S = 600.0  # ... capped at 10 minutes (pkg/controller/job: MaxJobPodFailureBackOff)

TAS_NONE = 0
TAS_KUEUE = 1
TAS_KAI = 2
TAS_VOLCANO = 3
PROFILE_MIXED = (
    0  # Kueue's default since v0.15 (TASProfileMixed): BestFit, LeastFreeCapacity when unconstrained
)
PROFILE_BEST_FIT = 1
PROFILE_LEAST_FREE = 2  # TASProfileLeastFreeCapacity
PROFILE_MOST_FREE = 3  # TASProfileMostFreeCapacity

SHARING_NONE = 0
SHARING_TIME_SLICING = 1
SHARING_MPS = 2
SHARING_MIG = 3  # MIG instances as devices (device plugin single strategy): isolated, a share of the SMs
SHARING_MIG_DYNAMIC = 4  # MIG instances created per pod on the slice mask (HAMi dynamic MIG): same rates
SHARING_MIG_MIXED = 5  # device plugin mixed strategy: a layout's instances on the slice mask
MIG_DEMAND_ANY = 0
MIG_DEMAND_SMALLEST_FIT = 1
MIG_DEMAND_FITS = 2
MIG_HAMI = 0  # HAMi: 1g.* and 3g.* profiles at the highest free start, the others at the lowest
MIG_LOWEST_START = 1
MIG_FGD_PLACEMENT = 2  # FGD over slices: the free placement that grows the GPU's fragmentation least
REPLICA_DISTRIBUTED = 0  # the GPU with the fewest replicas in use first
REPLICA_PACKED = 1  # the most in use first
DEMAND_WHOLE = 0  # a whole GPU per replica
DEMAND_TRACE = 1  # gpu_milli / 1000 of the trace for a fractional pod, 1 for whole ones

TIES_LOWEST = 0  # the lowest node index
TIES_RANDOM = 1  # uniform among the tied nodes, drawn per pod (kube-scheduler selectHost)
TIES_SEEDED_ORDER = 2  # the first in one seeded random order of the nodes (the FGD artifact)

# --- params.flt -------------------------------------------------------------------------------------
PF_SESSION = 0  # seconds between periodic cycles (0: event-driven)
PF_SAMPLE = 1  # initial sample interval
PF_HORIZON = 2  # inf: none
PF_GRACE = 3  # termination grace period of an evicted job, seconds
PF_WINDOW0 = 4  # measurement window
PF_WINDOW1 = 5
PF_SWITCH = 6  # time-slicing: share of a GPU's time lost to context switches among 2+ active pods
PF_MPS_CAP = 7  # MPS: each client's SM share, floor(100 / replicas) / 100
PF_MIG_CREATE = 8  # dynamic MIG: seconds to create a pod's instance before its job can run
PF_MIG_RECONFIG = 9  # mig_reconfigure: idle: seconds a re-partitioned GPU serves no pod
PF_SPREAD_NVLINK = 10  # rate of a job spanning more than one NVLink domain (1: no cost)
PF_SPREAD_RACK = 11  # rate factor for more than one rack
PF_SPREAD_SPINE = 12  # rate factor for more than one spine
PF_READY_TIMEOUT = 13  # Kueue waitForPodsReady.timeout, seconds (inf: waitForPodsReady off)
PF_READY_BASE = 14  # requeuingStrategy.backoffBaseSeconds
PF_READY_MAX = 15  # requeuingStrategy.backoffMaxSeconds
PARAM_FLOAT_FIELDS = 16

GANG = 0
POD_BY_POD = 1

BF_NONE = 0
BF_EASY = 1
BF_SKIP = 2

PREEMPT_NONE = 0
PREEMPT_PRIORITY = 1  # kube-scheduler DefaultPreemption (gang: the whole gang must fit before evicting)
PREEMPT_IDLE = 2  # scheduler-plugins ReclaimIdleResource: DefaultPreemption's search, its own victims

REQUEUE_BACK = 0  # an evicted job re-enters its queue with a new timestamp (Kueue "Eviction", a new pod)
REQUEUE_ORIGINAL = 1  # it keeps its original place (Kueue "Creation"; Tiresias/Lucid simulators)

SELECT_GLOBAL = 0  # one queue order across tenants (kube-scheduler PrioritySort, FIFO, SJF)

# --- timers (kind codes; ordered: at one time, lower kinds fire first) ----------------------------------
TM_TERMINATED = 0  # an evicted job's termination grace period ends: it releases and is requeued
TM_BACKOFF = 1  # a job's pod-failure back-off ends: it re-enters its queue
TM_READY_BACKOFF = 2  # a job's waitForPodsReady requeue back-off ends: it re-enters its queue
TM_PODS_READY = 3  # waitForPodsReady.timeout after a Kueue admission by quota: evict unless all pods placed

# --- timeline rows (run.tl_flt: time and lost GPU-seconds; run.tl_rows: the counts) --------------------
TLF_TIME = 0
TLF_LOST = 1  # lost GPU-seconds so far
TIMELINE_FLOAT_FIELDS = 2
TL_GPUS = 0
TL_MILLI = 1
TL_PENDING = 2
TL_RUNNING = 3
TL_FRAGMENTED = 4
TL_PREEMPTIONS = 5  # evictions so far
TL_TERMINATING = 6
TL_MIG_STRANDED = 7  # dynamic MIG: free slices no instance the workload asks for could take
TIMELINE_FIELDS = 8
# Per queue q, rows TIMELINE_FIELDS + W * q + QU_* of run.tl_rows hold run.queues[QU_*, q] (W: its rows).

# --- run.queues: per-queue (tenant) counts, in the queue models' units -------------------------------
QU_MILLI = 0  # milli-GPU its placed pods request (a time-sliced replica counts whole: a device)
QU_PENDING = 1  # jobs in the pending set
QU_RUNNING = 2  # jobs running
QU_CPU = 3  # milli-CPU its placed pods request
QU_MEM = 4  # MiB of memory its placed pods request
QU_NP_MILLI = 5  # milli-GPU its placed non-preemptible pods request (KAI's AllocatedNotPreemptible)
QU_NP_CPU = 6  # milli-CPU of the same
QU_NP_MEM = 7  # MiB of memory of the same
QU_COUNTED = 8  # the fields above are counts the debug checks recompute; those below, a queue model's values
QU_DESERVED = 8  # volcano: the proportion plugin's deserved milli-GPU; kai: its fair share (rounded)
QU_SHARE = 9  # volcano: allocated / deserved; kai: the dominant resource share; dominant resource, x 10^6
#: The largest share QU_SHARE holds (x 10^6 of it): Volcano's share of a queue whose deserved share is a float
#: residue of its water-filling (1e-16 milli-GPU) is astronomically large, and would not fit an int64.
MAX_SHARE = 1e9
QUEUE_FIELDS = 10
# Kueue with several flavors: rows QUEUE_FIELDS + 3 f + r of run.queues hold each ClusterQueue's usage of
# resource r (GPU milli, CPU milli, MiB) in flavor slot f (gpureplay.engine.queues.kueue.tree).
MB_PER_MIB = 1.048576  # KAI counts memory in MB (10^6 bytes), the engine in MiB
QUOTA_UNSET = -1  # a Kueue borrowingLimit / lendingLimit left unset (gpureplay.engine.queues.kueue.cycle)

# Rows of the per-ClusterQueue spec.preemption table (KueueState.pre; gpureplay.queues.kueue_quota PR_*): each
# policy as the index of its value in Kueue's list (Never first), then borrowWithinCohort's threshold.
KP_WITHIN = 0  # withinClusterQueue: Never, LowerPriority, LowerOrNewerEqualPriority
KP_RECLAIM = 1  # reclaimWithinCohort: Never, LowerPriority, Any
KP_BORROW = 2  # borrowWithinCohort.policy: Never, LowerPriority
KP_THRESHOLD = 3  # maxPriorityThreshold (int64 max: unset)
KP_ROWS = 4

# --- attempts rows -----------------------------------------------------------------------------------
A_JOB = 0  # job index
A_NUMBER = 1  # attempt number, 0-based
A_REASON = 2  # END_*
A_PODS = 3  # pods placed when it ended
A_NODES = 4  # distinct nodes
A_EVICTOR = 5  # the job whose preemption evicted it (-1: not evicted)
ATTEMPT_INT_FIELDS = 6
AF_HOLD0 = 0  # first pod placed
AF_START = 1  # all pods placed (nan: never ran)
AF_EVICTED = 2  # eviction decision (nan: not evicted)
AF_END = 3  # resources released (or due to be, for an eviction)
AF_PROGRESS = 4  # seconds of work done in this attempt
AF_LOST = 5  # seconds of work rolled back to the last checkpoint
AF_OVERHEAD = 6  # seconds of restart overhead spent
AF_GPU_S = 7  # GPU-seconds held (milli-GPU x seconds / 1000), pod by pod
ATTEMPT_FLOAT_FIELDS = 8

# --- debug invariant violations (code -> message in gpureplay.replay.simulate) ---------------------
E_OK = 0
E_GPU_MILLI_RANGE = 1
E_GPU_MEM_RANGE = 2
E_NODE_CPU = 3
E_NODE_MEM = 4
E_GPU_MILLI_SUM = 5
E_GPU_MEM_SUM = 6
E_NODE_CPU_SUM = 7
E_NODE_MEM_SUM = 8
E_NODE_WHOLE = 9
E_NODE_MILLI = 10
E_TOTALS = 11
E_HISTOGRAM = 12
E_STATUS = 13
E_COUNTS = 14
E_QUEUE = 15
E_FINISH = 16
E_INDEX = 17
E_NODE_PODS = 18
E_GPU_SLOTS = 19
E_GPU_MIG = 20
E_QUEUE_COUNTS = 21
E_NODE_WHOLE_LO = 22
