// The desktop app's state, outside every draw function (immediate-mode style): the current
// run (a recorded trace of the chosen schedule, fa1, fa2 or standard, and a Cursor over it),
// what is derived from the trace once (the S and P~ tiles laid out as Nq x Nk matrices, the
// step at which each tile appears, skipped and partly masked tiles, the m_i / l_i series per
// row, the three schedules' totals and closed forms on the same inputs, the error against
// float64), the problem editor's fields, the lesson, the compare tab, and the playback
// controls. Nothing here knows about OpenGL; the actions below are what buttons, keys and the
// --script option call.
#pragma once
#include "app/gui/text_field.h"
#include "app/gui/bench_state.h"
#include "app/gui/pipeline_state.h"
#include "app/gui/course_state.h"
#include "app/gui/l2_view.h"
#include "app/gui/preset.h"
#include "app/gui/row_state.h"
#include "app/gui/settings.h"
#include "app/gui/snapshot_compare.h"
#include "core/closed_form.h"
#include "core/lesson.h"
#include "core/reference.h"
#include "core/schedule_registry.h"
#include "core/trace.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace flashstep::gui {

// One schedule's whole run on the same inputs, for the memory panel's side-by-side table.
struct ScheduleRun {
  Schedule schedule = kDefaultSchedule;
  bool ok = false;
  std::string error;         // why there is no run (too large for the simulated HBM, ...)
  bool not_applicable = false;  // the schedule has no such path (no FP8 version, no backward): `error` says so
  Totals totals;             // the whole run (forward + backward when the backward ran)
  TrafficForm form;          // the closed form for the unmasked problem (an upper bound with masks)
  // With the backward (RunView::backward): each pass alone, and the backward's closed form.
  Totals forward_totals, backward_totals;
  TrafficForm backward_form;
  bool have_error = false;   // error against float64 computed
  ErrorStats o_err, lse_err;
};

// Forward + backward HBM bytes read and written from the closed forms (the paper's Figure 2,
// left): the memory panel's row, shown whether or not the backward ran. The inputs at the storage
// type's size, O at the output type's. -1 where the schedule has no forward + backward in this
// type (decode has no backward; FP8 has none on any schedule): the panel's "n/a".
int64_t fwd_bwd_form_bytes(const ScheduleRun& r, Dtype dtype);

// The schedules in the order the app shows them: the registry's (core/schedule_registry.h), read
// at first use (never during static initialisation, when the registry may not be made yet).
const std::vector<Schedule>& schedule_ids();
struct ScheduleIds {
  std::vector<Schedule>::const_iterator begin() const { return schedule_ids().begin(); }
  std::vector<Schedule>::const_iterator end() const { return schedule_ids().end(); }
  size_t size() const { return schedule_ids().size(); }
  Schedule operator[](size_t k) const { return schedule_ids()[k]; }
};
inline constexpr ScheduleIds kSchedules{};
inline int schedule_column(Schedule s) { return schedule_index(s); }  // index into kSchedules

