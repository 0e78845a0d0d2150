# course_use_ccache(BASE): compile C, C++ and CUDA through ccache where it is installed (Debian: ccache) and
# COURSE_CCACHE is on (the default), unless the configure line names a launcher. BASE is the course's root:
# CCACHE_BASEDIR makes the paths under it count relative to it, so another clone's build hits too;
# CCACHE_NOHASHDIR keeps the build folder's path out of the hash of a build with debug information (the
# asan preset's -g1, the fuzz targets' RelWithDebInfo). The main build and the fuzz project both call it.
option(COURSE_CCACHE "Compile through ccache where it is installed" ON)
find_program(COURSE_CCACHE_PROGRAM ccache)

macro(course_use_ccache base)
  if(COURSE_CCACHE AND COURSE_CCACHE_PROGRAM)
    foreach(_lang C CXX CUDA)
      if(NOT CMAKE_${_lang}_COMPILER_LAUNCHER)
        set(CMAKE_${_lang}_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${base} CCACHE_NOHASHDIR=1
            ${COURSE_CCACHE_PROGRAM})
      endif()
    endforeach()
    message(STATUS "[course] compiler cache: ${COURSE_CCACHE_PROGRAM} (COURSE_CCACHE=OFF compiles without it)")
  endif()
endmacro()
