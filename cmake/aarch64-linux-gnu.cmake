# Cross-compiles for 64-bit ARM Linux (a Raspberry Pi 4, an ARM server, Docker on Apple
# silicon) from an x86-64 Debian 12, and runs what it built under qemu-user. Used by the
# aarch64 preset and scripts/test-aarch64.sh, which installs what it needs:
#   g++-aarch64-linux-gnu  the cross compiler, with the C and C++ runtime it links against
#                          in /usr/aarch64-linux-gnu
#   qemu-user              qemu-aarch64 runs one ARM program on this machine
#   libfmt-dev:arm64 ...   ARM builds of the libraries we link, installed beside the x86 ones
#                          by Debian's multiarch (dpkg --add-architecture arm64)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch keeps ARM libraries in /usr/lib/aarch64-linux-gnu and their CMake files in its
# cmake/ folder, which find_package then prefers to the x86 ones.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Look for libraries and headers only in the ARM runtime and the system's own folders (where
# multiarch puts both architectures, each in its own subfolder), and run the build's tools
# (cmake, ninja) from this machine.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest, and catch_discover_tests when it lists the tests at build time, start each test
# program through qemu. The ARM dynamic loader and C library come from libc6:arm64 (which the
# ARM libraries depend on) at their usual places, /lib/ld-linux-aarch64.so.1 and
# /lib/aarch64-linux-gnu, so qemu needs no -L prefix. With -L /usr/aarch64-linux-gnu it would
# take the loader from the cross compiler's runtime and libc.so.6 from libc6:arm64: two builds
# of glibc that must not be mixed (programs that start threads hang, OpenBLAS at load time).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
