//===- gloo_backend.cpp - CPU collectives without an MPI launcher ---------===//
//
// For ranks started by torchrun-style launchers (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT) or by Slurm's srun without MPI support: Gloo
// (Debian's libgloo) moves the bytes over TCP, after a rendezvous through
// rank 0's TcpStore. Groups are Gloo contexts connected over a prefix of
// the store; every operation has the runtime's timeout, and Gloo's
// exceptions (I/O errors, timeouts, a peer gone) become statuses that name
// the operation. Reductions use the runtime's own element loops
// (reduceInto), so every dtype the MPI backend reduces, 16-bit floats
// included, reduces the same way here.
//
//===----------------------------------------------------------------------===//

#include "backend.h"
#include "tcp_store.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace loom::rt;

namespace {

struct GlooGroup final : Group {
  std::shared_ptr<gloo::Context> context;
  /// Reduce-scatters run so far (every member runs the same sequence, so
  /// the count names a call's slots alike on all of them).
  uint64_t ringCalls = 0;
};

struct GlooRequest final : Request {
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  bool isSend = false;
};

/// Point-to-point slots, clear of the collectives' (prefix << 56 | tag).
constexpr uint64_t kP2PSlot = uint64_t(0xfe) << 56;
/// The ring reduce-scatter's slots (call * 1024 + step).
constexpr uint64_t kRingSlot = uint64_t(0xfd) << 56;

class GlooBackend final : public Backend {
public:
  loom_backend_t kind() const override { return LOOM_BACKEND_GLOO; }
  int rank() const override { return world->rank; }
  int size() const override { return world->size; }
  // Gloo's calls block the calling thread; any one thread at a time may
  // make them.
  bool callableFromLane() const override { return true; }

  ~GlooBackend() override {
    lingerForDiagnosis();
    stopHeartbeat();
  }

  loom_status_t init(const loom_launch_info_t &info,
                     const loom_runtime_options_t &options);
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

private:
  /// Runs `fn`, turning Gloo's exceptions into a status naming `info`.
  template <typename Fn>
  loom_status_t guard(const CallInfo &info, Fn &&fn) {
    try {
      fn();
      return nullptr;
    } catch (const std::exception &e) {
      std::string lost = silentRanks();
      return loom_status_make(
          LOOM_STATUS_PEER_FAILED, "%s: rank %d of %d: %s (%s)",
          info.description.c_str(), world->rank, world->size, e.what(),
          lost.empty() ? ("every rank is alive: a rank stalled in another "
                          "operation, or the deadline of " +
                          std::to_string(timeout.count() / 1000) +
                          " s is too short")
                             .c_str()
                       : lost.c_str());
    }
  }
  /// Every rank sets its heartbeat key in the store (a thread, every
  /// kBeat); after a failure the survivors name the ranks whose beat
  /// stopped, as MPI's backend names the ranks that do not answer (Gloo's
  /// errors name an address at best, or nothing).
  void startHeartbeat(const loom_launch_info_t &info);
  void stopHeartbeat();
  /// "rank(s) R dead or stopped (...)", or "" when every rank beats;
  /// marks this rank as ended by a failure (endedKey).
  std::string silentRanks();
  void lingerForDiagnosis();
  static std::string beatKey(int rank) {
    return "loom/beat/" + std::to_string(rank);
  }
  static std::string endedKey(int rank) {
    return "loom/ended/" + std::to_string(rank);
  }
  static constexpr std::chrono::milliseconds kBeat{250};
  std::shared_ptr<gloo::Context> connect(const std::string &prefix, int rank,
                                         int size);
  /// As MPI's backend: every member compares (operation, type, count,
  /// extra) before the collective, one small all-reduce.
  loom_status_t checkSignature(GlooGroup &group, const CallInfo &info,
                               int code);
  loom_status_t reduceInPlace(GlooGroup &group, const CallInfo &info,
                              loom_reduction_t reduction, void *recv);
  /// Posts a send to or a receive from world rank `peer` (isend/irecv).
  loom_status_t post(const CallInfo &info, int peer, void *data, int tag,
                     bool isSend, std::unique_ptr<Request> &out);
  static size_t bytesOf(const CallInfo &info) {
    return size_t(loom_dtype_size(info.dtype)) * size_t(info.count);
  }