// Everything computed from one trace when it is made; read-only afterwards.
struct RunView {
  ProblemSpec spec;            // what was asked for (Revert fields restores it)
  bool backward = false;       // the backward pass follows (dO from the seed, as `run --backward`)
  std::optional<L2Config> l2;  // the L2 model, for every schedule's run (as `run --l2/--gpu`)
  Trace trace;                 // recorded run of spec.schedule
  bool from_file = false;      // read from a trace file (gui --trace): its FLOPs may not be counted
  Schedule schedule() const { return trace.problem.schedule; }
  // Every schedule on the same inputs and blocks (kSchedules order); the shown schedule's
  // entry is the recorded run's totals.
  std::vector<ScheduleRun> runs;
  // A trace that holds part of its schedule (the decode-combine puzzle's: the partials, which
  // core's run writes and its steps only read, placed in HBM before its first step): core's
  // whole run of the schedule on the same problem, for the readers that speak of the schedule's
  // traffic (decode's extra traffic, the memory panel's note). The trace's own totals, and its
  // column in `runs`, are the part it holds. Unset for a run or a trace of the whole schedule.
  std::optional<Totals> whole_schedule;
  std::string reference_note;  // why there is no float64 comparison, if so
  // S and P~ tiles placed in Nq x Nk matrices; empty when too large. fa1: S_ij at L9, P~_ij at
  // L10; fa2: S_ij at L8, P~_ij at L9; standard: the row blocks S_i, P_i written to HBM at L1,
  // L2. Masked entries are -inf in S and, for display, in P too (their weight is 0).
  Mat S, P;
  // Tr x Tc: the number of applied steps after which tile (i, j) exists.
  Mat s_ready, p_ready;
  Mat skipped;                 // Tr x Tc: 1 where the mask hides the whole tile (fa1, fa2 skip it)
  Mat partial;                 // Tr x Tc: 1 where the mask hides some entries
  int64_t skipped_tiles = 0, partial_tiles = 0;
  std::vector<int64_t> q_first_load, kv_first_load;  // step index of the first load per block
  // Per (i, j) = i * Tc + j; -1 if none. tilde: the line that produced m~_ij (fa1 L10, fa2 L9);
  // merge: the line with m_i^new, l_i^new (fa1 L11, fa2 L9); keep: the line that applied
  // dropout to P~_ij (fa1 L12, fa2 L10, standard L3 for every j of row block i).
  std::vector<int64_t> tilde_step, merge_step, keep_step;
  bool any_merge = false;  // some merge_step is set: the run shows merged m_i, l_i somewhere
  Mat m_series, l_series;      // Nq x Tc: m_i^new, l_i^new of each row after the merge of (i, j)
  float range_qkv = 1, range_o = 1, range_s = 1, range_m = 1, max_l = 1, range_L = 1;
  // --dtype fp8 (docs/fp8.md), for Q, K, V (0, 1, 2); empty for the other types. values: the
  // e4m3 values in HBM; scales: their scales as in HBM (1 row, or one per Q / K, V block);
  // stored: value x scale, what the heatmaps show; inputs: before quantisation (Q, K rotated
  // with --rotate).
  Mat fp8_values[3], fp8_scales[3], fp8_stored[3], fp8_inputs[3];
  float fp8_scale_of(int which, int64_t row) const;  // the scale of the row's block
  int64_t step_of(int64_t i, int64_t j, Line line) const;  // first step of (i, j) at a line
  // The first forward step of iteration (i, j) that is not a skip (untiled schedules: of row
  // block i); -1 when the mask skips it.
  int64_t first_step_at(int64_t i, int64_t j) const;
};

// The app refuses to record a trace larger than this (the editor says so beside the sizes).
constexpr size_t kMaxTraceBytes = size_t(512) << 20;

// Builds the view (runs the chosen schedule recorded, the other two unrecorded, and the
// float64 reference once). With `backward`, every run adds its backward pass on dO generated
// from the seed (make_grad_output); with `l2`, every run goes through the L2 model. Throws
// InputError.
std::unique_ptr<RunView> make_run_view(const ProblemSpec& spec, bool backward = false,
                                       const std::optional<L2Config>& l2 = std::nullopt);
// The view of a trace recorded elsewhere (a file: flashstep gui --trace): its steps as they are,
// every other schedule run on its inputs beside it (with their backward on the file's dO when
// the trace has a backward). Throws InputError.
std::unique_ptr<RunView> make_run_view_from_trace(Trace trace);
// What both share: the views derived from v->trace (dO: the backward's input, when it ran).
std::unique_ptr<RunView> derive_run_view(std::unique_ptr<RunView> v, const Mat* dO);

// The problem editor's fields, edited in place by ImGui widgets.
enum class Field { none, nq, nk, d, M, M_kib, br, bc, scale, seed, pattern, files, window, kv_len,
                   dropout, dtype, l2 };
