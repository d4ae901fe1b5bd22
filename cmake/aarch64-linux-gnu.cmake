# Cross-compiling for 64-bit ARM Linux (Kunpeng) with Debian's g++-aarch64-linux-gnu; programs built
# here (the tests, GoogleTest's test discovery) run under qemu-aarch64 with the target's libraries.
# tools/aarch64.sh uses it; AG_AARCH64_ROOTS (a CMake list) adds prefixes with more arm64 libraries
# (its GoogleTest build) to the target search path.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(AG_AARCH64_SYSROOT /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH ${AG_AARCH64_SYSROOT} ${AG_AARCH64_ROOTS})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# try_compile projects see the same roots
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES AG_AARCH64_ROOTS)

find_program(AG_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(AG_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${AG_QEMU_AARCH64} -L ${AG_AARCH64_SYSROOT})
endif()
