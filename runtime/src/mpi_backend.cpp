//===- mpi_backend.cpp - Collectives over MPI with deadlines --------------===//
//
// Every collective is a nonblocking MPI call completed by a polling loop that
// also answers liveness pings from other ranks. When the deadline passes (or
// MPI reports an error), the rank pings every other rank and reports the
// ones that do not answer. A SIGTERM from the launcher (mpirun kills the job
// when a rank dies) is reported with the collective in progress.
//
//===----------------------------------------------------------------------===//

#include "backend.h"
#include "lane.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace loom::rt;

namespace {

constexpr int kPingTag = 7001;
constexpr int kPongTag = 7002;

//===----------------------------------------------------------------------===//
// What this rank is doing, for the signal handler
//===----------------------------------------------------------------------===//

char gCurrentOp[512] = "";
int gRank = -1, gSize = 0;

void appendText(char *buf, size_t &n, size_t cap, const char *s) {
  while (*s && n + 1 < cap)
    buf[n++] = *s++;
}

void appendInt(char *buf, size_t &n, size_t cap, long v) {
  char digits[24];
  int k = 0;
  bool neg = v < 0;
  unsigned long u = neg ? -static_cast<unsigned long>(v) : v;
  do {
    digits[k++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u && k < 22);
  if (neg && n + 1 < cap)
    buf[n++] = '-';
  while (k && n + 1 < cap)
    buf[n++] = digits[--k];
}

extern "C" void onTerminate(int sig) {
  char buf[768];
  size_t n = 0;
  appendText(buf, n, sizeof(buf), "loom: rank ");
  appendInt(buf, n, sizeof(buf), gRank);
  appendText(buf, n, sizeof(buf), " of ");
  appendInt(buf, n, sizeof(buf), gSize);
  appendText(buf, n, sizeof(buf), ": terminated by signal ");
  appendInt(buf, n, sizeof(buf), sig);
  if (gCurrentOp[0]) {
    appendText(buf, n, sizeof(buf), " during ");
    appendText(buf, n, sizeof(buf), gCurrentOp);
  } else {
    appendText(buf, n, sizeof(buf), " outside any collective");
  }
  appendText(buf, n, sizeof(buf),
             " (the launcher stops every rank when one fails; its message "
             "names the failed rank)\n");
  ssize_t ignored = write(2, buf, n);
  (void)ignored;
  _exit(128 + sig);
}

//===----------------------------------------------------------------------===//
// Types and reductions
//===----------------------------------------------------------------------===//

MPI_Datatype mpiType(loom_dtype_t dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return MPI_FLOAT;
  case LOOM_DTYPE_F64:
    return MPI_DOUBLE;
  case LOOM_DTYPE_F16:
  case LOOM_DTYPE_BF16:
  case LOOM_DTYPE_U16:
    return MPI_UINT16_T;
  case LOOM_DTYPE_I8:
    return MPI_INT8_T;
  case LOOM_DTYPE_I16:
    return MPI_INT16_T;
  case LOOM_DTYPE_I32:
    return MPI_INT32_T;
  case LOOM_DTYPE_I64:
    return MPI_INT64_T;
  case LOOM_DTYPE_U8:
  case LOOM_DTYPE_BOOL:
    return MPI_UINT8_T;
  case LOOM_DTYPE_U32:
    return MPI_UINT32_T;
  case LOOM_DTYPE_U64:
    return MPI_UINT64_T;
  }
  return MPI_BYTE;
}

template <loom_dtype_t D, loom_reduction_t R>
void reduce16(void *in, void *inout, int *len, MPI_Datatype *) {
  reduceInto(D, R, in, inout, *len);
}

struct MpiGroup final : Group {
  MPI_Comm comm = MPI_COMM_NULL;
  ~MpiGroup() override {
    if (comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }
};

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

class MpiBackend final : public Backend {
public:
  explicit MpiBackend(const loom_runtime_options_t &options)
      : options(options) {}
  ~MpiBackend() override;
  void abandon() override { peerLost = true; }
  loom_status_t init();

