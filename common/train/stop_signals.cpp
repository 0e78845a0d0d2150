#include "common/train/stop_signals.hpp"

#ifdef COURSE_HAVE_SIGACTION
#include <unistd.h>
#endif

namespace course {

namespace {

// The signal that asked the run to stop (0: none). A handler may do little
// more than set a flag of this type; the training loop reads it after every step.
volatile std::sig_atomic_t g_stop_signal = 0;

void record_stop_signal(int signal) {
  g_stop_signal = signal;
#ifdef COURSE_HAVE_SIGACTION
  // write() is one of the few calls a signal handler may make.
  static const char kNote[] = "\nstopping after this step to save a checkpoint (press Ctrl-C again to quit at once)\n";
  if (write(STDERR_FILENO, kNote, sizeof kNote - 1) < 0) {
  }
#endif
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
#ifdef COURSE_HAVE_SIGACTION
  for (int i = 0; i < 2; ++i) {
    struct sigaction action {};
    action.sa_handler = record_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    installed_[i] = sigaction(kSignals[i], nullptr, &previous_[i]) == 0 && previous_[i].sa_handler != SIG_IGN &&
                    sigaction(kSignals[i], &action, nullptr) == 0;
  }
#else
  for (int i = 0; i < 2; ++i) {
    previous_[i] = std::signal(kSignals[i], record_stop_signal);
    installed_[i] = previous_[i] != SIG_ERR;
  }
#endif
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 2; ++i) {
    if (!installed_[i]) continue;
#ifdef COURSE_HAVE_SIGACTION
    sigaction(kSignals[i], &previous_[i], nullptr);
#else
    std::signal(kSignals[i], previous_[i]);
#endif
  }
}

int StopSignals::received() { return g_stop_signal; }

}  // namespace course
