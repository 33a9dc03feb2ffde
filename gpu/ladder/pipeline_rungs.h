// The ladder's Hopper forward rungs as the pipeline model (core/pipeline_model.h) sees them: the
// table the model's rows were before they became techniques, for the lab's predictions
// (gpu/ladder/notes/pipeline-model.md). Each rung is one earlier rung with one change; the
// product's rows (one per technique) are core/pipeline_model.h's techniques(). Built only in a
// ladder build, into the ladder's tests (gpu/ladder/tests/).
#pragma once
#include "core/pipeline_model.h"

#include <cstdint>
#include <vector>

namespace flashstep::ladder {

struct Rung {
  int variant = 0;                // the rung's number (gpu/ladder/fa3_rungs.cu, fa2_wgmma.cu)
  pipeline::Kernel kernel;        // key "v<variant>"
};

// The modelled rungs for head dimension d (64 or 128), in ladder order: 13 and 14
// (gpu/ladder/fa2_wgmma.cu), 15-22, 26-29, 33-39 and 43 (gpu/ladder/fa3_rungs.cu, the defaults
// 34 and 42 in gpu/fa3_forward.cu). Rungs 23-25, 30-32, 40-42 change only the softmax's
// instruction chains, the stagger or the width of O += P~ V: nothing this model charges.
// Throws InputError for another d.
std::vector<Rung> rungs(int64_t d);
// One of them; throws InputError naming the modelled variants.
Rung rung(int variant, int64_t d);

}  // namespace flashstep::ladder
