// The record of the conv algorithms a run chose (algorithm_choice.hpp): it reads
// back what it wrote and refuses what is malformed with a message (no GPU
// needed); an engine given a record runs the recorded algorithms instead of
// measuring, at every batch size the record covers, and passes the record on;
// one it cannot use (unreadable, another rule, another shape, an algorithm cuDNN
// cannot run there) is measured again with a warning, never a crash; a
// resumed trainer run takes its checkpoint's algorithms; and a run with
// --conv-algos fastest, which is not bit-exact, says so when it checkpoints.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "06_cudnn/algorithm_choice.hpp"
#include "cudnn_step_engine.hpp"
#include "common/train/checkpoint.hpp"
#include "common/train/trainer.hpp"
#include "s06_support.hpp"
#include "trainer_process.hpp"
#include "trainer_run.hpp"

using namespace course;

namespace {

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (text) << "' lacks '" << (part) << "'"

AlgorithmRecord sample_record() {
  AlgorithmRecord r{"deterministic", "NVIDIA H100 80GB HBM3 (sm_90)", 91000, {}};
  ConvAlgorithms a;
  a.forward = CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
  a.backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
  a.backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT;
  a.forward_bytes = 4196352;
  a.backward_filter_ms = 0.25f;
  r.layers.push_back({"conv1 (conv16k3p1)", 8, "8|1x28x28|16k3p1s1", a});
  r.layers.push_back({"conv1 (conv16k3p1)", 4, "4|1x28x28|16k3p1s1", ConvAlgorithms{}});
  return r;
}

std::string refusal(const std::string& text) {
  try {
    decode_algorithm_record(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

// `record` (a valid one) with `from` replaced by `to`, once.
std::string edited(std::string record, const std::string& from, const std::string& to) {
  const auto at = record.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? record : record.replace(at, from.size(), to);
}

// The record `engine` would save, read back.
AlgorithmRecord record_of(const CudnnStepEngine& engine) {
  const EngineState state = engine.engine_state();
  const auto it = state.find(kAlgorithmRecordName);
  if (it == state.end()) throw std::logic_error("the engine recorded no conv algorithms");
  return decode_algorithm_record(it->second);
}

// `record` with every entry set to the direct algorithms cuDNN runs for any
// 2-D convolution, which cudnnFind rarely ranks first: an engine that runs these
// took them from the record rather than measuring.
EngineState forced(AlgorithmRecord record) {
  for (RecordedAlgorithms& r : record.layers) {
    r.algos.forward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    r.algos.backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    r.algos.backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  }
  return {{kAlgorithmRecordName, encode_algorithm_record(record)}};
}

EngineConfig cnn_config(int batch = 8) {
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("cnn"));
  cfg.input = {1, 28, 28};
  cfg.batch = batch;
  return cfg;
}

std::size_t forced_lines(const std::string& report) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = report.find("forward IMPLICIT_GEMM ", at)) != std::string::npos; ++at)
    if (report.find("backward-data ALGO_1 ", at) != std::string::npos &&
        report.find("backward-filter ALGO_1 ", at) != std::string::npos)
      ++n;
  return n;
}

}  // namespace

// ---- the record's text (no GPU) -----------------------------------------------------

TEST(Stage06_AlgorithmRecord, ReadsBackWhatItWrote) {
  const AlgorithmRecord r = sample_record();
  const std::string text = encode_algorithm_record(r);
  const AlgorithmRecord back = decode_algorithm_record(text);
  EXPECT_EQ(back.rule, r.rule);
  EXPECT_EQ(back.gpu, r.gpu);
  EXPECT_EQ(back.cudnn, r.cudnn);
  ASSERT_EQ(back.layers.size(), r.layers.size());
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    EXPECT_EQ(back.layers[i].layer, r.layers[i].layer);
    EXPECT_EQ(back.layers[i].batch, r.layers[i].batch);
    EXPECT_EQ(back.layers[i].shape, r.layers[i].shape);
    EXPECT_EQ(describe(back.layers[i].algos), describe(r.layers[i].algos));
    EXPECT_EQ(back.layers[i].algos.math, r.layers[i].algos.math);
  }
  EXPECT_EQ(encode_algorithm_record(back), text);
  EXPECT_EQ(conv_shape_key(ConvGeometry{1, 28, 28, 16, 3, 1, 1}, 8), "8|1x28x28|16k3p1s1");
}

