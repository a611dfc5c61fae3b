// The pipeline view on a shipped run, rendered offscreen: it shows every
// stage, the bubble share result.json reports, tooltips name the task under
// the cursor, and exports write non-empty files.
#include "gui/pipeline_view.h"

#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <cmath>

#include <QtTest/QtTest>

#include "gui/axis.h"
#include "gui/export.h"
#include "gui/palette.h"
#include "gui/run_loader.h"
#include "gui/strategy_view.h"
#include "tests/test_util.h"

namespace shardlab::gui {

class PipelineViewTest : public QObject {
  Q_OBJECT

 private:
  // PanGu-alpha 13B cut to 4 layers: 2 stages, 8 micro-batches, 1F1B.
  static StepResult Result() {
    RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
    run.model.params.Set("layers", int64_t{4});
    return SimulateForView(run).result;
  }

 private slots:
  void ShowsEveryStageAndTheBubbleShareOfTheResult() {
    const StepResult result = Result();
    PipelineView view;
    view.SetTimeline(BuildTimeline(result));
    QCOMPARE(view.timeline().stages.size(), result.stages.size());
    QVERIFY(view.HeaderText().contains(QString::number(100 * result.bubble_fraction, 'f', 1) + "%"));
    for (size_t r = 0; r < result.stages.size(); ++r) {
      const double share = result.stages[r].bubble_seconds / result.step_seconds;
      QVERIFY(view.StageLabel(r).contains(QString::number(100 * share, 'f', 1) + "%"));
    }
    // Forward and backward of every micro-batch on each stage.
    for (const StageRow& row : view.timeline().stages) {
      int passes = 0;
      for (const TimelineSpan& s : row.compute) passes += s.IsPass();
      QCOMPARE(passes, 2 * 8);
    }
    // The drawn bubbles add up to the stage's bubble time of the result.
    for (size_t r = 0; r < result.stages.size(); ++r) {
      double drawn = 0;
      for (const TimelineSpan& b : view.timeline().stages[r].bubbles) drawn += b.end - b.start;
      QVERIFY2(
          std::abs(drawn - result.stages[r].bubble_seconds) <= 1e-6 * result.step_seconds,
          qPrintable(QString("stage %1 drawn %2 result %3").arg(r).arg(drawn).arg(result.stages[r].bubble_seconds)));
    }
  }

  void TooltipsNameTheTaskUnderTheCursor() {
    PipelineView view;
    view.resize(1200, 300);
    view.SetTimeline(BuildTimeline(Result()));
    const StageRow& first = view.timeline().stages.front();
    const TimelineSpan& f0 = first.compute.front();
    const QPoint center = view.SpanRect(0, f0, Track::kCompute).center().toPoint();
    const QString tip = view.ToolTipAt(center);
    QVERIFY2(tip.contains(QString::fromStdString(f0.name)), qPrintable(tip));
    QVERIFY(tip.startsWith("stage 0"));
    QVERIFY(view.ToolTipAt(QPoint(5, 295)).isEmpty());
  }

