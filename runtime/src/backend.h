//===- backend.h - The interface every communication backend implements ---===//
//
// Internal to the runtime. A backend knows its world (rank, size), splits
// communicators, and runs collectives on an opaque group handle; the mesh
// layer (runtime.cpp) maps mesh axes to groups and validates arguments, so
// backends only move bytes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SRC_BACKEND_H
#define LOOM_RUNTIME_SRC_BACKEND_H

#include "loom/runtime.h"

#include <memory>
#include <string>

namespace loom::rt {

/// A communicator: ranks of a group, in group order.
struct Group {
  virtual ~Group() = default;
  int rank = 0; // this process's index in the group
  int size = 1;
};

/// What a collective does, for signature checks and error messages.
struct CallInfo {
  const char *op;          // "all_reduce", ...
  std::string description; // "all_reduce (sum) of 1024 x f32 over [dp]"
  loom_dtype_t dtype = LOOM_DTYPE_U8;
  int64_t count = 0;
  int32_t extra = 0; // reduction kind, peer, ...
};

/// A posted point-to-point transfer.
struct Request {
  virtual ~Request() = default;
  CallInfo info;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual loom_backend_t kind() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Collective over the world, like MPI_Comm_split: ranks with the same
  /// color form a group, ordered by key.
  virtual loom_status_t split(int color, int key,
                              std::unique_ptr<Group> &out) = 0;

  virtual loom_status_t allReduce(Group &g, const CallInfo &info,
                                  loom_reduction_t reduction,
                                  const void *send, void *recv) = 0;
  virtual loom_status_t allGather(Group &g, const CallInfo &info,
                                  const void *send, void *recv) = 0;
  virtual loom_status_t reduceScatter(Group &g, const CallInfo &info,
                                      loom_reduction_t reduction,
                                      const void *send, void *recv) = 0;
  virtual loom_status_t allToAll(Group &g, const CallInfo &info,
                                 const void *send, void *recv) = 0;
  /// World ranks; -1 for none.
  virtual loom_status_t sendRecv(const CallInfo &info, int to,
                                 const void *send, int from, void *recv) = 0;
  virtual loom_status_t barrier(Group &g, const CallInfo &info) = 0;
  /// Non-blocking point-to-point between world ranks, matched by tag.
  virtual loom_status_t isend(const CallInfo &info, int to, const void *send,
                              int tag, std::unique_ptr<Request> &out) {
    return unsupported(info);
  }
  virtual loom_status_t irecv(const CallInfo &info, int from, void *recv,
                              int tag, std::unique_ptr<Request> &out) {
    return unsupported(info);
  }
  virtual loom_status_t wait(Request &request) { return unsupported(request.info); }
  /// This rank stops alone (loom_runtime_abandon): tearing down must not
  /// wait for peers that are still in a collective.
  virtual void abandon() {}
  /// Whether collectives take device buffers (NCCL); host backends take
  /// host buffers, and the runtime stages device buffers through them.
  virtual bool deviceMemory() const { return false; }
  /// Whether collectives may be called from the runtime's communication
  /// lane (lane.h), one thread at a time but not the one that created the
  /// backend: started collectives then overlap the program.
  virtual bool callableFromLane() const { return false; }
  /// The host backend for control traffic (host buffers: the start-up
  /// handshake, barriers, gathering results) and its group matching `g`;
  /// a host backend is its own.
  virtual Backend &control() { return *this; }
  virtual Group &controlGroup(Group &g) { return g; }

protected:
  loom_status_t unsupported(const CallInfo &info) {
    return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                            "%s: point-to-point transfers are not supported "
                            "by the %s backend yet",
                            info.description.c_str(), loom_backend_name(kind()));
  }
};

std::unique_ptr<Backend> makeLocalBackend();
/// MPI (CPU). Calls MPI_Init_thread; its destructor MPI_Finalize.
loom_status_t makeMpiBackend(const loom_runtime_options_t &options,
                             std::unique_ptr<Backend> &out);
/// Gloo over TCP (CPU) after a rendezvous at MASTER_ADDR:MASTER_PORT;
/// UNAVAILABLE when not built with Gloo.
loom_status_t makeGlooBackend(const loom_runtime_options_t &options,
                              std::unique_ptr<Backend> &out);
/// NCCL on the buffers of options.device, bootstrapped over `bootstrap`
/// (the launcher's host backend, kept for control traffic); UNAVAILABLE
/// when not built with NCCL or without a device.
loom_status_t makeNcclBackend(const loom_runtime_options_t &options,
                              std::unique_ptr<Backend> bootstrap,
                              std::unique_ptr<Backend> &out);

/// The signature check every backend makes before a collective: each rank
/// contributes `signatureOf` (operation `code`, type, count, extra, and
/// their negations), the group reduces it with MAX, and
/// `signatureMismatch` names the field the ranks disagree on (null when
/// they agree).
void signatureOf(const CallInfo &info, int code, int64_t out[8]);
loom_status_t signatureMismatch(const CallInfo &info, int code,
                                const int64_t reduced[8], int rank, int size);

/// Element combination for reductions on host buffers (local backend and
/// MPI's user-defined ops for 16-bit floats).
void reduceInto(loom_dtype_t dtype, loom_reduction_t reduction,
                const void *in, void *inout, int64_t count);

} // namespace loom::rt

#endif // LOOM_RUNTIME_SRC_BACKEND_H