TEST(Stage06_AlgorithmRecord, MalformedRecordsAreRefusedWithAMessage) {
  const std::string good = encode_algorithm_record(sample_record());
  EXPECT_CONTAINS(refusal(""), "is not JSON");
  EXPECT_CONTAINS(refusal("[1, 2]"), "is not a JSON object");
  EXPECT_CONTAINS(refusal(edited(good, "\"format\":1", "\"format\":2")), "has format 2; this build reads format 1");
  EXPECT_CONTAINS(refusal(edited(good, "\"rule\":", "\"rules\":")), "lacks 'rule'");
  EXPECT_CONTAINS(refusal(edited(good, "\"layers\":[", "\"layers\":[3,")), "entry 1 is not a JSON object");
  EXPECT_CONTAINS(refusal(edited(good, "\"batch\":8", "\"batch\":0")), "'batch' is 0, outside [1, ");
  EXPECT_CONTAINS(refusal(edited(good, "\"batch\":8", "\"batch\":\"8\"")), "'batch' is not a whole number");
  EXPECT_CONTAINS(refusal(edited(good, "\"batch\":8", "\"batch\":18446744073709551615")), "'batch' is out of range");
  EXPECT_CONTAINS(refusal(edited(good, "\"FFT_TILING\"", "\"NO_SUCH_ALGO\"")),
                  "names the forward algorithm of conv1 (conv16k3p1) 'NO_SUCH_ALGO', which this cuDNN");
  EXPECT_CONTAINS(refusal(edited(good, "\"math\":\"FMA_MATH\"", "\"math\":\"FAST\"")), "the math type");
  EXPECT_CONTAINS(refusal(edited(good, "\"bytes\":[4196352,0,0]", "\"bytes\":[1,2]")),
                  "'bytes' is not a list of three numbers");
  EXPECT_CONTAINS(refusal(edited(good, "\"bytes\":[4196352,0,0]", "\"bytes\":[-1,0,0]")), "'bytes' holds -1");
  EXPECT_CONTAINS(refusal(edited(good, "\"batch\":4", "\"batch\":8")), "holds conv1 (conv16k3p1) at batch 8 twice");
}

// ---- an engine given a record ---------------------------------------------------------

TEST(Stage06_AlgorithmRecord, AnEngineRunsTheRecordedAlgorithmsInsteadOfMeasuring) {
  S06_SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(100, {1, 28, 28}, 10, 3);  // batches of 8, the last of 4
  CudnnStepEngine measuring(cnn_config());
  measuring.begin_epoch(train, 0);  // plans batch 8 and batch 4
  measuring.end_epoch();
  const AlgorithmRecord measured = record_of(measuring);
  ASSERT_EQ(measured.layers.size(), 4u) << "two conv layers at batch 8 and at batch 4";
  EXPECT_EQ(measured.rule, "deterministic");
  EXPECT_EQ(measuring.recorded_algorithms_note(), "") << "no record was given";

  EngineConfig cfg = cnn_config();
  cfg.engine_state = forced(measured);
  CudnnStepEngine a(cfg), b(cfg);
  EXPECT_EQ(forced_lines(a.algorithm_report()), 2u) << a.algorithm_report();
  EXPECT_EQ(a.recorded_algorithms_note(), "2 of 2 conv layers at batch 8 run the recorded algorithms (not measured again)");
  // Trained an epoch (batch 4 taken from the record too), both engines end on the same bits.
  a.train_epoch(train, 0, nullptr);
  b.train_epoch(train, 0, nullptr);
  EXPECT_TRUE(trainer_run::same_bits(a.get_parameters(), b.get_parameters()));
  // What it saves is what it ran: the record again, every batch size.
  const AlgorithmRecord saved = record_of(a);
  ASSERT_EQ(saved.layers.size(), 4u);
  for (const RecordedAlgorithms& r : saved.layers) {
    EXPECT_EQ(r.algos.forward, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) << r.layer << " at batch " << r.batch;
    EXPECT_EQ(r.algos.backward_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1) << r.layer << " at batch " << r.batch;
    EXPECT_EQ(r.algos.backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1) << r.layer << " at batch " << r.batch;
  }
  // An engine that has not met batch 4 yet still passes its entries on.
  EXPECT_EQ(record_of(CudnnStepEngine(cfg)).layers.size(), 4u);
}

TEST(Stage06_AlgorithmRecord, ARecordThatCannotBeUsedIsMeasuredAgainWithAWarning) {
  S06_SKIP_WITHOUT_GPU();
  CudnnStepEngine measuring(cnn_config());
  const AlgorithmRecord measured = record_of(measuring);
  const std::string measured_report = measuring.algorithm_report();
  auto built_with = [&](const std::string& record_text, std::string* warnings) {
    EngineConfig cfg = cnn_config();
    cfg.engine_state[kAlgorithmRecordName] = record_text;
    ::testing::internal::CaptureStderr();
    CudnnStepEngine engine(cfg);
    *warnings = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(engine.algorithm_report(), measured_report) << "it measured (the process remembers the shapes)";
    return engine.recorded_algorithms_note();
  };
  std::string warnings;
  EXPECT_EQ(built_with("{not json", &warnings), "0 of 2 conv layers at batch 8 run the recorded algorithms (not measured again)");
  EXPECT_CONTAINS(warnings, "warning: stage 06: the record of conv algorithms is not JSON; the conv algorithms are "
                            "measured again");

  AlgorithmRecord other_rule = measured;
  other_rule.rule = "fastest";
  built_with(encode_algorithm_record(other_rule), &warnings);
  EXPECT_CONTAINS(warnings, "chosen with --conv-algos fastest, this run asks for deterministic: they are measured again");

  AlgorithmRecord other_shape = measured;
  for (RecordedAlgorithms& r : other_shape.layers) r.shape = "8|3x32x32|16k3p1s1";
  built_with(encode_algorithm_record(other_shape), &warnings);
  EXPECT_CONTAINS(warnings, "cannot be used here (they were measured for the shape 8|3x32x32|16k3p1s1, this layer is 8|");
}

