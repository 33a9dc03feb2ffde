// flashstep: an educational step-through simulator of FlashAttention.
// main() only dispatches; each subcommand lives with the part of the project it belongs to.
#include "app/commands.h"
#include "app/run_printer.h"
#include "app/flag_checks.h"
#include "app/version.h"  // generated from app/version.h.in
#include "core/checked.h"
#include "core/input_files.h"

#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>

// Standard output may fail (a full disk, /dev/full, a closed pipe): that is an error too, not
// exit code 0 with the output lost.
// The promise is one line: a message is printed with its control characters (a newline in a
// file name) shown as '?', and cut if some reader quoted too much of its input.
static void print_error(const char* what) { std::fprintf(stderr, "flashstep: error: %s\n", flashstep::excerpt(what, 1000).c_str()); }

static int flush_stdout(int rc) {
  try {
    flashstep::require_stdout_written();
  } catch (const flashstep::InputError& e) {
    print_error(e.what());
    return rc != 0 ? rc : 2;
  }
  return rc;
}

// An empty value for a text flag (--out-o "", --snapshots "", --q "") would otherwise read as the
// flag not given (no output, generated inputs, exit 0): every text flag of every subcommand
// refuses it, in one place.
static void refuse_empty_values(const CLI::App* app) {
  for (const CLI::Option* o : app->get_options())
    if (o->get_type_name() == "TEXT" && o->count() > 0)
      for (const std::string& r : o->results())
        if (r.empty()) throw flashstep::InputError(o->get_name() + ": the value is empty (give a name, or leave the flag out)");
  for (const CLI::App* sub : app->get_subcommands()) refuse_empty_values(sub);
}

// Every whole-number flag is read strictly before CLI11 converts it, so that an out-of-range
// value is reported as typed (cut), not as the number CLI11 clamped it to: "--heads
// 99999999999999999999" is "out of range (got '99999999999999999999')", not 9223372036854775807.
// The text is then handed on as the plain decimal it was read as: CLI11 converts with base 0,
// which would read "010" as octal 8 and refuse "08" with "Could not convert".
// A real number is read as decimal too (checked::parse_double): CLI11 would take "0x10" as 16.
static void strict_whole_numbers(CLI::App* app) {
  for (CLI::Option* o : app->get_options([](CLI::Option*) { return true; })) {
    const std::string type = o->get_type_name(), name = o->get_name();
    if (type == "FLOAT") o->check(flashstep::strict(name, flashstep::checked::parse_double));
    if (type != "INT" && type != "UINT") continue;
    o->check(CLI::Validator(
        [name, type](std::string& text) {
          try {
            text = type == "UINT" ? std::to_string(flashstep::checked::parse_uint(text, name.c_str()))
                                  : std::to_string(flashstep::checked::parse_int(text, name.c_str()));
          } catch (const flashstep::InputError& e) {
            return std::string(e.what());
          }
          return std::string();
        },
        "", "whole number"),
             "decimal");
    o->get_validator("decimal")->non_modifying(false);  // check() adds it as one that keeps the text
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) strict_whole_numbers(sub);
}