struct ProblemForm {
  int64_t nq = 8, nk = 8, d = 4, M = 64, br = 0, bc = 0;
  char M_kib[32] = "0.25";  // M in KiB of float32, text so "64KiB" and "0.5" both work
  bool default_scale = true;
  Schedule schedule = kDefaultSchedule;
  AttentionOptions options;  // mask (window -1: no limit; key length -1: all), dropout, dtype
  double scale = 0.5;
  uint64_t seed = 1;  // 0 .. 2^64 - 1, as --seed
  int pattern = 0;          // index into input_patterns()
  bool use_files = false;
  bool backward = false;    // the "backward" checkbox: run the backward pass after the forward
  char q_path[kPathField] = "", k_path[kPathField] = "", v_path[kPathField] = "";
  // The L2 model, as `run`'s flags: --l2 SIZE (empty: the GPU's), --gpu, --heads, --ncu.
  bool l2 = false;
  int gpu = 0;              // index into kGpuNames
  char l2_size[32] = "";
  int64_t heads = 1;
  bool ncu = false;
  std::optional<L2Config> l2_config() const;  // none when the box is off; throws InputError
  void set_l2(const std::optional<L2Config>& c);
  // Validation of the fields as they stand (updated on every edit).
  std::string error;
  Field error_field = Field::none;
  std::string preview;              // "Br = 4, Bc = 4, Tr = 2, Tc = 2, 31 steps" when valid
  ProblemSpec to_spec() const;      // throws InputError
  void from_spec(const ProblemSpec& s);
  void validate();                  // sets error / error_field
};

struct LessonState {
  char values[256] = "1, 2, 3, 4";
  char v[256] = "";  // a value per entry: the output O carried with the blocks (empty: none)
  int block = 2;
  int shown = 0;  // blocks merged so far (0 .. blocks.size())
  // The block table as last drawn (lesson_view.cpp): its form (0 long titles, 1 short, 2 narrow)
  // and how far its widest cell's text ran past what the table shows (0 or less: none cut), and
  // how far it scrolls sideways (0: all its columns in view).
  int table_form = 0;
  float table_clip_px = 0;
  float softmax_clip_px = 0;  // how far the softmax table's widest cell text ran past its cell (lesson_view.cpp)
  float table_scroll_px = 0;
  Lesson lesson;
  std::string error;
  void recompute();
};

struct CompareState {
  char o_path[kPathField] = "", lse_path[kPathField] = "";
  double tolerance = 1e-5;  // relative (normwise), as core/reference.h defines it
  bool loaded = false;
  Mat O, err;               // loaded O and |O - O_trace|
  Vec lse;
  ErrorStats o_stats, lse_stats;
  float log_lo = -9, log_hi = -1;
  std::string error, message;
  uint64_t version = 0;     // bumps when err changes (the heatmap re-uploads)
  float map_px[2] = {0, 0};  // the |O - O_trace| map's width and height as last drawn (--dump-state)
  float header_cut_px = 0;    // how far the .npy section's header title runs past what it shows (--dump-state)
  bool passed() const { return loaded && o_stats.max_rel <= tolerance && lse_stats.max_rel <= tolerance; }
};

// The measured DRAM bytes (tools/device/ncu_dram.sh's JSON) the memory panel shows beside the model.
struct DramState {
  char path[kPathField] = "";
  bool loaded = false;
  DramMeasurements data;
  std::string error;
};

// The L2 model replays every head's accesses for each of the three schedules, about one cache
// operation per 128 bytes moved: the app refuses more than kMaxL2LineOps of them (a few
// seconds; `flashstep run` takes up to 2^31 for one schedule). Throws InputError.
constexpr double kMaxL2LineOps = double(int64_t(1) << 25);
void check_l2_cost(const ProblemSpec& s, const Tiling& t, const L2Config& l2);

// The GPUs the editor offers for the L2 model (core/l2_cache.cpp knows their figures).
constexpr const char* kGpuNames[2] = {"h200", "a100"};

