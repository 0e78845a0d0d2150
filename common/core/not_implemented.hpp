/// @file not_implemented.hpp
/// @brief The error an exercise stub throws until the learner fills it in.
#pragma once

#include <stdexcept>
#include <string>

namespace course {

/// Thrown by every hole in exercises/: names the task, the file and the lesson page.
///
/// Tests report it as a failure ("Task 1.1 is not implemented yet"), never a
/// skip; trainers catch it in main() and stop with the same message.
class NotImplemented : public std::logic_error {
 public:
  NotImplemented(const std::string& task, const std::string& file, const std::string& lesson)
      : std::logic_error(task + " is not implemented yet (" + file + "): read " + lesson +
                         ", fill in the TODO(" + task + ") block, then run: tools/course check " +
                         task.substr(task.find(' ') + 1)),
        task_(task) {}
  /// "Task 1.1"
  const std::string& task() const { return task_; }

 private:
  std::string task_;
};

}  // namespace course
