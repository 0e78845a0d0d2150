/// @file launcher.cpp
/// @brief Multi-GPU plumbing (given code, not a lesson): starting one process per GPU, waiting for them, stopping them together (see the header).
#include "common/multi_gpu/launcher.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "common/multi_gpu/bootstrap.hpp"
#include "common/train/trainer.hpp"

namespace course {

namespace {

// The signal to pass on to the ranks (0: none). A handler may do little more than set it.
volatile sig_atomic_t g_signal_to_pass = 0;

void note_signal(int signal, siginfo_t* info, void*) {
  // Ctrl-C in a terminal goes to every process of the foreground group, ranks
  // included: passing it on would deliver it twice. kill() and sigqueue() reach
  // this process alone.
  if (signal == SIGINT && info != nullptr && info->si_code != SI_USER && info->si_code != SI_QUEUE) return;
  g_signal_to_pass = signal;
}

// While it lives, SIGINT, SIGTERM and SIGHUP only set g_signal_to_pass. A
// handler, unlike an ignored signal, is reset to the default in a process that
// exec()s, so the ranks get the trainer's own handling.
class PassSignalsOn {
 public:
  PassSignalsOn() {
    g_signal_to_pass = 0;
    for (int i = 0; i < 3; ++i) {
      struct sigaction action {};
      action.sa_sigaction = note_signal;
      action.sa_flags = SA_SIGINFO;
      sigemptyset(&action.sa_mask);
      sigaction(kSignals[i], &action, &previous_[i]);
    }
  }
  ~PassSignalsOn() { restore(); }
  /// Puts the previous dispositions back: in the destructor, and in a child
  /// before exec() (there, until exec, a signal would only set the child's flag).
  void restore() const {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  /// The three signals, for a signal mask.
  static sigset_t set() {
    sigset_t s;
    sigemptyset(&s);
    for (int signal : kSignals) sigaddset(&s, signal);
    return s;
  }
  PassSignalsOn(const PassSignalsOn&) = delete;
  PassSignalsOn& operator=(const PassSignalsOn&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction previous_[3];
};

const char* signal_name(int signal) {
  switch (signal) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Exit codes with which every rank ends a run at the same step, by agreement.
bool orderly(int code) { return code == kExitOk || code == kExitDiverged || code == kExitInterrupted; }

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void signal_all(const std::vector<pid_t>& pids, int signal) {
  for (pid_t p : pids)
    if (p > 0) ::kill(p, signal);
}

// This process's environment for rank `rank`: its place among the ranks, the id
// file, and NVLink multicast off unless the user chose otherwise.
std::vector<std::string> rank_environment(int rank, int world, const std::string& id_file) {
  std::vector<std::string> env;
  bool nvls_set = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name == "COURSE_RANK" || name == "COURSE_WORLD_SIZE" || name == "COURSE_LOCAL_RANK" ||
        name == "COURSE_NCCL_ID_FILE")
      continue;
    nvls_set = nvls_set || name == "NCCL_NVLS_ENABLE";
    env.push_back(entry);
  }
  env.push_back("COURSE_RANK=" + std::to_string(rank));
  env.push_back("COURSE_WORLD_SIZE=" + std::to_string(world));
  env.push_back("COURSE_LOCAL_RANK=" + std::to_string(rank));
  env.push_back("COURSE_NCCL_ID_FILE=" + id_file);
  if (!nvls_set) env.push_back("NCCL_NVLS_ENABLE=0");  // NVLink multicast stays off (communicator.hpp)
  return env;
}

std::string ranks_text(int first, int last) {
  return first == last ? "rank " + std::to_string(first) + " has"
                       : "ranks " + std::to_string(first) + " to " + std::to_string(last) + " have";
}

}  // namespace

void check_gpu_count(int requested, int visible, const char* cuda_visible_devices) {
  if (requested < 1) throw LaunchError("--gpus " + std::to_string(requested) + ": give 1 or more");
  if (visible >= requested) return;
  const std::string where = cuda_visible_devices != nullptr
                                ? std::string("CUDA_VISIBLE_DEVICES='") + cuda_visible_devices + "'"
                                : std::string("CUDA_VISIBLE_DEVICES is not set");
  throw LaunchError("--gpus " + std::to_string(requested) + ": a GPU per rank is needed, and " +
                    ranks_text(visible, requested - 1) + " none: CUDA shows " + std::to_string(visible) + " GPU" +
                    (visible == 1 ? "" : "s") + " here (" + where + ")");
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + signal_name(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

int launch_ranks(const LaunchRequest& request, std::ostream& out, std::ostream& err) {
  if (request.ranks < 1) throw std::invalid_argument("launch_ranks: at least one rank");
  const char* tmp = std::getenv("TMPDIR");
  std::string folder = std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/course-s09-XXXXXX";
  if (::mkdtemp(&folder[0]) == nullptr)
    throw std::runtime_error("cannot make a temporary folder from '" + folder + "': " + std::strerror(errno));
  const std::string id_file = folder + "/nccl-id";

  std::vector<std::string> words = request.args;
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(&w[0]);
  argv.push_back(nullptr);

  // Everything a child needs is made before fork(): between fork() and exec()
  // a child of a process with threads may only make async-signal-safe calls.
  std::vector<std::vector<std::string>> environments(static_cast<std::size_t>(request.ranks));
  std::vector<std::vector<char*>> envps(environments.size());
  std::vector<std::string> exec_failures(environments.size());
  for (int r = 0; r < request.ranks; ++r) {
    std::vector<std::string>& env = environments[static_cast<std::size_t>(r)];
    env = rank_environment(r, request.ranks, id_file);
    for (std::string& v : env) envps[static_cast<std::size_t>(r)].push_back(&v[0]);
    envps[static_cast<std::size_t>(r)].push_back(nullptr);
    exec_failures[static_cast<std::size_t>(r)] = "rank " + std::to_string(r) + ": cannot run " + request.program + "\n";
  }

  PassSignalsOn pass_signals;  // before the first fork: no signal falls between the two
  // The three signals wait while the ranks are started: a child between fork()
  // and exec() gets the dispositions it will exec with, and only then the signal.
  const sigset_t held = PassSignalsOn::set();
  sigset_t mask_before;
  pthread_sigmask(SIG_BLOCK, &held, &mask_before);
  std::vector<pid_t> pids(static_cast<std::size_t>(request.ranks), -1);
  for (int r = 0; r < request.ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      pass_signals.restore();
      pthread_sigmask(SIG_SETMASK, &mask_before, nullptr);
      ::execve(request.program.c_str(), argv.data(), envps[static_cast<std::size_t>(r)].data());
      const std::string& why = exec_failures[static_cast<std::size_t>(r)];
      if (::write(STDERR_FILENO, why.data(), why.size()) < 0) {
      }
      ::_exit(127);
    }
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      pthread_sigmask(SIG_SETMASK, &mask_before, nullptr);
      signal_all(pids, SIGKILL);
      for (pid_t p : pids)
        if (p > 0) ::waitpid(p, nullptr, 0);
      std::filesystem::remove_all(folder);
      throw std::runtime_error("cannot start rank " + std::to_string(r) + ": fork: " + why);
    }
    pids[static_cast<std::size_t>(r)] = pid;
  }
  pthread_sigmask(SIG_SETMASK, &mask_before, nullptr);  // a signal that came meanwhile is noted now
  out << "launcher: " << request.ranks << " rank" << (request.ranks == 1 ? "" : "s")
      << ", one process per GPU (rank r on GPU r); NCCL id through " << id_file << std::endl;

  int alive = request.ranks, result = 0;
  bool stopping = false;
  double kill_at = 0;
  while (alive > 0) {
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      int r = 0;
      while (r < request.ranks && pids[static_cast<std::size_t>(r)] != done) ++r;
      if (r == request.ranks) continue;  // not one of ours
      pids[static_cast<std::size_t>(r)] = -1;
      --alive;
      const int code = exit_code_of(status);
      if (code != 0 && (result == 0 || (orderly(result) && !orderly(code)))) result = code;  // a failure first
      if (!orderly(code) && !stopping) {
        err << "launcher: rank " << r << " " << describe_exit(status);
        if (alive > 0) {
          err << "; stopping the other ranks (SIGTERM, then SIGKILL after " << request.grace_s << " s)";
          signal_all(pids, SIGTERM);
          stopping = true;
          kill_at = now_s() + request.grace_s;
        }
        err << std::endl;
      }
      continue;
    }
    if (done < 0 && errno == ECHILD) break;
    if (const int signal = g_signal_to_pass) {
      g_signal_to_pass = 0;
      signal_all(pids, signal);
    }
    if (stopping && kill_at > 0 && now_s() >= kill_at) {
      signal_all(pids, SIGKILL);
      kill_at = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  return result;
}

}  // namespace course
