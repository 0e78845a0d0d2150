/// @file rendezvous.cpp
/// @brief Multi-GPU plumbing (given code, not a lesson): NCCL's unique id over TCP (see the header).
#include "common/multi_gpu/rendezvous.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace course {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_left(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

std::string hello_line(int world, int rank, const std::string& run_id) {
  return "course-nccl-id 1 world " + std::to_string(world) + " rank " + std::to_string(rank) + " run " +
         (run_id.empty() ? "-" : run_id) + "\n";
}

// Closes a socket when it goes out of scope.
struct Socket {
  int fd = -1;
  explicit Socket(int f) : fd(f) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
};

void set_io_timeout(int fd, double seconds) {
  timeval tv{};
  tv.tv_sec = static_cast<long>(seconds);
  tv.tv_usec = static_cast<long>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool send_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads up to a newline (not kept), at most `limit` bytes; false on a closed or silent peer.
bool read_line(int fd, std::string* line, std::size_t limit = 256) {
  line->clear();
  char c = 0;
  while (line->size() < limit) {
    const ssize_t n = ::recv(fd, &c, 1, 0);
    if (n <= 0) return false;
    if (c == '\n') return true;
    line->push_back(c);
  }
  return false;
}

bool read_exactly(int fd, std::size_t count, std::string* bytes) {
  bytes->assign(count, '\0');
  std::size_t got = 0;
  while (got < count) {
    const ssize_t n = ::recv(fd, bytes->data() + got, count - got, 0);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// A connection to `ai` within `seconds`, or -1 (nothing listens there yet, or it did not answer).
int connect_within(const addrinfo* ai, double seconds) {
  const int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
  if (fd < 0) return -1;
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, static_cast<int>(std::max(1.0, seconds * 1e3)));
    int error = 0;
    socklen_t len = sizeof error;
    rc = (rc == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0) ? 0 : -1;
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, flags);
  return fd;
}

}  // namespace

UniqueIdServer::UniqueIdServer(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) throw LaunchError(std::string("rank 0: cannot open a TCP socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (port < 0 || port > 65535 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd_, 64) != 0) {
    const std::string why = port < 0 || port > 65535 ? "not a TCP port" : std::strerror(errno);
    ::close(fd_);
    throw LaunchError("rank 0: cannot listen on TCP port " + std::to_string(port) + " for the other ranks (" + why +
                      "): choose another with MASTER_PORT");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
}

UniqueIdServer::~UniqueIdServer() {
  if (fd_ >= 0) ::close(fd_);
}

void UniqueIdServer::serve(const std::string& id, int world, const std::string& run_id, double timeout_s) {
  if (id.size() != kUniqueIdBytes)
    throw std::invalid_argument("a unique id has " + std::to_string(kUniqueIdBytes) + " bytes, not " +
                                std::to_string(id.size()));
  const auto deadline = deadline_after(timeout_s);
  const std::string want_run = run_id.empty() ? "-" : run_id;
  std::set<int> served;
  while (static_cast<int>(served.size()) < world - 1) {
    const double left = seconds_left(deadline);
    pollfd p{fd_, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1e3) + 1) < 0) {
      if (left > 0 && errno == EINTR) continue;
      std::string missing;
      for (int r = 1; r < world; ++r)
        if (!served.count(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw std::runtime_error("rank 0: rank(s) " + missing + " of " + std::to_string(world) +
                               " did not come for NCCL's id on TCP port " + std::to_string(port_) + " within " +
                               std::to_string(static_cast<int>(timeout_s)) + " s: they did not start, or cannot "
                               "reach this host at that port (MASTER_ADDR, MASTER_PORT, a firewall)");
    }
    if (!(p.revents & POLLIN)) continue;
    Socket peer(::accept(fd_, nullptr, nullptr));
    if (peer.fd < 0) continue;
    set_io_timeout(peer.fd, 5.0);
    std::string line;
    if (!read_line(peer.fd, &line)) continue;  // not one of ours, or gone: keep waiting
    std::istringstream words(line);
    std::string magic, version, w_word, r_word, run_word, run;
    int w = 0, r = -1;
    words >> magic >> version >> w_word >> w >> r_word >> r >> run_word >> run;
    std::string refusal;
    if (magic != "course-nccl-id" || version != "1" || w_word != "world" || r_word != "rank" || run_word != "run")
      refusal = "not this trainer's greeting";
    else if (w != world)
      refusal = "this run has " + std::to_string(world) + " ranks, not " + std::to_string(w);
    else if (run != want_run)
      refusal = "this is run " + want_run + ", not " + run;
    else if (r < 1 || r >= world)
      refusal = "rank " + std::to_string(r) + " is not one of ranks 1 to " + std::to_string(world - 1);
    else if (served.count(r))
      refusal = "rank " + std::to_string(r) + " has its id already: two processes claim that rank";
    if (!refusal.empty()) {
      send_all(peer.fd, "refused: " + refusal + "\n");
      continue;
    }
    if (send_all(peer.fd, "ok\n" + id)) served.insert(r);
  }
}

std::string fetch_unique_id(const RendezvousAddress& at, int world, int rank, const std::string& run_id,
                            double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  const std::string who = "rank " + std::to_string(rank);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int resolved = ::getaddrinfo(at.host.c_str(), std::to_string(at.port).c_str(), &hints, &found);
    if (resolved == EAI_NONAME || resolved == EAI_SERVICE)
      throw LaunchError(who + ": cannot find rank 0's host '" + at.host + "' (" + ::gai_strerror(resolved) +
                        "): check MASTER_ADDR");
    int fd = -1;
    for (const addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next)
      fd = connect_within(ai, std::min(2.0, std::max(0.05, seconds_left(deadline))));
    if (found != nullptr) ::freeaddrinfo(found);
    if (fd >= 0) {
      Socket s(fd);
      set_io_timeout(fd, std::max(1.0, std::min(30.0, seconds_left(deadline))));
      std::string line, id;
      // A connection closed without an answer (rank 0 restarting, or gone before it read us): try again.
      if (send_all(fd, hello_line(world, rank, run_id)) && read_line(fd, &line)) {
        if (line == "ok" && read_exactly(fd, kUniqueIdBytes, &id)) return id;
        if (line.rfind("refused: ", 0) == 0)
          throw LaunchError(who + ": rank 0 at " + at.str() + " refused it: " + line.substr(9));
        throw std::runtime_error(who + ": " + at.str() + " answered, but not with NCCL's id: is something else "
                                 "listening there (another program on MASTER_PORT)?");
      }
    }
    if (seconds_left(deadline) <= 0)
      throw std::runtime_error(who + ": could not reach rank 0 at " + at.str() + " within " +
                               std::to_string(static_cast<int>(timeout_s)) + " s: rank 0 did not start or "
                               "failed, or this host cannot reach that address and port (MASTER_ADDR, MASTER_PORT, "
                               "a firewall)");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace course
