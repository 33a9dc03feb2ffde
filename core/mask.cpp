#include "core/mask.h"

namespace flashstep {

std::string Mask::describe() const {
  if (!any()) return "none";
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (causal) add("causal (bottom-right aligned)");
  if (window_left >= 0 || window_right >= 0)
    add("window (" + std::to_string(window_left) + ", " + std::to_string(window_right) + ")");
  if (kv_len >= 0) add("keys padded beyond " + std::to_string(kv_len));
  return s;
}

}  // namespace flashstep
