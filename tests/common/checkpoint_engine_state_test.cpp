// The engine records of a checkpoint (format version 2, Checkpoint::engine_state):
// named opaque values an engine writes (stage 06: the conv algorithms it chose)
// and gets back when the run is resumed. They survive a round trip byte for byte,
// damaged or malformed records are refused with a message, version 1 files are
// still read (with none), and the trainer carries them from an engine to the
// checkpoint and from the checkpoint to the resumed run's engine.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/train/checkpoint.hpp"
#include "common/train/engine.hpp"
#include "common/model/model_file.hpp"
#include "common/train/trainer.hpp"
#include "expect_contains.hpp"
#include "one_weight_engine.hpp"
#include "small_checkpoint.hpp"
#include "trainer_process.hpp"
#include "trainer_run.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;

using testkit::small_checkpoint;

// Two records, one of them binary (a zero byte, bytes above 0x7F) and one empty.
Checkpoint recorded_checkpoint() {
  Checkpoint c = small_checkpoint();
  c.engine_state["cudnn_conv_algorithms"] = R"({"format":1,"layers":[]})";
  c.engine_state["a.binary-record_2"] = std::string("\x00\x01\xff\x80 x", 6);
  c.engine_state["z"] = "";
  return c;
}

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A checkpoint file whose engine records are written here as given (any names,
// any order, any count claimed), with a correct checksum: what only a damaged
// or hand-made file holds, and what the decoder must refuse by its content.
std::string with_records(const std::vector<std::pair<std::string, std::string>>& records, std::uint64_t count) {
  const std::string plain = encode_checkpoint(small_checkpoint());  // ... optimizer, uint32 0, checksum
  std::string out = plain.substr(0, plain.size() - 12);
  put(out, count, 4);
  for (const auto& r : records) {
    put(out, r.first.size(), 8);
    out += r.first;
    put(out, r.second.size(), 8);
    out += r.second;
  }
  put(out, fnv1a64(out.data(), out.size()), 8);
  return out;
}

std::string refusal(const std::string& bytes) {
  try {
    decode_checkpoint(bytes, "records.ckpt");
  } catch (const CheckpointError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(CheckpointEngineState, RecordsRoundTripByteForByte) {
  const Checkpoint c = recorded_checkpoint();
  const std::string bytes = encode_checkpoint(c);
  const Checkpoint d = decode_checkpoint(bytes, "mem");
  EXPECT_EQ(d.engine_state, c.engine_state);
  EXPECT_EQ(encode_checkpoint(d), bytes);
  EXPECT_TRUE(trainer_run::same_bits(d.model.tensors, c.model.tensors));
  EXPECT_TRUE(trainer_run::same_bits(d.optimizer, c.optimizer));
  // The records as this file's hand-made writer lays them out (the layout of checkpoint.hpp).
  EXPECT_EQ(with_records({c.engine_state.begin(), c.engine_state.end()}, 3), bytes);
}

TEST(CheckpointEngineState, EveryCutAndEveryFlippedByteIsRefused) {
  const std::string bytes = encode_checkpoint(recorded_checkpoint());
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_checkpoint(bytes.substr(0, n), "cut.ckpt"), CheckpointError) << "cut to " << n;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    EXPECT_THROW(decode_checkpoint(damaged, "flipped.ckpt"), CheckpointError) << "byte " << i << " flipped";
  }
}

TEST(CheckpointEngineState, AVersion1FileIsReadWithNoRecords) {
  const std::string v2 = encode_checkpoint(small_checkpoint());
  std::string v1 = v2.substr(0, v2.size() - 12);  // less the record count and the checksum
  v1[8] = 1;                                      // the format version's low byte
  put(v1, fnv1a64(v1.data(), v1.size()), 8);
  const Checkpoint c = decode_checkpoint(v1, "v1.ckpt");
  EXPECT_TRUE(c.engine_state.empty());
  EXPECT_EQ(c.epoch, small_checkpoint().epoch);
  EXPECT_EQ(encode_checkpoint(c), v2) << "written again, it becomes the version 2 file";
  std::string v3 = v2;
  v3[8] = 3;
  EXPECT_CONTAINS(refusal(v3), "format version 3, this build reads versions 1 and 2");
}

TEST(CheckpointEngineState, BadNamesAreRefusedWhenWrittenAndWhenRead) {
  for (const std::string& name : {std::string(), std::string("Upper"), std::string("two words"),
                                  std::string("nul\0", 4), std::string(kMaxEngineRecordName + 1, 'a')}) {
    SCOPED_TRACE("name '" + name + "'");
    Checkpoint c = small_checkpoint();
    c.engine_state[name] = "value";
    EXPECT_THROW(encode_checkpoint(c), CheckpointError);
    EXPECT_CONTAINS(refusal(with_records({{name, "value"}}, 1)), "the name of engine record 1 ");
  }
  Checkpoint longest = small_checkpoint();
  longest.engine_state[std::string(kMaxEngineRecordName, 'a')] = "fits";
  EXPECT_EQ(decode_checkpoint(encode_checkpoint(longest), "m").engine_state, longest.engine_state);
}

TEST(CheckpointEngineState, NamesOutOfOrderOrRepeatedAreRefused) {
  EXPECT_CONTAINS(refusal(with_records({{"b", "1"}, {"a", "2"}}, 2)),
                  "engine record 2 'a' follows 'b' (the names must increase, without repeats)");
  EXPECT_CONTAINS(refusal(with_records({{"a", "1"}, {"a", "1"}}, 2)), "engine record 2 'a' follows 'a'");
  EXPECT_NO_THROW(decode_checkpoint(with_records({{"a", "1"}, {"b", "2"}}, 2), "m"));
}

TEST(CheckpointEngineState, CountsThatDoNotMatchTheRecordsAreRefused) {
  EXPECT_CONTAINS(refusal(with_records({}, kMaxEngineRecords + 1)), "more than the 64 a checkpoint may hold");
  EXPECT_CONTAINS(refusal(with_records({}, 0xFFFFFFFFu)), "claims 4294967295 engine records");
  EXPECT_CONTAINS(refusal(with_records({{"a", "1"}}, 2)), "is truncated");                 // one record short
  EXPECT_CONTAINS(refusal(with_records({{"a", "1"}, {"b", "2"}}, 1)), "unexpected bytes");  // one too many
  Checkpoint many = small_checkpoint();
  for (std::size_t i = 0; i <= kMaxEngineRecords; ++i) many.engine_state["r" + std::to_string(i)] = "";
  EXPECT_THROW(encode_checkpoint(many), CheckpointError);
}

// ---- through the trainer ------------------------------------------------------------


// What the engines built by `factory` were given and made: each records, as
// "choice", the value it was built with, else one of its own ("measured N").
struct Seen {
  std::vector<EngineState> given;
  int built = 0;
};

// An engine that trains nothing (its parameters and velocity stay put) but
// makes a choice at construction, as stage 06 measures its conv algorithms.
class ChoosingEngine : public testkit::OneWeightEngine {
 public:
  ChoosingEngine(const EngineConfig& c, Seen& seen) : OneWeightEngine(0.5f, 0.0f) {
    seen.given.push_back(c.engine_state);
    const auto it = c.engine_state.find("choice");
    choice_ = it != c.engine_state.end() ? it->second : "measured " + std::to_string(++seen.built);
  }
  std::string device() const override { return "choosing test engine"; }
  EpochStats train_epoch(const Dataset& train, int, const BatchCallback& on_batch) override {
    EpochStats s;
    s.seen = train.size();
    if (on_batch) on_batch(s.seen, 0.0);
    return s;
  }
  bool reports_batch_loss() const override { return true; }
  EngineState engine_state() const override { return {{"choice", choice_}}; }

 private:
  std::string choice_;
};

TEST(CheckpointEngineState, TheTrainerSavesTheRecordsAndHandsThemToTheResumedEngine) {
  const fs::path dir = trainer_process::fresh_dir("course_engine_state");
  const std::string ckpt = (dir / "run.ckpt").string();
  Seen seen;
  const EngineFactory make = [&](const EngineConfig& c) -> std::unique_ptr<Engine> {
    return std::make_unique<ChoosingEngine>(c, seen);
  };
  auto args = [&](std::vector<std::string> more) {
    std::vector<std::string> a = {"s01_train", "--dataset", "synthetic", "--limit", "64", "--batch", "8",
                                  "--arch",    "fc10",      "--no-progress"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  auto r = trainer_run::run_in_process(trainer_run::kStage01, make,
                                       args({"--epochs", "1", "--checkpoint-every", "1", "--checkpoint", ckpt}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_EQ(seen.given.size(), 1u);
  EXPECT_TRUE(seen.given[0].empty()) << "a fresh run gets no records";
  EXPECT_EQ(load_checkpoint(ckpt).engine_state, (EngineState{{"choice", "measured 1"}}));

  r = trainer_run::run_in_process(trainer_run::kStage01, make, args({"--epochs", "2", "--resume", ckpt, "--checkpoint-every", "1"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_EQ(seen.given.size(), 2u);
  EXPECT_EQ(seen.given[1], (EngineState{{"choice", "measured 1"}})) << "the resumed engine is built with the records";
  EXPECT_EQ(seen.built, 1) << "the resumed engine took the recorded choice instead of making one";
  EXPECT_EQ(load_checkpoint(ckpt).engine_state, (EngineState{{"choice", "measured 1"}}))
      << "the resumed run's checkpoint records the choice it continued with";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace course
