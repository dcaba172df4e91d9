//===- tcp_store.cpp - A key-value store over TCP for rendezvous ----------===//
//
// Wire format: a request is one byte ('S' set, 'G' get), a 4-byte key
// length and the key; a set then carries a 4-byte value length and the
// value and gets a 1-byte ack; a get is answered, once the key is set,
// with the value's length and bytes. The server (rank 0) runs a thread per
// connection; the process keeps it until exit (rendezvous happens again
// whenever a mesh splits communicators).
//
//===----------------------------------------------------------------------===//

#include "tcp_store.h"

#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace loom::rt;

namespace {

[[noreturn]] void fail(const std::string &what) {
  throw std::runtime_error(what + (errno ? std::string(": ") +
                                               std::strerror(errno)
                                         : std::string()));
}

/// Moves all `n` bytes (a timeout or a closed peer: false).
bool transfer(int fd, char *p, size_t n, bool sending) {
  while (n > 0) {
    ssize_t r = sending ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

bool readAll(int fd, void *data, size_t n) {
  return transfer(fd, static_cast<char *>(data), n, false);
}

bool writeAll(int fd, const void *data, size_t n) {
  return transfer(fd, const_cast<char *>(static_cast<const char *>(data)), n,
                  true);
}

bool readBlob(int fd, std::string &out) {
  uint32_t n;
  if (!readAll(fd, &n, 4) || n > (64u << 20))
    return false;
  out.resize(n);
  return readAll(fd, out.data(), n);
}

bool writeBlob(int fd, const char *data, uint32_t n) {
  return writeAll(fd, &n, 4) && writeAll(fd, data, n);
}

/// The server's state, leaked on purpose: its threads may outlive any
/// owner until the process exits.
struct Server {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> values;

  void serve(int fd) {
    for (;;) {
      char op;
      std::string key, value;
      if (!readAll(fd, &op, 1) || !readBlob(fd, key))
        break;
      if (op == 'S') {
        if (!readBlob(fd, value))
          break;
        {
          std::lock_guard<std::mutex> lock(mutex);
          values[key] = std::move(value);
        }
        changed.notify_all();
        char ack = 1;
        if (!writeAll(fd, &ack, 1))
          break;
      } else if (op == 'G') {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return values.count(key) > 0; });
        std::string v = values[key];
        lock.unlock();
        if (!writeBlob(fd, v.data(), uint32_t(v.size())))
          break;
      } else if (op == 'C') {
        // A check that does not wait: found (1) and the value, or 0.
        std::unique_lock<std::mutex> lock(mutex);
        auto it = values.find(key);
        char found = it != values.end();
        std::string v = found ? it->second : std::string();
        lock.unlock();
        if (!writeAll(fd, &found, 1) ||
            (found && !writeBlob(fd, v.data(), uint32_t(v.size()))))
          break;
      } else {
        break;
      }
    }
    ::close(fd);
  }
};

void setTimeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv;
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

} // namespace

TcpStore::TcpStore(const std::string &host, int port, bool serve,
                   std::chrono::milliseconds timeout)
    : timeout(timeout), where(host + ":" + std::to_string(port)) {
  errno = 0;
  if (serve) {
    int listener = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = listener >= 0;
    if (!v6)
      listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0)
      fail("cannot create the rendezvous socket");
    int one = 1, zero = 0;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc;
    if (v6) {
      setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      sockaddr_in6 addr{};
      addr.sin6_family = AF_INET6;
      addr.sin6_addr = in6addr_any;
      addr.sin6_port = htons(uint16_t(port));
      rc = ::bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
    } else {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_ANY);
      addr.sin_port = htons(uint16_t(port));
      rc = ::bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
    }
    if (rc != 0 || ::listen(listener, 1024) != 0) {
      ::close(listener);
      fail("rank 0 cannot listen on port " + std::to_string(port) +
           " for the rendezvous (MASTER_PORT in use?)");
    }
    auto *server = new Server;
    std::thread([server, listener] {
      for (;;) {
        int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          if (errno == EINTR || errno == ECONNABORTED)
            continue;
          return;
        }
        std::thread([server, c] { server->serve(c); }).detach();
      }
    }).detach();
  }
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found)) {
    errno = 0;
    fail("cannot resolve MASTER_ADDR " + host + ": " + gai_strerror(rc));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
      int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                       a->ai_protocol);
      if (s < 0)
        continue;
      if (::connect(s, a->ai_addr, a->ai_addrlen) == 0)
        fd = s;
      else
        ::close(s);
    }
    if (fd >= 0 || std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  freeaddrinfo(found);
  if (fd < 0)
    fail("cannot reach rank 0's rendezvous at " + where + " within " +
         std::to_string(timeout.count() / 1000) +
         " s (is rank 0 running, and MASTER_ADDR/MASTER_PORT the same on "
         "every rank?)");
  setTimeouts(fd, timeout);
}

TcpStore::~TcpStore() {
  if (fd >= 0)
    ::close(fd);
}

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  std::lock_guard<std::mutex> lock(mutex);
  char op = 'S', ack = 0;
  errno = 0;
  if (!writeAll(fd, &op, 1) || !writeBlob(fd, key.data(), uint32_t(key.size())) ||
      !writeBlob(fd, data.data(), uint32_t(data.size())) ||
      !readAll(fd, &ack, 1))
    fail("rendezvous at " + where + ": cannot set '" + key + "'");
}

std::vector<char> TcpStore::get(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  char op = 'G';
  std::string value;
  errno = 0;
  if (!writeAll(fd, &op, 1) || !writeBlob(fd, key.data(), uint32_t(key.size())) ||
      !readBlob(fd, value))
    fail("rendezvous at " + where + ": no value for '" + key + "' within " +
         std::to_string(timeout.count() / 1000) +
         " s (did every rank start, with the same WORLD_SIZE?)");
  return std::vector<char>(value.begin(), value.end());
}

std::optional<std::string> TcpStore::check(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  char op = 'C', found = 0;
  std::string value;
  errno = 0;
  if (!writeAll(fd, &op, 1) || !writeBlob(fd, key.data(), uint32_t(key.size())) ||
      !readAll(fd, &found, 1) || (found && !readBlob(fd, value)))
    fail("rendezvous at " + where + ": cannot check '" + key + "'");
  if (!found)
    return std::nullopt;
  return value;
}

void TcpStore::wait(const std::vector<std::string> &keys) {
  for (const std::string &k : keys)
    get(k);
}

void TcpStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &) {
  wait(keys);
}
