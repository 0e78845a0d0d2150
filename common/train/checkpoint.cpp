/// @file checkpoint.cpp
/// @brief Writing and reading checkpoints, and the examples an interrupted epoch has left.
#include "common/train/checkpoint.hpp"

#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/core/byte_reader.hpp"
#include "common/core/little_endian.hpp"
#include "common/core/rng.hpp"

namespace course {

namespace {

using nlohmann::json;

constexpr std::size_t kMagicSize = 8;

// Every integer little-endian, as in model files: put_u32, put_u64 and get_little_endian (little_endian.hpp).

void put_block(std::string& out, const std::string& block) {
  put_u64(out, block.size());
  out += block;
}

// A ByteReader (byte_reader.hpp): never reads past the end; every read names its field.
using Reader = ByteReader<CheckpointError>;

// A block is its uint64 length, then its bytes. The length is checked against what is left
// before anything is taken, so a damaged length is named as such.
std::string read_block(Reader& r, const std::string& field) {
  const std::uint64_t n = r.number<std::uint64_t>("the length of " + field);
  if (n > r.remaining())
    r.fail("is truncated or damaged: " + field + " claims " + std::to_string(n) + " bytes but only " +
           std::to_string(r.remaining()) + " are left");
  return r.take(static_cast<std::size_t>(n), field);
}

// A whole number field of the state, checked to lie in [lo, hi] before any
// conversion: a damaged file must give a message, never an out-of-range cast.
long long integer_field(const json& state, const char* key, long long lo, long long hi, const Reader& r) {
  const auto it = state.find(key);
  if (it == state.end()) r.fail("is damaged: its state lacks '" + std::string(key) + "'");
  long long v = 0;
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi)) r.fail("is damaged: '" + std::string(key) + "' is out of range");
    v = static_cast<long long>(u);
  } else if (it->is_number_integer()) {
    v = it->get<long long>();
  } else {
    r.fail("is damaged: '" + std::string(key) + "' is not a whole number");
  }
  if (v < lo || v > hi)
    r.fail("is damaged: '" + std::string(key) + "' is " + std::to_string(v) + ", outside [" + std::to_string(lo) +
           ", " + std::to_string(hi) + "]");
  return v;
}

double real_field(const json& state, const char* key, const Reader& r) {
  const auto it = state.find(key);
  if (it == state.end() || !it->is_number()) r.fail("is damaged: its state lacks the number '" + std::string(key) + "'");
  return it->get<double>();
}

std::string text_field(const json& state, const char* key, const Reader& r) {
  const auto it = state.find(key);
  if (it == state.end() || !it->is_string()) r.fail("is damaged: its state lacks the text '" + std::string(key) + "'");
  return it->get<std::string>();
}

// "" when `name` may name an engine record (common/train/checkpoint.hpp), else what is wrong with it.
std::string record_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxEngineRecordName)
    return "has " + std::to_string(name.size()) + " characters, more than " + std::to_string(kMaxEngineRecordName);
  for (char ch : name)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'))
      return "has a character other than a-z, 0-9, '_', '.' and '-'";
  return "";
}

// The engine records of a version 2 file; they follow the optimizer state.
std::map<std::string, std::string> engine_records(Reader& r) {
  const std::uint64_t count = r.number<std::uint32_t>("the number of engine records");
  if (count > kMaxEngineRecords)
    r.fail("is damaged: it claims " + std::to_string(count) + " engine records, more than the " +
           std::to_string(kMaxEngineRecords) + " a checkpoint may hold");
  std::map<std::string, std::string> records;
  for (std::uint64_t i = 1; i <= count; ++i) {
    const std::string which = "engine record " + std::to_string(i);
    std::string name = read_block(r, "the name of " + which);
    const std::string problem = record_name_problem(name);
    if (!problem.empty()) r.fail("is damaged: the name of " + which + " " + problem);
    // In increasing order without repeats, as encode_checkpoint writes them: a
    // file read and written again must be the same bytes.
    if (!records.empty() && !(records.rbegin()->first < name))
      r.fail("is damaged: " + which + " '" + name + "' follows '" + records.rbegin()->first +
             "' (the names must increase, without repeats)");
    std::string value = read_block(r, "the value of " + which + " ('" + name + "')");
    records.emplace(std::move(name), std::move(value));
  }
  return records;
}

ModelFile tensors_of(const std::string& bytes, const std::string& what, const Reader& r) {
  try {
    return decode_model(bytes, what);
  } catch (const ModelFileError& e) {
    r.fail("holds damaged " + what + ": " + e.what());
  }
}

}  // namespace

