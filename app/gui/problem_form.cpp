// The problem editor's fields: to and from a ProblemSpec, and the checks that put each error
// beside its field.
#include "app/gui/app_state.h"

#include "app/gui/text_field.h"
#include "core/backward.h"
#include "core/schedules/decode/decode.h"
#include "core/run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

ProblemSpec ProblemForm::to_spec() const {
  ProblemSpec s = sizes_spec(nq, nk, d, M, br, bc);
  if (!default_scale) s.scale = scale;
  s.seed = seed;
  s.schedule = schedule;
  s.options = options;
  const auto& pats = input_patterns();
  s.pattern = pats.at(size_t(std::clamp(pattern, 0, int(pats.size()) - 1)));
  if (use_files) {
    s.q_path = q_path;
    s.k_path = k_path;
    s.v_path = v_path;
    if (s.q_path.empty() || s.k_path.empty() || s.v_path.empty())
      throw InputError("give all three .npy files (Q, K, V), or switch back to a pattern");
  }
  return s;
}

void ProblemForm::from_spec(const ProblemSpec& s) {
  nq = s.nq;
  nk = s.nk;
  d = s.d;
  M = s.M;
  std::snprintf(M_kib, sizeof M_kib, "%g", double(M) * 4.0 / 1024.0);
  br = s.br;
  bc = s.bc;
  default_scale = !s.scale.has_value();
  schedule = s.schedule;
  options = s.options;
  scale = s.scale ? *s.scale : 1.0 / std::sqrt(double(std::max<int64_t>(d, 1)));
  seed = s.seed;
  const auto& pats = input_patterns();
  pattern = 0;
  for (size_t k = 0; k < pats.size(); ++k)
    if (pats[k] == s.pattern) pattern = int(k);
  use_files = !s.q_path.empty();
  backward = false;  // not part of a ProblemSpec: the caller sets it after
  set_field(q_path, s.q_path, "Q path");
  set_field(k_path, s.k_path, "K path");
  set_field(v_path, s.v_path, "V path");
  validate();
}

namespace {

// Which field an InputError from core/problem.cpp is about (its messages start with the name).
Field field_of(const std::string& msg) {
  auto starts = [&](const char* p) { return msg.rfind(p, 0) == 0; };
  if (starts("d ")) return Field::d;
  if (starts("Nq")) return Field::nq;
  if (starts("Nk")) return Field::nk;
  if (starts("M ") || starts("M:")) return Field::M;
  if (starts("block sizes")) return Field::br;
  if (starts("scale")) return Field::scale;
  if (starts("seed")) return Field::seed;
  if (starts("unknown input pattern")) return Field::pattern;
  if (starts("sizes too large") || starts("recording")) return Field::nq;
  if (starts("give all three")) return Field::files;
  if (starts("window")) return Field::window;
  if (starts("key length")) return Field::kv_len;
  if (starts("dropout")) return Field::dropout;
  if (starts("input ") && msg.find("fp16") != std::string::npos) return Field::dtype;
  return Field::none;
}

}  // namespace

void ProblemForm::validate() {
  error.clear();
  error_field = Field::none;
  preview.clear();
  try {
    try {
      if (l2_config() && backward) throw InputError("the L2 model covers the forward pass only: untick it or the backward pass");
    } catch (const InputError& e) {
      error_field = Field::l2;
      throw;
    }
    ProblemSpec s = to_spec();
    if (const ScheduleInfo& info = schedule_info(s.schedule); backward && !has_backward(info)) {
      // before any estimate: decode has no backward bounds to ask
      throw InputError(std::string(info.name) + " has no backward pass (" + info.paper_name +
                       " is for inference): untick the backward pass or pick another schedule");
    }
    if (!use_files) {
      validate_sizes(s);
      Problem sizes;  // no inputs: the estimate needs only the shapes
      sizes.nq = s.nq;
      sizes.nk = s.nk;
      sizes.d = s.d;
      sizes.M = s.M;
      sizes.schedule = s.schedule;
      sizes.dropout = float(s.options.dropout);
      const Tiling t = make_tiling(s.nq, s.nk, s.d, s.M, s.br, s.bc);
      const size_t est = estimate_trace_bytes(sizes, t) + (backward ? estimate_backward_trace_bytes(sizes, t) : 0);
      if (est > kMaxTraceBytes) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "recording this run would take about %.0f MiB (the app records up to %zu "
                      "MiB): make Nq, Nk or d smaller",
                      double(est) / 1048576.0, kMaxTraceBytes >> 20);
        throw InputError(buf);
      }
      if (const std::optional<L2Config> l2c = l2_config()) {
        try {
          check_l2_cost(s, t, *l2c);
        } catch (const InputError&) {
          error_field = Field::l2;
          throw;
        }
      }
      // Steps of an unmasked run (a mask skips some: fewer then). The backward's bound counts
      // the lines that only a mask or dropout adds (Alg4 L12, L14-15, L18), hence "up to".
      int64_t steps = schedule_steps(s.schedule, t);
      if (backward) steps += int64_t(backward_step_bound(sizes, t));
      const bool masked = s.options.mask.any();
      char buf[160];
      std::snprintf(buf, sizeof buf, "Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld: %s%lld steps",
                    (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc,
                    (masked && schedule_info(s.schedule).tiled) || backward ? "up to " : "", (long long)steps);
      preview = buf;
    }
  } catch (const InputError& e) {
    error = e.what();
    if (error_field == Field::none) error_field = field_of(error);
  }
}

}  // namespace flashstep::gui
