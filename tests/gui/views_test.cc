// The device-matrix, tensor-map and compare views and the main window's
// linking, rendered offscreen on shipped runs: one cell per device for small
// runs, tooltips with the right rank and slice, aggregation at 4096 devices,
// selection driving every view, result.json opened with its own figures and
// device rows, the side panel's run and cancel, exports of every view.
#include <QDir>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <QtTest/QtTest>

#include "core/flow/prepared_run.h"
#include "core/layout/device_matrix.h"
#include "gui/communication_view.h"
#include "gui/device_matrix_view.h"
#include "gui/export.h"
#include "gui/main_window.h"
#include "gui/memory_view.h"
#include "gui/palette.h"
#include "gui/run_loader.h"
#include "gui/tensor_map_view.h"
#include "tests/test_util.h"

namespace shardlab::gui {

class ViewsTest : public QObject {
  Q_OBJECT

 private:
  static QString Path(const char* relative) { return QString::fromStdString(testing::SourcePath(relative)); }

  // The slice index of `local` computed from the layout engine directly.
  static std::vector<int64_t> ExpectedSlice(const OperatorView& op, const TensorView& t, int64_t local) {
    const DeviceMatrix m(op.device_matrix);
    const std::vector<int64_t> c = m.Coordinates(local);
    std::vector<int64_t> s;
    for (int64_t v : t.map) s.push_back(v == kNotSplit ? 0 : c[op.device_matrix.size() - 1 - v]);
    return s;
  }

 private slots:
  void DevicesViewShowsOneCellPerDeviceWithRankAndSlice() {
    const RunView view = LoadForView(testing::SourcePath("configs/runs/bert-large-a100-8.json"));
    DeviceMatrixView devices;
    devices.resize(900, 640);
    devices.SetLayouts(&view.layouts);
    // A MatMul's weight: every device holds the whole weight in data parallel.
    for (const OperatorView& op : view.layouts.ops) {
      if (op.type != "MatMul") continue;
      for (int t = 0; t < static_cast<int>(op.tensors.size()); ++t) {
        devices.Show(op.index, t);
        QCOMPARE(devices.CellCount(), int64_t{8});
        QCOMPARE(devices.BlockSize(), int64_t{1});
        std::set<std::pair<int, int>> corners;
        for (int64_t l = 0; l < 8; ++l) {
          const QRectF cell = devices.CellRect(l);
          corners.insert({static_cast<int>(cell.x()), static_cast<int>(cell.y())});
          const QString tip = devices.ToolTipAt(cell.center().toPoint());
          QVERIFY2(tip.startsWith(QString("rank %1 ").arg(op.Rank(l))), qPrintable(tip));
          const TensorView& tv = op.tensors[t];
          const QString slice = QString::fromStdString(SliceRanges(tv, ExpectedSlice(op, tv, l)));
          QVERIFY2(tip.contains(slice), qPrintable(tip + " lacks " + slice));
        }
        QCOMPARE(corners.size(), size_t{8});
      }
      break;
    }
  }

  // The GUI's loader gives the strategies and step `shardlab simulate` gives (one answer per run).
  void OpensEveryShippedRunWithSimulatesStrategiesAndStep() {
    const QDir runs(Path("configs/runs"));
    int opened = 0;
    for (const QString& name : runs.entryList({"*.json"}, QDir::Files)) {
      const RunView view = LoadForView(runs.filePath(name).toStdString());
      QProcess cli;
      cli.start(SHARDLAB_BINARY, {"simulate", runs.filePath(name), "--engine", "analytical", "--json"});
      QVERIFY(cli.waitForFinished(120000));
      QCOMPARE(cli.exitCode(), 0);
      const nlohmann::json simulated = nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
      QCOMPARE(view.result.step_seconds, simulated["result"]["step_seconds"].get<double>());
      QCOMPARE(view.strategies.size(), simulated["strategies"].size());
      for (size_t i = 0; i < view.strategies.size(); ++i)
        QCOMPARE(view.strategies[i].strategy,
                 QString::fromStdString(StrategyToString(simulated["strategies"][i].get<Strategy>())));
      QVERIFY2(view.result.step_seconds > 0, qPrintable(name));
      QVERIFY2(!view.timeline.stages.empty() && !view.layouts.ops.empty(), qPrintable(name));
      DeviceMatrixView devices;
      devices.resize(900, 640);
      devices.SetLayouts(&view.layouts);
      QVERIFY2(devices.CellCount() > 0, qPrintable(name));
      ++opened;
    }
    QVERIFY(opened >= 15);
  }