// The names of an app's subcommands, "a, b, c".
static std::string subcommand_names(CLI::App* app) {
  std::string names;
  for (const CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// The option named `name` of `app` or of a command above it; null if none.
static const CLI::Option* find_option(const CLI::App* app, const std::string& name) {
  for (; app; app = app->get_parent())
    for (const CLI::Option* o : app->get_options())
      if (o->get_name() == name || o->check_name(name)) return o;
  return nullptr;
}

// CLI11's "Could not convert: --reps = 99999999999" as a line that names the flag and what it
// takes. A whole number reaches the conversion only once checked as one (strict_whole_numbers),
// so there it is out of the flag's range; a flag (--backward=xyz) takes true or false.
static std::string conversion_error_text(const CLI::App* at, const std::string& what) {
  const std::string head = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.rfind(head, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(head.size(), eq - head.size());
  const std::string got = " (got '" + flashstep::excerpt(what.substr(eq + 3)) + "')";
  const CLI::Option* o = find_option(at, name);
  if (!o) return what;
  const std::string type = o->get_type_name();
  if (o->get_expected_max() == 0 || type == "BOOLEAN")
    return name + " is a flag: give it alone, or as " + name + "=true or " + name + "=false" + got;
  if (type == "INT" || type == "UINT") return name + " is out of the range this flag takes" + got;
  if (type == "FLOAT") return name + " must be a finite decimal number" + got;
  return name + " takes " + (type.empty() ? std::string("a different value") : type) + got;
}

// CLI11 reports a mistyped subcommand as "The following argument was not expected: X" and a
// group named without one of its own (`lesson`) as "A subcommand is required": say which word
// was wrong and name what exists instead. Other parse errors keep CLI11's text.
static std::string parse_error_text(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  CLI::App* at = &app;  // the deepest subcommand the command line named
  for (;;) {
    const std::vector<CLI::App*> named = at->get_subcommands();
    if (named.empty()) break;
    at = named.front();
  }
  const bool top = at == &app;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) && top && argc > 1 && argv[1][0] != '-')
    return std::string("unknown subcommand '") + argv[1] + "' (the subcommands: " + subcommand_names(&app) +
           "; flashstep --help)";
  if (dynamic_cast<const CLI::RequiredError*>(&e) && !top && at->get_require_subcommand_min() > 0 &&
      at->get_subcommands().empty()) {
    std::string got;  // the word given in its place, if any
    for (int a = 1; a + 1 < argc; ++a)
      if (argv[a] == at->get_name() && argv[a + 1][0] != '-') got = std::string(" (got '") + argv[a + 1] + "')";
    return at->get_name() + " needs one of its subcommands: " + subcommand_names(at) + got + "; flashstep " +
           at->get_name() + " --help";
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e)) return conversion_error_text(at, e.what());
  if (dynamic_cast<const CLI::ValidationError*>(&e)) {
    // CLI11 puts the flag's name before a check's message; a message that begins with that name
    // already ("--heads is out of range") is kept as it is, not "--heads: --heads is ...".
    const std::string what = e.what();
    const size_t colon = what.find(": ");
    if (colon == 0) return what.substr(2);  // a hidden option's check: CLI11 gives it no name
    if (colon != std::string::npos && colon > 0) {
      const std::string name = what.substr(0, colon), rest = what.substr(colon + 2);
      if (rest.compare(0, name.size(), name) == 0 && (rest.size() == name.size() || rest[name.size()] == ' ' || rest[name.size()] == ':'))
        return rest;
    }
  }
  return e.what();
}

int main(int argc, char** argv) {
  using namespace flashstep;
  CLI::App app{"flashstep: step through FlashAttention (Dao et al. 2022) one pseudocode line "
               "at a time, with simulated HBM/SRAM traffic"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", "flashstep " FLASHSTEP_VERSION " (" FLASHSTEP_BUILD_FEATURES ")");
  Action action;
  SetAction set_action = [&](Action f) { action = std::move(f); };
  add_lesson_command(app, set_action);
  add_run_command(app, set_action);
  add_explain_command(app, set_action);
  add_bench_cpu_command(app, set_action);
  add_gui_command(app, set_action);
  add_plot_command(app, set_action);
  add_compare_command(app, set_action);
  add_learn_command(app, set_action);
  add_verify_command(app, set_action);
  add_gpu_run_command(app, set_action);
  add_bench_gpu_command(app, set_action);
  strict_whole_numbers(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return flush_stdout(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return flush_stdout(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return flush_stdout(app.exit(e));
  } catch (const CLI::ParseError& e) {
    print_error(parse_error_text(app, e, argc, argv).c_str());
    return 2;
  }
  try {
    refuse_empty_values(&app);
    refuse_fp8_on_gpu(app);
    if (!action) {
      if (argc == 1 && gui_available_for_default()) return run_gui_default();
      std::fputs(app.help().c_str(), stdout);
      return flush_stdout(argc == 1 ? 0 : 2);
    }
    return flush_stdout(action());
  } catch (const InputError& e) {
    print_error(e.what());
    return 2;
  } catch (const nlohmann::json::exception& e) {  // JSON comes only from input files: bad input
    print_error((std::string("bad JSON input: ") + e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "flashstep: error: out of memory\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashstep: internal error: %s\n", e.what());
    return 4;
  }
  return 0;
}
