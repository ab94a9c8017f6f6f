# Build speed: what the 2-core machines we build on spend their time on, and
# the means that cut it without changing what is built (scripts/build-times
# measures each of them). None of this changes optimisation: benchmarks build
# with the same -O2 as before.
#
# 1. ccache, when installed: a rebuild of unchanged sources (a CI run after a
#    session, a branch switch) is a cache hit. Its directory is ccache's own
#    (~/.cache/ccache), outside the tree. The sloppiness settings are the ones
#    ccache documents for GCC's precompiled headers.
# 2. mold (or lld) as the linker: 16 test and program binaries link against
#    the same static libraries; GNU ld was most of an incremental rebuild.
# 3. -g1 for RelWithDebInfo: line tables (backtraces, perf, gdb's `bt` with
#    file:line) without full variable info, which was most of each object's
#    size and of the link time.
# 4. Precompiled headers: json, fmt, spdlog and the STL reach most translation
#    units, CLI11 the tools and gtest every test; each is parsed once per
#    build instead of once per file. One header set for the product, compiled
#    once in clickatron_pch with exactly the definitions that linking
#    clickatron_core gives (GCC ignores a precompiled header made under other
#    macros, so clickatron_core's own, which has toml++'s, cannot be shared),
#    and one for the tests (clickatron_testutil's).
# ccache's base_dir is the source tree, so build dirs at the same depth
# (build/, build-times/) share its entries.

option(CLICKATRON_CCACHE "compile through ccache when it is installed" ON)
option(CLICKATRON_UNITY "unity builds: several sources of a target compiled as one" ON)
option(CLICKATRON_PCH "precompiled headers" ON)
option(CLICKATRON_FAST_LINKER "link with mold or lld when installed" ON)

if(CLICKATRON_CCACHE)
  find_program(CLICKATRON_CCACHE_PROGRAM ccache)
  if(CLICKATRON_CCACHE_PROGRAM)
    set(launcher ${CMAKE_COMMAND} -E env
        "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
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
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()

set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG")

# The product's header set: included by most files, expensive to parse.
set(CLICKATRON_PCH_HEADERS
  <algorithm> <atomic> <chrono> <cstdint> <cstring> <filesystem> <functional>
  <map> <memory> <mutex> <optional> <string> <string_view> <thread>
  <unordered_map> <utility> <vector>
  <fmt/format.h> <spdlog/spdlog.h> <nlohmann/json.hpp>)

# `target` gets `from`'s precompiled header. Both must be compiled with the
# same definitions (CMake's -Winvalid-pch warns when one is skipped).
function(clickatron_reuse_pch target from)
  if(CLICKATRON_PCH AND TARGET ${target})
    target_precompile_headers(${target} REUSE_FROM ${from})
  endif()
endfunction()
