// The editor's text fields are char arrays (ImGui edits them in place). A file name or text put
// into one must fit whole: a longer one is an InputError naming the field, never silently cut
// (a cut path would name another file or folder).
#pragma once
#include "core/input_files.h"

#include <cstring>
#include <string>

namespace flashstep::gui {

constexpr size_t kPathField = kMaxPathChars + 1;  // a path field: any path the system accepts

template <size_t N>
void set_field(char (&field)[N], const std::string& text, const char* what) {
  if (text.size() >= N || text.find('\0') != std::string::npos)
    throw InputError(std::string(what) + ": " + std::to_string(text.size()) + " characters, over the " +
                     std::to_string(N - 1) + " the field holds");
  std::memcpy(field, text.c_str(), text.size() + 1);
}

}  // namespace flashstep::gui
