# Finds what the course can use and prints one line per feature: found or not,
# and what its absence disables. Nothing here is fatal except the C++ compiler
# and the header-only libraries every trainer needs (CLI11, nlohmann-json).

set(COURSE_FEATURE_LINES "")
macro(course_feature name found what_it_disables)
  if(${found})
    message(STATUS "[course] ${name}: found")
  else()
    message(STATUS "[course] ${name}: NOT found -> ${what_it_disables}")
  endif()
endmacro()

# Header-only libraries and data travel to machines without package managers in
# .carry/include (ignored by git); the Debian locations come first.
set(COURSE_CARRY_INCLUDE ${CMAKE_SOURCE_DIR}/.carry/include)

# ---- warnings --------------------------------------------------------------
set(COURSE_WARNINGS -Wall -Wextra)
if(COURSE_WERROR)
  list(APPEND COURSE_WARNINGS -Werror)
endif()
# GCC 12 in C++20 reports -Wrestrict inside std::string's operator+ (its bug 105651, fixed in
# GCC 13): a false report in the standard library, which -Werror would turn into a failed build.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND COURSE_WARNINGS -Wno-restrict)
endif()
# Exercises leave function bodies as stubs, so their parameters go unused.
set(COURSE_EXERCISE_WARNINGS -Wno-unused-parameter -Wno-unused-variable
    -Wno-unused-but-set-variable -Wno-unused-function -Wno-unused-but-set-parameter)
# The same for nvcc's front end: a kernel whose body is a TODO leaves its constants and
# shared arrays unreferenced (#177: declared but never referenced).
set(COURSE_EXERCISE_CUDA_WARNINGS -diag-suppress=177)

# ---- test programs in batches (COURSE_UNITY_TESTS, CI's presets) ---------------
# A test program's files compiled a few to one translation unit. GCC then takes each file
# for a header and warns that a fixture in its anonymous namespace is the base of a test
# class (-Wsubobject-linkage), a warning about headers that does not apply.
function(course_unity_tests target)
  if(COURSE_UNITY_TESTS)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${COURSE_UNITY_BATCH})
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wno-subobject-linkage>)
  endif()
endfunction()

# ---- optimisation ----------------------------------------------------------
# `#pragma omp simd` in the lesson code marks the reductions the compiler may
# vectorise; -fopenmp-simd honours those pragmas without the OpenMP runtime.
option(COURSE_NATIVE "Compile CPU code for this machine's processor (-march=native)" ON)
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fopenmp-simd>)
if(COURSE_NATIVE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()

# ---- sanitizers ------------------------------------------------------------
set(COURSE_SANITIZER_FLAGS "")
if(COURSE_SANITIZE STREQUAL "address")
  set(COURSE_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
elseif(COURSE_SANITIZE STREQUAL "thread")
  set(COURSE_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT COURSE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "COURSE_SANITIZE must be '', 'address' or 'thread', not '${COURSE_SANITIZE}'")
endif()
# GCC 12 with -fsanitize=address warns "may be used uninitialized" inside the
# standard library's <regex> (std::function members of its automaton): a false
# report of the instrumented code, which -Werror would turn into a failed
# build. The warning stays on in every other build.
if(COURSE_SANITIZE STREQUAL "address" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND COURSE_WARNINGS -Wno-maybe-uninitialized)
endif()
if(COURSE_SANITIZER_FLAGS)
  add_compile_options(${COURSE_SANITIZER_FLAGS})
  add_link_options(${COURSE_SANITIZER_FLAGS})
  message(STATUS "[course] sanitizer build: ${COURSE_SANITIZE} (GPU stages are left out of it)")
endif()

# ---- required header-only libraries ----------------------------------------
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp HINTS ${COURSE_CARRY_INCLUDE})
find_path(NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp HINTS ${COURSE_CARRY_INCLUDE})
if(NOT CLI11_INCLUDE_DIR OR NOT NLOHMANN_JSON_INCLUDE_DIR)
  message(FATAL_ERROR "[course] CLI11 and nlohmann-json are required: apt-get install libcli11-dev nlohmann-json3-dev")
endif()
message(STATUS "[course] CLI11, nlohmann-json: found")

# ---- zlib (gzip-compressed IDX files) --------------------------------------
find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND AND EXISTS ${COURSE_CARRY_INCLUDE}/zlib.h)
  find_library(COURSE_LIBZ NAMES z libz.so.1)
  if(COURSE_LIBZ)
    add_library(ZLIB::ZLIB UNKNOWN IMPORTED)
    set_target_properties(ZLIB::ZLIB PROPERTIES IMPORTED_LOCATION ${COURSE_LIBZ}
                          INTERFACE_INCLUDE_DIRECTORIES ${COURSE_CARRY_INCLUDE})
    set(ZLIB_FOUND TRUE)
  endif()
endif()
set(COURSE_HAVE_ZLIB ${ZLIB_FOUND})
course_feature("zlib" COURSE_HAVE_ZLIB "gzip-compressed IDX files cannot be read (gunzip them first)")