  std::unique_ptr<TcpStore> store;
  /// The heartbeat's own connection to the store (a blocking rendezvous
  /// on `store` does not hold it up).
  std::unique_ptr<TcpStore> beatStore;
  std::thread beat;
  std::mutex beatMutex;
  std::condition_variable beatWake;
  bool beatStop = false;
  /// A collective failed (silentRanks ran); rank 0 waited for the others'
  /// diagnosis (lingerForDiagnosis, once).
  bool failed = false, lingered = false;
  /// This rank and the job's size (known before `world` connects).
  int me = 0, ranks = 1;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::Context> world;
  std::chrono::milliseconds timeout{60000};
  bool checkSignatures = true;
  int splits = 0;
};

std::shared_ptr<gloo::Context> GlooBackend::connect(const std::string &prefix,
                                                    int rank, int size) {
  gloo::rendezvous::PrefixStore scoped(prefix, *store);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(timeout);
  context->connectFullMesh(scoped, device);
  return context;
}

loom_status_t GlooBackend::init(const loom_launch_info_t &info,
                                const loom_runtime_options_t &options) {
  timeout = std::chrono::milliseconds(int64_t(options.timeout_seconds * 1000));
  checkSignatures = options.check_signatures != 0;
  // A write to the socket of a peer that died must fail with EPIPE (an
  // error naming the rank), not end this rank silently with SIGPIPE.
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
  std::string master = info.master_addr;
  CallInfo what{"rendezvous", "the rendezvous"};
  try {
    store = std::make_unique<TcpStore>(master, info.master_port,
                                       info.rank == 0, timeout);
    gloo::transport::tcp::attr attr;
    // This rank's address for its peers: LOOM_GLOO_IFACE (a network
    // interface) or LOOM_GLOO_HOSTNAME, else the loopback for a job on
    // one host, else this host's name.
    char host[256] = {};
    if (const char *iface = std::getenv("LOOM_GLOO_IFACE"))
      attr.iface = iface;
    else if (const char *name = std::getenv("LOOM_GLOO_HOSTNAME"))
      attr.hostname = name;
    else if (master == "localhost" || master == "127.0.0.1" || master == "::1")
      attr.hostname = master;
    else if (gethostname(host, sizeof(host) - 1) == 0)
      attr.hostname = host;
    device = gloo::transport::tcp::CreateDevice(attr);
    // Beating before the ranks connect: one that dies while they do is
    // named too.
    me = info.rank;
    ranks = info.world_size;
    startHeartbeat(info);
    auto context =
        std::make_shared<gloo::rendezvous::Context>(info.rank, info.world_size);
    context->setTimeout(timeout);
    gloo::rendezvous::PrefixStore scoped("world", *store);
    context->connectFullMesh(scoped, device);
    world = context;
  } catch (const std::exception &e) {
    // The rendezvous waits for each rank's address under world/R: the one
    // it timed out on never joined (not started, or dead).
    std::string what = e.what(), missing;
    const std::string waited = "no value for 'world/";
    size_t at = what.find(waited);
    if (at != std::string::npos) {
      at += waited.size();
      std::string rank = what.substr(at, what.find('\'', at) - at);
      if (!rank.empty() &&
          rank.find_first_not_of("0123456789") == std::string::npos)
        missing = "; rank " + rank + " never joined (dead, or not started)";
    } else if (info.rank != 0 && what.find("rendezvous at") == 0) {
      // The store, rank 0's, stopped answering.
      missing = "; rank 0 is dead or unreachable: its rendezvous store no "
                "longer answers";
    } else if (std::string lost = silentRanks(); !lost.empty()) {
      // Connecting the ranks failed: the ranks that stopped beating.
      missing = "; " + lost;
    }
    return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                            "gloo: rank %d of %d cannot join the job through "
                            "MASTER_ADDR=%s MASTER_PORT=%d: %s%s",
                            info.rank, info.world_size, info.master_addr,
                            info.master_port, what.c_str(), missing.c_str());
  }
  return nullptr;
}

