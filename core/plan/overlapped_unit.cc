#include "core/plan/overlapped_unit.h"

#include <algorithm>
#include <stdexcept>

namespace shardlab {
namespace {

// A step moved to where its task list starts at `offset` in UnitTasks.
PassStep Shifted(PassStep step, int offset) {
  step.first_task += offset;
  step.end_task += offset;
  for (int& c : step.collectives) c += offset;
  for (int& p : step.prefetches) p += offset;
  return step;
}

std::vector<PassStep> Shifted(std::vector<PassStep> steps, int offset) {
  for (PassStep& step : steps) step = Shifted(std::move(step), offset);
  return steps;
}

double Compute(const std::vector<PassStep>& steps, const std::vector<Task>& tasks) {
  double seconds = 0;
  for (const PassStep& s : steps) seconds += s.ComputeEndSeconds(tasks);
  return seconds;
}

double Communication(const std::vector<PassStep>& steps, const std::vector<Task>& tasks) {
  double seconds = 0;
  for (const PassStep& s : steps) seconds += s.CommunicationSeconds(tasks);
  return seconds;
}

}  // namespace

std::vector<Task> UnitTasks(const StageProgram& stage) {
  std::vector<Task> tasks = stage.backward;
  tasks.insert(tasks.end(), stage.weight_gradient.begin(), stage.weight_gradient.end());
  tasks.insert(tasks.end(), stage.forward.begin(), stage.forward.end());
  return tasks;
}

std::vector<PassStep> OverlapSteps(const std::vector<PassStep>& a, const std::vector<PassStep>& b,
                                   const std::vector<Task>& tasks, const PassOverlap& overlapped) {
  // A step of one blocking collective that the overlap moves.
  auto movable = [&](const PassStep& s) {
    if (s.compute_seconds != 0 || s.collectives.size() != 1 || !s.prefetches.empty()) return false;
    const Task& c = tasks[s.collectives[0]];
    return overlapped.Moves(c.dimension, c.collective);
  };
  const std::vector<PassStep>* passes[2] = {&a, &b};
  size_t next[2] = {0, 0};
  int waits_for[2] = {0, 0};  // the side-stream collectives a pass's next step waits for
  int issued = 0;
  std::vector<int> handed;  // a collective the other pass's next step issues
  std::vector<PassStep> out;
  auto done = [&](int p) { return next[p] == passes[p]->size(); };
  auto head = [&](int p) -> const PassStep& { return (*passes[p])[next[p]]; };
  int p = 0;
  while (!done(0) || !done(1)) {
    if (done(p)) p = 1 - p;
    const int q = 1 - p;
    // A pass whose next step is such a collective hands it to the side
    // stream beside the other pass's steps, until that pass reaches a
    // collective of its own; it goes on once its collective has ended.
    auto hand = [&](int from) {
      handed = head(from).collectives;
      waits_for[from] = ++issued;
      ++next[from];
    };
    if (movable(head(p)) && !done(q) && !movable(head(q))) {
      hand(p);
      p = q;
      continue;
    }
    if (!done(q) && movable(head(q)) && !movable(head(p)) && handed.empty()) {
      hand(q);
      continue;
    }
    PassStep step = head(p);
    ++next[p];
    step.prefetches_needed = waits_for[p];
    step.prefetches = std::move(handed);
    handed.clear();
    out.push_back(std::move(step));
  }
  return out;
}

UnitPass OverlapUnit(const StageProgram& stage, const std::vector<ScheduleItem>& items, int64_t chunks,
                     const PassOverlap& overlapped) {
  const int backward_size = static_cast<int>(stage.backward.size());
  const int forward_offset = backward_size + static_cast<int>(stage.weight_gradient.size());
  const std::vector<Task> tasks = UnitTasks(stage);
  UnitPass unit;
  std::vector<PassStep> forward, backward;
  for (const ScheduleItem& item : items) {
    std::vector<PassStep> steps;
    if (item.forward) {
      steps = Shifted(ChunkSteps(stage.forward, chunks, item.chunk, false), forward_offset);
      forward.insert(forward.end(), steps.begin(), steps.end());
    } else if (item.weight_gradient) {
      steps = Shifted(ChunkSteps(stage.weight_gradient, chunks, item.chunk, true), backward_size);
      backward.insert(backward.end(), steps.begin(), steps.end());
    } else {
      steps = ChunkSteps(stage.backward, chunks, item.chunk, true);
      backward.insert(backward.end(), steps.begin(), steps.end());
    }
    unit.compute.push_back(Compute(steps, tasks));
    unit.communication.push_back(Communication(steps, tasks));
  }
  unit.steps = OverlapSteps(backward, forward, tasks, overlapped);
  unit.seconds = ClosedFormPass(unit.steps, tasks, [](const PassStep&, double, double) {});
  // The collectives handed beside the other pass's compute slow it: that
  // compute, shared out by each item's.
  double alone = 0;
  for (double c : unit.compute) alone += c;
  const double held = Compute(unit.steps, tasks) - alone;
  if (alone > 0)
    for (double& c : unit.compute) c += held * c / alone;
  return unit;
}

std::vector<double> UnitSpans(const std::vector<double>& compute, const std::vector<double>& communication,
                              double duration) {
  double total_compute = 0, total_communication = 0;
  for (double c : compute) total_compute += c;
  for (double c : communication) total_communication += c;
  const double beyond = std::max(0.0, duration - total_compute);
  const auto n = static_cast<double>(compute.size());
  std::vector<double> spans;
  for (size_t i = 0; i < compute.size(); ++i)
    spans.push_back(compute[i] + beyond * (total_communication > 0 ? communication[i] / total_communication : 1.0 / n));
  return spans;
}

void CheckOverlappable(const StageProgram& stage) {
  for (const auto* tasks : {&stage.forward, &stage.backward, &stage.weight_gradient})
    for (const Task& t : *tasks) {
      if (t.prefetch || t.prefetches_needed > 0)
        throw std::invalid_argument(
            "overlapped forwards and backwards (overlap_forward_backward, pp_1f1b_overlap) are not built with "
            "weights gathered ahead of use (task \"" +
            t.name + "\" of stage " + std::to_string(stage.stage) + ")");
      if (t.pcie_copy || t.after_host_copies)
        throw std::invalid_argument(
            "overlapped forwards and backwards (overlap_forward_backward, pp_1f1b_overlap) are not built with host "
            "copies (task \"" +
            t.name + "\" of stage " + std::to_string(stage.stage) + ")");
    }
}

}  // namespace shardlab