# course_use_zlib(TARGET): where zlib was found, TARGET links it and its code sees COURSE_HAVE_ZLIB=1.
function(course_use_zlib target)
  if(COURSE_HAVE_ZLIB)
    target_link_libraries(${target} PRIVATE ZLIB::ZLIB)
    target_compile_definitions(${target} PRIVATE COURSE_HAVE_ZLIB=1)
  endif()
endfunction()

# ---- stb_image (PNG and JPEG for --dataset folder): header-only ------------
# Debian's libstb-dev puts it in /usr/include/stb; a machine without the
# package builds it from .carry/include/stb/stb_image.h. stb_image_write.h
# (the same package) is only for the tests, which write the pictures they read.
find_path(STB_INCLUDE_DIR stb/stb_image.h PATHS ${COURSE_CARRY_INCLUDE})
set(COURSE_HAVE_STB OFF)
if(STB_INCLUDE_DIR)
  set(COURSE_HAVE_STB ON)
  if(EXISTS ${STB_INCLUDE_DIR}/stb/stb_image_write.h)
    set(COURSE_HAVE_STB_WRITE ON)
  endif()
endif()
course_feature("stb_image" COURSE_HAVE_STB
               "--dataset folder (PNG and JPEG pictures) is not available: apt-get install libstb-dev")

# course_use_stb(TARGET FEATURE): where FEATURE is on (COURSE_HAVE_STB: stb_image.h, COURSE_HAVE_STB_WRITE:
# stb_image_write.h too), TARGET sees stb's headers, as a system include (their code is not ours to warn
# about), and its code sees FEATURE=1.
function(course_use_stb target feature)
  if(${feature})
    target_include_directories(${target} SYSTEM PRIVATE ${STB_INCLUDE_DIR})
    target_compile_definitions(${target} PRIVATE ${feature}=1)
  endif()
endfunction()

# ---- OpenMP ----------------------------------------------------------------
find_package(OpenMP QUIET COMPONENTS CXX)
set(COURSE_HAVE_OPENMP ${OpenMP_CXX_FOUND})
course_feature("OpenMP" COURSE_HAVE_OPENMP "stage 03 (03_openmp) is not built")

# ---- CUDA ------------------------------------------------------------------
option(COURSE_ENABLE_CUDA "Build the GPU stages when a CUDA toolkit is found" ON)
set(COURSE_HAVE_CUDA OFF)
if(COURSE_ENABLE_CUDA AND COURSE_SANITIZE STREQUAL "")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # By default the build is for the GPUs this machine has (nvidia-smi's compute_cap: 7.5 on a
    # T4, 8.6 on an RTX 30, 9.0 on an H100), so a learner compiles one architecture, theirs.
    # Where nvidia-smi lists no GPU the CUDA code can be compiled and read but not run: one
    # architecture (CI's, sm_90) is enough. CI also builds every architecture from sm_75 up
    # (tools/test.d/all-archs). Set CMAKE_CUDA_ARCHITECTURES to choose yourself.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      execute_process(COMMAND nvidia-smi --query-gpu=compute_cap --format=csv,noheader
                      RESULT_VARIABLE _course_smi_rc OUTPUT_VARIABLE _course_smi_out ERROR_QUIET)
      string(REGEX MATCHALL "[0-9]+\\.[0-9]" _course_caps "${_course_smi_out}")
      set(_course_archs "")
      foreach(_cap ${_course_caps})
        string(REPLACE "." "" _arch ${_cap})
        if(_arch LESS 75)
          message(WARNING "[course] a GPU of compute capability ${_cap} is older than CUDA 13 and the course "
                          "support (7.5, Turing, or newer): the GPU stages build but cannot run on it")
        else()
          list(APPEND _course_archs ${_arch})
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _course_archs)
      if(_course_smi_rc EQUAL 0 AND _course_archs)
        set(CMAKE_CUDA_ARCHITECTURES ${_course_archs})
        set(COURSE_CUDA_ARCH_NOTE "; this machine's GPUs: set CMAKE_CUDA_ARCHITECTURES for others")
      else()
        set(CMAKE_CUDA_ARCHITECTURES 90)
        set(COURSE_CUDA_ARCH_NOTE "; no GPU seen, so one architecture: set CMAKE_CUDA_ARCHITECTURES for another")
      endif()
    endif()
    enable_language(CUDA)
    # Line numbers of device code (no change to the code generated): a fault
    # found by compute-sanitizer is then reported at its file and line.
    add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    # CMake 3.25 (Debian 12's) does not yet know nvcc's flag for C++20 (3.26 does): give it.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(COURSE_HAVE_CUDA ON)
    endif()
  endif()
