// flashstep._core: the module's entry point, the array conversions and the puzzles' machine.
#include "bindings.h"

#include "core/output_files.h"
#include "core/trace_file.h"
#include "student_machine.h"

#include <pybind11/stl.h>

#include <cmath>
#include <limits>

namespace flashstep::py_bind {

Mat to_mat(const py::handle& obj, const char* what, int ndim) {
  if (!py::isinstance<py::array>(obj))
    throw InputError(std::string(what) + " must be a NumPy array of float32 or float64 (got " +
                     std::string(py::str(py::type::of(obj).attr("__name__"))) + ")");
  // numpy.ma is an ndarray whose mask the buffer does not carry: its masked elements would be read
  // as whatever data lies under them, a mask dropped without a word.
  if (py::isinstance(obj, py::module_::import("numpy.ma").attr("MaskedArray")))
    throw InputError(std::string(what) + " is a masked array (numpy.ma), whose mask flashstep would not see: pass "
                     "plain values (" + what + ".filled(...)); keys are masked by causal, window or kv_len");
  const py::array a = py::reinterpret_borrow<py::array>(obj);
  const py::dtype dt = a.dtype();
  if (dt.kind() != 'f' || (dt.itemsize() != 4 && dt.itemsize() != 8))
    throw InputError(std::string(what) + " has dtype " + std::string(py::str(static_cast<const py::handle&>(dt))) +
                     "; flashstep takes float32 or float64 arrays");
  if (a.ndim() != ndim) {
    std::string shape;
    for (py::ssize_t k = 0; k < a.ndim(); ++k) shape += (k ? ", " : "") + std::to_string(a.shape(k));
    if (a.ndim() == 1) shape += ",";
    throw InputError(std::string(what) + " must be " + std::to_string(ndim) + "-D" +
                     (ndim == 2 ? " (rows, d)" : "") + ", got shape (" + shape + ")");
  }
  if (a.size() == 0) throw InputError(std::string(what) + " is empty");
  if (dt.itemsize() == 8) {  // float64 beyond float32's range would become inf in the cast
    const auto d64 = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
    for (py::ssize_t e = 0; e < d64.size(); ++e)
      if (std::isfinite(d64.data()[e]) && std::abs(d64.data()[e]) > double(std::numeric_limits<float>::max()))
        throw InputError(std::string(what) + " has a value beyond float32's range (" + error_value(d64.data()[e]) +
                         ") at element " + std::to_string(e));
  }
  // A C-contiguous float32 copy (NumPy casts float64 to the nearest float32, as the .npy reader).
  const auto c = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!c) throw InputError(std::string(what) + " could not be converted to float32");
  const int64_t rows = c.shape(0), cols = ndim == 2 ? c.shape(1) : 1;
  Mat m(rows, cols);
  std::memcpy(m.data(), c.data(), size_t(rows * cols) * sizeof(float));
  return m;
}

py::array_t<float> mat_array(const Mat& m) {
  py::array_t<float> out({py::ssize_t(m.rows()), py::ssize_t(m.cols())});
  if (m.size()) std::memcpy(out.mutable_data(), m.data(), size_t(m.size()) * sizeof(float));
  return out;
}
py::array_t<float> vec_array(const Vec& v) {
  py::array_t<float> out(py::ssize_t(v.size()));
  if (v.size()) std::memcpy(out.mutable_data(), v.data(), size_t(v.size()) * sizeof(float));
  return out;
}
std::string path_arg(const py::object& path) {
  try {
    std::string p = py::module_::import("os").attr("fspath")(path).cast<std::string>();
    // The file system ends a name at NUL: "t.json\0x" is not the path the caller gave, and an error
    // that names it would end at the NUL, its reason cut off.
    if (const size_t nul = p.find('\0'); nul != std::string::npos)
      throw InputError("a path cannot hold a NUL character (\\0 at character " + std::to_string(nul) + " of " +
                       std::to_string(p.size()) + ")");
    return p;
  } catch (const py::error_already_set&) {
    throw InputError("a path must be a str or os.PathLike");
  } catch (const py::cast_error&) {
    throw InputError("a path must be text, not bytes");
  }
}