std::string encode_checkpoint(const Checkpoint& c) {
  json state = {{"epoch", c.epoch},
                {"step", c.step},
                {"examples_done", c.examples_done},
                {"seed", c.seed},
                {"batch", c.batch},
                {"lr", c.lr},
                {"lr_schedule", c.lr_schedule},
                {"lr_scaling", c.lr_scaling},
                {"lr_reference_batch", c.lr_reference_batch},
                {"warmup_steps", c.warmup_steps},
                {"epochs", c.epochs},
                {"momentum", c.momentum},
                {"loss", c.loss},
                {"dataset", c.dataset},
                {"train_examples", c.train_examples},
                {"labels_fnv1a", c.labels_hash}};
  try {
    state["history"] = json::parse(c.history);
  } catch (const json::exception& e) {
    throw CheckpointError(std::string("checkpoint: the history is not JSON: ") + e.what());
  }
  ModelFile optimizer = c.model;
  optimizer.tensors = c.optimizer;
  std::string params_bytes, optimizer_bytes;
  try {
    params_bytes = encode_model(c.model);
    optimizer_bytes = encode_model(optimizer);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(std::string("checkpoint: ") + e.what());
  }
  if (c.engine_state.size() > kMaxEngineRecords)
    throw CheckpointError("checkpoint: the engine has " + std::to_string(c.engine_state.size()) +
                          " records, more than the " + std::to_string(kMaxEngineRecords) + " a checkpoint may hold");
  for (const auto& record : c.engine_state) {
    const std::string problem = record_name_problem(record.first);
    if (!problem.empty()) throw CheckpointError("checkpoint: the engine record name '" + record.first + "' " + problem);
  }
  std::string out(kCheckpointMagic, kMagicSize);
  put_u32(out, kCheckpointFormatVersion);
  put_block(out, state.dump());
  put_block(out, params_bytes);
  put_block(out, optimizer_bytes);
  put_u32(out, static_cast<std::uint32_t>(c.engine_state.size()));
  for (const auto& record : c.engine_state) {  // a std::map: in increasing order of name
    put_block(out, record.first);
    put_block(out, record.second);
  }
  put_u64(out, fnv1a64(out.data(), out.size()));
  return out;
}

