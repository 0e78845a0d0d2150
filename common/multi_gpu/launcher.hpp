/// @file launcher.hpp
/// @brief Multi-GPU plumbing (given code, not a lesson): the trainer as its own launcher, one process per GPU.
///
/// `s09_train_solution --gpus 2 ...` starts two copies of itself with the same
/// command line, one per GPU, and waits for them: what `torchrun` or `mpirun`
/// does for other programs. Each copy learns its place from its environment
/// (bootstrap.hpp): COURSE_RANK, COURSE_WORLD_SIZE, COURSE_LOCAL_RANK (here
/// equal to the rank: one host), COURSE_NCCL_ID_FILE (a file in a fresh
/// temporary folder, for NCCL's unique id), and NCCL_NVLS_ENABLE=0 unless the
/// user set it (communicator.hpp says why).
///
/// One process per GPU, not one thread per GPU, is how every framework runs
/// data parallelism: each process has its own CUDA context, its own host
/// thread to launch kernels, nothing shared by accident, and the same program
/// runs unchanged when the processes are on different hosts.
///
/// When a rank fails (a non-zero exit, or a signal), the others cannot finish:
/// their next collective waits for the missing rank. The launcher says which
/// rank failed and how, sends the others SIGTERM, and SIGKILL `grace_s`
/// seconds later to any still running (a rank blocked inside an NCCL kernel
/// does not get to act on SIGTERM). Its exit code is the first failure's (128
/// + the signal's number for a signal, as shells report it), 0 when every rank
/// succeeded.
///
/// Signals to the launcher: SIGTERM and SIGHUP are passed on to every rank.
/// Ctrl-C in a terminal reaches every process of the foreground group, ranks
/// included, by itself; a SIGINT sent to the launcher alone (kill -INT) is
/// passed on. The ranks then stop together at the end of the epoch and rank 0
/// saves a checkpoint (Engine::stop_requested).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace course {

/// Checks `--gpus requested` against the `visible` GPUs (what CUDA shows this
/// process). Throws LaunchError naming --gpus when requested < 1 or the GPUs are
/// too few; `cuda_visible_devices` (the variable's value, or null) is quoted then.
void check_gpu_count(int requested, int visible, const char* cuda_visible_devices);

/// What launch_ranks() starts.
struct LaunchRequest {
  int ranks = 1;                  ///< processes, one per GPU: local rank r drives device r
  std::string program;            ///< the executable (the trainer itself: /proc/self/exe)
  std::vector<std::string> args;  ///< its argv, argv[0] first
  double grace_s = 10;            ///< seconds between SIGTERM and SIGKILL for the ranks left
};

/// Starts request.ranks processes as above and waits for all of them; says on
/// `out` what it started and on `err`, when a rank fails, which and how.
/// Returns the exit code described above. A rank that ends with the trainer's
/// orderly codes for a whole run (kExitDiverged, kExitInterrupted: every rank
/// ends so, at the same step) does not make the launcher stop the others.
/// Throws std::runtime_error when it cannot make its temporary folder or start
/// a process (after stopping those it started).
int launch_ranks(const LaunchRequest& request, std::ostream& out, std::ostream& err);

/// "exit code 3", "killed by signal 9 (SIGKILL)": how a process ended, from waitpid's status.
std::string describe_exit(int status);

}  // namespace course