loom_status_t GlooBackend::split(int color, int key,
                                 std::unique_ptr<Group> &out) {
  // Every rank publishes (color, key); members of a color, ordered by key
  // then rank, connect over their own prefix.
  std::string base = "split" + std::to_string(splits++);
  CallInfo info{"split", "splitting communicators"};
  auto group = std::make_unique<GlooGroup>();
  loom_status_t s = guard(info, [&] {
    int64_t mine[2] = {color, key};
    std::vector<char> bytes(reinterpret_cast<char *>(mine),
                            reinterpret_cast<char *>(mine) + sizeof(mine));
    store->set(base + "/" + std::to_string(world->rank), bytes);
    std::vector<std::pair<int64_t, int>> members;
    for (int r = 0; r < world->size; ++r) {
      std::vector<char> v = store->get(base + "/" + std::to_string(r));
      int64_t theirs[2];
      std::memcpy(theirs, v.data(), sizeof(theirs));
      if (theirs[0] == color)
        members.push_back({theirs[1], r});
    }
    std::sort(members.begin(), members.end());
    int index = 0;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i].second == world->rank)
        index = int(i);
    group->rank = index;
    group->size = int(members.size());
    group->context = members.size() == 1
                         ? nullptr
                         : connect(base + "/" + std::to_string(color), index,
                                   int(members.size()));
  });
  if (s)
    return s;
  out = std::move(group);
  return nullptr;
}

loom_status_t GlooBackend::checkSignature(GlooGroup &group,
                                          const CallInfo &info, int code) {
  if (!checkSignatures)
    return nullptr;
  int64_t both[8];
  signatureOf(info, code, both);
  CallInfo check = info;
  check.dtype = LOOM_DTYPE_I64;
  check.count = 8;
  if (loom_status_t s = reduceInPlace(group, check, LOOM_REDUCTION_MAX, both))
    return s;
  return signatureMismatch(info, code, both, world->rank, world->size);
}

loom_status_t GlooBackend::allReduce(Group &g, const CallInfo &info,
                                     loom_reduction_t reduction,
                                     const void *send, void *recv) {
  auto &group = static_cast<GlooGroup &>(g);
  if (loom_status_t s = checkSignature(group, info, 1))
    return s;
  if (send != recv)
    std::memcpy(recv, send, bytesOf(info));
  return reduceInPlace(group, info, reduction, recv);
}

loom_status_t GlooBackend::reduceInPlace(GlooGroup &group,
                                         const CallInfo &info,
                                         loom_reduction_t reduction,
                                         void *recv) {
  loom_dtype_t dtype = info.dtype;
  return guard(info, [&] {
    gloo::AllreduceOptions opts(group.context);
    // An unsigned type of the element's width: Gloo splits the buffer into
    // segments of whole elements; the reduction is the runtime's.
    size_t width = loom_dtype_size(dtype);
    size_t count = size_t(info.count);
    switch (width) {
    case 1: opts.setOutput(static_cast<uint8_t *>(recv), count); break;
    case 2: opts.setOutput(static_cast<uint16_t *>(recv), count); break;
    case 4: opts.setOutput(static_cast<uint32_t *>(recv), count); break;
    default: opts.setOutput(static_cast<uint64_t *>(recv), count); break;
    }
    opts.setReduceFunction([dtype, reduction, width](void *c, const void *a,
                                                     const void *b, size_t n) {
      if (c == b)
        std::swap(a, b);
      if (c != a)
        std::memcpy(c, a, n * width);
      reduceInto(dtype, reduction, b, c, int64_t(n));
    });
    opts.setTimeout(timeout);
    gloo::allreduce(opts);
  });
}

loom_status_t GlooBackend::allGather(Group &g, const CallInfo &info,
                                     const void *send, void *recv) {
  auto &group = static_cast<GlooGroup &>(g);
  if (loom_status_t s = checkSignature(group, info, 2))
    return s;
  return guard(info, [&] {
    gloo::AllgatherOptions opts(group.context);
    opts.setInput(const_cast<char *>(static_cast<const char *>(send)),
                  bytesOf(info));
    opts.setOutput(static_cast<char *>(recv), bytesOf(info) * group.size);
    opts.setTimeout(timeout);
    gloo::allgather(opts);
  });
}