int64_t int_arg(const py::handle& v, const char* what) {
  if (py::isinstance<py::bool_>(v) || !(py::isinstance<py::int_>(v) || py::hasattr(v, "__index__")))
    throw InputError(std::string(what) + " must be a whole number (got " + std::string(py::repr(v)) + ")");
  try {
    return v.cast<int64_t>();
  } catch (const py::cast_error&) {
    throw InputError(std::string(what) + " is out of range (got " + std::string(py::repr(v)) + ")");
  }
}

py::object vec_or_none(const Vec& v) { return v.size() ? py::object(vec_array(v)) : py::object(py::none()); }

// A tile to Python: the puzzles' vectors (one column) as 1-D arrays.
static py::array_t<float> tile_array(const Mat& m) { return m.cols() == 1 ? vec_array(m.col(0)) : mat_array(m); }

void bind_machine(py::module_& m) {
  py::class_<StudentStore>(m, "StudentStore")
      .def_readonly("tensor", &StudentStore::tensor)
      .def_readonly("r0", &StudentStore::r0)
      .def_readonly("c0", &StudentStore::c0)
      .def_readonly("i", &StudentStore::i)
      .def_readonly("j", &StudentStore::j)
      .def_property_readonly("data", [](const StudentStore& s) { return tile_array(s.data); });
  py::class_<StudentStep>(m, "StudentStep")
      .def_readonly("label", &StudentStep::label)
      .def_readonly("i", &StudentStep::i)
      .def_readonly("j", &StudentStep::j)
      .def_readonly("read_bytes", &StudentStep::read)
      .def_readonly("write_bytes", &StudentStep::write)
      .def_readonly("sram_bytes", &StudentStep::sram_bytes)
      .def_readonly("charged_bytes", &StudentStep::charged_bytes)
      .def_readonly("stores", &StudentStep::stores);
  py::class_<StudentMachine>(m, "StudentMachine")
      // The machine of a problem made from the given inputs (q, k, v as for run()); `schedule`
      // names the schedule the puzzle teaches, which the app shows the student's trace beside.
      .def(py::init([](py::handle q, py::handle k, py::handle v, int64_t M, double scale, bool causal,
                       int64_t capacity, const std::string& schedule, int64_t splits, int64_t kv_len) {
             ProblemSpec spec;
             spec.schedule = parse_schedule(schedule);
             spec.splits = splits;
             Mat Q = to_mat(q, "q", 2), K = to_mat(k, "k", 2), V = to_mat(v, "v", 2);
             spec.nq = Q.rows();
             spec.nk = K.rows();
             spec.d = Q.cols();
             spec.M = M;
             spec.scale = scale;
             spec.pattern = "uniform";
             spec.options.mask.causal = causal;
             spec.options.mask.kv_len = kv_len;  // decode-combine's key padding: the app shows it
             Problem p = make_problem(spec);
             p.Q = std::move(Q);
             p.K = std::move(K);
             p.V = std::move(V);
             p.pattern = "npy";
             const Tiling t = make_tiling(p);
             return StudentMachine(std::move(p), t, capacity > 0 ? capacity : t.tile_capacity);
           }),
           py::arg("q"), py::arg("k"), py::arg("v"), py::arg("M"), py::arg("scale"), py::arg("causal") = false,
           py::arg("capacity") = 0, py::arg("schedule") = "fa1", py::arg("splits") = 0, py::arg("kv_len") = -1)
      .def("put", [](StudentMachine& s, const std::string& name, py::handle a) {
             const py::array arr = py::array::ensure(a);
             s.put(name, to_mat(a, name.c_str(), arr && arr.ndim() == 1 ? 1 : 2));
           })
      .def("peek", [](const StudentMachine& s, const std::string& name) { return tile_array(s.peek(name)); })
      .def("has", &StudentMachine::has)
      .def("seal", &StudentMachine::seal)
      .def("unseal", &StudentMachine::unseal)
      .def_property_readonly("sealed", &StudentMachine::sealed)
      .def("load", [](StudentMachine& s, const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
             Mat out;
             const int64_t id = s.load(name, r0, r1, c0, c1, out);
             return py::make_tuple(id, tile_array(out));
           })
      .def("store", [](StudentMachine& s, const std::string& name, int64_t r0, int64_t r1, py::handle tile, int64_t c0) {
             const py::array arr = py::array::ensure(tile);
             if (!arr) throw InputError("m.store('" + name + "', ...): the tile must be a NumPy array");
             Mat t = to_mat(arr, "the stored tile", arr.ndim() == 1 ? 1 : 2);
             s.store(name, r0, r1, c0, t);
           })
      .def("note", [](StudentMachine& s, const std::string& name, py::handle value) {
             const py::array arr = py::array::ensure(value);
             if (!arr) throw InputError("m.note('" + name + "', ...): the value must be a NumPy array");
             s.note(name, to_mat(arr, ("m.note('" + name + "')").c_str(), arr.ndim() == 1 ? 1 : 2));
           })
      .def("free", &StudentMachine::free)
      .def("reserve", &StudentMachine::reserve, py::arg("elems"), py::arg("what"))
      .def("step", &StudentMachine::step)
      .def_property_readonly("steps", &StudentMachine::steps)
      .def_property_readonly("read_bytes", &StudentMachine::read_bytes)
      .def_property_readonly("write_bytes", &StudentMachine::write_bytes)
      .def_property_readonly("peak_charged_bytes", &StudentMachine::peak_charged_bytes)
      .def_property_readonly("peak_sram_bytes", &StudentMachine::peak_sram_bytes)
      .def_property_readonly("capacity", &StudentMachine::capacity_elems)
      .def_property_readonly("nq", [](const StudentMachine& s) { return s.problem().nq; })
      .def_property_readonly("nk", [](const StudentMachine& s) { return s.problem().nk; })
      .def_property_readonly("d", [](const StudentMachine& s) { return s.problem().d; })
      .def_property_readonly("M", [](const StudentMachine& s) { return s.problem().M; })
      .def_property_readonly("tau", [](const StudentMachine& s) { return s.problem().scale; })
      .def_property_readonly("Br", [](const StudentMachine& s) { return s.tiling().Br; })
      .def_property_readonly("Bc", [](const StudentMachine& s) { return s.tiling().Bc; })
      .def_property_readonly("Tr", [](const StudentMachine& s) { return s.tiling().Tr; })
      .def_property_readonly("Tc", [](const StudentMachine& s) { return s.tiling().Tc; })
      .def("tensor_read", &StudentMachine::tensor_read)
      .def("tensor_written", &StudentMachine::tensor_written)
      .def_static("tensor_names", &StudentMachine::tensor_names)
      .def("set_row_block", &StudentMachine::set_row_block)
      // A softmax row's run as a row trace, every other as an attention trace (core/trace_file.h).
      .def("save_trace", [](const StudentMachine& s, const py::object& path) {
        const nlohmann::json doc = s.is_row() ? row_trace_to_replay_json(s.to_row_trace()) : trace_to_replay_json(s.to_trace());
        write_file_atomic(path_arg(path), doc.dump() + "\n");
      });
}

}  // namespace flashstep::py_bind

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  namespace fs = flashstep;
  m.doc() = "flashstep's core (C++): schedules, memory model, traces, closed forms";
  // core's input errors carry the CLI's one-line message: a ValueError in Python.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fs::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.attr("has_cuda") = bool(FLASHSTEP_PY_HAVE_CUDA);
  fs::py_bind::bind_run(m);
  fs::py_bind::bind_machine(m);
}