enum class View { tiles, lesson, compare, bench, pipeline };
// What a file chosen with the web page's file picker is for (AppState::load_local_file): the
// Bench view's results, the compare view's O and lse, a saved trace, the problem editor's Q, K
// and V inputs, and the memory panel's DRAM measurement.
enum class LocalFile { bench, compare_o, compare_lse, trace, input_q, input_k, input_v, dram };
enum class ExportKind { png, json, csv, chrome };
enum class SpMode { follow, S, P };

struct AppState {
  std::string asset_dir;
  std::vector<std::string> preset_names;
  std::string preset_name, preset_title, preset_description;
  std::string preset_file;  // the file the last preset was read from

  std::unique_ptr<RunView> run;
  std::unique_ptr<Cursor> cursor;
  // A softmax row's trace (gui --trace of a softmax puzzle's run, row_state.h): while set, the
  // panels show it in place of the run (row_view.cpp) and the controls step through its steps;
  // row_now is the state after row_now.k of them. A new run (set_run) ends it.
  std::unique_ptr<RowView> row;
  RowAt row_now;
  uint64_t run_version = 0;    // bumps when a new trace replaces the old one
  uint64_t cursor_version = 0; // bumps when the cursor moves
  std::string explanation;     // Trace::explain of the current step (cached on move)
  std::string mask_text;       // Mask::describe of the run, or "" without a mask (cached)
  // The tiles view's cell sizes in pixels as last drawn (the sequence axes, the d axis; 0 before
  // a frame), for --dump-state.
  float tiles_cell_px = 0, tiles_d_cell_px = 0;
  // The height of the query rows (Q, S, O and the statistics) and its gap to V^T's title below.
  float tiles_rows_px = 0, tiles_rows_label_gap_px = 0;
  int tiles_split_labels = 0, tiles_split_label_overlaps = 0;  // decode's "s=1" labels under K^T, and those over a j label
  int64_t tiles_j_labels = 0, tiles_j_last_label = -1, tiles_j_stride = 1;  // K^T's block labels as drawn
  // How far the memory panel's widest item reached past its content width as last drawn (pixels;
  // 0 or less: nothing clipped at the right edge), for --dump-state.
  float memory_overflow_px = 0;
  // Each panel's title as drawn in the last frame that drew it (widgets.h's FitTitle): a fixed
  // table, so that an idle frame allocates nothing.
  struct PanelTitle {
    char id[64] = {};  // the window's id: its title, or the part after "###"
    char full[96] = {};
    char shown[96] = {};
    float shown_px = 0, room_px = 0;  // the shown text's width and the title bar's room for it
    int frame = -1;  // ImGui's frame count when last drawn
  };
  PanelTitle panel_titles[12];
  float controls_overflow_px = 0;     // how far the controls' widest row ran past the panel's width
  float scrub_label_gap_px = 0;       // the scrubber's "step k of n" to its grab (negative: covered)
  float scrub_label_cut_px = 0;       // how far that label runs past the slider's ends (0 or less: none)
  int softmax_table_columns = 0;      // the softmax panel's statistics table as last drawn: its value columns,
  bool softmax_table_l_tilde = false;  // and whether l~_ij is among them
  bool softmax_table_fixed[8] = {};    // each value column's format: three decimals, or e-notation
  float softmax_table_blank_px = 0;    // the table's height under its last row (a blank row: a line)
  float softmax_overflow_px = 0;      // how far the softmax panel's widest item ran past its width
  float softmax_plot_label_clear_px = 0;  // its plots: how far the curve's top stays under the label (< 0: through it)
  char softmax_note[128] = "";        // its note on what this (i, j) has not done yet ("FD L8 of this ...")
  float algo_overflow_px = 0;         // how far the algorithm panel's listing ran past its width
  float algo_listing_lines = 0;       // lines of the pseudocode listing the algorithm panel shows at once
  bool algo_listing_sideways = false;  // the listing's rows scroll sideways (a word wider than a row's room)
  float algo_current_shown_px = 0;    // how much of the current line's row the listing shows (px)
  float algo_sentence_hidden_px = 0;  // how much of the step's sentence its box hides (0: all of it shows)
  float algo_want_h = 0;              // the algorithm panel's height with the whole sentence (the course's layout)
  float decode_lse_gap_px = 0;        // decode's tiles: O^(s)'s column to lse^(s)'s as drawn (below 0: overlap)
  float center_overflow_px = 0;       // how far the centre panel's widest item ran past its width
  int view_tabs_cut = 0;              // the centre's view tabs drawn narrower than their labels
  bool view_combo = false;            // a combo picks the centre's view (its tabs' labels would be cut)
  float view_combo_cut_px = 0;        // how much of the combo's widest name would not show (0: none)
  float tiles_header_overflow_px = 0;  // how far the tiles' header (the score tile's choices) ran past the panel
  float tiles_bar_cut_px = 0;         // how much of the tiles' colour bars the panel's bottom edge cuts off
  float backward_overflow_px = 0;     // how far the backward tiles' rows (boxes and names) ran past the view
  float preset_combo_cut_px = 0;      // how much wider the preset's name is than its combo shows
  float backward_col_px = 0;          // the backward tiles' column width (1: every row too wide even so)
  float problem_overflow_px = 0;      // how far the problem panel's widest item ran past its width
  int problem_page = 0;               // the problem panel's page: 0 the problem, 1 export
  bool problem_combo = false;         // a combo picks that page (its tabs' labels would be cut)
  int problem_tabs_cut = 0;           // the problem panel's tabs drawn narrower than their labels
  float memory_table_clip_px = 0;     // how far the HBM table's widest cell text ran past its cell
  bool memory_table_compact = false;  // shapes and bytes written short to fit (memory_panel.cpp)
  bool memory_table_scroll = false;   // the table scrolls sideways (not even its short form fits)
  bool whole_run_scroll = false;      // the whole-run table scrolls sideways
  float whole_run_hidden_px = 0;      // scrolling, how much taller the whole-run table is than the panel's view
  float memory_table_hidden_px = 0;   // scrolling, how far its bottom (the scrollbar) lies under the panel's edge
  bool memory_table_tight_text = false;  // byte counts in their tight form ("2KiB") to fit
  int memory_so_far_pct = 0;             // the "so far" bar's share of the run's bytes, as written
  bool memory_table_shape = true;     // the shape column shown (left out where even short is too wide)
  std::string memory_header;          // the memory panel's first line as wrapped (lines joined by newlines)

