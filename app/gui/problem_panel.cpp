// The problem panel: the editor (presets, sizes, M, blocks, masks, dropout, storage type, inputs),
// validated as typed, and the Export tab.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"
#include "core/checked.h"

#include <imgui_internal.h>  // the tab bar's tabs as drawn (problem_tabs_cut)

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace flashstep::gui {

namespace {

void FieldError(const ProblemForm& f, Field which) {
  if (f.error_field == which && !f.error.empty()) {
    ImGui::Indent();
    ErrorText(f.error);
    ImGui::Unindent();
  }
}

// A labelled field's label, with its width fitted to the column (FitLabel): at least 4 font
// heights beside the label, else the label above.
const char* fit(const char* label, float preferred) {
  const FittedLabel f = FitLabel(label, preferred, ImGui::GetFontSize() * 4);
  ImGui::SetNextItemWidth(f.width);
  return f.label;
}

// The L2 model's fields, as `run --l2 SIZE --gpu NAME --heads H --ncu`.
bool DrawL2Fields(ProblemForm& f) {
  bool changed = ImGui::Checkbox(FitToggle({"L2 model (DRAM bytes)###l2", "L2 model###l2", "L2###l2"}), &f.l2);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("An LRU L2 between HBM and SRAM, with the GPU's blocks in flight: the memory panel\n"
                      "adds the DRAM bytes beside the paper's HBM bytes (docs/l2-model.md). Forward only.");
  if (!f.l2) return changed;
  ImGui::Indent();
  if (ImGui::Combo(fit("GPU", ImGui::GetFontSize() * 5), &f.gpu, kGpuNames, 2)) changed = true;
  SameLineIfWidthFits(ImGui::GetFontSize() * 5 + ImGui::CalcTextSize("L2 size").x);
  changed |= ImGui::InputText(fit("L2 size", ImGui::GetFontSize() * 5), f.l2_size, sizeof f.l2_size);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Bytes, or with KiB / MiB / GiB; empty: the GPU's own (h200 50MiB, a100 40MiB)");
  changed |= ImGui::InputScalar(fit("heads", ImGui::GetFontSize() * 5), ImGuiDataType_S64, &f.heads);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Heads (B x H) the GPU runs in the same kernels: they share the L2");
  SameLineIfFits("as ncu");
  changed |= ImGui::Checkbox("as ncu", &f.ncu);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Also count as Nsight Compute does: the L2 emptied before each kernel,\n"
                      "write-backs between kernels not counted (compare with a measurement)");
  FieldError(f, Field::l2);
  ImGui::Unindent();
  return changed;
}

void DrawProblemTab(AppState& s) {
  ProblemForm& f = s.form;
  // The combo keeps the preset's whole name: where it would be cut beside the label ("backwa",
  // "l2-fa1-v" at 1024x768, font scale 2), the label goes above it.
  const char* preset = s.preset_name.empty() ? "(edited problem)" : s.preset_name.c_str();
  const float whole = ImGui::CalcTextSize(preset).x + 2 * ImGui::GetStyle().FramePadding.x + ImGui::GetFrameHeight();
  const FittedLabel preset_label = FitLabel("preset", std::max(ImGui::GetFontSize() * 10, whole), whole);
  ImGui::SetNextItemWidth(preset_label.width);
  // A name wider than the whole column with the arrow ("decode-paged" at font scale 2 in a
  // 1024x768 window) gets the arrow's room: the combo opens on a click all the same.
  const bool no_arrow = whole > preset_label.width;
  s.preset_combo_cut_px = whole - preset_label.width - (no_arrow ? ImGui::GetFrameHeight() : 0.0f);
  if (ImGui::BeginCombo(preset_label.label, preset, no_arrow ? ImGuiComboFlags_NoArrowButton : 0)) {
    for (const std::string& n : s.preset_names)
      if (ImGui::Selectable(n.c_str())) {
        try {
          s.load_preset(n);
        } catch (const InputError& e) {
          s.apply_error = e.what();
        }
      }
    ImGui::EndCombo();
  }
  if (!s.preset_title.empty()) DimText(s.preset_title.c_str());
  if (!s.preset_description.empty()) DimText(s.preset_description.c_str());
  bool changed = false;
  const float w = ImGui::GetFontSize() * 8, least = ImGui::GetFontSize() * 4;
  ImGui::PushItemWidth(w);
  // "fa1 (Algorithm 1)", ...: one item per schedule in the registry, made once.
  static const std::vector<std::string> kScheduleItems = [] {
    std::vector<std::string> items;
    for (const ScheduleInfo* si : schedules()) items.push_back(std::string(si->name) + " (" + si->paper_name + ")");
    return items;
  }();
  const int sched = std::clamp(schedule_column(f.schedule), 0, int(kScheduleItems.size()) - 1);
  // The closed field shows "fa2 (FlashAttention-2)" where it fits, else the schedule's name alone.
  const FittedLabel sl = FitLabel("schedule", ImGui::GetFontSize() * 15, ImGui::GetFontSize() * 4);
  ImGui::SetNextItemWidth(sl.width);
  const float preview_w = sl.width - ImGui::GetFrameHeight() - 2 * ImGui::GetStyle().FramePadding.x;
  if (ImGui::BeginCombo(sl.label, LongestFitting(preview_w, {kScheduleItems[size_t(sched)].c_str(), schedules()[size_t(sched)]->name}))) {
    for (size_t k = 0; k < kScheduleItems.size(); ++k)
      if (ImGui::Selectable(kScheduleItems[k].c_str(), int(k) == sched)) {
        f.schedule = kSchedules[k];
        changed = true;
      }
    ImGui::EndCombo();
  }
  // Two numbers on one line under one label (Nq, Nk; Br, Bc; the window).
  auto pair = [&](const char* id_a, int64_t* a, const char* label_b, int64_t* b) {
    const FittedLabel fl = FitLabel(label_b, w, least);
    const float half = (fl.width - ImGui::GetStyle().ItemInnerSpacing.x) * 0.5f;
    label_b = fl.label;
    ImGui::SetNextItemWidth(half);
    bool c = ImGui::InputScalar(id_a, ImGuiDataType_S64, a);
    ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
    ImGui::SetNextItemWidth(half);
    c |= ImGui::InputScalar(label_b, ImGuiDataType_S64, b);
    return c;
  };
  if (!f.use_files) {
    changed |= pair("##nq", &f.nq, "Nq, Nk (queries, keys)", &f.nk);
    FieldError(f, Field::nq);
    FieldError(f, Field::nk);
    changed |= ImGui::InputScalar(fit("d (head dim)", w), ImGuiDataType_S64, &f.d);
    FieldError(f, Field::d);
  }
  if (ImGui::InputScalar(fit("M (elements)", w), ImGuiDataType_S64, &f.M)) {
    std::snprintf(f.M_kib, sizeof f.M_kib, "%g", double(f.M) * 4.0 / 1024.0);
    changed = true;
  }
  FieldError(f, Field::M);
  std::string kib_error;
  if (ImGui::InputText(fit("M (KiB of fp32)", w), f.M_kib, sizeof f.M_kib)) {
    // A decimal number, then optionally spaces and "KiB" or "k" (strtod alone would read 0x10).
    const std::string text = f.M_kib;
    const size_t num_end = std::min(text.size(), text.find_first_not_of("0123456789.eE+-"));
    size_t unit_at = num_end;
    while (unit_at < text.size() && text[unit_at] == ' ') ++unit_at;
    const std::string unit_text = text.substr(unit_at);
    double kib = 0;
    bool number = true;
    try {
      kib = checked::parse_double(text.substr(0, num_end), "M");
    } catch (const InputError&) {
      number = false;
    }
    const bool unit = unit_text.empty() || unit_text == "KiB" || unit_text == "k";
    const double elems = kib * 256.0;
    if (!number || !unit || !(kib > 0) || elems > 1e15) {
      f.error = "M in KiB must be a positive number, as in 64 or 0.25";
      f.error_field = Field::M_kib;
    } else if (elems != std::floor(elems)) {
      f.error = "M in KiB must be a whole number of 4-byte elements (a multiple of 1/256 KiB)";
      f.error_field = Field::M_kib;
    } else {
      f.M = int64_t(elems);
      changed = true;
    }
  }
  FieldError(f, Field::M_kib);
  changed |= pair("##br", &f.br, "Br, Bc (0 = paper)", &f.bc);
  FieldError(f, Field::br);
  changed |= ImGui::Checkbox(FitToggle({"tau = 1/sqrt(d)###tau1", "1/sqrt(d)###tau1"}), &f.default_scale);
  if (!f.default_scale) {
    ImGui::SameLine();
    changed |= ImGui::InputDouble(fit("tau", ImGui::GetFontSize() * 6), &f.scale, 0, 0, "%.6g");
  }
  FieldError(f, Field::scale);
  changed |= ImGui::Checkbox(FitToggle({"causal mask###causal", "causal###causal"}), &f.options.mask.causal);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Bottom-right aligned when Nq != Nk: the last query sees the last key");
  changed |= pair("##wl", &f.options.mask.window_left, "window L, R (-1 none)", &f.options.mask.window_right);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Sliding window: row r keeps keys [r + Nk - Nq - LEFT, r + Nk - Nq + RIGHT]; -1 = no limit");
  FieldError(f, Field::window);
  changed |= ImGui::InputScalar(fit("key length (-1 all)", w), ImGuiDataType_S64, &f.options.mask.kv_len);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Key padding: only the first KV_LEN keys are valid (0..Nk; -1 = no padding)");
  FieldError(f, Field::kv_len);
  changed |= ImGui::InputDouble(fit("dropout p", w), &f.options.dropout, 0, 0, "%.4g");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("P~_ij entries dropped with probability p in [0, 1) (Philox keyed by the seed)");
  FieldError(f, Field::dropout);
  static const char* const kDtypeItems[4] = {"fp32", "fp16", "bf16", "fp8"};
  int dt = int(f.options.dtype);
  if (ImGui::Combo(fit("storage (HBM)", w), &dt, kDtypeItems, 4)) {
    f.options.dtype = Dtype(std::clamp(dt, 0, 3));
    if (f.options.dtype != Dtype::fp8) {  // the scale and the rotation belong to fp8
      f.options.fp8_scale = Fp8Scale::none;
      f.options.rotate = false;
    }
    changed = true;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Q, K, V, O (and S, P in Algorithm 0) stored in this type; arithmetic in float32.\n"
                      "fp8: Q, K, V in e4m3 with float32 scales, O in bf16 (fa1, fa2, decode; docs/fp8.md)");
  FieldError(f, Field::dtype);
  if (f.options.dtype == Dtype::fp8) {
    bool per_block = f.options.fp8_scale == Fp8Scale::per_block;
    if (ImGui::Checkbox(FitToggle({"per-block scales###perblock", "per block###perblock"}), &per_block)) {
      f.options.fp8_scale = per_block ? Fp8Scale::per_block : Fp8Scale::per_tensor;
      changed = true;
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("One scale per Q block (Br rows) and K, V block (Bc rows), else one per tensor");
    changed |= ImGui::Checkbox(FitToggle({"rotate Q, K (Hadamard)###rotate", "rotate Q, K###rotate", "rotate###rotate"}), &f.options.rotate);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Incoherent processing: Q and K times a seeded random Hadamard matrix before quantisation (d a power of two)");
  }
  changed |= ImGui::Checkbox(FitToggle({"backward pass###bwd", "backward###bwd"}), &f.backward);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Then run the schedule's backward (Algorithm 4, FA2's Algorithm 2, Algorithm 3) on dO from the seed");
  changed |= DrawL2Fields(f);
  changed |= ImGui::InputScalar(fit("seed", w), ImGuiDataType_U64, &f.seed);
  FieldError(f, Field::seed);
  changed |= ImGui::Checkbox(FitToggle({"inputs from .npy files###npy", ".npy inputs###npy", ".npy###npy"}), &f.use_files);
  if (!f.use_files) {
    const auto& pats = input_patterns();
    if (ImGui::BeginCombo(fit("pattern", w), pats[size_t(std::clamp(f.pattern, 0, int(pats.size()) - 1))].c_str())) {
      for (size_t k = 0; k < pats.size(); ++k)
        if (ImGui::Selectable(pats[k].c_str(), int(k) == f.pattern)) {
          f.pattern = int(k);
          changed = true;
        }
      ImGui::EndCombo();
    }
    FieldError(f, Field::pattern);
  } else {
    ImGui::PopItemWidth();
    // The web page: "Open..." after each field takes the file from the user's computer.
    const char* kOpen = "Open...";
    const float open_w = s.pick_local_file ? ButtonWidth(kOpen) + ImGui::GetStyle().ItemSpacing.x : 0.0f;
    ImGui::PushItemWidth(-ImGui::GetFontSize() * 2 - open_w);
    auto file_field = [&](const char* label, char (&path)[kPathField], LocalFile what) {
      const bool edited = ImGui::InputText(label, path, sizeof path);
      if (s.pick_local_file) {
        ImGui::SameLine();
        ImGui::PushID(label);
        if (ImGui::Button(kOpen)) s.pick_local_file(what);
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("A .npy file from this computer: float32 or float64, %s", what == LocalFile::input_q ? "Nq x d" : "Nk x d");
        ImGui::PopID();
      }
      return edited;
    };
    changed |= file_field("Q", f.q_path, LocalFile::input_q);
    changed |= file_field("K", f.k_path, LocalFile::input_k);
    changed |= file_field("V", f.v_path, LocalFile::input_v);
    FieldError(f, Field::files);
  }
  ImGui::PopItemWidth();
  if (changed) f.validate();
  if (f.error_field == Field::none && !f.error.empty()) ErrorText(f.error);
  if (!f.preview.empty() && f.error.empty()) DimText(f.preview.c_str());

  const bool ok = f.error.empty();
  if (!ok) ImGui::BeginDisabled();
  if (ImGui::Button(FitButton({"Apply (new run)###apply", "Apply###apply"}))) s.apply_form();
  if (!ok) ImGui::EndDisabled();
  SameLineIfButtonFits("Revert");
  if (ImGui::Button(FitButton({"Revert fields###revert", "Revert###revert"})) && s.run) {
    f.from_spec(s.run->spec);
    f.backward = s.run->backward;
    f.set_l2(s.run->l2);
    f.validate();
  }
  if (!s.apply_error.empty()) {
    ErrorText("Not applied: " + s.apply_error);
    DimText("The current run is kept.");
  }
  // The web page: a trace saved by the Python module, from the user's computer (last in the tab,
  // so that the fields above stay where they are on the desktop).
  if (s.pick_local_file) {
    ImGui::Separator();
    if (ImGui::Button("Open a saved trace...")) s.pick_local_file(LocalFile::trace);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("A trace written by the Python module (save_trace, a puzzle's trace.save),\n"
                        "stepped here as `flashstep gui --trace FILE` steps it on the desktop");
  }
}

void DrawExportTab(AppState& s) {
  DimText("Files are written next to this path, with the format's extension.");
  ImGui::SetNextItemWidth(-1);
  ImGui::InputText("##base", s.export_base, sizeof s.export_base);
  if (ImGui::Button("PNG screenshot")) s.export_as(ExportKind::png);
  SameLineIfButtonFits("Trace JSON");
  if (ImGui::Button("Trace JSON")) s.export_as(ExportKind::json);
  SameLineIfButtonFits("CSV");
  if (ImGui::Button("CSV")) s.export_as(ExportKind::csv);
  SameLineIfButtonFits("Chrome trace");
  if (ImGui::Button("Chrome trace")) s.export_as(ExportKind::chrome);
  // A HiDPI web page draws ratio x ratio screen pixels for each of the layout's; the PNG has the
  // layout's size (as the page looks at 100% zoom on an ordinary screen) unless this asks for all.
  if (s.display.pixel_ratio != 1.0f) {
    char label[64];
    std::snprintf(label, sizeof label, "PNG at the screen's pixels (%gx)", double(s.display.pixel_ratio));
    ImGui::Checkbox(label, &s.export_device_pixels);
  }
  if (!s.export_message.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(s.export_message.c_str());
    ImGui::PopTextWrapPos();
  }
  DimText("Chrome traces open in Perfetto (ui.perfetto.dev) or chrome://tracing.");
}

}  // namespace

