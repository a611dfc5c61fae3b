// Fitting a calibration (core/config/calibration_file.h) to measurements of
// a real machine (`shardlab bench ... -o`): per collective, algorithm, scope
// and group size a latency and an inverse bandwidth, with a floor for the
// smallest sizes, and the per-step link figures that make the closed form
// reproduce them; a GEMM efficiency model over shapes; the memory bandwidth
// of streaming copies. Robust (IRLS, Huber) least squares: robust_fit.h.
#pragma once

#include <vector>

#include "core/config/calibration_file.h"

namespace shardlab {

class JsonNode;

// Fits the measurement files, each a JSON node with its file name.
Calibration FitCalibration(const std::vector<JsonNode>& measurements);

}  // namespace shardlab