loom_status_t GlooBackend::reduceScatter(Group &g, const CallInfo &info,
                                         loom_reduction_t reduction,
                                         const void *send, void *recv) {
  // A ring (Gloo has no reduce-scatter for unbound buffers): in n - 1
  // steps each member passes one block, reduced so far, to the next and
  // reduces the one it receives into its own, ending with its block
  // complete; each member sends (n - 1) / n of the buffer, the planner's
  // ring model (an all-reduce and a copy sent twice that).
  auto &group = static_cast<GlooGroup &>(g);
  if (loom_status_t s = checkSignature(group, info, 3))
    return s;
  size_t block = bytesOf(info);
  int n = group.size, r = group.rank;
  std::vector<char> acc(static_cast<const char *>(send),
                        static_cast<const char *>(send) + block * n);
  std::vector<char> incoming(block);
  uint64_t call = group.ringCalls++;
  loom_status_t s = guard(info, [&] {
    auto in = group.context->createUnboundBuffer(incoming.data(), block);
    for (int step = 0; step + 1 < n; ++step) {
      int sendIdx = ((r - step - 1) % n + n) % n;
      int recvIdx = ((r - step - 2) % n + n) % n;
      auto out = group.context->createUnboundBuffer(
          acc.data() + size_t(sendIdx) * block, block);
      uint64_t slot = kRingSlot + call * 1024 + uint64_t(step);
      in->recv((r + n - 1) % n, slot);
      out->send((r + 1) % n, slot);
      in->waitRecv(timeout);
      out->waitSend(timeout);
      reduceInto(info.dtype, reduction, incoming.data(),
                 acc.data() + size_t(recvIdx) * block, info.count);
    }
  });
  if (s)
    return s;
  std::memcpy(recv, acc.data() + size_t(r) * block, block);
  return nullptr;
}

loom_status_t GlooBackend::allToAll(Group &g, const CallInfo &info,
                                    const void *send, void *recv) {
  auto &group = static_cast<GlooGroup &>(g);
  if (loom_status_t s = checkSignature(group, info, 4))
    return s;
  return guard(info, [&] {
    gloo::AlltoallOptions opts(group.context);
    opts.setInput(const_cast<char *>(static_cast<const char *>(send)),
                  bytesOf(info) * group.size);
    opts.setOutput(static_cast<char *>(recv), bytesOf(info) * group.size);
    opts.setTimeout(timeout);
    gloo::alltoall(opts);
  });
}

loom_status_t GlooBackend::sendRecv(const CallInfo &info, int to,
                                    const void *send, int from, void *recv) {
  std::unique_ptr<Request> out, in;
  if (from >= 0)
    if (loom_status_t s = irecv(info, from, recv, -1, in))
      return s;
  if (to >= 0)
    if (loom_status_t s = isend(info, to, send, -1, out))
      return s;
  if (out)
    if (loom_status_t s = wait(*out))
      return s;
  return in ? wait(*in) : nullptr;
}

loom_status_t GlooBackend::barrier(Group &g, const CallInfo &info) {
  auto &group = static_cast<GlooGroup &>(g);
  if (loom_status_t s = checkSignature(group, info, 6))
    return s;
  return guard(info, [&] {
    gloo::BarrierOptions opts(group.context);
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  });
}

loom_status_t GlooBackend::post(const CallInfo &info, int peer, void *data,
                                int tag, bool isSend,
                                std::unique_ptr<Request> &out) {
  auto request = std::make_unique<GlooRequest>();
  request->info = info;
  request->isSend = isSend;
  loom_status_t s = guard(info, [&] {
    request->buffer = world->createUnboundBuffer(data, bytesOf(info));
    uint64_t slot = kP2PSlot + uint32_t(tag);
    if (isSend)
      request->buffer->send(peer, slot);
    else
      request->buffer->recv(peer, slot);
  });
  if (!s)
    out = std::move(request);
  return s;
}

loom_status_t GlooBackend::isend(const CallInfo &info, int to,
                                 const void *send, int tag,
                                 std::unique_ptr<Request> &out) {
  return post(info, to, const_cast<void *>(send), tag, /*isSend=*/true, out);
}

loom_status_t GlooBackend::irecv(const CallInfo &info, int from, void *recv,
                                 int tag, std::unique_ptr<Request> &out) {
  return post(info, from, recv, tag, /*isSend=*/false, out);
}

loom_status_t GlooBackend::wait(Request &r) {
  auto &request = static_cast<GlooRequest &>(r);
  bool done = false;
  loom_status_t s = guard(request.info, [&] {
    done = request.isSend ? request.buffer->waitSend(timeout)
                          : request.buffer->waitRecv(timeout);
  });
  if (s)
    return s;
  if (!done) {
    std::string lost = silentRanks();
    return loom_status_make(LOOM_STATUS_DEADLINE_EXCEEDED,
                            "%s: rank %d: no peer within %.0f s%s%s",
                            request.info.description.c_str(), world->rank,
                            timeout.count() / 1000.0, lost.empty() ? "" : "; ",
                            lost.c_str());
  }
  return nullptr;
}

