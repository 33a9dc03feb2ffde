// flashstep.run and its result, closed_form, schedules, lesson_softmax: the CLI's `run`,
// `explain` and `lesson softmax` over the same core calls (app/cmd_run.cpp's order of checks).
#include "bindings.h"

#include "core/schedules/decode/decode.h"
#include "core/export.h"
#include "core/lesson.h"
#include "core/output_files.h"
#include "core/accuracy.h"
#include "core/backward.h"
#include "core/checked.h"
#include "core/closed_form.h"
#include "core/fp8.h"
#include "core/reference.h"
#include "core/run.h"
#include "core/schedule_registry.h"
#include "core/trace_file.h"
#include "core/work.h"

#include <memory>
#include <optional>
#include <pybind11/stl.h>

namespace flashstep::py_bind {

namespace {

struct Result {
  std::shared_ptr<const Trace> trace;
  // Measured on the first read of .accuracy (with fp8 it runs every other storage), then kept.
  mutable std::optional<Accuracy> accuracy;
};
struct StepView {
  std::shared_ptr<const Trace> trace;
  size_t k;
  const Step& s() const { return trace->steps[k]; }
};

// The run flags' ProblemSpec, as app/cli.cpp's RunFlags::to_spec makes it from the flags.
ProblemSpec spec_from(const std::string& schedule, py::object M, int64_t br, int64_t bc, bool causal,
                      py::object window, int64_t kv_len, const std::string& dtype, double dropout, uint64_t seed,
                      int64_t splits, py::object scale, const std::string& pattern,
                      const std::string& fp8_scale = "", bool rotate = false) {
  ProblemSpec s;
  s.M = M.is_none() ? 1024 : py::isinstance<py::str>(M) ? parse_sram_size(M.cast<std::string>()) : int_arg(M, "M");
  s.br = br;
  s.bc = bc;
  s.schedule = parse_schedule(schedule);
  s.splits = splits;
  s.seed = seed;
  s.pattern = pattern;
  if (!scale.is_none()) {
    if (!py::isinstance<py::float_>(scale) && !py::isinstance<py::int_>(scale))
      throw InputError("scale must be a number (got " + std::string(py::repr(scale)) + ")");
    s.scale = scale.cast<double>();
    if (!std::isfinite(*s.scale)) throw InputError("scale must be a finite number");
  }
  s.options.mask.causal = causal;
  s.options.mask.kv_len = kv_len;
  if (!window.is_none()) {
    if (!py::isinstance<py::sequence>(window) || py::len(window) != 2)
      throw InputError("window must be (left, right), e.g. (64, 0); -1 for no limit");
    s.options.mask.window_left = int_arg(window[py::int_(0)], "window's left");
    s.options.mask.window_right = int_arg(window[py::int_(1)], "window's right");
  }
  s.options.dtype = parse_dtype(dtype);
  s.options.dropout = dropout;
  if (!fp8_scale.empty()) s.options.fp8_scale = parse_fp8_scale(fp8_scale);  // "": not given, as the CLI's default
  s.options.rotate = rotate;
  return s;
}

void check_shapes(const Mat& Q, const Mat& K, const Mat& V) {
  if (K.cols() != Q.cols() || V.cols() != Q.cols() || V.rows() != K.rows())
    throw InputError("mismatched shapes: q is " + std::to_string(Q.rows()) + " x " + std::to_string(Q.cols()) +
                     ", k is " + std::to_string(K.rows()) + " x " + std::to_string(K.cols()) + ", v is " +
                     std::to_string(V.rows()) + " x " + std::to_string(V.cols()) +
                     " (need q: Nq x d, k and v: Nk x d)");
}

Result run(py::object q, py::object k, py::object v, const std::string& schedule, py::object M, int64_t br,
           int64_t bc, bool causal, py::object window, int64_t kv_len, const std::string& dtype, double dropout,
           uint64_t seed, int64_t splits, py::object n, py::object nq, py::object nk, py::object d, py::object scale,
           const std::string& pattern, py::object record, const std::string& fp8_scale, bool rotate, bool backward,
           py::object dout) {
  ProblemSpec spec =
      spec_from(schedule, M, br, bc, causal, window, kv_len, dtype, dropout, seed, splits, scale, pattern, fp8_scale, rotate);
  if (!backward && !dout.is_none()) throw InputError("do is the backward's dO: pass backward=True with it");
  const int given = int(!q.is_none()) + int(!k.is_none()) + int(!v.is_none());
  if (given != 0 && given != 3) throw InputError("give all three of q, k and v, or none");
  std::optional<Mat> Q, K, V;
  if (given == 3) {
    if (!n.is_none() || !nq.is_none() || !nk.is_none() || !d.is_none())
      throw InputError("sizes come from the arrays q, k, v: drop n/nq/nk/d");
    Q = to_mat(q, "q", 2);
    K = to_mat(k, "k", 2);
    V = to_mat(v, "v", 2);
    check_shapes(*Q, *K, *V);
    spec.nq = Q->rows();
    spec.nk = K->rows();
    spec.d = Q->cols();
  } else {
    if (!n.is_none() && (!nq.is_none() || !nk.is_none())) throw InputError("give either n or nq/nk, not both");
    const int64_t nn = n.is_none() ? 64 : int_arg(n, "n");
    spec.nq = !nq.is_none() ? int_arg(nq, "nq") : nn;
    spec.nk = !nk.is_none() ? int_arg(nk, "nk") : (!n.is_none() ? nn : spec.nq);
    spec.d = d.is_none() ? 16 : int_arg(d, "d");
  }
  // Refuse before generating or copying anything: sizes, then the work (app/cmd_run.cpp).
  validate_sizes(spec);
  const WorkLimits limits;
  auto work = [backward](int64_t nq, int64_t nk, int64_t d, const Tiling& t, Schedule s, int bpe) {
    WorkEstimate w = estimate_work(nq, nk, d, t, s, bpe);
    if (backward) add_backward_work(w);  // as `run --backward` counts it
    return w;
  };
  const Tiling t0 = make_tiling(spec.nq, spec.nk, spec.d, spec.M, spec.br, spec.bc);
  check_work(work(spec.nq, spec.nk, spec.d, t0, spec.schedule, dtype_bytes(spec.options.dtype)), limits);
  Problem p = make_problem(spec);
  if (Q) {  // the arrays replace the generated inputs, checked as make_problem checks a .npy file's
    p.Q = std::move(*Q);
    p.K = std::move(*K);
    p.V = std::move(*V);
    p.pattern = "npy";
    check_finite(p.Q, "Q");
    check_finite(p.K, "K");
    check_finite(p.V, "V");
    // Stored as fp16, the inputs must fit it: make_problem's check of .npy inputs, word for word.
    if (p.dtype == Dtype::fp16)
      for (const auto& [mat, name] : {std::pair<const Mat*, const char*>{&p.Q, "Q"}, {&p.K, "K"}, {&p.V, "V"}})
        for (int64_t e = 0; e < mat->size(); ++e)
          if (std::abs(mat->data()[e]) > 65504.0f)
            throw InputError(std::string("input ") + name + " has a value beyond fp16's range (" +
                             error_value(mat->data()[e]) + ") at row " + std::to_string(e / mat->cols()) +
                             ", column " + std::to_string(e % mat->cols()));
  }
  const Tiling t = make_tiling(p);
  check_work(work(p.nq, p.nk, p.d, t, p.schedule, p.bytes_per_elem), limits);
  RunOptions opt;
  Mat dO;
  if (backward) {  // dO as `run --backward` makes it (--do, or from the seed and the pattern)
    dO = dout.is_none() ? make_grad_output(p, spec.pattern) : to_mat(dout, "do", 2);
    opt.dO = &dO;  // run_problem checks it (check_grad_output) and that the schedule has a backward
  }
  // None: record when the trace fits in RunOptions' limit (1 GiB), else the fast path, whose
  // result has no steps (Result.recorded says which); True: record or refuse, as `run --steps`.
  const size_t trace_bytes = estimate_trace_bytes(p, t) + (backward ? estimate_backward_trace_bytes(p, t) : 0);
  opt.record = record.is_none() ? trace_bytes <= opt.max_trace_bytes : record.cast<bool>();
  opt.unrecorded_hint = "Pass record=False (or leave record out) to run the unrecorded fast path: the result has "
                        "O, lse and the bytes, without steps";
  Trace tr;
  {
    py::gil_scoped_release unlocked;  // core does not touch Python objects
    tr = run_problem(p, t, opt);
  }
  check_result_finite(tr);
  if (tr.has_backward) check_gradients_finite(tr);  // run's check
  return Result{std::make_shared<const Trace>(std::move(tr)), std::nullopt};
}

py::dict closed_form(const std::string& schedule, int64_t nq, int64_t nk, int64_t d, py::object M, int64_t br,
                     int64_t bc, const std::string& dtype, int64_t splits) {
  ProblemSpec spec = spec_from(schedule, M, br, bc, false, py::none(), -1, dtype, 0.0, 1, splits, py::none(), "random");
  spec.nq = nq;
  spec.nk = nk;
  spec.d = d;
  validate_sizes(spec);
  Tiling t = make_tiling(nq, nk, d, spec.M, br, bc);
  if (spec.schedule == Schedule::decode) t.S = splits != 0 ? splits : default_splits(t.Tr, t.Tc, kDefaultSmCount);
  const ScheduleInfo& info = schedule_info(spec.schedule);
  const Dtype dt = spec.options.dtype;
  const TrafficForm f = forward_form(spec.schedule, dt, nq, nk, d, t);  // fp8: with the scale reads
  const int bpe = dtype_bytes(dt);
  py::dict out;
  out["schedule"] = info.name;
  out["read_bytes"] = form_read_bytes(f, dt);
  out["write_bytes"] = form_write_bytes(f, dt);
  out["read_elems"] = f.read_elems;
  out["write_elems"] = f.write_elems;
  out["Br"] = t.Br;
  out["Bc"] = t.Bc;
  out["Tr"] = t.Tr;
  out["Tc"] = t.Tc;
  out["splits"] = t.S;
  if (has_backward(info) && dt != Dtype::fp8) {  // no FP8 backward
    const TrafficForm b = info.backward_traffic(nq, nk, d, t);
    out["backward_read_bytes"] = b.read_bytes(bpe);
    out["backward_write_bytes"] = b.write_bytes(bpe);
  }
  return out;
}

py::dict error_entries(const char* name, const ErrorStats& e, py::dict d) {
  const std::string n = name;
  d[(n + "_max_abs").c_str()] = e.max_abs;
  d[(n + "_max_rel").c_str()] = e.max_rel;
  d[(n + "_rms").c_str()] = e.rms;
  return d;
}

// The figures run's summary prints (core/accuracy.h, with the companion: a 16-bit or FP8 run's
// scale of comparison, and with --dtype fp8 every FP8 storage on the same inputs).
py::object accuracy(const Result& r) {
  if (!r.accuracy) r.accuracy = accuracy_of(*r.trace, true);
  const Accuracy& a = *r.accuracy;
  if (!a.measured) return py::none();
  py::dict d;
  error_entries("o", a.forward.O, d);
  error_entries("lse", a.forward.lse, d);
  if (a.backward) {  // the gradients against reference_backward on the same dO
    error_entries("dq", a.backward->dQ, d);
    error_entries("dk", a.backward->dK, d);
    error_entries("dv", a.backward->dV, d);
  }
  if (a.companion) {
    py::dict c = error_entries("o", a.companion->O, py::dict());
    c["schedule"] = schedule_info(a.companion->schedule).name;
    c["dtype"] = dtype_name(a.companion->dtype);
    d["companion"] = c;
  }
  if (!a.fp8_storages.empty()) {
    py::list storages;
    for (const Fp8StorageAccuracy& s : a.fp8_storages) {
      py::dict e = error_entries("o", s.O, py::dict());
      e["fp8_scale"] = fp8_scale_name(s.scale);
      e["rotate"] = s.rotate;
      e["own"] = s.own;
      storages.append(e);
    }
    d["fp8_storages"] = storages;
  }
  return std::move(d);
}

py::object grad_or_none(const Trace& t, const Mat& g) {
  if (!t.has_backward) return py::none();
  return mat_array(g);
}

// A pass's totals: the forward's alone, or the backward's (Trace::forward_totals, backward_totals).
const Totals& phase(const Result& r, bool backward) {
  const Trace& t = *r.trace;
  return !t.has_backward ? t.totals : backward ? t.backward_totals : t.forward_totals;
}

py::object backward_or_none(const Result& r, int64_t bytes) {
  if (!r.trace->has_backward) return py::none();
  return py::int_(bytes);
}

TrafficForm backward_form(const Result& r) {
  const Problem& p = r.trace->problem;
  return schedule_backward_traffic(p.schedule, p.nq, p.nk, p.d, r.trace->tiling.Tr, r.trace->tiling.Tc);
}

}  // namespace

void bind_run(py::module_& m) {
  py::class_<Tiling>(m, "Tiling")
      .def_readonly("Br", &Tiling::Br)
      .def_readonly("Bc", &Tiling::Bc)
      .def_readonly("Tr", &Tiling::Tr)
      .def_readonly("Tc", &Tiling::Tc)
      .def_readonly("M", &Tiling::M)
      .def_readonly("splits", &Tiling::S)
      .def("__repr__", [](const Tiling& t) {
        return "Tiling(Br=" + std::to_string(t.Br) + ", Bc=" + std::to_string(t.Bc) + ", Tr=" + std::to_string(t.Tr) +
               ", Tc=" + std::to_string(t.Tc) + ")";
      });

  py::class_<StepView>(m, "Step")
      .def_property_readonly("index", [](const StepView& v) { return v.k; })
      .def_property_readonly("label", [](const StepView& v) { return std::string(line_label(v.s().line)); })
      .def_property_readonly("line", [](const StepView& v) { return line_number(v.s().line); })
      .def_property_readonly("role", [](const StepView& v) { return std::string(role_name(line_role(v.s().line))); })
      .def_property_readonly("i", [](const StepView& v) { return v.s().i; })
      .def_property_readonly("j", [](const StepView& v) { return v.s().j; })
      .def_property_readonly("split", [](const StepView& v) { return v.s().split; })
      .def_property_readonly("read_bytes", [](const StepView& v) { return v.s().hbm_read; })
      .def_property_readonly("write_bytes", [](const StepView& v) { return v.s().hbm_write; })
      .def_property_readonly("read_total", [](const StepView& v) { return v.s().hbm_read_total; })
      .def_property_readonly("write_total", [](const StepView& v) { return v.s().hbm_write_total; })
      .def_property_readonly("sram_bytes", [](const StepView& v) { return v.s().sram_bytes; })
      .def_property_readonly("flops", [](const StepView& v) { return v.s().flops; })
      .def_property_readonly("text", [](const StepView& v) { return v.trace->explain(v.k); })
      .def_property_readonly("m_tilde", [](const StepView& v) { return vec_or_none(v.s().m_tilde); })
      .def_property_readonly("l_tilde", [](const StepView& v) { return vec_or_none(v.s().l_tilde); })
      .def_property_readonly("m_old", [](const StepView& v) { return vec_or_none(v.s().m_old); })
      .def_property_readonly("l_old", [](const StepView& v) { return vec_or_none(v.s().l_old); })
      .def_property_readonly("m_new", [](const StepView& v) { return vec_or_none(v.s().m_new); })
      .def_property_readonly("l_new", [](const StepView& v) { return vec_or_none(v.s().l_new); })
      .def_property_readonly("alpha", [](const StepView& v) { return vec_or_none(v.s().alpha); })
      .def_property_readonly("beta", [](const StepView& v) { return vec_or_none(v.s().beta); })
      // The HBM writes of the step: (tensor, first row, rows as written).
      .def_property_readonly("writes", [](const StepView& v) {
        py::list out;
        for (const HbmWrite& w : v.s().writes) out.append(py::make_tuple(tensor_name(w.tensor), w.row0, mat_array(w.data)));
        return out;
      })
      .def("__repr__", [](const StepView& v) {
        return "Step(" + std::to_string(v.k) + ", '" + line_label(v.s().line) + "', i=" + std::to_string(v.s().i) +
               ", j=" + std::to_string(v.s().j) + ", read=" + std::to_string(v.s().hbm_read) +
               ", write=" + std::to_string(v.s().hbm_write) + ")";
      });

  auto totals = [](const Result& r) -> const Totals& { return r.trace->totals; };
  auto closed = [](const Result& r) {
    const Problem& p = r.trace->problem;
    return forward_form(p.schedule, p.dtype, p.nq, p.nk, p.d, r.trace->tiling);
  };
  py::class_<Result>(m, "Result")
      .def_property_readonly("o", [](const Result& r) { return mat_array(r.trace->O); })
      .def_property_readonly("lse", [](const Result& r) { return vec_array(r.trace->lse); })
      .def_property_readonly("hbm_read_bytes", [totals](const Result& r) { return totals(r).hbm_read_bytes; })
      .def_property_readonly("hbm_write_bytes", [totals](const Result& r) { return totals(r).hbm_write_bytes; })
      .def_property_readonly("closed_form_read_bytes",
                             [closed](const Result& r) { return form_read_bytes(closed(r), r.trace->problem.dtype); })
      .def_property_readonly("closed_form_write_bytes",
                             [closed](const Result& r) { return form_write_bytes(closed(r), r.trace->problem.dtype); })
      .def_property_readonly("peak_sram_bytes", [totals](const Result& r) { return totals(r).peak_sram_bytes; })
      .def_property_readonly("peak_tile_bytes", [totals](const Result& r) { return totals(r).peak_tile_bytes; })
      .def_property_readonly("flops", [totals](const Result& r) { return totals(r).flops; })
      .def_property_readonly("step_count", [totals](const Result& r) { return totals(r).steps; })
      .def_property_readonly("tiling", [](const Result& r) { return r.trace->tiling; })
      .def_property_readonly("recorded", [](const Result& r) { return !r.trace->steps.empty(); })
      .def_property_readonly("q", [](const Result& r) { return mat_array(r.trace->problem.Q); })
      .def_property_readonly("k", [](const Result& r) { return mat_array(r.trace->problem.K); })
      .def_property_readonly("v", [](const Result& r) { return mat_array(r.trace->problem.V); })
      .def_property_readonly("schedule", [](const Result& r) { return std::string(schedule_name(r.trace->problem.schedule)); })
      .def_property_readonly("tau", [](const Result& r) { return r.trace->problem.scale; })
      .def_property_readonly("accuracy", [](const Result& r) { return accuracy(r); })
      // With backward=True: the gradients, dO, and each pass's bytes beside its closed form.
      .def_property_readonly("dq", [](const Result& r) { return grad_or_none(*r.trace, r.trace->dQ); })
      .def_property_readonly("dk", [](const Result& r) { return grad_or_none(*r.trace, r.trace->dK); })
      .def_property_readonly("dv", [](const Result& r) { return grad_or_none(*r.trace, r.trace->dV); })
      .def_property_readonly("do", [](const Result& r) { return grad_or_none(*r.trace, r.trace->dO); })
      .def_property_readonly("backward", [](const Result& r) { return r.trace->has_backward; })
      .def_property_readonly("forward_read_bytes", [](const Result& r) { return phase(r, false).hbm_read_bytes; })
      .def_property_readonly("forward_write_bytes", [](const Result& r) { return phase(r, false).hbm_write_bytes; })
      .def_property_readonly("backward_read_bytes", [](const Result& r) { return backward_or_none(r, phase(r, true).hbm_read_bytes); })
      .def_property_readonly("backward_write_bytes", [](const Result& r) { return backward_or_none(r, phase(r, true).hbm_write_bytes); })
      .def_property_readonly("closed_form_backward_read_bytes", [](const Result& r) {
        return backward_or_none(r, backward_form(r).read_bytes(r.trace->problem.bytes_per_elem));
      })
      .def_property_readonly("closed_form_backward_write_bytes", [](const Result& r) {
        return backward_or_none(r, backward_form(r).write_bytes(r.trace->problem.bytes_per_elem));
      })
      // Bytes each tensor moved: {"Q": (read, written), ...}, tensors that moved none left out.
      .def_property_readonly("tensor_bytes", [totals](const Result& r) {
        py::dict out;
        const Traffic& tr = totals(r).traffic;
        for (int k = 0; k < kTensors; ++k)
          if (tr.read[k] || tr.written[k]) out[tensor_name(Tensor(k))] = py::make_tuple(tr.read[k], tr.written[k]);
        return out;
      })
      .def_property_readonly("steps", [](const Result& r) {
        py::list out;
        for (size_t k = 0; k < r.trace->steps.size(); ++k) out.append(StepView{r.trace, k});
        return out;
      })
      // The trace as `flashstep run --trace` writes it, plus the replay section `flashstep gui
      // --trace` needs (core/trace_file.h). Written whole or not at all.
      .def("save_trace", [](const Result& r, const py::object& path) {
        if (r.trace->steps.empty()) throw InputError("this result was not recorded (record=False): no trace to save");
        write_file_atomic(path_arg(path), trace_to_replay_json(*r.trace).dump() + "\n");
      }, py::arg("path"))
      .def("trace_json", [](const Result& r) { return trace_to_json(*r.trace).dump(); });

  m.def("run", &run, py::arg("q") = py::none(), py::arg("k") = py::none(), py::arg("v") = py::none(),
        py::kw_only(), py::arg("schedule") = "fa1", py::arg("M") = py::none(), py::arg("Br") = 0, py::arg("Bc") = 0,
        py::arg("causal") = false, py::arg("window") = py::none(), py::arg("kv_len") = -1,
        py::arg("dtype") = "fp32", py::arg("dropout") = 0.0, py::arg("seed") = 1, py::arg("splits") = 0,
        py::arg("n") = py::none(), py::arg("nq") = py::none(), py::arg("nk") = py::none(), py::arg("d") = py::none(),
        py::arg("scale") = py::none(), py::arg("pattern") = "random", py::arg("record") = py::none(),
        py::arg("fp8_scale") = "", py::arg("rotate") = false, py::arg("backward") = false,
        py::arg("do") = py::none());
  m.def("closed_form", &closed_form, py::arg("schedule"), py::arg("nq"), py::arg("nk"), py::arg("d"), py::arg("M"),
        py::kw_only(), py::arg("Br") = 0, py::arg("Bc") = 0, py::arg("dtype") = "fp32", py::arg("splits") = 0);
  m.def("schedules", [] {
    py::list out;
    for (const ScheduleInfo* s : schedules()) {
      py::dict e;
      e["name"] = s->name;
      e["paper_name"] = s->paper_name;
      e["title"] = s->title;
      e["tiled"] = s->tiled;
      e["backward"] = has_backward(*s);
      out.append(e);
    }
    return out;
  });

  // core's float64 references (core/reference.h), for the puzzles' judge.
  auto matd = [](const MatD& m) {
    py::array_t<double> out({py::ssize_t(m.rows()), py::ssize_t(m.cols())});
    std::memcpy(out.mutable_data(), m.data(), size_t(m.size()) * sizeof(double));
    return out;
  };
  m.def("reference_attention", [matd](py::handle q, py::handle k, py::handle v, double scale, bool causal, int64_t kv_len) {
    const Mat Q = to_mat(q, "q", 2), K = to_mat(k, "k", 2), V = to_mat(v, "v", 2);
    check_shapes(Q, K, V);
    Mask mask;
    mask.causal = causal;
    mask.kv_len = kv_len;
    mask.offset = K.rows() - Q.rows();
    const Reference r = reference_attention(Q, K, V, scale, mask);
    return py::make_tuple(matd(r.O), py::array_t<double>(py::ssize_t(r.lse.size()), r.lse.data()));
  }, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("scale"), py::arg("causal") = false, py::arg("kv_len") = -1);
  m.def("reference_backward", [matd](py::handle q, py::handle k, py::handle v, py::handle dout, double scale) {
    const Mat Q = to_mat(q, "q", 2), K = to_mat(k, "k", 2), V = to_mat(v, "v", 2), dO = to_mat(dout, "dO", 2);
    check_shapes(Q, K, V);
    if (dO.rows() != Q.rows() || dO.cols() != Q.cols()) throw InputError("dO must have q's shape");
    const ReferenceGrad g = reference_backward(Q, K, V, dO, scale);
    return py::make_tuple(matd(g.dQ), matd(g.dK), matd(g.dV));
  }, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("dO"), py::arg("scale"));

  py::class_<LessonBlock>(m, "LessonBlock")
      .def_readonly("begin", &LessonBlock::begin)
      .def_readonly("end", &LessonBlock::end)
      .def_readonly("local_max", &LessonBlock::local_max)
      .def_readonly("local_sum", &LessonBlock::local_sum)
      .def_readonly("m_old", &LessonBlock::m_old)
      .def_readonly("l_old", &LessonBlock::l_old)
      .def_readonly("m_new", &LessonBlock::m_new)
      .def_readonly("l_new", &LessonBlock::l_new)
      .def_readonly("alpha", &LessonBlock::alpha)
      .def_readonly("beta", &LessonBlock::beta);
  py::class_<Lesson>(m, "Lesson")
      .def_readonly("values", &Lesson::values)
      .def_readonly("block", &Lesson::block)
      .def_readonly("blocks", &Lesson::blocks)
      .def_property_readonly("softmax", [](const Lesson& l) { return py::array_t<double>(py::ssize_t(l.online.size()), l.online.data()); })
      .def_property_readonly("direct", [](const Lesson& l) { return py::array_t<double>(py::ssize_t(l.direct.size()), l.direct.data()); })
      .def_readonly("max_diff", &Lesson::max_diff)
      .def("__str__", &format_lesson);
  m.def("lesson_softmax", [](py::object values, int64_t block) {
    if (block < 1) throw InputError("block must be at least 1 (got " + std::to_string(block) + ")");
    if (size_t(block) > kMaxLessonBlock)
      throw InputError("block must be at most " + std::to_string(kMaxLessonBlock) + " (got " + std::to_string(block) + ")");
    py::array a = py::array::ensure(values);
    if (!a || a.ndim() != 1 || !(a.dtype().kind() == 'f' || a.dtype().kind() == 'i' || a.dtype().kind() == 'u'))
      throw InputError("values must be a 1-D sequence of numbers, such as [1, 2, 3, 4]");
    check_lesson_size(size_t(a.size()));
    const auto c = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
    std::vector<double> v(c.data(), c.data() + c.size());
    return run_lesson(v, size_t(block));
  }, py::arg("values"), py::arg("block"));
}

}  // namespace flashstep::py_bind
