#include "app/gui/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace flashstep::gui {

std::atomic<bool> g_on{false};
std::atomic<long> g_count{0};

namespace {
inline void count() {
  if (g_on.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

void alloc_counter_enable(bool on) { g_on.store(on); }
void alloc_counter_reset() { g_count.store(0); }
long alloc_counter_value() { return g_count.load(); }

void* counted_malloc(size_t size, void*) {
  count();
  return std::malloc(size);
}

void counted_free(void* ptr, void*) { std::free(ptr); }

}  // namespace flashstep::gui

// Replaceable global allocation functions. libstdc++'s array and nothrow forms call these, so
// they are counted too. The sized delete is defined beside the unsized one so that every delete
// of memory from this operator new ends in free(). The aligned forms are left to the library:
// its aligned new and aligned delete pair with each other (and are not counted).
void* operator new(std::size_t size) {
  if (flashstep::gui::g_on.load(std::memory_order_relaxed))
    flashstep::gui::g_count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