// FFT needs a stride of 1: cuDNN cannot run it for a conv of stride 2.
TEST(Stage06_AlgorithmRecord, AnAlgorithmCuDnnCannotRunIsMeasuredAgainWithAWarning) {
  S06_SKIP_WITHOUT_GPU();
  EngineConfig cfg = cnn_config();
  cfg.arch = parse_arch("conv8k3p1s2,relu,flatten,fc10");
  CudnnStepEngine measuring(cfg);
  AlgorithmRecord unusable = record_of(measuring);
  ASSERT_EQ(unusable.layers.size(), 1u);
  unusable.layers[0].algos.forward = CUDNN_CONVOLUTION_FWD_ALGO_FFT;
  cfg.engine_state[kAlgorithmRecordName] = encode_algorithm_record(unusable);
  ::testing::internal::CaptureStderr();
  CudnnStepEngine engine(cfg);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(warnings, "the recorded conv algorithms of conv1 (conv8k3p1s2) at batch 8 cannot be used here "
                            "(forward FFT: ");
  EXPECT_EQ(engine.algorithm_report(), measuring.algorithm_report());
}

// ---- through the trainer ----------------------------------------------------------------

// A checkpoint whose record names algorithms the measurement would hardly choose:
// the resumed run runs those (its --verbose report names them), so it took the record.
TEST(Stage06_AlgorithmRecord, AResumedRunTakesItsCheckpointsAlgorithms) {
  S06_SKIP_WITHOUT_GPU();
  const StageInfo stage{"06_cudnn", "Stage 06 (test)"};
  const std::filesystem::path dir = trainer_process::fresh_dir("course_s06_record");
  const std::string ckpt = (dir / "run.ckpt").string();
  std::string report;
  const EngineFactory make = [&](const EngineConfig& c) -> std::unique_ptr<Engine> {
    auto engine = std::make_unique<CudnnStepEngine>(c);
    report = engine->algorithm_report();
    return engine;
  };
  const std::vector<std::string> args = {"s06_train", "--dataset", "synthetic", "--limit", "200", "--batch", "8",
                                         "--model", "cnn", "--no-progress"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = args;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  auto r = trainer_run::run_in_process(stage, make, with({"--epochs", "1", "--checkpoint-every", "1",
                                                          "--checkpoint", ckpt}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  Checkpoint c = load_checkpoint(ckpt);
  ASSERT_EQ(c.engine_state.count(kAlgorithmRecordName), 1u) << "the checkpoint records the conv algorithms";
  c.engine_state = forced(decode_algorithm_record(c.engine_state[kAlgorithmRecordName]));
  save_checkpoint(ckpt, c);
  r = trainer_run::run_in_process(stage, make, with({"--epochs", "2", "--resume", ckpt}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(forced_lines(report), 2u) << "the resumed engine runs the recorded algorithms:\n" << report;
}

// ---- a choice that is not bit-exact says so ----------------------------------------------

// --conv-algos fastest may choose algorithms that add with atomics, whose runs
// differ in the last bits: a run that checkpoints says a resume matches only to
// rounding. (The checks every GPU stage's trainer passes are tests/gpu_stages/'s.)
TEST(Stage06_Safety, FastestAlgorithmsSayAResumeMatchesOnlyToRounding) {
  S06_SKIP_WITHOUT_GPU();
  const std::filesystem::path exe = trainer_process::bin_dir() / ("s06_train_" + trainer_process::track());
  if (!std::filesystem::exists(exe)) GTEST_SKIP() << exe << " is not built (build its target to run this test)";
  const std::filesystem::path d = trainer_process::fresh_dir("course_s06_safety");
  const auto r = trainer_process::run(exe, d, "fastest",
                                      {"--dataset", "synthetic", "--limit", "256", "--model", "cnn", "--epochs", "1",
                                       "--conv-algos", "fastest", "--checkpoint-every", "1", "--checkpoint",
                                       (d / "run.ckpt").string(), "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("note: stage 06 with --conv-algos fastest may run cuDNN algorithms that add with atomics"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("only to rounding, not bit for bit"), std::string::npos) << r.err;
}
