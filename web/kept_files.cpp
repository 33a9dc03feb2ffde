// The files opened from the computer, kept between visits (web/kept_files.h).
#include "web/kept_files.h"

#include "app/gui/text_field.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace flashstep::web {

namespace {

// The kinds a view keeps, in KeptFiles::kept_'s order.
constexpr gui::LocalFile kKept[4] = {gui::LocalFile::bench, gui::LocalFile::compare_o, gui::LocalFile::compare_lse,
                                     gui::LocalFile::dram};
constexpr size_t kMaxManifestBytes = 64 * 1024;  // four paths; anything larger is not the page's

int kept_index(gui::LocalFile what) {
  for (int k = 0; k < 4; ++k)
    if (kKept[k] == what) return k;
  return -1;
}

bool under(const std::string& path, const std::string& folder) {
  return path.size() > folder.size() + 1 && path.compare(0, folder.size(), folder) == 0 && path[folder.size()] == '/' &&
         path.find("/../") == std::string::npos;
}

// Removes the files under `folder` that `keep` does not name, then the folders left empty.
// Returns whether anything was removed.
bool remove_others(const std::string& folder, const std::vector<std::string>& keep) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return false;
  std::vector<fs::path> files, dirs;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path());
    else if (std::find(keep.begin(), keep.end(), it->path().string()) == keep.end()) files.push_back(it->path());
  }
  bool removed = false;
  for (const fs::path& f : files) removed |= fs::remove(f, ec);
  std::sort(dirs.rbegin(), dirs.rend());  // the deepest first
  for (const fs::path& d : dirs)
    if (fs::is_empty(d, ec)) removed |= fs::remove(d, ec);
  return removed;
}

std::string read_small(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(kMaxManifestBytes + 1, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(size_t(in.gcount()));
  if (text.size() > kMaxManifestBytes) throw std::runtime_error("larger than the page writes");
  return text;
}

}  // namespace

const char* local_file_name(gui::LocalFile what) {
  switch (what) {
    case gui::LocalFile::bench: return "bench";
    case gui::LocalFile::compare_o: return "compare-o";
    case gui::LocalFile::compare_lse: return "compare-lse";
    case gui::LocalFile::trace: return "trace";
    case gui::LocalFile::input_q: return "input-q";
    case gui::LocalFile::input_k: return "input-k";
    case gui::LocalFile::input_v: return "input-v";
    case gui::LocalFile::dram: return "dram";
  }
  return "";
}

std::vector<std::string> KeptFiles::restore(gui::AppState& s, bool* changed) {
  std::vector<std::string> log;
  const std::string manifest = root_ + "/kept.json";
  std::error_code ec;
  bool manifest_ok = true;
  if (fs::is_regular_file(manifest, ec)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(read_small(manifest));
      if (!j.is_object()) throw std::runtime_error("not a JSON object");
      for (int k = 0; k < 4; ++k) {
        const char* name = local_file_name(kKept[k]);
        if (!j.contains(name)) continue;
        const nlohmann::json& v = j[name];
        const std::string path = v.is_string() ? v.get<std::string>() : "";
        if (!under(path, root_ + "/" + name)) {
          log.push_back(std::string("the kept ") + name + " entry is not a file of " + root_ + "/" + name + ": dropped");
          manifest_ok = false;
        } else if (!fs::is_regular_file(path, ec)) {
          log.push_back("the kept " + path + " is gone: not opened");
          manifest_ok = false;
        } else {
          kept_[k] = path;
        }
      }
    } catch (const std::exception& e) {
      log.push_back(manifest + " is not readable (" + std::string(e.what()) + "): the kept files are dropped");
      manifest_ok = false;
    }
  }
  // Each through the checks a fresh upload goes through; a failure leaves the view as the link
  // opened it, with the view's one-line error, and the file stays kept (it may fit another link).
  if (!kept_[0].empty() && !s.bench.load(kept_[0])) log.push_back(s.bench.error);
  if (!kept_[3].empty()) {
    gui::set_field(s.dram.path, kept_[3], "DRAM file");
    s.load_dram();
    if (!s.dram.error.empty()) {
      log.push_back(s.dram.error);
      s.dram.path[0] = '\0';
    }
  }
  gui::CompareState& c = s.compare;
  if (!kept_[2].empty()) gui::set_field(c.lse_path, kept_[2], "lse path");
  if (!kept_[1].empty()) {
    gui::set_field(c.o_path, kept_[1], "O path");
    s.load_compare();
    if (!c.error.empty()) {
      log.push_back(c.error);
      c.o_path[0] = c.lse_path[0] = '\0';
    }
  } else if (c.lse_path[0]) {
    c.message = "lse chosen: now choose the O file";
  }
  std::vector<std::string> keep(std::begin(kept_), std::end(kept_));
  keep.push_back(manifest);
  *changed = remove_others(root_, keep);
  if (!manifest_ok) {
    save();
    *changed = true;
  }
  return log;
}

