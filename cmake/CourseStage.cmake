# course_stage(): builds one stage on both tracks.
#
#   course_stage(<dir> NUMBER <n> [USES <stage dir>...] [TRAINER <main.cpp>]
#                [LIBS <extra link libraries>...] [GPU] [TRAINER_SAFETY])
#
# For each track T in COURSE_TRACKS (solution, exercise) it defines
#   s<NN>_<T>          the lesson code of solutions/<dir> or exercises/<dir>
#                      (INTERFACE when the stage is headers only)
#   s<NN>_train_<T>    the stage's trainer (stages/<dir>/<main.cpp>)
#   s<NN>_tests_<T>    the GoogleTest suites of tests/<dir>
# and s<NN>_bench (solution track only) from benchmarks/<dir>. With TRAINER_SAFETY
# the tests also hold the suites of tests/gpu_stages/ (the safety of every GPU
# stage's trainer), compiled with COURSE_TEST_STAGE=<n> to run this stage's row
# of their table (tests/gpu_stages/gpu_stage_table.hpp).
#
# CTest tests are one per task and one per other test suite, named
#   s<NN>/<T>/Task<N.M>      runs the suites named Task<N>_<M>_*
#   s<NN>/<T>/<Suite>        any other suite (checker self-tests, smoke tests)
# with labels <T>, s<NN> (and gpu). Every test of a stage is a setup test of
# the fixture gate_s<NN>_<T>, which every test of the next stage requires:
# a stage's tests run only once the previous stage's tests pass.

set_property(GLOBAL PROPERTY COURSE_PREVIOUS_GATE "")
set_property(GLOBAL PROPERTY COURSE_STAGES "")

