// flashstep lesson softmax: the online softmax of a vector split into blocks (core/lesson.h).
#include "app/commands.h"
#include "app/flag_checks.h"
#include "core/lesson.h"

#include <cstdio>
#include <string>

namespace flashstep {

namespace {

struct LessonSoftmaxCommand {
  std::string values = "1,2,3,4";
  std::string v;  // a value per entry: the output O carried with the blocks ("" for none)
  size_t block = 2;

  static void check_block(const std::string& text, const char* what) {
    const int64_t b = checked::parse_int(text, what);
    if (b < 1) throw InputError("--block must be at least 1");
    checked::in_range(b, 1, int64_t(kMaxLessonBlock), what);
  }

  void add_flags(CLI::App* sm) {
    sm->add_option("--values", values, "comma-separated values (default 1,2,3,4)");
    sm->add_option("--block", block, "block size (default 2)")->check(strict("--block", check_block));
    sm->add_option("--v", v, "comma-separated value vector, one per value: also carry O = sum softmax(x)_k v_k "
                             "block by block (Algorithm 1's O update)");
  }

  int execute() const {
    const std::vector<double> vv = v.empty() ? std::vector<double>{} : parse_values(v, "--v");
    std::fputs(format_lesson(run_lesson(parse_values(values), block, vv)).c_str(), stdout);
    return 0;
  }
};

}  // namespace

void add_lesson_command(CLI::App& app, const SetAction& set_action) {
  auto* lesson = app.add_subcommand("lesson", "step-by-step lessons");
  lesson->require_subcommand(1);
  add_command<LessonSoftmaxCommand>(*lesson, set_action, "softmax", "online softmax of a vector split into blocks");
}

}  // namespace flashstep
