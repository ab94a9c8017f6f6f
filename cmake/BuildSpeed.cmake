# Build speed: what the 2-core machines we build on spend their time on, and
# the means that cut it without changing what is built (scripts/build-times
# measures each of them). None of this changes optimisation: benchmarks build
# with the same -O2 as before.
#
# 1. ccache, when installed: a rebuild of unchanged sources (a CI run after a
#    session, a branch switch) is a cache hit. Its directory is ccache's own
#    (~/.cache/ccache), outside the tree; its base_dir is the tree, so build
#    dirs at the same depth (build/, build-times/) share entries.
# 2. mold (or lld) as the linker: every rebuild relinks the 16 test and
#    program binaries that use the library it touched; mold links with both
#    cores where GNU ld uses one.
# 3. -g1 for RelWithDebInfo: line tables (backtraces, perf, gdb's `bt` with
#    file:line) without full variable info, which was most of each object's
#    size and of the link time.
# 4. Unity builds: a target's sources compiled 32 to a translation unit
#    (test targets too, tests/CMakeLists.txt). Most
#    of a file's compile time was not parsing headers but instantiating and
#    generating the same templates (json, fmt, spdlog, CLI11, gtest) that its
#    neighbours instantiate too; a unity file does that once for its batch.
#    (g++ -ftime-report on one tool file, run by hand: parsing 1% with its
#    headers precompiled, template instantiation 30%, optimising and
#    generating code 67%.) 16 rather than 8 (scripts/build-times, one run
#    each, 2 cores): clean 382 s against 443 s, a touched core .cc 32 s
#    against 8 s, a touched status.h 360 s against 382 s. 32 rather than 16
#    (the same, 2026-12-06): clean 277 s against 362 s, a touched core .cc
#    18 s against 5 s, a touched status.h 255 s against 292 s; most targets
#    are one unity file now, and both cores still have work to the end.
#    Precompiled headers were tried with unity builds and dropped: a
#    unity file of tests took 24 s of CPU with them and 21 s without (timed by
#    hand with time(1), once each, on a busy machine), and
#    GCC 12 then reports -Warray-bounds false positives from inside
#    libstdc++ that it suppresses without them.

option(CLICKATRON_CCACHE "compile through ccache when it is installed" ON)
option(CLICKATRON_UNITY "unity builds: several sources of a target compiled as one" ON)
set(CLICKATRON_UNITY_BATCH 32 CACHE STRING "sources per unity translation unit")
option(CLICKATRON_FAST_LINKER "link with mold or lld when installed" ON)

if(CLICKATRON_CCACHE)
  find_program(CLICKATRON_CCACHE_PROGRAM ccache)
  if(CLICKATRON_CCACHE_PROGRAM)
    set(launcher ${CMAKE_COMMAND} -E env
        "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}"
        ${CLICKATRON_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${launcher})
  endif()
endif()

if(CLICKATRON_FAST_LINKER)
  include(CheckCXXSourceCompiles)
  foreach(linker mold lld)
    set(CMAKE_REQUIRED_LINK_OPTIONS -fuse-ld=${linker})
    check_cxx_source_compiles("int main() { return 0; }" CLICKATRON_LINKER_${linker})
    unset(CMAKE_REQUIRED_LINK_OPTIONS)
    if(CLICKATRON_LINKER_${linker})
      add_link_options(-fuse-ld=${linker})
      message(STATUS "linker: ${linker}")
      break()
    endif()
  endforeach()
endif()

if(CLICKATRON_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${CLICKATRON_UNITY_BATCH})
  # -Wsubobject-linkage is about a class in a header, seen by many
  # translation units, holding a type of an anonymous namespace. A unity file
  # #includes each .cc once, so GCC takes every .cc for a header and warns
  # about each file's private Impl types; the warning says nothing there.
  add_compile_options(-Wno-subobject-linkage)
endif()

set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG")