  loom_backend_t kind() const override { return LOOM_BACKEND_MPI; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  loom_status_t split(int color, int key, std::unique_ptr<Group> &out) override;
  loom_status_t allReduce(Group &g, const CallInfo &info,
                          loom_reduction_t reduction, const void *send,
                          void *recv) override;
  loom_status_t allGather(Group &g, const CallInfo &info, const void *send,
                          void *recv) override;
  loom_status_t reduceScatter(Group &g, const CallInfo &info,
                              loom_reduction_t reduction, const void *send,
                              void *recv) override;
  loom_status_t allToAll(Group &g, const CallInfo &info, const void *send,
                         void *recv) override;
  loom_status_t sendRecv(const CallInfo &info, int to, const void *send,
                         int from, void *recv) override;
  loom_status_t barrier(Group &g, const CallInfo &info) override;
  loom_status_t isend(const CallInfo &info, int to, const void *send, int tag,
                      std::unique_ptr<Request> &out) override;
  loom_status_t irecv(const CallInfo &info, int from, void *recv, int tag,
                      std::unique_ptr<Request> &out) override;
  loom_status_t wait(Request &request) override;
  bool callableFromLane() const override { return serialized; }

private:
  MPI_Op op(loom_dtype_t dtype, loom_reduction_t reduction) const;
  /// Ranks agree on what they are about to do.
  loom_status_t checkSignature(MPI_Comm comm, const CallInfo &info, int code);
  /// Completes `requests`, answering pings; diagnoses on deadline or error.
  loom_status_t wait(std::vector<MPI_Request> &requests, const CallInfo &info);
  void serviceHealth();
  loom_status_t diagnose(const CallInfo &info, const std::string &what);
  void begin(const CallInfo &info) {
    std::snprintf(gCurrentOp, sizeof(gCurrentOp), "%s",
                  info.description.c_str());
  }
  void end() { gCurrentOp[0] = 0; }
  /// One non-blocking collective on `g`: the signature check (`code` names
  /// the kind), `start` posting it (an MPI return code), the wait under the
  /// deadline.
  template <typename Start>
  loom_status_t collective(Group &g, const CallInfo &info, int code,
                           Start start);

  loom_runtime_options_t options;
  bool ownsMpi = false;
  int rank_ = 0, size_ = 1;
  /// How long a waiting rank spins before it sleeps between checks: 2 ms
  /// where this node's ranks have a core each, else only 200 checks.
  double spinSeconds = 0;
  /// MPI may be called from the lane thread (MPI_THREAD_SERIALIZED).
  bool serialized = false;
  MPI_Comm world = MPI_COMM_NULL, health = MPI_COMM_NULL;
  std::vector<MPI_Request> pongs;
  MPI_Op ops16[2][4] = {};
  /// A peer died or stalled (diagnose() said so): MPI_Finalize would wait
  /// for it forever, so the destructor leaves MPI alone and the launcher,
  /// seeing this process exit, ends the job.
  bool peerLost = false;
};

MpiBackend::~MpiBackend() {
  if (peerLost)
    return;
  for (MPI_Request &r : pongs)
    if (r != MPI_REQUEST_NULL)
      MPI_Request_free(&r);
  for (auto &row : ops16)
    for (MPI_Op &o : row)
      if (o != MPI_OP_NULL && o != 0)
        MPI_Op_free(&o);
  if (health != MPI_COMM_NULL)
    MPI_Comm_free(&health);
  if (world != MPI_COMM_NULL)
    MPI_Comm_free(&world);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (ownsMpi && !finalized)
    MPI_Finalize();
}

loom_status_t MpiBackend::init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // SERIALIZED: started collectives run on the runtime's lane thread,
    // never at the same time as a call from the program's thread.
    int rc =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
      return loom_status_make(LOOM_STATUS_UNAVAILABLE, "MPI_Init failed: %s",
                              mpiError(rc).c_str());
    ownsMpi = true;
  }
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  serialized = level >= MPI_THREAD_SERIALIZED;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  MPI_Comm_dup(MPI_COMM_WORLD, &health);
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(health, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world, &rank_);
  MPI_Comm_size(world, &size_);
  // Ranks on this node: with a core each, a waiting rank spins (a sleep
  // oversleeps by tens of microseconds, each collective of a step paying
  // it); with more ranks than cores it yields the core soon.
  MPI_Comm node = MPI_COMM_NULL;
  int local = 1;
  if (MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL,
                          &node) == MPI_SUCCESS &&
      node != MPI_COMM_NULL) {
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
  }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  spinSeconds = unsigned(local) <= cores ? 2e-3 : 0;
  gRank = rank_;
  gSize = size_;
  std::signal(SIGTERM, onTerminate);
  MPI_Op_create(reduce16<LOOM_DTYPE_F16, LOOM_REDUCTION_SUM>, 1, &ops16[0][0]);
  MPI_Op_create(reduce16<LOOM_DTYPE_F16, LOOM_REDUCTION_MAX>, 1, &ops16[0][1]);
  MPI_Op_create(reduce16<LOOM_DTYPE_F16, LOOM_REDUCTION_MIN>, 1, &ops16[0][2]);
  MPI_Op_create(reduce16<LOOM_DTYPE_F16, LOOM_REDUCTION_PROD>, 1, &ops16[0][3]);
  MPI_Op_create(reduce16<LOOM_DTYPE_BF16, LOOM_REDUCTION_SUM>, 1, &ops16[1][0]);
  MPI_Op_create(reduce16<LOOM_DTYPE_BF16, LOOM_REDUCTION_MAX>, 1, &ops16[1][1]);
  MPI_Op_create(reduce16<LOOM_DTYPE_BF16, LOOM_REDUCTION_MIN>, 1, &ops16[1][2]);
  MPI_Op_create(reduce16<LOOM_DTYPE_BF16, LOOM_REDUCTION_PROD>, 1,
                &ops16[1][3]);
  return nullptr;
}