  void InterleavedChunksMapTooltipsAndClicksToTheChunksOperators() {
    // GPT-3 175B on 4096 H100 with Megatron's interleaved 1F1B over 2 virtual chunks per stage.
    RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/gpt3-175b-h100-4096.json"));
    run.simulation.pipeline_schedule = PipelineSchedule::kInterleaved;
    run.simulation.virtual_pipeline_chunks = 2;
    const RunView view = SimulateForView(run);
    PipelineView pipeline;
    pipeline.resize(1600, 1000);
    pipeline.SetTimeline(view.timeline);
    const StageRow& stage = pipeline.timeline().stages.front();
    QCOMPARE(stage.chunks, int64_t{2});
    // The first forward pass of each chunk of micro-batch 0.
    std::vector<const TimelineSpan*> first(static_cast<size_t>(stage.chunks), nullptr);
    for (const TimelineSpan& span : stage.compute)
      if (span.kind == EventKind::kForward && span.micro_batch == 0 && !first[span.chunk]) first[span.chunk] = &span;
    int previous = -1;
    for (const TimelineSpan* pass : first) {
      QVERIFY(pass);
      // Zoomed onto the pass, as a user would to point inside it.
      const double margin = 0.05 * (pass->end - pass->start);
      pipeline.SetVisibleRange(pass->start - margin, pass->end + margin);
      const QRectF rect = pipeline.SpanRect(0, *pass, Track::kCompute);
      for (double x : {0.1, 0.5, 0.9}) {
        const QPoint at(static_cast<int>(rect.left() + x * rect.width()), static_cast<int>(rect.center().y()));
        const int op = pipeline.OperatorAt(at);
        QVERIFY(op >= 0);
        // The tooltip names the task of the operator a click selects.
        const QString tip = pipeline.ToolTipAt(at);
        QVERIFY2(tip.contains("task " +
                              QString::fromStdString(stage.TaskAt(*pass, (at.x() - rect.left()) / rect.width())->name)),
                 qPrintable(tip));
        QCOMPARE(QString::fromStdString(view.layouts.ops[op].name).section('/', 0, 0),
                 QString::fromStdString(stage.TaskAt(*pass, (at.x() - rect.left()) / rect.width())->name)
                     .section('/', 0, 0));
        // Later chunks run later operators of the stage.
        QVERIFY(op > previous);
        previous = op;
      }
    }
    // A backward runs its chunk's layers too: chunk 1's the stage's later operators.
    std::vector<int> backward_op(static_cast<size_t>(stage.chunks), -1);
    for (const TimelineSpan& span : stage.compute) {
      if (span.kind != EventKind::kBackward || span.micro_batch != 0 || backward_op[span.chunk] >= 0) continue;
      const double margin = 0.05 * (span.end - span.start);
      pipeline.SetVisibleRange(span.start - margin, span.end + margin);
      backward_op[span.chunk] = pipeline.OperatorAt(pipeline.SpanRect(0, span, Track::kCompute).center().toPoint());
    }
    QVERIFY(backward_op[0] >= 0);
    QVERIFY(backward_op[1] > backward_op[0]);
  }

  void ZeroBubbleWeightGradientPassesAreDrawnAndPointToTheirProducts() {
    RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
    run.model.params.Set("layers", int64_t{4});
    run.simulation.pipeline_schedule = PipelineSchedule::kZeroBubbleH1;
    const RunView loaded = SimulateForView(run);
    PipelineView view;
    view.resize(1200, 400);
    view.SetTimeline(loaded.timeline);
    // Stage 1 (the last) runs W0 after B1, its second backward.
    const StageRow& last = view.timeline().stages.back();
    std::vector<std::string> names;
    for (const TimelineSpan& span : last.compute)
      if (span.IsPass()) names.push_back(span.name);
    QVERIFY(names.size() >= 5);
    QCOMPARE(names[4], std::string("W0"));
    const TimelineSpan* w0 = nullptr;
    for (const TimelineSpan& span : last.compute)
      if (span.kind == EventKind::kWeightGradient && !w0) w0 = &span;
    QVERIFY(w0);
    // Its tasks are the products' weight gradients; the tooltip names them.
    const PassTask* task = last.TaskAt(*w0, 0.5);
    QVERIFY(task);
    QVERIFY2(QString::fromStdString(task->name).endsWith("/weight_gradient"), task->name.c_str());
    view.SetVisibleRange(w0->start, w0->end);
    const QRectF zoomed = view.SpanRect(1, *w0, Track::kCompute);
    QVERIFY(view.ToolTipAt(zoomed.center().toPoint()).contains("weight_gradient"));
    // Drawn in its own colour, which the legend lists.
    const QImage image = view.grab().toImage();
    int weight_pixels = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x)
        weight_pixels += image.pixelColor(x, y) == KindColor(EventKind::kWeightGradient);
    QVERIFY(weight_pixels > 100);
  }

