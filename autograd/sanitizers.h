// Whether this build runs under AddressSanitizer: GCC defines __SANITIZE_ADDRESS__, clang
// answers __has_feature(address_sanitizer). The storage pool turns itself off there (so that
// a use after free is still caught), and the memory test reads resident memory differently.
#pragma once

namespace gf {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace gf