  void DevicesViewFoldsExtraDimensionsIntoTiles() {
    const DeviceGrid grid({2, 2, 4, 4});
    QCOMPARE(grid.tile_rows() * grid.tile_cols(), int64_t{4});
    QCOMPARE(grid.cell_rows() * grid.cell_cols(), int64_t{16});
    std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> places;
    for (int64_t l = 0; l < grid.devices(); ++l) {
      const DeviceGrid::Place p = grid.PlaceOf(l);
      QCOMPARE(grid.DeviceAt(p), l);
      places.insert({p.tile_row, p.tile_col, p.row, p.col});
    }
    QCOMPARE(places.size(), size_t{64});
    QCOMPARE(QString::fromStdString(grid.TileLabel(1, 0)), QString("d0=1 d1=0"));
    const DeviceGrid line({4096});  // one dimension wraps into a square
    QCOMPARE(line.cell_rows(), int64_t{64});
    QCOMPARE(line.cell_cols(), int64_t{64});
  }

  void DevicesViewAggregatesAt4096AndZoomShowsEachDevice() {
    const RunView view = LoadForView(testing::SourcePath("configs/runs/resnet50-ascend-4096.json"));
    DeviceMatrixView devices;
    devices.resize(320, 260);  // 4096 devices do not fit one per cell here
    devices.SetLayouts(&view.layouts);
    QVERIFY(devices.BlockSize() > 1);
    QVERIFY(devices.CellCount() < 4096);
    QVERIFY(devices.NoteText().contains("zoom in"));
    QVERIFY(devices.ToolTipAt(devices.CellRect(0).center().toPoint()).startsWith("a block of up to"));
    devices.SetZoom(8);
    QCOMPARE(devices.BlockSize(), int64_t{1});
    QCOMPARE(devices.CellCount(), int64_t{4096});
    const QImage image = devices.grab().toImage();
    QVERIFY(!image.isNull());
  }

  void TensorMapViewSplitsTheTensorIntoItsSlices() {
    const RunView view = LoadForView(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
    TensorMapView tensor;
    tensor.resize(900, 560);
    tensor.SetLayouts(&view.layouts);
    const OperatorView& op = view.layouts.ops[DefaultOperator(view.layouts)];
    for (int t = 0; t < static_cast<int>(op.tensors.size()); ++t) {
      tensor.Show(op.index, t);
      const Shape splits = SplitsOf(op, op.tensors[t]);
      int64_t slices = 1, devices = 1;
      for (int64_t s : splits) slices *= s;
      for (int64_t d : op.device_matrix) devices *= d;
      QCOMPARE(tensor.Blocks() * tensor.SliceRows() * tensor.SliceCols(), slices);
      for (int64_t b = 0; b < tensor.Blocks(); ++b)
        for (int64_t r = 0; r < tensor.SliceRows(); ++r)
          for (int64_t c = 0; c < tensor.SliceCols(); ++c)
            QCOMPARE(static_cast<int64_t>(tensor.HoldersOf(tensor.SliceAt(b, r, c)).size()), devices / slices);
      QVERIFY(tensor.HeaderText().contains(QString::fromStdString(op.tensors[t].name)));
    }
  }

  void TensorMapViewShowsA4DTensorAsReadableSmallMultiples() {
    // A 4-D tensor split 4 ways along each dimension: 256 slices.
    RunLayouts layouts;
    OperatorView op;
    op.name = "conv";
    op.type = "Conv2D";
    op.device_matrix = {4, 4, 4, 4};
    op.tensors.push_back({"x", "input 0", {64, 64, 64, 64}, {3, 2, 1, 0}, {16, 16, 16, 16}});
    layouts.devices_per_stage = 256;
    layouts.ops.push_back(op);
    TensorMapView tensor;
    tensor.resize(1024, 700);
    tensor.SetLayouts(&layouts);
    tensor.Show(0, 0);
    QCOMPARE(tensor.Blocks(), int64_t{16});
    QCOMPARE(tensor.SliceRows(), int64_t{4});
    QCOMPARE(tensor.SliceCols(), int64_t{4});
    std::set<std::vector<int64_t>> seen;
    std::vector<QRectF> rects;
    for (int64_t b = 0; b < 16; ++b) {
      QCOMPARE(tensor.BlockLabel(b), QString("dim 0 = %1 of 4, dim 1 = %2 of 4").arg(b / 4).arg(b % 4));
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t c = 0; c < 4; ++c) {
          seen.insert(tensor.SliceAt(b, r, c));
          const QRectF rect = tensor.SliceRect(b, r, c);
          // Readable: every slice is a block of at least 20 x 10 pixels inside the view.
          QVERIFY2(rect.width() >= 20 && rect.height() >= 10,
                   qPrintable(QString("%1x%2").arg(rect.width()).arg(rect.height())));
          QVERIFY(QRectF(tensor.rect()).contains(rect));
          rects.push_back(rect);
          QVERIFY(tensor.ToolTipAt(rect.center().toPoint())
                      .contains(QString::fromStdString(ShapeText(tensor.SliceAt(b, r, c)))));
        }
    }
    QCOMPARE(seen.size(), size_t{256});
    for (size_t i = 0; i < rects.size(); ++i)
      for (size_t j = i + 1; j < rects.size(); ++j)
        QVERIFY(!rects[i].intersected(rects[j]).isValid() || rects[i].intersected(rects[j]).width() < 0.5 ||
                rects[i].intersected(rects[j]).height() < 0.5);
  }