  ProblemForm form;
  std::string apply_error;     // why the last Apply failed (the old run stays)
  LessonState lesson;
  CompareState compare;
  BenchState bench;           // the Bench view (app/gui/bench_state.h)
  PipelineState pipeline;     // the Pipeline view (app/gui/pipeline_state.h)
  DisplayState display;        // theme, font scale, hidden panels (app/gui/settings.h)
  DramState dram;
  SnapshotCompare snapshots;   // the compare view's snapshot folder against this trace
  CourseState course;          // the guided course, when the app is in it (app/gui/course_state.h)

  // Controls.
  bool playing = false;
  float speed = 4.0f;          // steps per second
  double play_accum = 0;
  int jump_i = 0, jump_j = 0;
  std::string jump_error;
  int plot_row = 0;
  bool plot_follow = true;     // plot row follows the current block
  SpMode sp_mode = SpMode::follow;
  View view = View::tiles;
  bool view_changed = false;   // select the tab once after a programmatic change

  // Export.
  char export_base[kPathField] = "flashstep-trace";
  std::string export_message;
  std::string screenshot_request;  // PNG path, written at the end of the next frame
  // The PNG at the framebuffer's pixels (display.pixel_ratio times the layout's each way) rather
  // than at the layout's size, which is the default. Only the web page on a HiDPI screen offers
  // it: on the desktop the two are the same.
  bool export_device_pixels = false;

  // The web page's file picker: opens the browser's dialog for a file of this kind from the
  // user's computer; the page writes the chosen file into its memory and calls load_local_file.
  // Empty on the desktop, where the views take a typed path (and show no button for it).
  std::function<void(LocalFile)> pick_local_file;
  // The web page keeps those files in the browser between visits (web/kept_files.h): the Display
  // menu shows local_files_note (where they are kept, or why they are not) and a button that calls
  // forget_local_files. Both empty on the desktop, whose menu shows neither.
  std::string local_files_note;
  std::function<void()> forget_local_files;