function(course_stage dir)
  cmake_parse_arguments(ST "GPU;TRAINER_SAFETY" "NUMBER;TRAINER" "USES;LIBS" ${ARGN})
  string(LENGTH "${ST_NUMBER}" _len)
  if(_len EQUAL 1)
    set(nn "0${ST_NUMBER}")
  else()
    set(nn "${ST_NUMBER}")
  endif()
  set(prefix "s${nn}")
  set_property(GLOBAL APPEND PROPERTY COURSE_STAGES ${dir})

  # The tasks of this stage, read from the markers in solutions/<dir>.
  file(GLOB _solution_files CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/solutions/${dir}/*.hpp ${CMAKE_SOURCE_DIR}/solutions/${dir}/*.cpp
       ${CMAKE_SOURCE_DIR}/solutions/${dir}/*.cu ${CMAKE_SOURCE_DIR}/solutions/${dir}/*.cuh)
  set(_tasks "")
  foreach(f ${_solution_files})
    file(STRINGS ${f} _lines REGEX "BEGIN Task [0-9]+\\.[0-9]+")
    foreach(l ${_lines})
      string(REGEX MATCH "Task [0-9]+\\.[0-9]+" _t "${l}")
      string(REPLACE "Task " "" _t "${_t}")
      list(APPEND _tasks ${_t})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES _tasks)
  list(SORT _tasks COMPARE NATURAL)

  # The other suites of the tests, read from the test sources.
  file(GLOB _test_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/${dir}/*.cpp)
  if(ST_TRAINER_SAFETY AND _test_sources)
    file(GLOB _gpu_stage_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu_stages/*.cpp)
    list(APPEND _test_sources ${_gpu_stage_sources})
  endif()
  set(_other_suites "")
  foreach(f ${_test_sources})
    file(STRINGS ${f} _lines REGEX "^[ ]*(TEST|TEST_F|TEST_P|TYPED_TEST)\\(")
    foreach(l ${_lines})
      string(REGEX REPLACE "^[ ]*[A-Z_]+\\(([A-Za-z0-9_]+).*" "\\1" _suite "${l}")
      if(NOT _suite MATCHES "^Task[0-9]+_[0-9]+_")
        list(APPEND _other_suites ${_suite})
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES _other_suites)

  get_property(_previous_gate GLOBAL PROPERTY COURSE_PREVIOUS_GATE)

  foreach(track ${COURSE_TRACKS})
    if(track STREQUAL "exercise" AND ST_GPU AND NOT COURSE_EXERCISE_GPU_STAGES)
      continue()  # COURSE_EXERCISE_GPU_STAGES=OFF (CI's build, cmake/CourseFeatures.cmake)
    endif()
    if(track STREQUAL "solution")
      set(root ${CMAKE_SOURCE_DIR}/solutions)
    else()
      set(root ${CMAKE_SOURCE_DIR}/exercises)
    endif()

    # ---- the lesson code ---------------------------------------------------
    file(GLOB _srcs CONFIGURE_DEPENDS ${root}/${dir}/*.cpp ${root}/${dir}/*.cu)
    # Sources named *_sm90a.cu use Hopper's arch-specific instructions: built apart, for sm_90a
    # alone, when the build targets Hopper (COURSE_HAVE_SM90A); the stage sees COURSE_HAVE_SM90A=1.
    set(_sm90a_srcs ${_srcs})
    list(FILTER _sm90a_srcs INCLUDE REGEX "_sm90a\\.cu$")
    list(FILTER _srcs EXCLUDE REGEX "_sm90a\\.cu$")
    set(lib ${prefix}_${track})
    if(_srcs)
      add_library(${lib} STATIC ${_srcs})
      set(_scope PUBLIC)
      target_compile_options(${lib} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${COURSE_WARNINGS}>)
      if(track STREQUAL "exercise")
        target_compile_options(${lib} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${COURSE_EXERCISE_WARNINGS}>
                                              $<$<COMPILE_LANGUAGE:CUDA>:${COURSE_EXERCISE_CUDA_WARNINGS}>)
      endif()
    else()
      add_library(${lib} INTERFACE)
      set(_scope INTERFACE)
    endif()
    target_include_directories(${lib} ${_scope} ${root})
    target_link_libraries(${lib} ${_scope} course_common ${ST_LIBS})
    if(_sm90a_srcs AND COURSE_HAVE_SM90A)
      add_library(${lib}_sm90a OBJECT ${_sm90a_srcs})
      set_target_properties(${lib}_sm90a PROPERTIES CUDA_ARCHITECTURES OFF)
      target_compile_options(${lib}_sm90a PRIVATE --generate-code=arch=compute_90a,code=sm_90a)
      target_include_directories(${lib}_sm90a PRIVATE ${root})
      target_link_libraries(${lib}_sm90a PRIVATE course_common ${ST_LIBS})
      if(track STREQUAL "exercise")
        target_compile_options(${lib}_sm90a PRIVATE ${COURSE_EXERCISE_CUDA_WARNINGS})
      endif()
      target_sources(${lib} PRIVATE $<TARGET_OBJECTS:${lib}_sm90a>)
      target_compile_definitions(${lib} PRIVATE COURSE_HAVE_SM90A=1)
    endif()
    foreach(used ${ST_USES})
      get_property(_used_prefix GLOBAL PROPERTY COURSE_PREFIX_${used})
      target_link_libraries(${lib} ${_scope} ${_used_prefix}_${track})
    endforeach()
    if(track STREQUAL "exercise")
      # Stubs leave parameters unused; that is expected, not a warning.
      target_compile_options(${lib} ${_scope} $<$<COMPILE_LANGUAGE:CXX>:${COURSE_EXERCISE_WARNINGS}>)
    endif()


    # ---- the trainer -------------------------------------------------------
    if(ST_TRAINER)
      add_executable(${prefix}_train_${track} ${CMAKE_SOURCE_DIR}/stages/${dir}/${ST_TRAINER})
      target_link_libraries(${prefix}_train_${track} PRIVATE ${lib})
      target_compile_options(${prefix}_train_${track} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${COURSE_WARNINGS}>)
    endif()

    # ---- the tests ---------------------------------------------------------
    if(COURSE_BUILD_TESTS AND _test_sources)
      set(exe ${prefix}_tests_${track})
      # Each task's test files (tests/<dir>/task<N>_<M>_*.cpp) are an object library of their own,
      # linked into the stage's test program and into a program of the task alone,
      # ${prefix}_task<N>_<M>_${track}, which is not built by default: the learner's loop
      # (tools/course watch and check) builds and runs it, so that a save recompiles only the
      # tests of the task at hand, not every test of the stage that includes the saved file.
      set(_rest_sources ${_test_sources})
      set(_task_objects "")
      set(_task_programs "")
      # CI (COURSE_UNITY_TESTS) builds no program a task: the stage's program compiles its files
      # in batches, each parsing GoogleTest and the stage's headers once (stage 07's twelve test
      # files: 83 s of compilation one by one, 25 s as one unit, on the 2-core machine).
      set(_split_tasks ${_tasks})
      if(COURSE_UNITY_TESTS)
        set(_split_tasks "")
      endif()
      foreach(task ${_split_tasks})
        string(REPLACE "." "_" _t "${task}")
        set(_files ${_test_sources})
        list(FILTER _files INCLUDE REGEX "/task${_t}_[^/]*\\.cpp$")
        if(NOT _files)
          continue()
        endif()
        list(REMOVE_ITEM _rest_sources ${_files})
        set(_objects ${prefix}_task${_t}_objects_${track})
        add_library(${_objects} OBJECT ${_files})
        list(APPEND _task_objects ${_objects})
        add_executable(${prefix}_task${_t}_${track} EXCLUDE_FROM_ALL $<TARGET_OBJECTS:${_objects}>)
        list(APPEND _task_programs ${prefix}_task${_t}_${track})
      endforeach()
      add_executable(${exe} ${_rest_sources})
      course_unity_tests(${exe})
      foreach(_objects ${_task_objects})
        target_sources(${exe} PRIVATE $<TARGET_OBJECTS:${_objects}>)
      endforeach()
      # What compiles a test file (its objects' targets) and what links a test program.
      foreach(_target ${exe} ${_task_objects})
        target_link_libraries(${_target} PRIVATE ${lib} course_test_support GTest::gtest)
        target_compile_options(${_target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${COURSE_WARNINGS}>)
        if(track STREQUAL "exercise" AND NOT ST_GPU)
          # Every save of a learner's lesson file recompiles the tests of the task at hand, which hold
          # the header-only lesson code of stages 01-03 instantiated (float and double): at -Og that
          # takes a third of the time of -O3 (Task 3.3's tests: 5.7 s instead of 16.6 on a 2-core
          # machine), and they still run in at most 2 s. The solution track keeps the build's level:
          # at -Og its trainer suites, which train in the test process, ran 7 to 14 times longer
          # (Stage02_Trainer 56 s instead of 4.1, Stage03_Trainer 35 s instead of 3.7 to 7.9, on the
          # 2-core machine), more than the compile saves; so do the GPU stages' tests (their CPU
          # references ran up to 7 times longer at -Og, 6 times at -O1). The trainers keep it too.
          target_compile_options(${_target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Og>)
        endif()
        if(ST_TRAINER_SAFETY)
          target_compile_definitions(${_target} PRIVATE COURSE_TEST_STAGE=${ST_NUMBER})
        endif()
      endforeach()
      foreach(_program ${exe} ${_task_programs})
        target_link_libraries(${_program} PRIVATE ${lib} course_test_support GTest::gtest_main)
        if(ST_GPU)
          # A fault of the code under test (an illegal address, a refused launch, a
          # kernel that never returns) fails with one message naming the task, the
          # CUDA error and the compute-sanitizer command that finds the line.
          target_link_libraries(${_program} PRIVATE course_gpu_fault_report)
          # Their trainer tests run the stage's trainer binary of the same track.
          if(ST_TRAINER)
            add_dependencies(${_program} ${prefix}_train_${track})
          endif()
        endif()
      endforeach()
      set(_names "")
      foreach(task ${_tasks})
        string(REPLACE "." "_" _t "${task}")
        set(name "${prefix}/${track}/Task${task}")
        add_test(NAME ${name} COMMAND ${exe} --gtest_filter=*Task${_t}_* --gtest_color=no)
        set_tests_properties(${name} PROPERTIES LABELS "${track};${prefix};task${task}")
        list(APPEND _names ${name})
      endforeach()
      foreach(suite ${_other_suites})
        set(name "${prefix}/${track}/${suite}")
        add_test(NAME ${name} COMMAND ${exe} --gtest_filter=${suite}.*:*/${suite}.* --gtest_color=no)
        set_tests_properties(${name} PROPERTIES LABELS "${track};${prefix}")
        list(APPEND _names ${name})
      endforeach()
      set_tests_properties(${_names} PROPERTIES
        FIXTURES_SETUP gate_${prefix}_${track}
        SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
        TIMEOUT 900)
      if(ST_GPU)
        set_property(TEST ${_names} APPEND PROPERTY LABELS gpu)
      endif()
      if(_previous_gate)
        set_tests_properties(${_names} PROPERTIES FIXTURES_REQUIRED ${_previous_gate}_${track})
      endif()
    endif()
  endforeach()

  # ---- benchmarks (solution track) ----------------------------------------
  file(GLOB _bench_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/benchmarks/${dir}/*.cpp
                                            ${CMAKE_SOURCE_DIR}/benchmarks/${dir}/*.cu)
  if(COURSE_BUILD_BENCHMARKS AND _bench_sources AND "solution" IN_LIST COURSE_TRACKS)
    add_executable(${prefix}_bench ${_bench_sources})
    target_link_libraries(${prefix}_bench PRIVATE ${prefix}_solution benchmark::benchmark)
    target_compile_options(${prefix}_bench PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${COURSE_WARNINGS}>)
  endif()

  set_property(GLOBAL PROPERTY COURSE_PREFIX_${dir} ${prefix})
  set_property(GLOBAL PROPERTY COURSE_PREVIOUS_GATE gate_${prefix})
  set_property(GLOBAL PROPERTY COURSE_TASKS_${dir} "${_tasks}")
  message(STATUS "[course] stage ${dir}: tasks ${_tasks}")
endfunction()

# course_stage_skipped(<dir> <reason>): one line, and nothing built.
function(course_stage_skipped dir reason)
  message(STATUS "[course] stage ${dir}: skipped (${reason})")
endfunction()