  void SliceColoursComeFromTheSliceCoordinates() {
    const RunView view = LoadForView(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
    DeviceMatrixView devices;
    devices.resize(900, 640);
    devices.SetLayouts(&view.layouts);
    const OperatorView& op = view.layouts.ops[DefaultOperator(view.layouts)];
    const int t = DefaultTensor(op);
    devices.Show(op.index, t);
    const Shape splits = SplitsOf(op, op.tensors[t]);
    QCOMPARE(splits, (Shape{32, 8}));
    const QImage image = devices.grab().toImage();
    std::map<int64_t, int> hue_of_row;
    for (int64_t l = 0; l < 256; ++l) {
      const std::vector<int64_t> slice = ExpectedSlice(op, op.tensors[t], l);
      // The drawn cell (off its rank label) has its slice's colour.
      const QPoint corner = (devices.CellRect(l).topLeft() + QPointF(3, 3)).toPoint();
      QCOMPARE(image.pixelColor(corner).rgb(), SliceColor(slice, splits).rgb());
      // Devices holding the same rows (tensor dim 0) share a hue, and other rows do not.
      const int hue = SliceColor(slice, splits).hslHue();
      if (!hue_of_row.count(slice[0])) hue_of_row[slice[0]] = hue;
      QCOMPARE(hue_of_row[slice[0]], hue);
    }
    std::set<int> hues;
    for (const auto& entry : hue_of_row) hues.insert(entry.second);
    QCOMPARE(hues.size(), size_t{32});
  }

  void MemoryViewStacksEachStageAgainstTheDeviceMemory() {
    const RunView view = LoadForView(testing::SourcePath("configs/runs/gpt3-175b-h100-4096.json"));
    MemoryView memory;
    memory.resize(900, 560);
    const double capacity = view.run.cluster.device.memory_bytes;
    memory.SetResult(view.result, capacity);
    QCOMPARE(memory.Bars(), view.result.stages.size());
    for (size_t b = 0; b < memory.Bars(); ++b) {
      // The bar's top is the stage's peak, its parts touch without gaps.
      double top = memory.YOf(0), bottom = memory.YOf(0);
      for (MemoryPart part : {MemoryPart::kParameters, MemoryPart::kGatheredWeights, MemoryPart::kOptimizerStates,
                              MemoryPart::kGradients, MemoryPart::kActivations, MemoryPart::kBuffers}) {
        const QRectF r = memory.PartRect(b, part);
        if (r.isEmpty()) continue;
        if (!memory.PeakApart(b)) QVERIFY(std::abs(r.bottom() - top) < 0.01);
        top = std::min(top, r.top());
      }
      QVERIFY(std::abs(top - memory.YOf(view.result.stages[b].memory.peak)) < 0.5);
      QVERIFY(bottom > top);
      const QString tip = memory.ToolTipAt(memory.PartRect(b, MemoryPart::kActivations).center().toPoint());
      QVERIFY2(tip.startsWith(QString("stage %1: activations").arg(view.result.stages[b].stage)), qPrintable(tip));
      QVERIFY(tip.contains("free"));
    }
    QVERIFY(memory.HeaderText().contains("of 79.2 GiB"));
    QVERIFY(!memory.HeaderText().contains("out of memory"));
    // The same result on a device with a quarter of the memory is out of memory, and says by how much.
    memory.SetResult(view.result, capacity / 8);
    QVERIFY2(memory.HeaderText().contains("out of memory by"), qPrintable(memory.HeaderText()));
    QVERIFY(memory.YOf(capacity / 8) > memory.PartRect(0, MemoryPart::kActivations).top());
    QVERIFY(
        memory.ToolTipAt(memory.PartRect(0, MemoryPart::kActivations).center().toPoint()).contains("out of memory"));
  }

  void MemoryViewStandsTransientGradientsBesideTheActivations() {
    // MindSpore with one micro-batch keeps no gradient buffer: the backward frees activations as it makes gradients.
    RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/bert-large-a100-8.json"));
    QCOMPARE(run.parallel.micro_batch_num, int64_t{1});
    const RunView view = SimulateForView(run);
    MemoryView memory;
    memory.resize(900, 560);
    memory.SetResult(view.result, run.cluster.device.memory_bytes);
    QVERIFY(memory.PeakApart(0));
    const QRectF g = memory.PartRect(0, MemoryPart::kGradients), a = memory.PartRect(0, MemoryPart::kActivations);
    QVERIFY(std::abs(g.bottom() - a.bottom()) < 0.01);
    QVERIFY(g.right() <= a.left() + 0.01);
    QVERIFY(memory.ToolTipAt(a.center().toPoint()).contains("not held at once"));
  }

  void ViewsMeasureTheirFrameAgainWhenTheFontChanges() {
    const RunView view = LoadForView(testing::SourcePath("configs/runs/gpt3-175b-h100-4096.json"));
    MemoryView memory;
    memory.resize(900, 560);
    memory.SetResult(view.result, view.run.cluster.device.memory_bytes);
    const QRectF before = memory.PartRect(0, MemoryPart::kParameters);  // measures and caches the frame
    QFont font = memory.font();
    font.setPointSizeF(font.pointSizeF() * 2);
    memory.setFont(font);  // a FontChange event: the header, legend and axis labels grow
    const QRectF after = memory.PartRect(0, MemoryPart::kParameters);
    // The axis labels on the left and the stage labels below take more room.
    QVERIFY2(after.left() > before.left() && after.bottom() < before.bottom(),
             qPrintable(QString("before %1,%2 after %3,%4")
                            .arg(before.left())
                            .arg(before.bottom())
                            .arg(after.left())
                            .arg(after.bottom())));
  }

  void MemoryViewStandsGatheredWeightsWithWhatTheBackwardFrees() {
    // MindSpore's parallel optimizer with one micro-batch: the gathered
    // copies of the sharded weights go as the gradients come, like the activations.
    RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/gpt3-175b-h100-4096.json"));
    run.model.params.Set("layers", int64_t{16});
    run.parallel.pipeline_stages = 1;
    run.parallel.micro_batch_num = 1;
    const RunView view = SimulateForView(run);
    const MemoryBreakdown& m = view.result.stages[0].memory;
    QVERIFY(m.gathered_weights > 0);
    MemoryView memory;
    memory.resize(900, 560);
    memory.SetResult(view.result, run.cluster.device.memory_bytes);
    QVERIFY(memory.PeakApart(0));
    const QRectF kept = memory.PartRect(0, MemoryPart::kParameters), g = memory.PartRect(0, MemoryPart::kGradients),
                 w = memory.PartRect(0, MemoryPart::kGatheredWeights), a = memory.PartRect(0, MemoryPart::kActivations);
    QVERIFY(std::abs(kept.height() - (memory.YOf(0) - memory.YOf(m.parameters - m.gathered_weights))) < 0.5);
    QVERIFY(std::abs(g.bottom() - w.bottom()) < 0.01);  // side by side
    QVERIFY(g.right() <= w.left() + 0.01);
    QVERIFY(std::abs(w.top() - a.bottom()) < 0.01);  // the activations on the gathered weights
    // The taller side, plus the buffers, reaches the peak.
    const QRectF buffers = memory.PartRect(0, MemoryPart::kBuffers);
    const double top = buffers.isEmpty() ? std::min(g.top(), a.top()) : buffers.top();
    QVERIFY(std::abs(top - memory.YOf(m.peak)) < 0.5);
    QVERIFY(memory.ToolTipAt(w.center().toPoint()).startsWith("stage 0: gathered weights"));
  }

  void SelectingAnOperatorUpdatesTheOtherViews() {
    MainWindow window;
    window.resize(1400, 800);
    window.OpenRun(Path("configs/runs/pangu-alpha-13b-ascend-512.json"));
    // The user picks a row of the strategy table.
    QTableView* table = window.strategies()->table();
    const QModelIndex index = table->model()->index(7, 0);
    table->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    const int op = window.strategies()->SelectedOperator();
    QVERIFY(op >= 0);
    QCOMPARE(window.selection()->op(), op);
    QCOMPARE(window.devices()->op()->index, op);
    const QString name = QString::fromStdString(window.view()->layouts.ops[op].name);
    QVERIFY(window.devices()->HeaderText().startsWith(name));
    QVERIFY(window.tensor_map()->HeaderText().contains(name));
    QCOMPARE(window.tensor_choice()->count(), static_cast<int>(window.view()->layouts.ops[op].tensors.size()));
    // Another tensor from the devices tab's choice.
    window.tensor_choice()->setCurrentIndex(0);
    QCOMPARE(window.selection()->tensor(), 0);
    QCOMPARE(window.devices()->tensor(), &window.view()->layouts.ops[op].tensors[0]);
    // A click inside a pass of the timeline selects the operator of the task there.
    PipelineView* pipeline = window.pipeline();
    pipeline->resize(1200, 300);
    const StageRow& first = pipeline->timeline().stages.front();
    const TimelineSpan& f0 = first.compute.front();
    const QRectF rect = pipeline->SpanRect(0, f0, Track::kCompute);
    const QPoint inside(static_cast<int>(rect.left() + rect.width() * 0.5), static_cast<int>(rect.center().y()));
    const int clicked = pipeline->OperatorAt(inside);
    QVERIFY(clicked >= 0);
    QTest::mouseClick(pipeline, Qt::LeftButton, {}, inside);
    QCOMPARE(window.selection()->op(), clicked);
    QCOMPARE(window.strategies()->SelectedOperator(), clicked);
    QVERIFY(pipeline->ToolTipAt(inside).contains("click to select its operator"));
  }

  void OpensResultJsonWithItsFiguresAndDeviceRows() {
    QTemporaryDir dir;
    const QString result = dir.filePath("result.json");
    QProcess cli;
    // Two traced devices of stage 0 on different servers (different lanes), one of stage 1.
    cli.start(SHARDLAB_BINARY, {"simulate", Path("configs/runs/pangu-alpha-13b-ascend-512.json"), "--engine", "simgrid",
                                "--trace-ranks", "0,8,256", "--out", result});
    QVERIFY(cli.waitForFinished(120000));
    QCOMPARE(cli.exitCode(), 0);
    std::ifstream in(result.toStdString());
    const nlohmann::json doc = nlohmann::json::parse(in);
    MainWindow window;
    window.OpenRun(result);
    QVERIFY(window.view()->from_result);
    QCOMPARE(QString::fromStdString(window.view()->result.engine), QString("simgrid"));
    const double fraction = doc["result"]["bubble_fraction"];
    QVERIFY(window.pipeline()->HeaderText().contains(QString::number(100 * fraction, 'f', 1) + "%"));
    QCOMPARE(window.view()->result.step_seconds, doc["result"]["step_seconds"].get<double>());
    // SimGrid traced every device: the stage expands into its device rows.
    const size_t stages = window.pipeline()->timeline().stages.size();
    QCOMPARE(window.pipeline()->timeline().stages[0].devices.size(), size_t{2});
    window.pipeline()->SetExpanded(0, true);
    QCOMPARE(window.pipeline()->VisualRows(), stages + 2);
    QVERIFY(window.pipeline()->StageLabel(0).startsWith("- stage 0"));
    // SimGrid's link usage: one strip per class of links that carried traffic, the busiest link named.
    CommunicationView* links = window.communication();
    QCOMPARE(links->Rows(), doc["result"]["link_usage"].size());
    QVERIFY(links->Rows() >= 2);
    QVERIFY2(links->HeaderText().contains("the busiest link is"), qPrintable(links->HeaderText()));
    links->resize(1100, 500);
    for (size_t r = 0; r < links->Rows(); ++r) {
      const auto& usage = doc["result"]["link_usage"][r];
      QVERIFY(links->RowLabel(r).startsWith(QString::fromStdString(usage["name"].get<std::string>())));
      const QRectF bin = links->BinRect(r, 0);
      QVERIFY(QRectF(links->rect()).contains(bin));
      QVERIFY(links->ToolTipAt(bin.center().toPoint()).contains("of their capacity in use"));
      // Every link of the class counted once by its own utilisation, drawn beside the strip.
      int64_t counted = 0;
      for (size_t t = 0; t < 10; ++t) {
        const QRectF bar = links->HistogramRect(r, t);
        QVERIFY(QRectF(links->rect()).contains(bar.bottomRight()) && bar.top() > 0);
        QVERIFY(bar.left() > links->BinRect(r, 0).right());
        const int64_t count = usage["links_by_utilisation"][t].get<int64_t>();
        QCOMPARE(bar.height() > 0, count > 0);
        counted += count;
        if (count > 0)
          QVERIFY(links->ToolTipAt(bar.center().toPoint()).contains(QString("%1 of %2 links busy").arg(count).arg(
              usage["links"].get<int64_t>())));
      }
      QCOMPARE(counted, usage["links"].get<int64_t>());
      // Every strip ends where the step does, whatever its bins' width.
      const double step_end = links->BinRect(0, doc["result"]["link_usage"][0]["utilisation"].size() - 1).right();
      QVERIFY(std::abs(links->BinRect(r, usage["utilisation"].size() - 1).right() - step_end) < 2);
    }
    QCOMPARE(UtilisationColor(0), QColor(Qt::white));
    QVERIFY(UtilisationColor(1).lightnessF() < 0.3);
    // An analytical result has no link usage, and the view says where it comes from.
    window.OpenRun(Path("configs/runs/pangu-alpha-13b-ascend-512.json"));
    QCOMPARE(window.communication()->Rows(), size_t{0});
    QVERIFY(window.communication()->HeaderText().contains("comes from SimGrid"));
  }

  void SidePanelRunsOnAWorkerAndComparesBeforeAndAfter() {
    MainWindow window;
    window.OpenRun(Path("configs/runs/pangu-alpha-13b-ascend-512.json"));
    const double before = window.view()->result.step_seconds;
    QVERIFY(window.panel()->SetField("micro_batch_num", "16"));
    QSignalSpy done(window.worker(), &SimulationWorker::finished);
    window.RunFromPanel();
    QVERIFY(!window.panel()->run_button()->isEnabled());
    QVERIFY(done.wait(120000));
    QCOMPARE(window.view()->run.parallel.micro_batch_num, int64_t{16});
    QVERIFY(window.view()->result.step_seconds != before);
    QVERIFY(window.panel()->run_button()->isEnabled());
    QVERIFY(!window.compare()->empty());
    QCOMPARE(window.compare()->Results(), size_t{2});
    QCOMPARE(window.compare()->table()->item(0, 2)->text(), QString("analytical"));
    QVERIFY2(window.compare()->table()->item(1, 2)->text().endsWith("%)"),
             qPrintable(window.compare()->table()->item(1, 2)->text()));
    // A bad edit is refused with the run file's message, nothing runs.
    window.panel()->SetField("pipeline_stages", "3");
    window.RunFromPanel();
    QVERIFY2(window.panel()->message()->text().contains("pipeline_stages"),
             qPrintable(window.panel()->message()->text()));
    QVERIFY(!window.worker()->running());
  }

  void SidePanelEditsEveryParallelKeyAndTheClusterFile() {
    MainWindow window;
    window.OpenRun(Path("configs/runs/pangu-alpha-13b-ascend-512.json"));
    RunPanel* panel = window.panel();
    // A field for every leaf of the run's parallel section.
    std::function<void(const nlohmann::json&, const std::string&, std::vector<std::string>*)> leaves =
        [&](const nlohmann::json& j, const std::string& prefix, std::vector<std::string>* out) {
          for (const auto& item : j.items()) {
            if (item.value().is_object() && !item.value().empty())
              leaves(item.value(), prefix + item.key() + ".", out);
            else
              out->push_back(prefix + item.key());
          }
        };
    std::vector<std::string> expected;
    const nlohmann::json doc = ToJson(window.view()->run);
    leaves(doc.at("parallel"), "", &expected);
    leaves(doc.at("stack"), "stack.", &expected);
    nlohmann::json simulation = doc.at("simulation");
    simulation.erase("engine");  // the panel's engine list
    leaves(simulation, "simulation.", &expected);
    QCOMPARE(panel->Keys(), expected);
    QVERIFY(panel->Keys().size() >= 20);
    QCOMPARE(panel->ChangeSummary(), QString("unchanged"));
    // Unchanged fields give back the same run.
    QCOMPARE(ToJson(EditRun(window.view()->run, panel->Changes())).dump(), ToJson(window.view()->run).dump());
    // Nested keys, check boxes and the cluster file reach the run.
    QVERIFY(panel->SetField("parallel_optimizer_config.optimizer_level", "level2"));
    const bool recompute = window.view()->run.parallel.recompute;
    QVERIFY(panel->SetField("recompute", recompute ? "false" : "true"));
    panel->cluster_file()->setText(Path("configs/clusters/atlas800t-a2-910b.json"));
    const RunSpec edited = EditRun(window.view()->run, panel->Changes());
    QCOMPARE(edited.parallel.parallel_optimizer_config.optimizer_level, OptimizerLevel::kLevel2);
    QCOMPARE(edited.parallel.recompute, !recompute);
    QVERIFY(edited.cluster.name != window.view()->run.cluster.name);
    QVERIFY2(panel->ChangeSummary().contains("parallel_optimizer_config.optimizer_level=level2"),
             qPrintable(panel->ChangeSummary()));
    // A list that is not JSON is refused naming its key; nothing runs.
    QVERIFY(panel->SetField("comm_fusion.openstate", "true"));
    panel->cluster_file()->setText(Path("configs/clusters/ascend910-atlas900.json"));
    QVERIFY(panel->SetField("parallel_optimizer_config.optimizer_level", "level1"));
    bool has_list = false;
    for (const std::string& key : panel->Keys())
      if (qobject_cast<QLineEdit*>(panel->Field(key)) && !has_list && key != "dataset_strategy") {
        panel->SetField(key, "[1, 2");
        has_list = true;
        window.RunFromPanel();
        QVERIFY2(panel->message()->text().contains(QString::fromStdString(key)), qPrintable(panel->message()->text()));
        QVERIFY(!window.worker()->running());
      }
    QVERIFY(has_list);
  }

  void SidePanelEditsTheStackAndTheSimulation() {
    MainWindow window;
    window.OpenRun(Path("configs/runs/pangu-alpha-13b-ascend-512.json"));
    RunPanel* panel = window.panel();
    const RunSpec& run = window.view()->run;
    QCOMPARE(run.stack.preset, StackPreset::kMindSpore);
    // Closed vocabularies are lists.
    auto* preset = qobject_cast<QComboBox*>(panel->Field("stack.preset"));
    QVERIFY(preset);
    QCOMPARE(preset->count(), 2);
    auto* schedule = qobject_cast<QComboBox*>(panel->Field("simulation.pipeline_schedule"));
    QVERIFY(schedule);
    // 1f1b, gpipe, interleaved, zero_bubble_h1, zero_bubble_v, dualpipe, seqpipe, seqvpp, seqsmartvpp
    QCOMPARE(schedule->count(), 9);
    QVERIFY(qobject_cast<QCheckBox*>(panel->Field("stack.fuse_elementwise")));
    QVERIFY(!panel->Field("simulation.engine"));
    // The run's own engine survives the panel's edits (the panel's list chooses what runs).
    RunSpec analytical = run;
    analytical.simulation.engine = Engine::kAnalytical;
    QCOMPARE(EditRun(analytical, panel->Changes()).simulation.engine, Engine::kAnalytical);
    // Unchanged, the stack stays the run's.
    QVERIFY(!panel->Changes().contains("stack"));
    // A new preset brings its own keys; a key changed beside it overrides it.
    QVERIFY(panel->SetField("stack.preset", "megatron"));
    RunSpec edited = EditRun(run, panel->Changes());
    QVERIFY(edited.stack == PresetStack(StackPreset::kMegatron));
    QVERIFY(panel->SetField("stack.overlap_grad_reduce", "true"));
    edited = EditRun(run, panel->Changes());
    QVERIFY(edited.stack.fuse_elementwise);
    QVERIFY(edited.stack.overlap_grad_reduce);
    // The simulation's schedule and chunks reach the run, and a refused one says why.
    QVERIFY(panel->SetField("simulation.pipeline_schedule", "interleaved"));
    QVERIFY(panel->SetField("simulation.virtual_pipeline_chunks", "2"));
    edited = EditRun(run, panel->Changes());
    QCOMPARE(edited.simulation.pipeline_schedule, PipelineSchedule::kInterleaved);
    QCOMPARE(edited.simulation.virtual_pipeline_chunks, int64_t{2});
    QVERIFY2(panel->ChangeSummary().contains("stack.preset=megatron"), qPrintable(panel->ChangeSummary()));
    QVERIFY(panel->SetField("simulation.virtual_pipeline_chunks", "0"));
    window.RunFromPanel();
    QVERIFY2(panel->message()->text().contains("virtual_pipeline_chunks"), qPrintable(panel->message()->text()));
    QVERIFY(!window.worker()->running());
  }

  void CompareShowsNResultsAndRefusesToMixEnginesUnlessAsked() {
    const RunView analytical = LoadForView(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
    RunSpec more = analytical.run;
    more.parallel.micro_batch_num = 16;
    const RunView edited = SimulateForView(more);
    RunView simgrid = analytical;
    simgrid.result.engine = "simgrid";  // as a SimGrid result.json would say
    CompareView compare;
    compare.Add(analytical, "8 micro-batches");
    QVERIFY(compare.empty());
    compare.Add(edited, "16 micro-batches");
    QVERIFY(!compare.empty());
    QCOMPARE(compare.table()->columnCount(), 3);
    compare.Add(simgrid, "simulated");
    QVERIFY(compare.empty());
    QVERIFY(compare.Refusal().contains("different engines"));
    compare.SetAcrossEngines(true);
    QVERIFY(compare.Refusal().isEmpty());
    QCOMPARE(compare.table()->columnCount(), 4);
    QCOMPARE(compare.table()->item(0, 3)->text(), QString("simgrid"));
    // The step time of each against the first; the SimGrid copy's change is zero.
    QVERIFY2(compare.table()->item(1, 3)->text().endsWith("(+0.0%)"), qPrintable(compare.table()->item(1, 3)->text()));
    QCOMPARE(compare.timeline(2)->timeline().step_seconds, analytical.result.step_seconds);
    compare.Clear();
    QCOMPARE(compare.Results(), size_t{0});
    QVERIFY(compare.empty());
  }

  void SearchedStrategiesReachTheWindowWithoutASecondSearch() {
    // The child searches (dynamic programming) and hands back its strategies; the window's
    // layouts are built from them and equal a search done here.
    MainWindow window;
    window.OpenRun(Path("configs/runs/bert-large-a100-8.json"));
    window.panel()->SetField("parallel_mode", "auto_parallel");
    window.panel()->SetField("search_mode", "dynamic_programming");
    QSignalSpy done(window.worker(), &SimulationWorker::finished);
    window.RunFromPanel();
    QVERIFY(done.wait(120000));
    const RunSpec& run = window.view()->run;
    QCOMPARE(run.parallel.parallel_mode, ParallelMode::kAutoParallel);
    const std::vector<OpLayout> searched = Prepare(run).sharded.layouts;
    QCOMPARE(window.view()->strategies.size(), searched.size());
    for (size_t i = 0; i < searched.size(); ++i) {
      QCOMPARE(window.view()->strategies[i].strategy, QString::fromStdString(StrategyToString(searched[i].strategy)));
      QCOMPARE(window.view()->layouts.ops[i].device_matrix, searched[i].device_matrix);
    }
  }

  void CancelStopsTheWorker() {
    MainWindow window;
    window.OpenRun(Path("configs/runs/gpt3-175b-ascend-4096.json"));
    // Every device simulated: about a second of work, so the cancel lands while the child
    // runs (the folded run can finish in under 0.2 s).
    RunSpec run = window.view()->run;
    run.simulation.symmetry = Symmetry::kOff;
    QSignalSpy cancelled(window.worker(), &SimulationWorker::cancelled);
    QVERIFY(window.worker()->Start(run, Engine::kSimGrid));
    QTest::qWait(100);
    window.worker()->Cancel();
    QVERIFY(cancelled.wait(20000));
    QCOMPARE(window.view()->run.name, run.name);
  }

  // Without any display: --help prints the usage, a window is refused with one line (no abort).
  void HelpAndNoDisplayWorkWithoutADisplay() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* variable : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(variable);
    QProcess help;
    help.setProcessEnvironment(env);
    help.start(SHARDLAB_GUI_BINARY, {"--help"});
    QVERIFY(help.waitForFinished(30000));
    QCOMPARE(help.exitStatus(), QProcess::NormalExit);
    QCOMPARE(help.exitCode(), 0);
    QVERIFY(help.readAllStandardOutput().contains("--screenshot"));
    QProcess window;
    window.setProcessEnvironment(env);
    window.start(SHARDLAB_GUI_BINARY, {Path("configs/runs/resnet50-ascend-8.json")});
    QVERIFY(window.waitForFinished(30000));
    QCOMPARE(window.exitStatus(), QProcess::NormalExit);
    QCOMPARE(window.exitCode(), 1);
    QVERIFY(window.readAllStandardError().contains("no display"));
  }

  void ExportsEveryViewAndTheHeadlessScreenshots() {
    QTemporaryDir dir;
    MainWindow window;
    window.OpenRun(Path("configs/runs/pangu-alpha-13b-ascend-512.json"));
    for (QWidget* view :
         std::vector<QWidget*>{window.devices(), window.tensor_map(), window.memory(), window.compare()}) {
      view->resize(900, 600);
      for (const char* ext : {"png", "svg"}) {
        const QString file = dir.filePath(QString("%1.%2").arg(view->metaObject()->className()).arg(ext));
        ExportView(*view, file);
        QVERIFY(QFileInfo(file).size() > 1000);
      }
    }
    for (const char* view : {"devices", "tensor", "memory"}) {
      const QString file = dir.filePath(QString("%1.png").arg(view));
      QProcess gui;
      gui.start(SHARDLAB_GUI_BINARY, {"--screenshot", file, "--view", view, "--op", "layer0/attention/query",
                                      Path("configs/runs/pangu-alpha-13b-ascend-512.json")});
      QVERIFY(gui.waitForFinished(120000));
      QCOMPARE(gui.exitCode(), 0);
      QVERIFY(QImage(file).width() >= 800);
    }
    QProcess bad;
    bad.start(SHARDLAB_GUI_BINARY, {"--screenshot", dir.filePath("x.png"), "--view", "devices", "--op", "layer0/nope",
                                    Path("configs/runs/pangu-alpha-13b-ascend-512.json")});
    QVERIFY(bad.waitForFinished(120000));
    QCOMPARE(bad.exitCode(), 1);
    QVERIFY(QString(bad.readAllStandardError()).contains("no such operator"));
    QVERIFY(!QFileInfo::exists(dir.filePath("x.png")));
  }
};

}  // namespace shardlab::gui

QTEST_MAIN(shardlab::gui::ViewsTest)
#include "views_test.moc"