bool KeptFiles::note_loaded(const gui::AppState& s, gui::LocalFile what, const std::string& path) {
  const int k = kept_index(what);
  if (k < 0) return false;  // a trace or an input: for this visit (the link names the run)
  const gui::CompareState& c = s.compare;
  const bool took = what == gui::LocalFile::bench         ? s.bench.path == path && s.bench.error.empty()
                    : what == gui::LocalFile::compare_o   ? c.o_path == path
                    : what == gui::LocalFile::compare_lse ? c.lse_path == path
                                                          : s.dram.path == path;
  std::error_code ec;
  if (!took) return fs::remove(path, ec);  // refused: no field names it
  kept_[k] = path;
  remove_others(root_ + "/" + local_file_name(what), {path});
  save();
  return true;
}

void KeptFiles::forget(gui::AppState& s) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(root_, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    fs::remove_all(it->path(), ec);
  for (std::string& k : kept_) k.clear();
  auto names_root = [&](const std::string& text) { return text.find(root_ + "/") != std::string::npos; };
  if (names_root(s.bench.path) || names_root(s.bench.error)) {
    s.bench.error.clear();
    if (names_root(s.bench.path)) s.bench.load(s.asset_dir + "/bench/h200.json");
  }
  gui::CompareState& c = s.compare;
  if (names_root(c.o_path) || names_root(c.lse_path) || names_root(c.error)) {
    gui::CompareState none;
    none.tolerance = c.tolerance;
    none.version = c.version + 1;  // the heatmap lets go of the old O
    c = std::move(none);
  }
  if (names_root(s.dram.path) || names_root(s.dram.error)) s.dram = gui::DramState{};
  if (names_root(s.snapshots.dir)) {  // an uploaded snapshot folder: its files are gone too
    gui::SnapshotCompare none;
    none.version = s.snapshots.version + 1;
    s.snapshots = std::move(none);
  }
  gui::ProblemForm& f = s.form;
  for (char* field : {f.q_path, f.k_path, f.v_path})
    if (names_root(field)) field[0] = '\0';
  if (!f.q_path[0] && !f.k_path[0] && !f.v_path[0]) f.use_files = false;
  f.validate();
  if (names_root(s.apply_error)) s.apply_error.clear();
}

int KeptFiles::count() const {
  return int(std::count_if(std::begin(kept_), std::end(kept_), [](const std::string& k) { return !k.empty(); }));
}

void KeptFiles::save() const {
  const std::string manifest = root_ + "/kept.json";
  nlohmann::json j = nlohmann::json::object();
  for (int k = 0; k < 4; ++k)
    if (!kept_[k].empty()) j[local_file_name(kKept[k])] = kept_[k];
  std::error_code ec;
  if (j.empty()) {
    fs::remove(manifest, ec);
    return;
  }
  fs::create_directories(root_, ec);
  std::ofstream(manifest, std::ios::binary | std::ios::trunc) << j.dump();
}

}  // namespace flashstep::web
