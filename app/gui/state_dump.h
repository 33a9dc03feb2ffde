// The app's position and state as JSON (`flashstep gui --dump-state`): the step, the HBM
// contents, the memory panel's table, the editor's error, the lesson and compare state. Tests
// compare it with core's Cursor and totals.
#pragma once
#include "app/gui/app_state.h"

#include <nlohmann/json.hpp>
#include <string>

namespace flashstep::gui {

nlohmann::json state_to_json(const AppState& s);
void write_state_dump(const AppState& s, const std::string& path);  // throws InputError

}  // namespace flashstep::gui