void DrawProblemPanel(AppState& s, const Layout& l) {
  if (s.row) return DrawRowProblemPanel(s, l);
  BeginFitted(s, "Problem", l.problem_pos, l.problem_size, kPanelFlags);
  // The two pages as tabs where both labels fit whole, else a combo (font scale 2.5 at 1024x768:
  // ImGui shortened the tabs to "Prob..." and "Exp..."). s.problem_page keeps the page across both.
  static const char* const pages[] = {"Problem", "Export"};
  const ImGuiStyle& st = ImGui::GetStyle();
  const float avail = ImGui::GetContentRegionAvail().x;
  float tabs_w = 0, widest = 0;
  for (const char* page : pages) {
    tabs_w += ImGui::CalcTextSize(page).x + 2 * st.FramePadding.x + 1 + st.ItemInnerSpacing.x;
    widest = std::max(widest, ImGui::CalcTextSize(page).x);
  }
  static bool picked_by_combo = false;  // the tab bar selects s.problem_page again when it comes back
  auto draw_page = [&](int page) {
    if (page == 0) DrawProblemTab(s);
    else if (s.run) DrawExportTab(s);
  };
  s.problem_tabs_cut = 0;
  s.problem_combo = tabs_w > avail;
  if (s.problem_combo) {
    ImGui::SetNextItemWidth(std::min(avail, widest + ImGui::GetFrameHeight() + 2 * st.FramePadding.x));
    ImGui::Combo("##problem_page", &s.problem_page, pages, 2);
    picked_by_combo = true;
    ImGui::Separator();
    draw_page(s.problem_page);
  } else if (ImGui::BeginTabBar("problem_tabs")) {
    const bool force = picked_by_combo;
    picked_by_combo = false;
    for (int page = 0; page < 2; ++page) {
      const ImGuiTabItemFlags f = force && s.problem_page == page ? ImGuiTabItemFlags_SetSelected : 0;
      if (ImGui::BeginTabItem(pages[page], nullptr, f)) {
        if (!force) s.problem_page = page;
        draw_page(page);
        ImGui::EndTabItem();
      }
    }
    // For --dump-state: the tabs ImGui drew narrower than their labels (cut to "Prob...").
    for (const ImGuiTabItem& t : ImGui::GetCurrentContext()->CurrentTabBar->Tabs)
      if (t.Width + 0.5f < t.ContentWidth) ++s.problem_tabs_cut;
    ImGui::EndTabBar();
  }
  s.problem_overflow_px = PanelOverflowPx();
  ImGui::End();
}

}  // namespace flashstep::gui
