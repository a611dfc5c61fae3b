#include "sim/link_usage.h"

#include <algorithm>
#include <cmath>

namespace shardlab::sim {

LinkUsageRecorder::LinkUsageRecorder(const ClusterPlatform& platform)
    : platform_(platform),
      classes_(platform.LinkClasses()),
      class_of_(static_cast<size_t>(platform.LinkCount()), -1),
      flow_bytes_(static_cast<size_t>(platform.LinkCount()), 0),
      bytes_(classes_.size(), std::vector<double>(kBins, 0)) {
  for (size_t c = 0; c < classes_.size(); ++c)
    for (int32_t id : classes_[c].links) class_of_[id] = static_cast<int32_t>(c);
}

void LinkUsageRecorder::Grow(double end) {
  while (end > bin_seconds_ * static_cast<double>(kBins)) {
    for (std::vector<double>& bins : bytes_) {
      for (size_t b = 0; b < kBins / 2; ++b) bins[b] = bins[2 * b] + bins[2 * b + 1];
      std::fill(bins.begin() + kBins / 2, bins.end(), 0.0);
    }
    bin_seconds_ *= 2;
  }
}

void LinkUsageRecorder::AddFlow(int64_t src, int64_t dst, double bytes, double start, double end) {
  if (src == dst || bytes <= 0) return;
  Grow(end);
  platform_.Route(src, dst, &route_);
  for (int32_t link : route_) {
    flow_bytes_[link] += bytes;
    AddToBins(class_of_[link], bytes, start, end);
  }
}

ClosedFormTraffic LinkUsageRecorder::Prepare(std::vector<std::pair<int32_t, double>> link_bytes) const {
  ClosedFormTraffic t{std::move(link_bytes), std::vector<double>(classes_.size(), 0.0)};
  // A folded link's bins and capacity stand for its orbit over the fold's order.
  const double share = 1.0 / static_cast<double>(platform_.fold_order());
  for (const auto& [link, bytes] : t.link_bytes)
    if (const int32_t c = class_of_[platform_.FoldedLink(link)]; c >= 0) t.class_bytes[c] += bytes * share;
  return t;
}

void LinkUsageRecorder::AddClosedForm(const ClosedFormTraffic& traffic, double start, double end) {
  if (traffic.link_bytes.empty()) return;
  Grow(end);
  const auto [it, first] = closed_form_index_.try_emplace(&traffic, closed_form_runs_.size());
  if (first) closed_form_runs_.push_back({&traffic, 0});
  ++closed_form_runs_[it->second].second;
  for (size_t c = 0; c < classes_.size(); ++c)
    if (traffic.class_bytes[c] > 0) AddToBins(static_cast<int32_t>(c), traffic.class_bytes[c], start, end);
}

void LinkUsageRecorder::AddToBins(int32_t c, double bytes, double start, double end) {
  if (c < 0) return;
  std::vector<double>& bins = bytes_[c];
  const size_t first = std::min(static_cast<size_t>(start / bin_seconds_), kBins - 1);
  const size_t last = std::min(static_cast<size_t>(end / bin_seconds_), kBins - 1);
  if (first == last) {
    bins[first] += bytes;
    return;
  }
  const double duration = std::max(end - start, 1e-15);
  for (size_t b = first; b <= last; ++b) {
    const double lo = std::max(start, static_cast<double>(b) * bin_seconds_);
    const double hi = std::min(end, static_cast<double>(b + 1) * bin_seconds_);
    bins[b] += bytes * std::max(hi - lo, 0.0) / duration;
  }
}

std::vector<LinkClassUsage> LinkUsageRecorder::Result(double step_seconds) {
  Grow(step_seconds);  // the bins reach the step's end, whenever the traffic ended
  std::vector<double> unfolded_bytes(flow_bytes_.size(), 0.0);  // closed-form bytes per link id
  for (const auto& [traffic, runs] : closed_form_runs_)
    for (const auto& [link, bytes] : traffic->link_bytes) unfolded_bytes[link] += bytes * static_cast<double>(runs);
  const double share = 1.0 / static_cast<double>(platform_.fold_order());
  std::vector<LinkClassUsage> out;
  const size_t bins = std::clamp<size_t>(static_cast<size_t>(std::ceil(step_seconds / bin_seconds_)), 1, kBins);
  for (size_t c = 0; c < classes_.size(); ++c) {
    const ClusterPlatform::LinkClass& lc = classes_[c];
    const double seconds = std::max(step_seconds, 1e-15);
    double capacity = 0, carried = 0, busiest = -1;
    int32_t busiest_link = lc.links.front();
    std::vector<int64_t> by_tenth(10, 0);
    for (int32_t id : lc.links) {
      capacity += platform_.LinkBandwidth(id);
      carried += flow_bytes_[id];
    }
    // Each link's own load: its orbit's flows (alike on every link of the
    // orbit, as the fold's symmetry maps them onto one another) and its own
    // closed-form traffic.
    for (int32_t id : lc.unfolded) {
      const int32_t folded = platform_.FoldedLink(id);
      carried += unfolded_bytes[id] * share;
      double u = 0;
      if (flow_bytes_[folded] > 0) u += flow_bytes_[folded] / (platform_.LinkBandwidth(folded) * seconds);
      if (unfolded_bytes[id] > 0) u += unfolded_bytes[id] / (platform_.UnfoldedBandwidth(id) * seconds);
      ++by_tenth[static_cast<size_t>(std::isfinite(u) ? std::clamp(u * 10, 0.0, 9.0) : 9.0)];
      if (u > busiest) {
        busiest = u;
        busiest_link = id;
      }
    }
    if (carried <= 0) continue;
    LinkClassUsage u;
    u.name = lc.name;
    // Folded links carry their orbit's total bandwidth over the fold's order.
    u.links = static_cast<int64_t>(lc.unfolded.size());
    u.bandwidth = capacity * static_cast<double>(platform_.fold_order()) / static_cast<double>(lc.unfolded.size());
    u.bin_seconds = bin_seconds_;
    for (size_t b = 0; b < bins; ++b) {
      // The last bin is cut by the step's end.
      const double width = std::min(bin_seconds_, step_seconds - static_cast<double>(b) * bin_seconds_);
      u.utilisation.push_back(width > 0 ? std::min(1.0, bytes_[c][b] / (capacity * width)) : 0.0);
    }
    // Closed-form traffic spread over a collective's time can exceed a link's rate a little: shares stop at 1.
    u.mean_utilisation = std::min(1.0, carried / (capacity * seconds));
    u.peak_utilisation = *std::max_element(u.utilisation.begin(), u.utilisation.end());
    u.busiest = platform_.LinkName(busiest_link);
    u.busiest_utilisation = std::min(1.0, busiest);
    u.links_by_utilisation = std::move(by_tenth);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace shardlab::sim
