// Heatmap uploads: a texture is re-uploaded only when its data changed (new run, HBM rows
// written, compare file loaded), and re-coloured only when its data or colour range changed.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <cmath>

namespace flashstep::gui {

namespace {

// Cumulative bytes written to a tensor up to the current step: equal keys mean equal contents,
// because HBM contents are a function of the writes replayed so far.
int64_t written_key(const AppState& s, Tensor t) {
  const Step* cur = current_step(s);
  return cur ? cur->tensor_written[int(t)] : 0;
}

void upload_hbm(const AppState& s, Heatmap& h, Tensor t, int64_t& key) {
  const int64_t now = written_key(s, t);
  if (now == key && h.valid()) return;
  key = now;
  if (s.cursor->written(t)) h.upload(s.cursor->hbm(t));
}

}  // namespace

void UpdateHeatmaps(AppState& s, GpuState& g) {
  if (!s.run || !g.shader.program()) return;
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  if (g.run_seen != s.run_version) {  // a new trace: inputs, score tiles and masks once
    g.run_seen = s.run_version;
    const bool fp8 = v.fp8_stored[0].size() > 0;  // --dtype fp8: the dequantised e4m3 values in HBM
    g.Q.upload(fp8 ? v.fp8_stored[0] : p.Q);
    g.K.upload(fp8 ? v.fp8_stored[1] : p.K);
    g.V.upload(fp8 ? v.fp8_stored[2] : p.V);
    if (v.S.size()) {
      g.S.upload(v.S);  // all tiles; only those computed so far are drawn
      g.P.upload(v.P);
    } else {  // too large to show: drop the previous run's textures
      g.S.destroy();
      g.P.destroy();
    }
    g.o_key = g.l_key = g.m_key = g.L_key = -1;
    if (!g.legend_div.valid()) {
      float ramp[128];
      for (int k = 0; k < 128; ++k) ramp[k] = -1.0f + 2.0f * float(k) / 127.0f;
      g.legend_div.upload(ramp, 1, 128);
      for (int k = 0; k < 128; ++k) ramp[k] = float(k) / 127.0f;
      g.legend_seq.upload(ramp, 1, 128);
    }
  }
  upload_hbm(s, g.O, Tensor::O, g.o_key);
  upload_hbm(s, g.l, Tensor::l, g.l_key);
  upload_hbm(s, g.m, Tensor::m, g.m_key);
  upload_hbm(s, g.L, Tensor::L, g.L_key);
  if (g.compare_seen != s.compare.version && s.compare.loaded) {
    g.compare_seen = s.compare.version;
    g.err.upload(s.compare.err);
    float ramp[128];
    for (int k = 0; k < 128; ++k)
      ramp[k] = std::pow(10.0f, s.compare.log_lo + (s.compare.log_hi - s.compare.log_lo) * float(k) / 127.0f);
    g.legend_log.upload(ramp, 1, 128);
  }

  HeatmapParams hp;
  hp.map = Colormap::diverging;
  hp.hi = v.range_qkv;
  g.Q.set_params(hp);
  hp.transpose = true;  // K and V are drawn as d x Nk, so block j lines up with S's columns
  g.K.set_params(hp);
  g.V.set_params(hp);
  hp.transpose = false;
  hp.hi = v.range_s;
  g.S.set_params(hp);
  HeatmapParams pp = hp;
  pp.map = Colormap::sequential;
  pp.lo = 0;
  pp.hi = 1;
  g.P.set_params(pp);
  HeatmapParams op;
  op.hi = v.range_o;
  op.empty = !s.cursor->written(Tensor::O);
  g.O.set_params(op);
  op.hi = v.range_m;
  op.empty = !s.cursor->written(Tensor::m);
  g.m.set_params(op);
  op.hi = v.range_L;
  op.empty = !s.cursor->written(Tensor::L);
  g.L.set_params(op);
  HeatmapParams lp;
  lp.map = Colormap::sequential;
  lp.lo = 0;
  lp.hi = v.max_l;
  lp.empty = !s.cursor->written(Tensor::l);
  g.l.set_params(lp);
  HeatmapParams ep;
  ep.map = Colormap::log_error;
  ep.lo = s.compare.log_lo;
  ep.hi = s.compare.log_hi;
  g.err.set_params(ep);
  g.legend_log.set_params(ep);
  HeatmapParams dp;
  g.legend_div.set_params(dp);
  HeatmapParams sp;
  sp.map = Colormap::sequential;
  sp.lo = 0;
  sp.hi = 1;
  g.legend_seq.set_params(sp);

  for (Heatmap* h : {&g.Q, &g.K, &g.V, &g.S, &g.P, &g.O, &g.l, &g.m, &g.L, &g.err, &g.legend_div,
                     &g.legend_seq, &g.legend_log})
    h->render(g.shader);
}

}  // namespace flashstep::gui
