// Counts heap allocations while enabled: operator new (the app's code and the standard
// library) and ImGui's allocator. The benchmark uses it to show that an idle frame allocates
// nothing.
#pragma once
#include <cstddef>

namespace flashstep::gui {

void alloc_counter_enable(bool on);
void alloc_counter_reset();
long alloc_counter_value();
void* counted_malloc(size_t size, void* user);  // for ImGui::SetAllocatorFunctions
void counted_free(void* ptr, void* user);

}  // namespace flashstep::gui