void GlooBackend::startHeartbeat(const loom_launch_info_t &info) {
  beatStore = std::make_unique<TcpStore>(info.master_addr, info.master_port,
                                         /*serve=*/false, timeout);
  std::string key = beatKey(info.rank);
  beatStore->set(key, {'0'});
  beat = std::thread([this, key] {
    uint64_t n = 0;
    std::unique_lock<std::mutex> lock(beatMutex);
    while (!beatWake.wait_for(lock, kBeat, [this] { return beatStop; })) {
      std::string text = std::to_string(++n);
      try {
        beatStore->set(key, std::vector<char>(text.begin(), text.end()));
      } catch (const std::exception &) {
        return; // the store's rank 0 is gone (or the job is ending)
      }
    }
  });
}

void GlooBackend::stopHeartbeat() {
  if (!beat.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(beatMutex);
    beatStop = true;
  }
  beatWake.notify_all();
  beat.join();
}

std::string GlooBackend::silentRanks() {
  if (!beatStore)
    return "";
  int n = ranks;
  auto beats = [&] {
    std::vector<std::string> out(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      out[size_t(r)] = beatStore->check(beatKey(r)).value_or("");
    return out;
  };
  std::vector<std::string> before, after;
  std::string silent, ended;
  try {
    before = beats();
    // Several beats: a live rank's key changes in this time.
    std::this_thread::sleep_for(kBeat * 8);
    after = beats();
    for (int r = 0; r < n; ++r) {
      if (r == me || before[size_t(r)] != after[size_t(r)])
        continue;
      // A rank that stopped after reporting a failure of its own is not
      // the one at fault.
      std::string &list =
          beatStore->check(endedKey(r)) ? ended : silent;
      list += (list.empty() ? "" : ", ") + std::to_string(r);
    }
    beatStore->set(endedKey(me), {'1'});
  } catch (const std::exception &) {
    return "rank 0 is dead or unreachable: its rendezvous store no longer "
           "answers";
  }
  failed = true;
  // Programs often exit as soon as a collective fails (compiled code
  // does): rank 0 keeps its store up for the others' diagnosis first.
  lingerForDiagnosis();
  std::string text;
  if (!silent.empty())
    text = "rank(s) " + silent + " dead or stopped: no heartbeat for " +
           std::to_string(int((kBeat * 8).count())) + " ms";
  if (!ended.empty())
    text += (text.empty() ? "" : "; ") + std::string("rank(s) ") + ended +
            " ended after a failure of their own";
  return text;
}

void GlooBackend::lingerForDiagnosis() {
  // Rank 0 serves the store the others diagnose through: after a failure
  // it waits (beating) until every other rank has reported or stopped
  // beating, at most the deadline and one diagnosis, so that its exit is
  // not taken for its death.
  if (!failed || lingered || me != 0 || !beatStore)
    return;
  lingered = true;
  auto deadline = std::chrono::steady_clock::now() + timeout + kBeat * 16;
  std::vector<std::string> last(static_cast<size_t>(ranks));
  std::vector<int> still(size_t(ranks), 0);
  try {
    while (std::chrono::steady_clock::now() < deadline) {
      bool pending = false;
      for (int r = 1; r < ranks; ++r) {
        if (beatStore->check(endedKey(r)))
          continue;
        std::string b = beatStore->check(beatKey(r)).value_or("");
        still[size_t(r)] = b == last[size_t(r)] ? still[size_t(r)] + 1 : 0;
        last[size_t(r)] = b;
        pending |= still[size_t(r)] < 8;
      }
      if (!pending)
        return;
      std::this_thread::sleep_for(kBeat);
    }
  } catch (const std::exception &) {
  }
}

} // namespace

loom_status_t loom::rt::makeGlooBackend(const loom_runtime_options_t &options,
                                        std::unique_ptr<Backend> &out) {
  loom_launch_info_t info;
  if (loom_status_t s = loom_launch_info_from_env(&info))
    return s;
  if (info.master_addr[0] == '\0' || info.master_port == 0)
    return loom_status_make(
        LOOM_STATUS_INVALID_ARGUMENT,
        "the gloo backend needs MASTER_ADDR and MASTER_PORT (rank 0's host "
        "and a free port, the same on every rank), as torchrun sets them");
  auto backend = std::make_unique<GlooBackend>();
  if (loom_status_t s = backend->init(info, options))
    return s;
  out = std::move(backend);
  return nullptr;
}
