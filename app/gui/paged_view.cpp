// The paged KV cache of a decode run (--page-size P, core/paged_kv.h) above the tiles: the
// logical pages in key order, coloured by the split whose K/V blocks hold them; the block table
// (one int32 per logical page); and the physical pages in HBM, where the same colours lie
// scattered. The pages of the current step's K/V block are outlined in both rows and joined by
// lines: the block is gathered from those scattered pages through the table (FD L6). Every
// number comes from the trace: the table is core's page_table for the run's seed, the current
// pages the step's own `pages`.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"
#include "core/schedules/decode/decode.h"
#include "core/paged_kv.h"

#include <cstdio>

namespace flashstep::gui {

namespace {

// The table and its inverse for the shown run, rebuilt only when the run changes (an idle
// frame allocates nothing).
struct PagedLayout {
  uint64_t run_version = ~uint64_t(0);
  std::vector<int32_t> table, logical_of;  // logical -> physical, physical -> logical
};

ImU32 split_colour(int64_t split, int64_t S, float alpha) {
  const float h = S > 0 ? float(split) / float(S) : 0.0f;
  float r, g, b;
  ImGui::ColorConvertHSVtoRGB(h * 0.85f, 0.55f, 0.85f, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, alpha));
}

int64_t split_of_block(int64_t j, const Tiling& t) {
  for (int64_t s = 0; s < t.S; ++s)
    if (j < split_range(t.Tc, t.S, s).j1) return s;
  return 0;
}

}  // namespace

float PagedStripHeight(const AppState& s) {
  if (!s.run || s.run->trace.problem.page_size <= 0) return 0.0f;
  return ImGui::GetTextLineHeightWithSpacing() * 7.5f;
}

void DrawPagedStrip(AppState& s) {
  static PagedLayout L;
  const Problem& p = s.run->trace.problem;
  const Tiling& t = s.run->trace.tiling;
  const int64_t P = p.page_size, pages = kv_pages(p.nk, P);
  if (L.run_version != s.run_version) {
    L.run_version = s.run_version;
    L.table = page_table(1, pages, p.seed);
    L.logical_of.assign(L.table.size(), 0);
    for (size_t lp = 0; lp < L.table.size(); ++lp) L.logical_of[size_t(L.table[lp])] = int32_t(lp);
  }
  const Step* cur = current_step(s);
  // The current K/V block's logical pages: those its keys touch (the step's own list on a load).
  int64_t lp0 = -1, lp1 = -2;
  if (cur && cur->j >= 0) {
    const int64_t c0 = int64_t(cur->j) * t.Bc, bc = t.rows_in_kv_block(cur->j, p.nk);
    lp0 = c0 / P;
    lp1 = (c0 + bc - 1) / P;
  }
  const bool loading = cur && !cur->pages.empty();
  char buf[256];
  const int64_t bt_read = cur ? cur->tensor_read[size_t(Tensor::BT)] : 0;
  char bytes[32];
  // Two lines, each wrapped at spaces: one line ran past the panel's edge at 1280 x 720.
  std::snprintf(buf, sizeof buf, "Paged KV cache: %lld pages of P = %lld tokens at shuffled places (seed %llu)",
                (long long)pages, (long long)P, (unsigned long long)p.seed);
  TextWrappedAtSpaces(buf);
  std::snprintf(buf, sizeof buf, "block table: %lld int32, read so far %s", (long long)pages,
                fmt_bytes(bytes, sizeof bytes, bt_read));
  TextWrappedAtSpaces(buf);
  if (lp0 >= 0) {
    int n = std::snprintf(buf, sizeof buf, "K_%d, V_%d: logical pages %lld-%lld at physical", cur->j, cur->j,
                          (long long)lp0, (long long)lp1);
    for (int64_t lp = lp0; lp <= lp1 && n < int(sizeof buf) - 16; ++lp)
      n += std::snprintf(buf + n, sizeof buf - size_t(n), " %d", L.table[size_t(lp)]);
    if (loading) std::snprintf(buf + n, sizeof buf - size_t(n), "  (gathered by this step)");
    DimText(buf);
  } else {
    DimText("The current step touches no K/V block.");
  }

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const float lab = ImGui::CalcTextSize("physical (HBM) ").x;
  const float w = std::max(ImGui::GetContentRegionAvail().x - lab - 8, 50.0f);
  const float cw = w / float(pages), row_h = ImGui::GetTextLineHeight() * 1.2f;
  const float gap = ImGui::GetTextLineHeight() * 1.6f;
  const float y_log = o.y, y_phys = o.y + row_h + gap, x0 = o.x + lab;
  dl->AddText(ImVec2(o.x, y_log), ImGui::GetColorU32(ImGuiCol_Text), "logical");
  dl->AddText(ImVec2(o.x, y_phys), ImGui::GetColorU32(ImGuiCol_Text), "physical (HBM)");
  const float pad = cw > 3 ? 1.0f : 0.0f;
  // More pages than about 2048: one rectangle per `every` pages, coloured by the first of them
  // (a few thousand rectangles a frame, whatever Nk / P).
  const int64_t every = std::max<int64_t>(1, pages / 2048);
  for (int64_t k = 0; k < pages; k += every) {
    const float x = x0 + float(k) * cw, ww = float(std::min(every, pages - k)) * cw - pad;
    dl->AddRectFilled(ImVec2(x, y_log), ImVec2(x + ww, y_log + row_h),
                      split_colour(split_of_block(k * P / t.Bc, t), t.S, 1.0f));
    const int64_t lp = L.logical_of[size_t(k)];  // the logical page physical page k holds
    dl->AddRectFilled(ImVec2(x, y_phys), ImVec2(x + ww, y_phys + row_h),
                      split_colour(split_of_block(lp * P / t.Bc, t), t.S, 1.0f));
  }
  // The block table between the rows: its entries as numbers where a cell is wide enough.
  if (cw >= ImGui::CalcTextSize("000").x)
    for (int64_t lp = 0; lp < pages; ++lp) {
      std::snprintf(buf, sizeof buf, "%d", L.table[size_t(lp)]);
      dl->AddText(ImVec2(x0 + float(lp) * cw, y_log + row_h + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
    }
  // The current block's pages: outlined in both rows, joined through the table.
  const ImU32 hl = loading ? kReadCol : kResidentCol;
  for (int64_t lp = std::max<int64_t>(lp0, 0); lp <= lp1; ++lp) {
    const float xl = x0 + float(lp) * cw, xp = x0 + float(L.table[size_t(lp)]) * cw;
    const float ew = std::max(cw, 3.0f);
    dl->AddRect(ImVec2(xl - 1, y_log - 1), ImVec2(xl + ew + 1, y_log + row_h + 1), hl, 0, 0, 2.5f);
    dl->AddRect(ImVec2(xp - 1, y_phys - 1), ImVec2(xp + ew + 1, y_phys + row_h + 1), hl, 0, 0, 2.5f);
    dl->AddLine(ImVec2(xl + ew / 2, y_log + row_h + 1), ImVec2(xp + ew / 2, y_phys - 1), hl, 2.0f);
  }
  ImGui::SetCursorScreenPos(ImVec2(o.x, y_phys + row_h + 4));
  Swatch(split_colour(0, t.S, 1.0f), false, "a page's colour: the split holding its K/V block");
  Swatch(kReadCol, true, "pages the current step gathers", true);
  ImGui::Separator();
}

}  // namespace flashstep::gui
