/*===- loom/runtime.h - Loom runtime C API --------------------------------===*
 *
 * The runtime that runs Loom's per-rank executables. A C API first (see
 * ../../../docs/architecture.md): opaque handles, out_ parameters, status
 * objects instead of exceptions or raw MPI/CUDA codes, versioned options
 * structs with an initializer.
 *
 * Contents: status objects; launcher detection (which rank am I, how many
 * are there); the runtime (one per process, over MPI on CPUs or NCCL on
 * GPUs); device meshes (ranks arranged row-major over named axes, with a
 * communicator for every ordered subset of axes, like Horovod's process
 * sets); and collectives over mesh axes.
 *
 * Every collective has a deadline. When it passes, the runtime asks every
 * rank whether it is alive and fails with LOOM_STATUS_DEADLINE_EXCEEDED and
 * a message naming the collective and the ranks that did not answer, instead
 * of hanging. Before each collective, ranks compare what they are about to
 * do (operation, element type, count); a mismatch fails on every rank with
 * LOOM_STATUS_INVALID_ARGUMENT instead of corrupting memory or hanging.
 *
 *===----------------------------------------------------------------------===*/

#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Status
 *===----------------------------------------------------------------------===*/

typedef enum loom_status_code_t {
  LOOM_STATUS_OK = 0,
  LOOM_STATUS_INVALID_ARGUMENT = 1,
  LOOM_STATUS_NOT_FOUND = 2,
  LOOM_STATUS_UNAVAILABLE = 3,
  LOOM_STATUS_DEADLINE_EXCEEDED = 4,
  LOOM_STATUS_PEER_FAILED = 5,
  LOOM_STATUS_INTERNAL = 6,
} loom_status_code_t;

/* A status: NULL means success; otherwise a heap object with a code and a
 * message that the caller must release with loom_status_free. */
typedef struct loom_status_s *loom_status_t;

#define loom_status_is_ok(status) ((status) == NULL)

/* Creates a status with a printf-style message. Never returns NULL for a
 * code other than LOOM_STATUS_OK (allocation failure yields a static
 * status that loom_status_free ignores). */