endif()
# Hopper's arch-specific instructions (wgmma) exist only in code built for sm_90a, which
# runs on compute capability 9.0 alone. Sources named *_sm90a.cu are built for it when the
# build targets Hopper at all (cmake/CourseStage.cmake).
set(COURSE_HAVE_SM90A OFF)
set(_sm90a_note "; no sm_90a: stage 07's wgmma kernel is not built")
if(COURSE_HAVE_CUDA AND CMAKE_CUDA_ARCHITECTURES MATCHES "(^|;)90($|;|-real|-virtual)")
  set(COURSE_HAVE_SM90A ON)
  set(_sm90a_note "; sm_90a for the wgmma kernel")
endif()
# A build for a machine without a GPU (CI's) has no use for the exercise track of the GPU stages:
# its tests skip there (tools/prove_exercises.py would call every such task not provable here),
# its trainers cannot run, and its sources are the solution track's outside the holes. The GPU
# machine builds and proves it (tools/gpu/learner_checks.sh, tools/gpu/stage.sh NN), holes and all;
# CI checks that the exercise files are what tools/gen_exercises.py makes of the solutions.
option(COURSE_EXERCISE_GPU_STAGES "The exercise track of the GPU stages (OFF in CI: no GPU to run it)" ON)
if(COURSE_HAVE_CUDA AND NOT COURSE_EXERCISE_GPU_STAGES)
  set(_sm90a_note "${_sm90a_note}; no exercise track of the GPU stages")
endif()
if(COURSE_HAVE_CUDA)
  message(STATUS "[course] CUDA: found (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}"
                 "${_sm90a_note}${COURSE_CUDA_ARCH_NOTE})")
else()
  course_feature("CUDA" COURSE_HAVE_CUDA "stages 04 to 09 (GPU) are not built")
endif()

# ---- cuDNN: under the toolkit, or where Debian/Ubuntu packages put it ------
set(COURSE_HAVE_CUDNN OFF)
if(COURSE_HAVE_CUDA)
  find_path(CUDNN_INCLUDE_DIR cudnn.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu /usr/include)
  find_library(CUDNN_LIBRARY cudnn
    HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu /usr/lib)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    set(COURSE_HAVE_CUDNN ON)
    add_library(course_cudnn INTERFACE)
    target_include_directories(course_cudnn INTERFACE ${CUDNN_INCLUDE_DIR})
    target_link_libraries(course_cudnn INTERFACE ${CUDNN_LIBRARY})
    message(STATUS "[course] cuDNN: found (${CUDNN_LIBRARY})")
  endif()
endif()
if(NOT COURSE_HAVE_CUDNN)
  course_feature("cuDNN" COURSE_HAVE_CUDNN "stages 06 (06_cudnn), 08 (08_fused) and 09 (09_multi_gpu) are not built: install cuDNN 9 for CUDA 13 (NVIDIA's apt repository: cudnn9-cuda-13)")
endif()

# ---- NCCL (stage 09): under the toolkit, a Debian/Ubuntu package, or anywhere
# COURSE_NCCL_ROOT (include/ and lib/) or NCCL_INCLUDE_DIR and NCCL_LIBRARY say.
# PyTorch's wheels ship the library alone as libnccl.so.2 (nvidia/nccl/lib),
# hence that name too.
set(COURSE_HAVE_NCCL OFF)
set(COURSE_NCCL_ROOT "" CACHE PATH "Where NCCL is installed (a folder with include/nccl.h and lib/libnccl.so*)")
if(COURSE_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS ${COURSE_NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu /usr/include)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${COURSE_NCCL_ROOT}/lib ${COURSE_NCCL_ROOT}/lib64 ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu /usr/lib)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(COURSE_HAVE_NCCL ON)
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_version REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE "[^0-9;]" "" _nccl_version "${_nccl_version}")
    string(REPLACE ";" "." _nccl_version "${_nccl_version}")
    add_library(course_nccl INTERFACE)
    target_include_directories(course_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(course_nccl INTERFACE ${NCCL_LIBRARY})
    message(STATUS "[course] NCCL: found (${NCCL_LIBRARY}, header ${_nccl_version} in ${NCCL_INCLUDE_DIR})")
  endif()
endif()
if(NOT COURSE_HAVE_NCCL)
  course_feature("NCCL" COURSE_HAVE_NCCL
                 "stage 09 (09_multi_gpu) is not built: install NCCL (NVIDIA's apt repository: libnccl-dev), or set COURSE_NCCL_ROOT, or NCCL_INCLUDE_DIR and NCCL_LIBRARY")
endif()

# ---- tests, benchmarks, docs -----------------------------------------------
if(COURSE_BUILD_TESTS)
  find_package(GTest QUIET)
  course_feature("GoogleTest" GTest_FOUND "no tests are built")
  if(NOT GTest_FOUND)
    set(COURSE_BUILD_TESTS OFF)
  endif()
endif()
if(COURSE_BUILD_BENCHMARKS)
  find_package(benchmark QUIET)
  course_feature("Google Benchmark" benchmark_FOUND "no benchmarks are built")
  if(NOT benchmark_FOUND)
    set(COURSE_BUILD_BENCHMARKS OFF)
  endif()
endif()
find_package(Doxygen QUIET)
course_feature("Doxygen" DOXYGEN_FOUND "the 'docs' target is not available")
