//===- tcp_store.h - A key-value store over TCP for rendezvous ------------===//
//
// Internal to the runtime. Gloo connects its ranks through a Store; Gloo
// ships file, hash and Redis stores, none of which a torchrun or Slurm job
// has. This is the TCP store those launchers imply (PyTorch's TCPStore,
// reduced to what rendezvous needs): rank 0 serves on MASTER_ADDR:MASTER_PORT,
// every rank (rank 0 too) is a client; get() blocks until the key is set or
// the timeout passes. Throws std::runtime_error on failure (the Gloo backend
// is compiled with exceptions and turns them into statuses).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SRC_TCP_STORE_H
#define LOOM_RUNTIME_SRC_TCP_STORE_H

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace loom::rt {

class TcpStore : public gloo::rendezvous::Store {
public:
  /// Rank 0 (`serve`) listens on `port` first; every rank then connects to
  /// host:port, retrying until `timeout`.
  TcpStore(const std::string &host, int port, bool serve,
           std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  /// The value of `key` if it is set now (no wait).
  std::optional<std::string> check(const std::string &key);
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

private:
  int fd = -1;
  std::mutex mutex; // one request at a time on the connection
  std::chrono::milliseconds timeout;
  std::string where;
};

} // namespace loom::rt

#endif // LOOM_RUNTIME_SRC_TCP_STORE_H