MPI_Op MpiBackend::op(loom_dtype_t dtype, loom_reduction_t reduction) const {
  if (dtype == LOOM_DTYPE_F16 || dtype == LOOM_DTYPE_BF16)
    return ops16[dtype == LOOM_DTYPE_BF16][reduction];
  switch (reduction) {
  case LOOM_REDUCTION_SUM:
    return MPI_SUM;
  case LOOM_REDUCTION_MAX:
    return MPI_MAX;
  case LOOM_REDUCTION_MIN:
    return MPI_MIN;
  case LOOM_REDUCTION_PROD:
    return MPI_PROD;
  }
  return MPI_SUM;
}

loom_status_t MpiBackend::split(int color, int key,
                                std::unique_ptr<Group> &out) {
  auto group = std::make_unique<MpiGroup>();
  int rc = MPI_Comm_split(world, color, key, &group->comm);
  if (rc != MPI_SUCCESS)
    return loom_status_make(LOOM_STATUS_INTERNAL, "MPI_Comm_split: %s",
                            mpiError(rc).c_str());
  MPI_Comm_set_errhandler(group->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(group->comm, &group->rank);
  MPI_Comm_size(group->comm, &group->size);
  out = std::move(group);
  return nullptr;
}

void MpiBackend::serviceHealth() {
  int flag = 1;
  while (flag) {
    MPI_Status st;
    flag = 0;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, health, &flag, &st) != MPI_SUCCESS)
      return;
    if (!flag)
      break;
    int token = 0;
    MPI_Recv(&token, 1, MPI_INT, st.MPI_SOURCE, kPingTag, health,
             MPI_STATUS_IGNORE);
    MPI_Request r;
    static int answer = 1;
    if (MPI_Isend(&answer, 1, MPI_INT, st.MPI_SOURCE, kPongTag, health, &r) ==
        MPI_SUCCESS)
      pongs.push_back(r);
  }
  // Drop completed answers.
  for (MPI_Request &r : pongs) {
    int done = 0;
    if (r != MPI_REQUEST_NULL)
      MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  }
  pongs.erase(std::remove(pongs.begin(), pongs.end(), MPI_REQUEST_NULL),
              pongs.end());
}