  void SequenceChunkPassesPointIntoTheirOwnChunksTasks() {
    // Qwen2.5-72B under seqpipe with 8 sequence chunks, one layer per stage.
    RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/qwen2.5-72b-32k-ascend-64.json"));
    run.model.params.Set("layers", int64_t{8});
    const RunView loaded = SimulateForView(run);
    const StageRow& first = loaded.timeline.stages.front();
    QCOMPARE(first.forward_tasks.size(), size_t{8});
    QCOMPARE(first.backward_tasks.size(), size_t{8});
    // A later chunk's attention reads more of the sequence's keys: its share of the pass grows.
    auto attention_share = [&](size_t j) {
      for (const PassTask& t : first.forward_tasks[j])
        if (t.name == "layer0/attention/flash/forward") return t.end - t.begin;
      return 0.0;
    };
    QVERIFY(attention_share(0) > 0);
    QVERIFY(attention_share(7) > 2 * attention_share(0));
    // Hovering a pass finds its own chunk's tasks: at the middle of the attention's share in chunk 7,
    // which in chunk 0's shares is another task.
    const TimelineSpan* last_chunk = nullptr;
    for (const TimelineSpan& span : first.compute)
      if (span.kind == EventKind::kForward && span.seq_chunk == 7 && !last_chunk) last_chunk = &span;
    QVERIFY(last_chunk);
    double middle = 0;
    for (const PassTask& t : first.forward_tasks[7])
      if (t.name == "layer0/attention/flash/forward") middle = (t.begin + t.end) / 2;
    const PassTask* hovered = first.TaskAt(*last_chunk, middle);
    QVERIFY(hovered);
    QCOMPARE(hovered->name, std::string("layer0/attention/flash/forward"));
    TimelineSpan as_first = *last_chunk;
    as_first.seq_chunk = 0;
    const PassTask* other = first.TaskAt(as_first, middle);
    QVERIFY(!other || other->name != "layer0/attention/flash/forward");
  }

  void PipelineSendsHaveTheirOwnTrack() {
    PipelineView view;
    view.resize(1200, 300);
    view.SetTimeline(BuildTimeline(Result()));
    // Stage 0 sends each micro-batch's activations forward, stage 1 their gradients back.
    for (const StageRow& row : view.timeline().stages) {
      QCOMPARE(row.transfers.size(), size_t{8});
      for (const TimelineSpan& t : row.transfers) QCOMPARE(t.kind, EventKind::kSend);
    }
    const TimelineSpan& send = view.timeline().stages[0].transfers.front();
    const QRectF rect = view.SpanRect(0, send, Track::kTransfers);
    QVERIFY(rect.top() >= view.SpanRect(0, send, Track::kCommunication).bottom());
    QVERIFY(view.ToolTipAt(rect.center().toPoint()).contains("send F0"));
  }

  void AxisTicksStepBy125InOneScaledUnit() {
    const AxisTicks seconds = NiceTicks(0, 2.854, 8, AxisUnit::kSeconds);
    QCOMPARE(seconds.values.size(), size_t{6});
    QCOMPARE(QString::fromStdString(seconds.Label(seconds.values[1])), QString("0.5 s"));
    QCOMPARE(QString::fromStdString(seconds.Label(seconds.values.back())), QString("2.5 s"));
    const AxisTicks short_step = NiceTicks(0, 0.0042, 6, AxisUnit::kSeconds);
    QCOMPARE(QString::fromStdString(short_step.Label(short_step.values[1])), QString("1 ms"));
    QCOMPARE(short_step.values.size(), size_t{5});
    const AxisTicks zoomed = NiceTicks(1.2345, 1.2351, 4, AxisUnit::kSeconds);
    for (double v : zoomed.values) QVERIFY(v >= 1.2345 && v <= 1.2351);
    QCOMPARE(QString::fromStdString(zoomed.Label(1.2346)), QString("1234.6 ms"));
    const AxisTicks bytes = NiceTicks(0, 86.0 * (1 << 30), 10, AxisUnit::kBytes);
    QCOMPARE(QString::fromStdString(bytes.Label(bytes.values[1])), QString("10 GiB"));
    QCOMPARE(QString::fromStdString(FormatAxisValue(2.8538, AxisUnit::kSeconds, 4)), QString("2.854 s"));
    QCOMPARE(QString::fromStdString(FormatAxisValue(5.82e-05, AxisUnit::kSeconds, 3)), QString("58.2 \u00b5s"));
  }

