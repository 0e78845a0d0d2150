"""The pieces of tools/course, one concern per module:

  common     the repository's root, the build folder, printing a command and running it
  gpu        whether this machine has a usable GPU, which stages need one, the one line that says so
  build      configuring, building targets with their progress, the compiler's first errors
  tasks      the tasks of every stage: goals, hints, where each hole is, its lesson section
  results    running a task's tests: pass, fail, needs a GPU; the lines of a failure to read
  progress   the state of every task without building a GPU stage, the gates, the progress view
  reset      one task's hole written back into exercises/, the code of every other task kept
  trainers   the learner's trainer against the reference on the same small work
  loop       the learner's commands: check, next, watch, progress
"""
