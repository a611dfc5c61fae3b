#include "core/cost/compute_cost.h"

#include <algorithm>
#include <cmath>

namespace shardlab {
namespace {

// The busy fraction of the machine while `batch` [rows, cols] outputs run in
// tiles: the tiles run in waves of compute_units, the edge tiles and the
// last wave partly empty.
double WaveFill(int64_t batch, int64_t rows, int64_t cols, const GemmTile& tile, int64_t units) {
  const int64_t tiles = batch * ((rows + tile.rows - 1) / tile.rows) * ((cols + tile.cols - 1) / tile.cols);
  const int64_t waves = (tiles + units - 1) / units;
  return static_cast<double>(batch) * static_cast<double>(rows) * static_cast<double>(cols) /
         (static_cast<double>(waves) * static_cast<double>(units) * static_cast<double>(tile.rows * tile.cols));
}

// The library picks the tile that finishes first: the best fill weighted by
// the tile's own efficiency.
double BestTileFill(const DeviceSpec& d, int64_t batch, int64_t rows, int64_t cols) {
  if (d.compute_units <= 0 || d.gemm_tiles.empty()) return 1;
  double best = 0;
  for (const GemmTile& tile : d.gemm_tiles)
    best = std::max(best, tile.efficiency * WaveFill(batch, rows, cols, tile, d.compute_units));
  return best;
}

bool Misaligned(const DeviceSpec& d, const GemmShape& g, DType dtype) {
  if (d.gemm_alignment <= 0) return false;
  const int64_t size = std::max<int64_t>(1, DTypeBytes(dtype));
  if (d.gemm_alignment % size != 0) return false;
  const int64_t elements = d.gemm_alignment / size;
  // Rows of A are k long, rows of B and C n long (row-major operands; the
  // backward products' leading dimensions are the same k and n).
  return g.k % elements != 0 || g.n % elements != 0;
}

// The smallest tile's edges (1 x 1 without tiles).
GemmTile SmallestTile(const DeviceSpec& d) {
  if (d.gemm_tiles.empty()) return {1, 1, 1};
  GemmTile smallest{int64_t{1} << 16, int64_t{1} << 16, 1};
  for (const GemmTile& tile : d.gemm_tiles) {
    smallest.rows = std::min(smallest.rows, tile.rows);
    smallest.cols = std::min(smallest.cols, tile.cols);
  }
  return smallest;
}

// One product's efficiency before the alignment rule: an [rows, cols] output
// over a `depth`-long k-loop. An output thinner than the smallest tile loses
// the tile's empty rows in BestTileFill; the thin term counts it as that tile's
// edge, not twice.
double ProductEfficiency(const DeviceSpec& d, double base, int64_t batch, int64_t rows, int64_t cols, int64_t depth) {
  const GemmTile smallest = SmallestTile(d);
  const double thin =
      1 / static_cast<double>(std::max(rows, smallest.rows)) + 1 / static_cast<double>(std::max(cols, smallest.cols));
  return base / (1 + d.gemm_half_size * thin + d.gemm_half_depth / static_cast<double>(depth)) *
         BestTileFill(d, batch, rows, cols);
}

// The output tiles of a [rows, cols] product (`batch` of them) in the
// smallest tile, the most the library can run at once.
double SmallTiles(const DeviceSpec& d, int64_t batch, int64_t rows, int64_t cols) {
  const GemmTile tile = SmallestTile(d);
  return static_cast<double>(batch) * static_cast<double>((rows + tile.rows - 1) / tile.rows) *
         static_cast<double>((cols + tile.cols - 1) / tile.cols);
}

// The efficiency a backward pass runs at, from its two products' own: dA
// [m,k] = dC B^T and dB [k,n] = A^T dC take half the pass each, so their
// times add (harmonic mean); a split backward's task runs one of them.
double BackwardEfficiency(GemmGradient gradient, double first, double second) {
  if (gradient == GemmGradient::kFirst) return first;
  if (gradient == GemmGradient::kSecond) return second;
  return 2 / (1 / first + 1 / second);
}

// The fraction of memory bandwidth a product of `tiles` output tiles streams
// its operands at: one wave of the compute units or less reaches
// gemm_memory_efficiency (each tile streams its slice of the operands at its
// own rate), more waves proportionally more, up to memory_efficiency.
double StreamingEfficiency(const DeviceSpec& d, double tiles) {
  const double waves = std::max(1.0, tiles / static_cast<double>(d.compute_units));
  return std::min(d.memory_efficiency, d.gemm_memory_efficiency * waves);
}

// A GEMM pass's streaming efficiency; the backward's dA and dB stream their
// own bytes, about half the pass's each.
double GemmStreamingEfficiency(const DeviceSpec& d, const KernelShape& kernel) {
  if (d.gemm_memory_efficiency <= 0 || d.compute_units <= 0) return d.memory_efficiency;
  const GemmShape& g = kernel.gemm;
  const int64_t batch = std::max<int64_t>(1, g.batch);
  if (!kernel.backward) return StreamingEfficiency(d, SmallTiles(d, batch, g.m, g.n));
  return BackwardEfficiency(kernel.gradient, StreamingEfficiency(d, SmallTiles(d, batch, g.m, g.k)),
                            StreamingEfficiency(d, SmallTiles(d, batch, g.k, g.n)));
}

}  // namespace

double PeakFlops(const DeviceSpec& device, DType dtype) {
  if (auto it = device.peak_flops.find(dtype); it != device.peak_flops.end()) return it->second;
  // Tensor cores run E5M2 operands at the E4M3 rate.
  if (dtype == DType::kFloat8E5M2) return PeakFlops(device, DType::kFloat8E4M3);
  if (auto it = device.peak_flops.find(DType::kFloat32); it != device.peak_flops.end()) return it->second;
  double best = 0;
  for (const auto& [d, flops] : device.peak_flops) best = std::max(best, flops);
  return best;
}

double GemmEfficiency(const DeviceSpec& d, const GemmShape& g, DType dtype, bool backward, GemmGradient gradient) {
  double efficiency = d.compute_efficiency;
  auto own = d.gemm_efficiency.find(dtype);
  // E5M2 operands run at E4M3's rate unless the device lists their own.
  if (own == d.gemm_efficiency.end() && dtype == DType::kFloat8E5M2) own = d.gemm_efficiency.find(DType::kFloat8E4M3);
  if (own != d.gemm_efficiency.end()) efficiency = own->second;
  if (g.empty()) return efficiency;
  const int64_t batch = std::max<int64_t>(1, g.batch);
  if (backward) {
    // dA[m,k] = dC B^T runs at depth n, dB[k,n] = A^T dC at depth m.
    efficiency = BackwardEfficiency(gradient, ProductEfficiency(d, efficiency, batch, g.m, g.k, g.n),
                                    ProductEfficiency(d, efficiency, batch, g.k, g.n, g.m));
  } else {
    efficiency = ProductEfficiency(d, efficiency, batch, g.m, g.n, g.k);
  }
  if (Misaligned(d, g, dtype)) efficiency *= d.misaligned_gemm_efficiency;
  return efficiency;
}

double AttentionEfficiency(const DeviceSpec& d, const AttentionShape& a, bool backward) {
  if (d.attention.efficiency <= 0 || a.empty()) return d.compute_efficiency;
  const double keys = static_cast<double>(a.kv_length) / (a.causal ? 2.0 : 1.0);
  const double base = backward ? d.attention.backward_efficiency : d.attention.efficiency;
  return base / (1 + d.attention.half_length / keys + d.attention.half_head_dim / static_cast<double>(a.head_dim));
}

ComputeCost ComputeSeconds(double flops, double bytes, DType dtype, const ClusterSpec& cluster, bool on_host,
                           const KernelShape& kernel) {
  ComputeCost c;
  if (flops == 0 && bytes == 0) return c;
  double compute, memory;
  if (on_host) {
    compute = flops / cluster.host.cpu_flops;
    memory = bytes / cluster.host.memory_bandwidth;
  } else {
    const DeviceSpec& d = cluster.device;
    double efficiency = d.compute_efficiency;
    if (!kernel.gemm.empty())
      efficiency = GemmEfficiency(d, kernel.gemm, dtype, kernel.backward, kernel.gradient);
    else if (!kernel.attention.empty())
      efficiency = AttentionEfficiency(d, kernel.attention, kernel.backward);
    compute = flops / (PeakFlops(d, dtype) * efficiency);
    const double streaming = kernel.gemm.empty() ? d.memory_efficiency : GemmStreamingEfficiency(d, kernel);
    memory = bytes / (d.memory_bandwidth * streaming);
  }
  c.memory_bound = memory > compute;
  const double launches =
      kernel.attention.empty() ? 1.0 : static_cast<double>(std::max<int64_t>(kernel.attention.steps, 1));
  c.seconds = std::max(compute, memory) + (on_host || kernel.fused ? 0.0 : launches * cluster.device.kernel_overhead);
  return c;
}

}  // namespace shardlab
