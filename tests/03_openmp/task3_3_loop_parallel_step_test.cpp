// Task 3.3: whole loop-level steps through the engine, against stage 01 (MLP) and stage 02 (CNN) on
// one thread. A file of its own, so that a learner's save compiles it beside the sliced layer's
// checks, one on each core (the task's test program is made of both).
#include <gtest/gtest.h>

#include "01_fc_softmax/cpu_engine.hpp"
#include "03_openmp/omp_engine.hpp"
#include "stage03_support.hpp"

COURSE_PARALLEL_STEP_TESTS(Task3_3_LoopParallelStep, course::LoopParallelEngine)
