#include "torchbridge/bridge/host_malloc.hpp"

#include <dlfcn.h>
#include <malloc.h>

namespace tb::bridge {

namespace {
// Each allocator is recognised by a symbol only it exports (the global scope holds the
// executable's libraries and any LD_PRELOAD, in the order malloc resolves in).
void* loaded(const char* symbol) {
  return ::dlsym(RTLD_DEFAULT, symbol);
}
}  // namespace

std::string_view malloc_name() {
  static const std::string_view name = [] {
    if (loaded("MallocExtension_ReleaseFreeMemory")) return std::string_view("tcmalloc");
    if (loaded("mallctl")) return std::string_view("jemalloc");
    if (loaded("mi_version")) return std::string_view("mimalloc");
    return std::string_view("glibc");
  }();
  return name;
}

void release_free_host_memory() {
  using Release = void (*)();
  static const auto tcmalloc_release =
      reinterpret_cast<Release>(loaded("MallocExtension_ReleaseFreeMemory"));
  if (tcmalloc_release) {
    tcmalloc_release();
  } else if (malloc_name() == "glibc") {
    ::malloc_trim(0);
  }
  // jemalloc and mimalloc return free pages on their own timers.
}

}  // namespace tb::bridge
