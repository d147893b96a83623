# The WebAssembly build (the `wasm` preset, Debian's emscripten): the library alone, compiled
# for one thread with 128-bit SIMD, for the browser edition (web/). Emscripten brings its own C
# and C++ libraries, so the host's compiled libraries cannot be linked; the dependencies here
# are the header-only ones, taken from the host's Debian packages without the rest of
# /usr/include (whose C headers would shadow Emscripten's): fmt (as FMT_HEADER_ONLY), nlohmann
# json, stb, and Catch2 v2 for the tests.
set(wasm_include ${CMAKE_BINARY_DIR}/wasm-include)
file(MAKE_DIRECTORY ${wasm_include})
foreach(header_dir fmt nlohmann stb catch2)
  if(NOT EXISTS /usr/include/${header_dir})
    message(FATAL_ERROR "wasm build: /usr/include/${header_dir} is missing (scripts/install-deps.sh)")
  endif()
  file(CREATE_LINK /usr/include/${header_dir} ${wasm_include}/${header_dir} SYMBOLIC)
endforeach()

add_library(fmt::fmt INTERFACE IMPORTED)
target_include_directories(fmt::fmt SYSTEM INTERFACE ${wasm_include})
target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${wasm_include})
add_library(Threads::Threads INTERFACE IMPORTED)  # no threads: kernels/parallel.h
set(STB_INCLUDE_DIR ${wasm_include}/stb)
add_library(Catch2::Catch2 INTERFACE IMPORTED)
target_include_directories(Catch2::Catch2 SYSTEM INTERFACE ${wasm_include})

# Exceptions carry the library's error messages to the page: WebAssembly's own exception
# handling (every current browser has it) rather than Emscripten's JavaScript emulation.
add_compile_options(-msimd128 -fwasm-exceptions)
add_link_options(-fwasm-exceptions)
set(GRADFORMER_NATIVE OFF CACHE BOOL "" FORCE)
set(GRADFORMER_BLAS OFF CACHE BOOL "" FORCE)