loom_status_t loom_status_make(loom_status_code_t code, const char *format,
                               ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
loom_status_code_t loom_status_code(loom_status_t status);
/* "" for OK. Valid until the status is freed. */
const char *loom_status_message(loom_status_t status);
/* "OK", "INVALID_ARGUMENT", ... */
const char *loom_status_code_string(loom_status_code_t code);
void loom_status_free(loom_status_t status);

/*===----------------------------------------------------------------------===*
 * Launcher detection
 *===----------------------------------------------------------------------===*/

typedef enum loom_launcher_t {
  LOOM_LAUNCHER_NONE = 0,     /* a single process, no launcher */
  LOOM_LAUNCHER_OPENMPI = 1,  /* mpirun: OMPI_COMM_WORLD_* */
  LOOM_LAUNCHER_PMI = 2,      /* MPICH/Hydra: PMI_RANK, PMI_SIZE */
  LOOM_LAUNCHER_SLURM = 3,    /* srun: SLURM_PROCID, SLURM_NTASKS, ... */
  LOOM_LAUNCHER_TORCHRUN = 4, /* torchrun-style: RANK, WORLD_SIZE, ... */
} loom_launcher_t;

typedef struct loom_launch_info_t {
  loom_launcher_t launcher;
  int32_t rank;        /* in [0, world_size) */
  int32_t world_size;  /* >= 1 */
  int32_t local_rank;  /* rank among the processes on this node */
  int32_t local_size;  /* processes on this node, or 0 if unknown */
  /* Rendezvous address for launchers that give one (torchrun's
   * MASTER_ADDR/MASTER_PORT); empty / 0 otherwise. */
  char master_addr[256];
  int32_t master_port;
} loom_launch_info_t;

const char *loom_launcher_name(loom_launcher_t launcher);

/* Fills *out_info from this process's environment. Launchers are tried in
 * the order OpenMPI, Slurm, PMI, torchrun; none means a single process.
 * Fails with INVALID_ARGUMENT, naming the variable, when a variable is not
 * an integer or the values are inconsistent (RANK >= WORLD_SIZE, ...). */
loom_status_t loom_launch_info_from_env(loom_launch_info_t *out_info);

/* As above, from an explicit NULL-terminated array of "NAME=value" strings
 * (for tests and for embedding). */
loom_status_t loom_launch_info_from_environ(const char *const *environ_list,
                                            loom_launch_info_t *out_info);

/* Keeps this rank's error message where the launcher that started the job
 * reads it after the job ends: with $LOOM_ERROR_DIR set (loom-run -np N
 * sets it), appends MESSAGE and a newline to $LOOM_ERROR_DIR/rank-R. mpirun
 * may drop a rank's last output when the job is torn down; the launcher
 * repeats what it finds there. Does nothing without the variable. */
void loom_keep_rank_error(const char *message);


/*===----------------------------------------------------------------------===*
 * Element types and reductions
 *===----------------------------------------------------------------------===*/

typedef enum loom_dtype_t {
  LOOM_DTYPE_F32 = 0,
  LOOM_DTYPE_F64 = 1,
  LOOM_DTYPE_F16 = 2,
  LOOM_DTYPE_BF16 = 3,
  LOOM_DTYPE_I8 = 4,
  LOOM_DTYPE_I16 = 5,
  LOOM_DTYPE_I32 = 6,
  LOOM_DTYPE_I64 = 7,
  LOOM_DTYPE_U8 = 8,
  LOOM_DTYPE_U16 = 9,
  LOOM_DTYPE_U32 = 10,
  LOOM_DTYPE_U64 = 11,
  LOOM_DTYPE_BOOL = 12, /* one byte per element */
} loom_dtype_t;

/* Bytes per element, or 0 for an unknown type. */
size_t loom_dtype_size(loom_dtype_t dtype);
const char *loom_dtype_name(loom_dtype_t dtype);

typedef enum loom_reduction_t {
  LOOM_REDUCTION_SUM = 0,
  LOOM_REDUCTION_MAX = 1,
  LOOM_REDUCTION_MIN = 2,
  LOOM_REDUCTION_PROD = 3,
} loom_reduction_t;

/* "sum", "max", "min", "prod" ("?" for an unknown value). */
const char *loom_reduction_name(loom_reduction_t reduction);

/*===----------------------------------------------------------------------===*
 * Runtime
 *===----------------------------------------------------------------------===*/

typedef enum loom_backend_t {
  /* MPI when the launcher started more than one process, else local. */
  LOOM_BACKEND_AUTO = 0,
  /* One process, no communication library. */
  LOOM_BACKEND_LOCAL = 1,
  /* OpenMPI (CPU buffers). */
  LOOM_BACKEND_MPI = 2,
  /* NCCL (buffers in GPU memory), bootstrapped over MPI. */
  LOOM_BACKEND_NCCL = 3,
  /* Gloo over TCP (CPU), for ranks started without an MPI launcher
   * (torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, or srun
   * without MPI support); UNAVAILABLE when not built with Gloo. */
  LOOM_BACKEND_GLOO = 4,
} loom_backend_t;

const char *loom_backend_name(loom_backend_t backend);

/*===----------------------------------------------------------------------===*
 * Devices
 *
 * A rank whose buffers live in the memory of a GPU hands the runtime a
 * device: the callbacks through which it reaches that memory. Collectives
 * on a device mesh (loom_mesh_on_device) then take device buffers: NCCL
 * uses them directly; the host backends (MPI, Gloo, local) stage them
 * through host memory (device -> host -> backend -> device), which is how
 * several processes share one GPU, where NCCL refuses two ranks on one
 * device. The device's library (Loom's CUDA library) fills this in; the
 * runtime itself links no CUDA.
 *===----------------------------------------------------------------------===*/

typedef enum loom_copy_kind_t {
  LOOM_COPY_HOST_TO_DEVICE = 0,
  LOOM_COPY_DEVICE_TO_HOST = 1,
  LOOM_COPY_DEVICE_TO_DEVICE = 2,
} loom_copy_kind_t;

typedef struct loom_device_t {
  uint32_t struct_size;
  /* Passed to every callback. */
  void *context;
  /* "cuda:0 (NVIDIA H100 80GB HBM3)", for messages. */
  const char *name;
  /* The CUDA device ordinal and the rank's stream (a CUstream): NCCL runs
   * its collectives there, after the step's kernels. */
  int32_t ordinal;
  void *stream;
  /* GPUs this process can see (CUDA_VISIBLE_DEVICES applied). */
  int32_t device_count;
  /* Copies `bytes`, ordered after the stream's work; returns when done. */
  loom_status_t (*copy)(void *context, void *dst, const void *src,
                        size_t bytes, loom_copy_kind_t kind);
  /* Sets `bytes` of device memory to zero, ordered on the stream. */
  loom_status_t (*zero)(void *context, void *dst, size_t bytes);
  /* *out_done = 1 when the stream's work is finished, 0 while it runs; a
   * status when it failed. */
  loom_status_t (*query)(void *context, int32_t *out_done);
  /* dlopen of a GPU library by soname (libnccl.so.2), searched where the
   * device found its own; NULL with a message in `error`. */
  void *(*open_library)(void *context, const char *soname, char *error,
                        size_t error_size);
} loom_device_t;

/* Options; initialise with loom_runtime_options_init, then change fields.
 * New fields are only ever appended (struct_size tells which exist). */
typedef struct loom_runtime_options_t {
  uint32_t struct_size;
  loom_backend_t backend;
  /* Seconds a collective may take before the runtime diagnoses the ranks
   * (default 60). */
  double timeout_seconds;
  /* Seconds to wait for answers when diagnosing (default 3). */
  double diagnosis_seconds;
  /* Compare operation, type and count across ranks before each collective
   * (default 1; one small extra all-reduce per collective). */
  int32_t check_signatures;
  /* This rank's device (NULL: host memory only); must outlive the runtime.
   * With a device, LOOM_BACKEND_AUTO picks NCCL when every rank of a node
   * has a GPU of its own, else the launcher's host backend (staged). */
  const loom_device_t *device;
} loom_runtime_options_t;

void loom_runtime_options_init(loom_runtime_options_t *options);

typedef struct loom_runtime_s *loom_runtime_t;

/* Initialises the backend from the launcher environment (MPI_Init for MPI;
 * NCCL bootstraps over the launcher's host backend). Fails with
 * UNAVAILABLE when the backend was not built in or cannot start (NCCL
 * without a device). */
loom_status_t loom_runtime_create(const loom_runtime_options_t *options,
                                  loom_runtime_t *out_runtime);
/* Finalises the backend. NULL is ignored. */
void loom_runtime_destroy(loom_runtime_t runtime);
/* This rank fails alone in the middle of a run (bad data in its shard): the
 * runtime's teardown then does not wait for the peers, which are still in
 * a collective (MPI is not finalized; mpirun, seeing the process exit
 * without it, ends the job at once instead of at the collective deadline).
 * NULL is ignored. */
void loom_runtime_abandon(loom_runtime_t runtime);
int32_t loom_runtime_rank(loom_runtime_t runtime);
int32_t loom_runtime_size(loom_runtime_t runtime);
loom_backend_t loom_runtime_backend(loom_runtime_t runtime);

/*===----------------------------------------------------------------------===*
 * Meshes
 *===----------------------------------------------------------------------===*/

typedef struct loom_mesh_s *loom_mesh_t;

/* Arranges the runtime's ranks row-major over `num_axes` named axes whose
 * sizes multiply to the number of ranks (rank = ((i0 * n1) + i1) * n2 + i2
 * ...). Fails with INVALID_ARGUMENT naming the sizes otherwise. */
loom_status_t loom_mesh_create(loom_runtime_t runtime, int32_t num_axes,
                               const int64_t *axis_sizes,
                               const char *const *axis_names,
                               loom_mesh_t *out_mesh);
void loom_mesh_destroy(loom_mesh_t mesh);
int32_t loom_mesh_num_axes(loom_mesh_t mesh);
int64_t loom_mesh_axis_size(loom_mesh_t mesh, int32_t axis);
const char *loom_mesh_axis_name(loom_mesh_t mesh, int32_t axis);
/* This rank's coordinate along `axis`. */
int64_t loom_mesh_coordinate(loom_mesh_t mesh, int32_t axis);
/* The rank at the given coordinates (one per axis). */
int32_t loom_mesh_rank_at(loom_mesh_t mesh, const int64_t *coordinates);
/* The same mesh (same groups) for buffers in the memory of the runtime's
 * device (loom_runtime_options_t.device): collectives, point-to-point
 * transfers and loom_fill_zero on *out_mesh take device pointers. Release
 * it with loom_mesh_destroy before `mesh`. Fails with INVALID_ARGUMENT when
 * the runtime has no device. */
loom_status_t loom_mesh_on_device(loom_mesh_t mesh, loom_mesh_t *out_mesh);
/* 1 for a mesh from loom_mesh_on_device. */
int32_t loom_mesh_is_on_device(loom_mesh_t mesh);

/*===----------------------------------------------------------------------===*
 * Collectives
 *
 * A collective runs among the ranks that share this rank's coordinates on
 * every axis not in `axes` (a group of size = product of those axis sizes).
 * Within the group, ranks are ordered row-major over `axes` in the order
 * given (the first axis is the most significant). Buffers are host memory,
 * or device memory on a mesh from loom_mesh_on_device (whatever the
 * backend); send and receive buffers must not overlap unless equal (in
 * place) where noted.
 *===----------------------------------------------------------------------===*/

/* recv[i] = reduce over the group of send[i], for i < count. In place when
 * send == recv. */
loom_status_t loom_all_reduce(loom_mesh_t mesh, const int32_t *axes,
                              int32_t num_axes, loom_dtype_t dtype,
                              loom_reduction_t reduction, const void *send,
                              void *recv, int64_t count);
/* recv = the concatenation, in group order, of every rank's send
 * (send_count elements each). */
loom_status_t loom_all_gather(loom_mesh_t mesh, const int32_t *axes,
                              int32_t num_axes, loom_dtype_t dtype,
                              const void *send, void *recv, int64_t send_count);
/* The reduction over the group of send (group size * recv_count elements),
 * of which this rank keeps block number (its group index). */
loom_status_t loom_reduce_scatter(loom_mesh_t mesh, const int32_t *axes,
                                  int32_t num_axes, loom_dtype_t dtype,
                                  loom_reduction_t reduction, const void *send,
                                  void *recv, int64_t recv_count);
/* Block j of send (count_per_rank elements) goes to group rank j; block j
 * of recv comes from group rank j. */
loom_status_t loom_all_to_all(loom_mesh_t mesh, const int32_t *axes,
                              int32_t num_axes, loom_dtype_t dtype,
                              const void *send, void *recv,
                              int64_t count_per_rank);
/* Collectives started without blocking: the operations above, run on the
 * rank's communication lane (a thread of the runtime) while the caller
 * computes. Until loom_collective_wait returns (it frees the handle and
 * returns the collective's status), `send` must stay alive and unwritten
 * and `recv` alive and unread. Started collectives run in the order they
 * were started, the same on every rank; any other call that communicates
 * first waits for them. Where the lane cannot be used (device meshes, a
 * backend that cannot be called from a second thread: see
 * loom_runtime_overlaps) the collective runs at once, inside the start. */
typedef struct loom_pending_s *loom_pending_t;
loom_status_t loom_all_reduce_start(loom_mesh_t mesh, const int32_t *axes,
                                    int32_t num_axes, loom_dtype_t dtype,
                                    loom_reduction_t reduction,
                                    const void *send, void *recv,
                                    int64_t count, loom_pending_t *out);
loom_status_t loom_all_gather_start(loom_mesh_t mesh, const int32_t *axes,
                                    int32_t num_axes, loom_dtype_t dtype,
                                    const void *send, void *recv,
                                    int64_t send_count, loom_pending_t *out);
loom_status_t loom_reduce_scatter_start(loom_mesh_t mesh, const int32_t *axes,
                                        int32_t num_axes, loom_dtype_t dtype,
                                        loom_reduction_t reduction,
                                        const void *send, void *recv,
                                        int64_t recv_count,
                                        loom_pending_t *out);
loom_status_t loom_collective_wait(loom_pending_t pending);
/* 1 when collectives started on host buffers run on the lane while the
 * caller computes; 0 when they run inside their start (e.g. MPI without
 * MPI_THREAD_SERIALIZED, or NCCL, whose collectives this runtime does not
 * yet put on a stream of their own). */
int32_t loom_runtime_overlaps(loom_runtime_t runtime);
/* Sends `count` elements to mesh rank `to` and receives `count` from mesh
 * rank `from` (either may be -1 for none), without deadlock. */
loom_status_t loom_send_recv(loom_mesh_t mesh, loom_dtype_t dtype,
                             int32_t to, const void *send, int32_t from,
                             void *recv, int64_t count);
/* Point-to-point without blocking (pipeline stages). A request is
 * completed by loom_request_wait, which frees it; until then the buffer
 * must stay alive (and, for a receive, unread). Messages between two ranks
 * match by `tag` (0 <= tag < loom_max_tag()), in order. Waiting is under
 * the runtime's deadline: a peer that died or never sends is diagnosed and
 * named, as for collectives. */
typedef struct loom_request_s *loom_request_t;
int32_t loom_max_tag(void);
loom_status_t loom_isend(loom_mesh_t mesh, loom_dtype_t dtype, int32_t to,
                         const void *send, int64_t count, int32_t tag,
                         const char *what, loom_request_t *out_request);
loom_status_t loom_irecv(loom_mesh_t mesh, loom_dtype_t dtype, int32_t from,
                         void *recv, int64_t count, int32_t tag,
                         const char *what, loom_request_t *out_request);
loom_status_t loom_request_wait(loom_request_t request);
/* Blocks until every rank of the group arrives. */
loom_status_t loom_barrier(loom_mesh_t mesh, const int32_t *axes,
                           int32_t num_axes);
/* Sets `bytes` of `buffer` (host memory, or device memory on a device
 * mesh) to zero. */
loom_status_t loom_fill_zero(loom_mesh_t mesh, void *buffer, size_t bytes);

/*===----------------------------------------------------------------------===*
 * Tracing (loom-run --trace, --profile)
 *===----------------------------------------------------------------------===*/

/* One collective that communicated: its kind, the mesh axes of its group
 * (bit a for axis a), the bytes of its buffer (count x element size, as
 * the call states its count), when it started (microseconds since
 * loom_runtime_trace_start on this rank) and how long it took. A started
 * collective's event is when the lane ran it; the program's wait for it
 * is an event "collective_wait" (same axes and bytes) spanning the time
 * the caller was blocked. */
typedef struct loom_trace_event_t {
  const char *op; /* "all_reduce", "all_gather", "reduce_scatter", ... */
  uint64_t axes;
  int64_t bytes;
  double start_us, duration_us;
  int32_t started; /* 1: a started collective, run on the lane */
} loom_trace_event_t;

/* Starts recording (dropping what was recorded); time 0 is now. */
void loom_runtime_trace_start(loom_runtime_t runtime);
/* Stops recording; what was recorded stays until the next start. */
void loom_runtime_trace_stop(loom_runtime_t runtime);
/* Microseconds since loom_runtime_trace_start (the caller's own spans). */
double loom_runtime_trace_now_us(loom_runtime_t runtime);
int64_t loom_runtime_trace_count(loom_runtime_t runtime);
/* Event `index` (0 <= index < count); its `op` lives as long as the
 * runtime. Returns 0, or -1 for an index out of range. */
int32_t loom_runtime_trace_event(loom_runtime_t runtime, int64_t index,
                                 loom_trace_event_t *out_event);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_RUNTIME_H */