  // Actions.
  void load_preset(const std::string& name_or_path);  // throws InputError
  bool apply_form();           // new run from the form; on failure keeps the old one
  void set_run(std::unique_ptr<RunView> v);
  void step_forward();
  void step_back();
  void seek(size_t k);
  void run_to_end();
  void reset();
  bool jump_to(int64_t i, int64_t j);  // to the load of (i, j): Alg1 L8, FA2 L7, Alg0 L1 of i
  void advance_playback(double dt);
  // "step 5; back 2; seek 9; end; home; jump 1 0; set d 8; files q.npy k.npy v.npy; apply;
  //  export out/trace; dram m.json" (set: nq nk d M br bc seed, schedule NAME, dtype NAME,
  //  causal 0|1, window LEFT RIGHT, kvlen N, dropout P, backward 0|1, l2 SIZE|gpu|off, gpu
  //  NAME, heads H, ncu 0|1; export writes all four formats; dram loads a measurement;
  //  display theme light | font-scale X | hide PANELS | show PANELS | presentation | default);
  //  the compare view's buttons: "snapshots DIR; snapshot-problem; first-over"; the course:
  //  "course next | back | open ID [PAGE] | answer Q TEXT | new-problem".
  void run_script(const std::string& script);
  // The script's `set FIELD VALUE [RIGHT]`: the editor's field as typed (RIGHT: window's second side).
  void set_field_from_script(const std::string& field, const std::string& value, const std::string& right);
  void load_compare();
  // A file the web page's picker put at `path`: loaded as the view's Load button loads a typed
  // path, through the same checks, and its view shown. A file that fails them leaves what was
  // loaded before, path fields included, and its view shows one error line. A saved trace
  // (LocalFile::trace, `gui --trace`'s file) becomes the run; one that is not a trace leaves the
  // run and says why in the Problem tab (apply_error). An input (LocalFile::input_q, _k, _v)
  // becomes its editor field, with ".npy inputs" ticked, once it reads as a matrix (else the
  // field stays and apply_error says why); with all three fields given, the problem is applied as
  // Apply does, and one that fails (shapes that do not match) keeps the run, its error naming the
  // file. A DRAM measurement that fails to load leaves the one loaded, path included.
  void load_local_file(LocalFile what, const std::string& path);
  void load_dram();            // dram.path -> dram.data; a bad file sets dram.error, keeps the old
  // The compare view's snapshot actions: load snapshots.dir; replace the run by the folder's
  // problem (when it is of another one); move the cursor to the first (i, j) over tolerance.
  void load_snapshots();
  bool load_snapshot_problem();
  bool seek_first_over();
  void select_snapshot_tile();  // the snapshot tile of the current step's (i, j)
  // Writes <export_base>.json / .csv / .chrome.json now, or asks for <export_base>.png at the
  // end of this frame; the outcome goes to export_message.
  void export_as(ExportKind kind);
  // Every file the app has read (path, what it was): the preset and its q/k/v, the bench file,
  // the settings file, the measurement, the snapshot folder's files, the compare files. No
  // output of the app may overwrite one (core/output_files.h compares by device and inode).
  std::vector<std::pair<std::string, std::string>> input_files() const;
  // One output file, written by core/output_files.h's rules, never over an input_files() one.
  void write_output(const std::string& path, const std::string& bytes, const std::string& what) const;
  // Inputs from three .npy files (the editor's file fields), validated as typed.
  void set_files(const std::string& q, const std::string& k, const std::string& v);
  void cursor_moved();
  size_t index() const { return row ? row_now.k : cursor ? cursor->index() : 0; }
  size_t steps() const { return row ? row->trace.steps.size() : cursor ? cursor->size() : 0; }
};

}  // namespace flashstep::gui