loom_status_t MpiBackend::diagnose(const CallInfo &info,
                                   const std::string &what) {
  static int token = 1;
  std::vector<MPI_Request> pings;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_)
      continue;
    MPI_Request req;
    if (MPI_Isend(&token, 1, MPI_INT, r, kPingTag, health, &req) == MPI_SUCCESS)
      pings.push_back(req);
  }
  std::vector<bool> answered(size_, false);
  answered[rank_] = true;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(options.diagnosis_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    serviceHealth();
    int flag = 1;
    while (flag) {
      MPI_Status st;
      flag = 0;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kPongTag, health, &flag, &st) !=
              MPI_SUCCESS ||
          !flag)
        break;
      int v;
      MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, kPongTag, health,
               MPI_STATUS_IGNORE);
      answered[st.MPI_SOURCE] = true;
    }
    bool all = true;
    for (bool a : answered)
      all &= a;
    if (all)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::string missing;
  for (int r = 0; r < size_; ++r)
    if (!answered[r])
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  for (MPI_Request &r : pings)
    MPI_Request_free(&r);
  end();
  peerLost = true;
  if (!missing.empty())
    return loom_status_make(
        LOOM_STATUS_PEER_FAILED,
        "rank %d of %d: %s %s; rank(s) %s did not answer within %g s (dead "
        "or stalled)",
        rank_, size_, info.description.c_str(), what.c_str(), missing.c_str(),
        options.diagnosis_seconds);
  return loom_status_make(
      LOOM_STATUS_DEADLINE_EXCEEDED,
      "rank %d of %d: %s %s; every rank answers, so some rank is running a "
      "different collective (the ranks' programs diverged) or the deadline is "
      "too short",
      rank_, size_, info.description.c_str(), what.c_str());
}

loom_status_t MpiBackend::wait(std::vector<MPI_Request> &requests,
                               const CallInfo &info) {
  auto start = std::chrono::steady_clock::now();
  long spins = 0;
  for (;;) {
    int done = 0;
    int rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(),
                         &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
      return diagnose(info, "failed (MPI: " + mpiError(rc) + ")");
    if (done)
      return nullptr;
    serviceHealth();
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (elapsed > options.timeout_seconds) {
      char what[96];
      std::snprintf(what, sizeof(what), "did not complete within %g s",
                    options.timeout_seconds);
      return diagnose(info, what);
    }
    // Spin, then sleep between checks. A sleep of 20 us oversleeps to
    // ~60-80 us: measured (loom-calibrate, 2 ranks on 2 cores) as 55-80 us
    // added to every collective of a step and 2 MiB all-reduces at 3 GB/s
    // instead of 4.4 when ranks slept after 200 checks. Where ranks
    // outnumber cores, the core goes to a rank that computes.
    // On the lane while the program computes, the core is the program's.
    if (CommLane::shouldYield() && spins > 2)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    else if (++spins > 200 && elapsed >= spinSeconds)
      std::this_thread::sleep_for(
          std::chrono::microseconds(spins > 20000 ? 500 : 20));
  }
}

loom_status_t MpiBackend::checkSignature(MPI_Comm comm, const CallInfo &info,
                                         int code) {
  if (!options.check_signatures)
    return nullptr;
  int64_t send[8], recv[8];
  signatureOf(info, code, send);
  std::vector<MPI_Request> req(1);
  int rc = MPI_Iallreduce(send, recv, 8, MPI_INT64_T, MPI_MAX, comm, &req[0]);
  if (rc != MPI_SUCCESS)
    return diagnose(info, "failed (MPI: " + mpiError(rc) + ")");
  if (loom_status_t s = wait(req, info))
    return s;
  loom_status_t mismatch = signatureMismatch(info, code, recv, rank_, size_);
  if (mismatch)
    end();
  return mismatch;
}

template <typename Start>
loom_status_t MpiBackend::collective(Group &g, const CallInfo &info, int code,
                                     Start start) {
  MPI_Comm comm = static_cast<MpiGroup &>(g).comm;
  begin(info);
  loom_status_t s = checkSignature(comm, info, code);
  if (!s) {
    std::vector<MPI_Request> req(1);
    int rc = start(comm, &req[0]);
    s = rc != MPI_SUCCESS ? diagnose(info, "failed (MPI: " + mpiError(rc) + ")")
                          : wait(req, info);
  }
  end();
  return s;
}

loom_status_t MpiBackend::allReduce(Group &g, const CallInfo &info,
                                    loom_reduction_t reduction,
                                    const void *send, void *recv) {
  return collective(g, info, 1, [&](MPI_Comm comm, MPI_Request *req) {
    return MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv,
                          static_cast<int>(info.count), mpiType(info.dtype),
                          op(info.dtype, reduction), comm, req);
  });
}

