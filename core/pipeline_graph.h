// The pipeline models' task graph and the small fluid simulation that runs it on one SM's units
// (core/pipeline_model.h for the forward, core/pipeline_backward.h for the backward): tasks that
// are ready at once on a unit share its rate equally, or, with Rates::tensor_in_turn, the tensor
// cores serve one product at a time, first ready first. Internal to the two models.
#pragma once
#include "core/pipeline_model.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace flashstep::pipeline {

struct Task {
  Segment seg;
  double delay = 0;  // latency after the last dependency before the task competes for its unit
  std::vector<int> succ;
  int deps_left = 0;
  double left = 0, ready_at = -1;
  bool active = false, done = false, started = false;
};

struct Graph {
  std::vector<Task> t;
  int add(int cta, int wg, Unit u, char kind, int j, double work, std::initializer_list<int> deps, double delay = 0) {
    Task k;
    k.seg = Segment{cta, wg, u, kind, j, work, 0, 0};
    k.left = work;
    k.delay = delay;
    const int id = int(t.size());
    t.push_back(k);
    for (int dp : deps) depend(id, dp);
    return id;
  }
  void depend(int id, int on) {
    if (on < 0) return;
    t[size_t(on)].succ.push_back(id);
    ++t[size_t(id)].deps_left;
  }
};

// Runs the graph to its end: every task's start and end, the units' busy clocks.
Timeline run_graph(Graph& g, const Rates& rates);

// printf into the end of `out` (the models' text).
void append(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The line "shape: heads x Nq x Nk, d" and a blank line.
void append_shape(std::string& out, const Shape& s);

// The text Gantt chart of thread block 0 (`cols` columns of time after a `label_w` name): its
// loads, and each warpgroup's tensor and softmax lanes; a segment's kind letter, in lower case
// where the unit is shared then. explain --pipeline's is 96 wide; the course's fits 80 columns.
std::string gantt_lines(const Timeline& tl, int warpgroups, int cols = 96, int label_w = 14);

}  // namespace flashstep::pipeline
