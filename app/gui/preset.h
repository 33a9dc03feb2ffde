// Presets: small JSON files in assets/presets/ that name a problem (and, for the lesson, a
// vector and a block size) plus the view the app opens on.
//
//   { "name": "tiny", "title": "...", "description": "what to look at",
//     "view": "tiles" | "lesson" | "compare" | "bench",
//     "start": "backward" (the first backward step applied) | K (K steps applied; default 0),
//     "problem": { "nq", "nk", "d", "M" (elements or "64KiB"), "br", "bc", "scale",
//                  "seed", "pattern", "q", "k", "v" (.npy paths), "schedule" ("fa1" | "fa2" |
//                  "standard" | "decode"), "splits" (decode's S), "page_size" (decode's KV pages), "causal", "window" ([LEFT, RIGHT], -1 = no limit),
//                  "kv_len", "dropout", "dtype" ("fp32" | "fp16" | "bf16"),
//                  "backward" (true: the backward pass follows, dO from the seed),
//                  the L2 model as `run`'s flags: "l2" (size: "50MiB", bytes), "gpu"
//                  ("h200" | "a100"; alone: its L2 size), "heads", "ncu" (true) },
//     "lesson": { "values": [1, 2, 3, 4], "block": 2 } }
#pragma once
#include "core/l2_cache.h"
#include "core/problem.h"

#include <string>
#include <vector>

namespace flashstep::gui {

struct Preset {
  std::string name, title, description, view = "tiles", path;
  ProblemSpec spec;
  bool backward = false;
  std::optional<L2Config> l2;   // "l2", "gpu", "heads", "ncu"
  bool start_backward = false;  // open at the first backward step (needs "backward")
  int64_t start_step = 0;       // else open with this many steps applied
  std::vector<double> lesson_values{1, 2, 3, 4};
  size_t lesson_block = 2;
};

// "tiny" -> <asset_dir>/presets/tiny.json; a path ending in .json is taken as it is.
// Throws InputError listing the known presets when there is no such file.
std::string preset_path(const std::string& name_or_path, const std::string& asset_dir);
Preset load_preset(const std::string& path);  // throws InputError naming the file and the key
// The same from the file's text (the fuzz target feeds this); `path` is for messages.
Preset parse_preset(const std::string& text, const std::string& path);
std::vector<std::string> preset_names(const std::string& asset_dir);

}  // namespace flashstep::gui
