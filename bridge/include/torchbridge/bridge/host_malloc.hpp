// The process's malloc. The torchbridge executable links gperftools' tcmalloc where the build
// found it (cmake/Allocator.cmake): ATen allocates and frees a tensor per op, and on the op-heavy
// programs glibc's malloc cost the host 10-25% more CPU (docs/benchmarks.md, Dec 7). A user may
// also preload another allocator; both functions look at what is loaded, not at how we built.
#pragma once

#include <string_view>

namespace tb::bridge {

// "tcmalloc", "jemalloc", "mimalloc" or "glibc": for the start-up line and --version.
std::string_view malloc_name();

// Gives the allocator's free pages back to the system. The host calls it when it turns idle, so
// that what finished sessions used does not stay in its resident memory; it takes milliseconds, so
// never per op.
void release_free_host_memory();

}  // namespace tb::bridge