loom_status_t MpiBackend::allGather(Group &g, const CallInfo &info,
                                    const void *send, void *recv) {
  return collective(g, info, 2, [&](MPI_Comm comm, MPI_Request *req) {
    MPI_Datatype t = mpiType(info.dtype);
    return MPI_Iallgather(send, static_cast<int>(info.count), t, recv,
                          static_cast<int>(info.count), t, comm, req);
  });
}

loom_status_t MpiBackend::reduceScatter(Group &g, const CallInfo &info,
                                        loom_reduction_t reduction,
                                        const void *send, void *recv) {
  return collective(g, info, 3, [&](MPI_Comm comm, MPI_Request *req) {
    return MPI_Ireduce_scatter_block(send, recv, static_cast<int>(info.count),
                                     mpiType(info.dtype),
                                     op(info.dtype, reduction), comm, req);
  });
}

loom_status_t MpiBackend::allToAll(Group &g, const CallInfo &info,
                                   const void *send, void *recv) {
  return collective(g, info, 4, [&](MPI_Comm comm, MPI_Request *req) {
    MPI_Datatype t = mpiType(info.dtype);
    return MPI_Ialltoall(send, static_cast<int>(info.count), t, recv,
                         static_cast<int>(info.count), t, comm, req);
  });
}

loom_status_t MpiBackend::sendRecv(const CallInfo &info, int to,
                                   const void *send, int from, void *recv) {
  begin(info);
  std::vector<MPI_Request> reqs;
  MPI_Datatype t = mpiType(info.dtype);
  int count = static_cast<int>(info.count);
  constexpr int kDataTag = 7003;
  if (from >= 0) {
    reqs.emplace_back();
    if (MPI_Irecv(recv, count, t, from, kDataTag, world, &reqs.back()) !=
        MPI_SUCCESS)
      return diagnose(info, "failed to post the receive");
  }
  if (to >= 0) {
    reqs.emplace_back();
    if (MPI_Isend(send, count, t, to, kDataTag, world, &reqs.back()) !=
        MPI_SUCCESS)
      return diagnose(info, "failed to post the send");
  }
  loom_status_t s = wait(reqs, info);
  end();
  return s;
}

namespace {
struct MpiRequest : Request {
  std::vector<MPI_Request> requests{MPI_REQUEST_NULL};
};
/// Point-to-point tags sit above the ones the backend uses itself.
constexpr int kPeerTagBase = 16384;
} // namespace

loom_status_t MpiBackend::isend(const CallInfo &info, int to, const void *send,
                                int tag, std::unique_ptr<Request> &out) {
  auto r = std::make_unique<MpiRequest>();
  r->info = info;
  if (MPI_Isend(send, static_cast<int>(info.count), mpiType(info.dtype), to,
                kPeerTagBase + tag, world, &r->requests[0]) != MPI_SUCCESS)
    return diagnose(info, "failed to post the send");
  out = std::move(r);
  return nullptr;
}

loom_status_t MpiBackend::irecv(const CallInfo &info, int from, void *recv,
                                int tag, std::unique_ptr<Request> &out) {
  auto r = std::make_unique<MpiRequest>();
  r->info = info;
  if (MPI_Irecv(recv, static_cast<int>(info.count), mpiType(info.dtype), from,
                kPeerTagBase + tag, world, &r->requests[0]) != MPI_SUCCESS)
    return diagnose(info, "failed to post the receive");
  out = std::move(r);
  return nullptr;
}

loom_status_t MpiBackend::wait(Request &request) {
  auto &r = static_cast<MpiRequest &>(request);
  begin(r.info);
  loom_status_t s = wait(r.requests, r.info);
  end();
  return s;
}

loom_status_t MpiBackend::barrier(Group &g, const CallInfo &info) {
  MPI_Comm comm = static_cast<MpiGroup &>(g).comm;
  begin(info);
  std::vector<MPI_Request> req(1);
  int rc = MPI_Ibarrier(comm, &req[0]);
  if (rc != MPI_SUCCESS)
    return diagnose(info, "failed (MPI: " + mpiError(rc) + ")");
  loom_status_t s = wait(req, info);
  end();
  return s;
}

} // namespace

loom_status_t loom::rt::makeMpiBackend(const loom_runtime_options_t &options,
                                       std::unique_ptr<Backend> &out) {
  auto backend = std::make_unique<MpiBackend>(options);
  if (loom_status_t s = backend->init())
    return s;
  out = std::move(backend);
  return nullptr;
}
