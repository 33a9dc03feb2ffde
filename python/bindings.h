// The pybind11 module flashstep._core (docs/python.md): thin bindings over core. Every
// InputError from core reaches Python as a ValueError with core's one-line message.
#pragma once
#include "core/types.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace flashstep::py_bind {

namespace py = pybind11;

// A float32 or float64 NumPy array of `ndim` dimensions as a float32 matrix (a 1-D array:
// one column); a copy, so non-contiguous arrays are accepted. ValueError (InputError) for any
// other type, dtype or shape, naming `what`.
Mat to_mat(const py::handle& obj, const char* what, int ndim);
py::array_t<float> mat_array(const Mat& m);  // 2-D copy
py::array_t<float> vec_array(const Vec& v);  // 1-D copy
py::object vec_or_none(const Vec& v);        // None when empty
std::string path_arg(const py::object& path);  // a str or os.PathLike, as os.fspath takes it
// An integer argument; ValueError naming `what` for anything else (3.5, "x").
int64_t int_arg(const py::handle& v, const char* what);

void bind_run(py::module_& m);      // bindings_run.cpp: run, closed_form, schedules, lesson
void bind_machine(py::module_& m);  // bindings.cpp: the puzzles' StudentMachine

}  // namespace flashstep::py_bind