Checkpoint decode_checkpoint(const std::string& bytes, const std::string& path) {
  Reader r(bytes, "checkpoint '" + path + "'");
  if (bytes.empty()) r.fail("is empty (0 bytes): not a checkpoint");
  if (bytes.size() < kMagicSize || bytes.compare(0, kMagicSize, kCheckpointMagic, kMagicSize) != 0)
    r.fail("is not a checkpoint: it does not start with " + std::string(kCheckpointMagic) +
           (bytes.size() >= kMagicSize && bytes.compare(0, kMagicSize, kModelMagic, kMagicSize) == 0
                ? " (it is a model file: pass it to --load, not --resume)"
                : ""));
  r.number<std::uint64_t>("the magic");
  const auto version = static_cast<std::uint32_t>(r.number<std::uint32_t>("the format version"));
  if (version != 1 && version != kCheckpointFormatVersion)
    r.fail("was written with checkpoint format version " + std::to_string(version) +
           ", this build reads versions 1 and " + std::to_string(kCheckpointFormatVersion));

  const std::string state_text = read_block(r, "the state");
  const std::string params_bytes = read_block(r, "the parameters");
  const std::string optimizer_bytes = read_block(r, "the optimizer state");
  // Version 1 has no engine records: its engine measures again what it chose.
  std::map<std::string, std::string> records = version >= 2 ? engine_records(r) : std::map<std::string, std::string>{};
  const std::size_t checked = r.position();
  const std::uint64_t stored = r.number<std::uint64_t>("the checksum");
  if (r.remaining() != 0) r.fail("is damaged: " + std::to_string(r.remaining()) + " unexpected bytes follow the checksum");

  Checkpoint c;
  json state;
  try {
    state = json::parse(state_text);
  } catch (const json::exception&) {
    r.fail("is damaged: its state is not JSON");
  }
  if (!state.is_object()) r.fail("is damaged: its state is not a JSON object");
  constexpr long long kMaxInt = std::numeric_limits<int>::max();
  c.epoch = static_cast<int>(integer_field(state, "epoch", 0, kMaxInt, r));
  c.step = static_cast<int>(integer_field(state, "step", 0, kMaxInt, r));
  c.examples_done = static_cast<long>(integer_field(state, "examples_done", 0, kMaxInt, r));
  c.batch = static_cast<int>(integer_field(state, "batch", 1, kMaxInt, r));
  c.train_examples = static_cast<long>(integer_field(state, "train_examples", 1, kMaxInt, r));
  c.epochs = static_cast<int>(integer_field(state, "epochs", 0, kMaxInt, r));
  c.lr = real_field(state, "lr", r);
  c.lr_schedule = text_field(state, "lr_schedule", r);
  if (state.contains("lr_scaling")) {  // absent from checkpoints of before the rule: none, 64, 0
    c.lr_scaling = text_field(state, "lr_scaling", r);
    c.lr_reference_batch = static_cast<int>(integer_field(state, "lr_reference_batch", 1, kMaxInt, r));
    c.warmup_steps = static_cast<int>(integer_field(state, "warmup_steps", 0, kMaxInt, r));
  }
  c.momentum = real_field(state, "momentum", r);
  c.loss = text_field(state, "loss", r);
  c.dataset = text_field(state, "dataset", r);
  for (const char* key : {"seed", "labels_fnv1a"}) {
    const auto it = state.find(key);
    if (it == state.end() || !it->is_number_unsigned())
      r.fail("is damaged: its state lacks the unsigned number '" + std::string(key) + "'");
  }
  c.seed = state["seed"].get<std::uint64_t>();
  c.labels_hash = state["labels_fnv1a"].get<std::uint64_t>();
  // The history is an array of flat objects (one per epoch, numbers and
  // text); anything nested deeper is damage, and refusing it keeps dump()
  // from recursing as deep as a crafted file might nest.
  const auto history = state.find("history");
  if (history == state.end() || !history->is_array()) r.fail("is damaged: its state lacks the history array");
  for (const json& epoch : *history) {
    if (!epoch.is_object()) r.fail("is damaged: an entry of its history is not a JSON object");
    for (const json& value : epoch)
      if (value.is_structured()) r.fail("is damaged: an entry of its history nests arrays or objects");
  }
  c.history = history->dump();
  // A mid-epoch checkpoint is taken after a whole number of batches, and
  // never after the last one (that is an epoch boundary).
  if (c.examples_done >= c.train_examples ||
      static_cast<long long>(c.step) * c.batch != static_cast<long long>(c.examples_done))
    r.fail("is damaged: step " + std::to_string(c.step) + " of batches of " + std::to_string(c.batch) +
           " does not match " + std::to_string(c.examples_done) + " examples done of " +
           std::to_string(c.train_examples));

  c.model = tensors_of(params_bytes, "parameters", r);
  const ModelFile optimizer = tensors_of(optimizer_bytes, "optimizer state", r);
  c.optimizer = optimizer.tensors;
  c.engine_state = std::move(records);

  const std::uint64_t computed = fnv1a64(bytes.data(), checked);
  if (computed != stored) r.fail("is damaged: checksum mismatch; the file changed after it was written");
  return c;
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint, std::size_t fail_after_bytes) {
  const std::string bytes = encode_checkpoint(checkpoint);
  try {
    write_file_atomically(path, bytes, fail_after_bytes);
  } catch (const std::runtime_error& e) {
    throw CheckpointError(std::string("checkpoint: ") + e.what());
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  return decode_checkpoint(read_whole_file<CheckpointError>(path, "checkpoint '" + path + "'"), path);
}

std::uint64_t labels_fingerprint(const Dataset& data) {
  const int shape[3] = {data.shape.c, data.shape.h, data.shape.w};
  std::uint64_t h = fnv1a64(shape, sizeof shape);
  return fnv1a64(data.labels.data(), data.labels.size() * sizeof(int), h);
}

Dataset remaining_examples(const Dataset& train, std::uint64_t seed, int epoch, long done) {
  const int n = train.size();
  if (done < 0 || done > n)
    throw std::invalid_argument("remaining_examples: " + std::to_string(done) + " examples done of " +
                                std::to_string(n));
  const int m = n - static_cast<int>(done);
  const std::vector<int> order = epoch_order(n, seed, epoch);  // the whole epoch's visiting order
  const std::vector<int> slot = epoch_order(m, seed, epoch);   // where the engine will look for the i-th
  const long per = train.shape.size();
  Dataset rest = train.empty_like();
  rest.images.resize(static_cast<std::size_t>(m) * static_cast<std::size_t>(per));
  rest.labels.resize(static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i) {
    const int from = order[static_cast<std::size_t>(done + i)];
    const int to = slot[static_cast<std::size_t>(i)];
    std::memcpy(rest.images.data() + static_cast<std::size_t>(to) * static_cast<std::size_t>(per), train.image(from),
                static_cast<std::size_t>(per) * sizeof(float));
    rest.labels[static_cast<std::size_t>(to)] = train.labels[static_cast<std::size_t>(from)];
  }
  return rest;
}

}  // namespace course