  void LegendAndAxisNeverOverlapTheRows() {
    PipelineView view;
    view.SetTimeline(BuildTimeline(Result()));
    double previous_top = 1e9;
    for (int width : {1600, 1024, 600}) {
      view.resize(width, 400);
      const double top = view.RowsTop();
      // A narrower window wraps the legend onto more lines and moves the rows down, never under it.
      QVERIFY(top >= previous_top || width == 1600);
      previous_top = top;
      const StageRow& last = view.timeline().stages.back();
      for (const TimelineSpan& span : view.timeline().stages.front().compute)
        QVERIFY(view.SpanRect(0, span, Track::kCompute).top() >= top);
      QVERIFY(view.AxisY() >= view.SpanRect(view.VisualRows() - 1, last.compute.front(), Track::kTransfers).bottom());
    }
    view.resize(600, 400);
    QVERIFY(view.RowsTop() > [&] {
      PipelineView wide;
      wide.SetTimeline(BuildTimeline(Result()));
      wide.resize(1600, 400);
      return wide.RowsTop();
    }());
  }

  void RendersAndExportsPngAndSvg() {
    PipelineView view;
    view.SetTimeline(BuildTimeline(Result()));
    view.resize(view.sizeHint());
    const QImage image = view.grab().toImage();
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), view.sizeHint());
    // Something besides the white background was drawn in the timeline area.
    int colored = 0;
    for (int x = 200; x < image.width(); x += 7)
      colored += image.pixelColor(x, static_cast<int>(view.RowsTop()) + 15) != QColor(Qt::white);
    QVERIFY(colored > 10);
    QTemporaryDir dir;
    for (const char* name : {"pipeline.png", "pipeline.svg"}) {
      const QString path = dir.filePath(name);
      ExportView(view, path);
      QVERIFY(QFileInfo(path).size() > 1000);
      QVERIFY(!QFileInfo::exists(path + ".part"));
    }
    QVERIFY_EXCEPTION_THROWN(ExportView(view, dir.filePath("pipeline.bmp")), std::runtime_error);
  }

  void StrategyTableListsEveryOperatorAndFilters() {
    RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
    run.model.params.Set("layers", int64_t{4});
    const Graph graph = BuildRunGraph(run);
    RunView data = SimulateForView(run);
    QCOMPARE(data.strategies.size(), graph.operators().size());
    StrategyView view;
    view.SetRows(std::move(data.strategies));
    QCOMPARE(view.VisibleRows(), static_cast<int>(graph.operators().size()));
    view.SetFilter("attention/softmax");
    QCOMPARE(view.VisibleRows(), 4);  // one per layer
    view.SetFilter("no such operator");
    QCOMPARE(view.VisibleRows(), 0);
  }

  void ShardlabGuiRendersHeadless() {
    QTemporaryDir dir;
    const QString png = dir.filePath("pipeline.png");
    const QString run = QString::fromStdString(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
    QCOMPARE(QProcess::execute(SHARDLAB_GUI_BINARY, {"--screenshot", png, "--view", "pipeline", run}), 0);
    QFile file(png);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.size() > 1000);
    QCOMPARE(file.read(4), QByteArray("\x89PNG"));
    const QString table = dir.filePath("strategy.png");
    QCOMPARE(QProcess::execute(SHARDLAB_GUI_BINARY, {"--screenshot", table, "--view", "strategy", run}), 0);
    QVERIFY(QFileInfo(table).size() > 1000);
    // A bad run file: exit 1, no output file.
    const QString none = dir.filePath("none.png");
    QCOMPARE(QProcess::execute(SHARDLAB_GUI_BINARY, {"--screenshot", none, "configs/runs/missing.json"}), 1);
    QVERIFY(!QFileInfo::exists(none));
  }
};

}  // namespace shardlab::gui

QTEST_MAIN(shardlab::gui::PipelineViewTest)
#include "pipeline_view_test.moc"
