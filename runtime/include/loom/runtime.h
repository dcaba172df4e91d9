/*===- loom/runtime.h - Loom runtime C API --------------------------------===*
 *
 * The runtime that runs Loom's per-rank executables. A C API first (see
 * ../../../docs/architecture.md): opaque handles, out_ parameters, status
 * objects instead of exceptions or raw MPI/CUDA codes, versioned options
 * structs with an initializer.
 *
 * This header grows with the distributed runtime; today it holds status
 * handling and launcher detection (which rank am I, how many are there),
 * which every backend needs first.
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_RUNTIME_H */
