"""Struct-of-arrays layout of the engine state and the integer codes kernels use.

Each table is a 2-D ``int64`` (or ``float64``) array with one *row per field*
and one column per entity (job, class, node, GPU), so a field is a contiguous
row: ``node_free[F_WHOLE, n]`` is node ``n``'s count of wholly free GPUs. The
constants below name the rows; numba freezes module-level integers into the
compiled code, so using them costs nothing.

Entities
--------
job
    One row of the canonical jobs table, in input order (``j``).
class
    Jobs whose demand is identical, so they fit or fail together on any state.
    Gang mode: (gpu_milli, gpu_mem, cpu, mem, model mask, num_pods). Pod-by-pod
    mode: the pod shape without num_pods. Pending jobs of a class are kept in
    queue order (see :mod:`gpureplay.engine.queueing`).
node, GPU
    Nodes in the row order of the canonical nodes table; GPUs of node ``n`` are
    ``node_int[N_GPU0, n] + 0 .. num_gpus - 1`` (a global GPU index).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Array types of the kernels' signatures (every table is one of these three).
Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
Float64Array = npt.NDArray[np.float64]

#: Milli-GPU of one whole card.
WHOLE = 1000
#: Capacity used for CPU or memory a node list does not give: never constrains
#: (the canonical ``UNKNOWN_CAPACITY`` is mapped to this at the boundary).
BIG = 1 << 62
#: Allowed-model mask meaning "any model".
ALL_MODELS = (1 << 64) - 1
#: Most distinct GPU models a cluster may have (one bit each in a uint64 mask).
MAX_MODELS = 64

# --- job_int: static per-job integers (rows) ------------------------------------------------------
J_ID = 0  # job_id
J_PODS = 1  # num_pods
J_MILLI = 2  # gpu_milli per pod
J_GMEM = 3  # gpu_mem_mib per GPU (null -> 0)
J_CPU = 4  # cpu_milli per pod
J_MEM = 5  # mem_mib per pod
J_PRIO = 6  # priority
J_K = 7  # GPU slots per pod: m/1000 for whole pods, 1 for fractional, 0 for GPU-less pods
J_CLASS = 8  # queue class
J_RCLASS = 9  # rejection class (shape incl. num_pods), both modes
J_POS = 10  # position in the class-sorted job list
J_RANK = 11  # position in queue order (pod-by-pod: (-priority, submit_time, job_id))
J_GROUP_END = 12  # pod-by-pod: first rank after this job's (priority, submit_time) group
J_POD0 = 13  # first pod slot in the per-pod arrays
J_SLOT0 = 14  # first GPU slot in the per-GPU-slot array
JOB_INT_FIELDS = 15

# --- job_float: static per-job floats ------------------------------------------------------------
JF_SUBMIT = 0
JF_DURATION = 1
JOB_FLOAT_FIELDS = 2

# --- job_dyn: per-job state ---------------------------------------------------------------------
D_STATUS = 0  # one of the S_* codes
D_PLACED = 1  # pods placed (gang: 0 or num_pods)
D_SPANNED = 2  # distinct nodes when it started
JOB_DYN_FIELDS = 3

# --- job_time -----------------------------------------------------------------------------------
T_START = 0
T_FINISH = 1
JOB_TIME_FIELDS = 2

# Job status codes (every job is in exactly one).
S_FUTURE = 0  # not yet submitted
S_QUEUED = 1  # pending (pod-by-pod: possibly partly placed)
S_RUNNING = 2
S_FINISHED = 3
S_REJECTED = 4

# Rejection reasons, checked in this order at arrival.
R_NONE = 0
R_NO_MODEL = 1
R_POD_TOO_LARGE = 2
R_GANG_TOO_LARGE = 3

# --- class_int: static per-class integers --------------------------------------------------------
C_MILLI = 0
C_GMEM = 1
C_CPU = 2
C_MEM = 3
C_PODS = 4  # pods that must be placed together (pod-by-pod: 1)
C_K = 5
C_START = 6  # class-sorted positions [C_START, C_END)
C_END = 7
C_EXACT = 8  # 1: the per-model histogram bound is the exact pod count (whole GPUs, no CPU/mem/GPU-mem limit)
CLASS_INT_FIELDS = 9

# --- class_dyn ----------------------------------------------------------------------------------
CD_PENDING = 0  # pending jobs in the class
CD_APOS = 1  # index in the active-class list, -1 when not active
CD_FAIL = 2  # release version at which the class was seen not to fit (-1: never)
CD_CUR = 3  # cursor (class-sorted position) during a cycle
CD_RESV = 4  # EASY: stamp at which a job of the class was refused for delaying the reservation
CLASS_DYN_FIELDS = 5

# --- rclass_int: rejection classes ---------------------------------------------------------------
RC_MILLI = 0
RC_GMEM = 1
RC_CPU = 2
RC_MEM = 3
RC_PODS = 4
RC_K = 5
RCLASS_INT_FIELDS = 6

# --- node_int: static per-node integers -----------------------------------------------------------
N_GPUS = 0
N_GPU_MEM = 1  # memory of one GPU
N_CPU = 2  # capacity (BIG when unknown)
N_MEM = 3
N_MODEL = 4  # model code, -1 when the node has no GPU model
N_GPU0 = 5  # first global GPU index
NODE_INT_FIELDS = 6

# --- node_free: per-node free capacity (kept incrementally) ----------------------------------------
F_CPU = 0
F_MEM = 1
F_WHOLE = 2  # GPUs with free_milli == 1000
F_MILLI = 3  # sum of free_milli over the node's GPUs
NODE_FREE_FIELDS = 4

# --- gpu_free -----------------------------------------------------------------------------------
G_MILLI = 0
G_MEM = 1
GPU_FREE_FIELDS = 2

# --- node types (rejection checks on the empty cluster) --------------------------------------------
NT_MODEL = 0
NT_GPUS = 1
NT_GPU_MEM = 2
NT_CPU = 3
NT_MEM = 4
NT_COUNT = 5
NODE_TYPE_FIELDS = 6

# --- counters: scalars shared by all kernels --------------------------------------------------------
K_VERSION = 0  # bumped whenever resources are released; class failures are valid within a version
K_NACTIVE = 1  # classes with pending jobs
K_NRUN = 2  # running jobs (= size of the completion heap)
K_NPEND = 3  # pending jobs
K_FREE_WHOLE = 4  # wholly free GPUs in the cluster
K_ALLOC = 5  # allocated milli-GPU in the cluster
K_CYCLES = 6
K_TRIED = 7  # placement attempts (gang: jobs, pod-by-pod: pods)
K_EVENTS = 8  # distinct event times processed
K_STAMP = 9  # EASY: changes to the current or projected state within a cycle
K_STARTS = 10  # jobs started so far
K_RESV_HEAD = 11  # EASY: job holding the reservation kept from the last cycle (-1: none)
K_RESV_STARTS = 12  # EASY: K_STARTS when that reservation was last valid
K_RESV_HOLD = 13  # EASY: the head's pod capacity on the kept projection
N_COUNTERS = 14

# --- clock: float64 scalars of the event loop, kept between chunks (gpureplay.engine.loop.advance) --
X_INTEGRAL = 0  # allocated milli-GPU x seconds up to X_NOW (the result's gpu_milli_seconds)
X_NOW = 1  # last event time processed (the result's end time)
X_ERROR_T = 2  # time at which an invariant check failed
X_NEXT_SAMPLE = 3  # sample_k * (sample_interval * 2**widen)
X_TICK_T = 4  # periodic: tick_k * session_interval
X_NEXT_T = 5  # paused: the next event time, beyond the chunk's stop time
X_WINDOW_INTEGRAL = 6  # allocated milli-GPU x seconds inside the measurement window, up to X_NOW
CLOCK_FIELDS = 7

# --- cursor: int64 scalars of the event loop, kept between chunks ---------------------------------------
L_ARRIVAL = 0  # jobs admitted so far = position of the next one in arrival order
L_SAMPLE_K = 1  # index of the next sample
L_TICK_K = 2  # periodic: index of the next tick
L_CYCLE_OWED = 3  # periodic: 1 when a completion or arrival has not been seen by a cycle yet
L_IDLE = 4  # periodic: 1 when the last cycle placed nothing and nothing changed since
L_IDLE_DRAWS = 5  # periodic: random draws of that idle cycle (what each skipped tick consumes)
L_PROCESSED = 6  # 1 once an event time has been processed
L_SAMPLES = 7  # timeline rows written
L_STATUS = 8  # ADV_* outcome of the last advance
L_WIDEN = 9  # times the sample interval was doubled to keep the timeline within max_samples
CURSOR_FIELDS = 10

# Outcome of one advance (a chunk of simulated time).
ADV_PAUSED = 0  # every event time <= the stop time is processed; more remain
ADV_DONE = 1  # the run has ended
ADV_FAILED = 2  # a debug invariant check failed (error record set); the run stops

# --- policy codes (values of the Policy enums) -----------------------------------------------------
P_ORDER = 0
P_GANG = 1
P_NODE = 2
P_GPU = 3
P_BACKFILL = 4
P_DEPTH = 5
POLICY_FIELDS = 6

FIRST_FIT = 0
BEST_FIT = 1
WORST_FIT = 2
RANDOM = 3

GANG = 0
POD_BY_POD = 1

BF_NONE = 0
BF_EASY = 1
BF_SKIP = 2

# --- timeline rows ---------------------------------------------------------------------------------
TL_GPUS = 0
TL_MILLI = 1
TL_PENDING = 2
TL_RUNNING = 3
TL_FRAGMENTED = 4
TIMELINE_FIELDS = 5

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
