/// @file checkpoint.hpp
/// @brief Checkpoints: a training run saved so that `--resume` continues it bit for bit.
///
/// A checkpoint holds what a model file holds (architecture, input shape,
/// classes, parameters) plus what training changes besides the parameters
/// (Engine::get_optimizer_state(): the SGD velocities), the choices the engine
/// made that the arithmetic depends on (Engine::engine_state(): stage 06's conv
/// algorithms, which it measures and so may choose differently in another run)
/// and where the run stands: the epoch and, after Ctrl-C, the step inside it.
/// The data order needs no saved state: epoch e visits course::epoch_order(n, seed, e).
///
/// Layout (every integer little-endian, whatever the machine):
///
/// | bytes  | field                                                               |
/// |--------|---------------------------------------------------------------------|
/// | 8      | magic `NNCCHKPT`                                                    |
/// | 4      | uint32 format version (kCheckpointFormatVersion)                    |
/// | 8 + n  | the run's state as JSON text: uint64 length, then the characters     |
/// | 8 + n  | the parameters as a model file (common/model/model_file.hpp): uint64 length, then its bytes |
/// | 8 + n  | the optimizer state, also as a model file: uint64 length, then its bytes |
/// | 4      | uint32 number of engine records (version 2 on; none in version 1)   |
/// | ...    | each record: its name (uint64 length, then the characters), then its value (uint64 length, then the bytes) |
/// | 8      | uint64 FNV-1a 64 checksum of every byte before it                   |
///
/// Engine records are opaque to the trainer: each engine reads back only the
/// names it wrote. Their names are 1 to kMaxEngineRecordName characters of
/// `a-z 0-9 _ . -`, in increasing byte order without repeats (the order a
/// std::map keeps, so that a file read and written again is the same bytes).
/// Version 1 files (before the records) are still read, with no records.
///
/// The file is written atomically (course::write_file_atomically), so a crash
/// or a full disk while saving leaves the previous checkpoint as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/data/data.hpp"
#include "common/model/model_file.hpp"
#include "common/core/tensor.hpp"

namespace course {

/// The layout version this build writes; it reads this one and version 1.
inline constexpr std::uint32_t kCheckpointFormatVersion = 2;

/// The longest name of an engine record, and the most records one checkpoint holds.
inline constexpr std::size_t kMaxEngineRecordName = 64;
inline constexpr std::size_t kMaxEngineRecords = 64;

/// The 8 bytes every checkpoint starts with.
inline constexpr char kCheckpointMagic[] = "NNCCHKPT";

/// A checkpoint that cannot be read, written or used; the message names the
/// file. A kind of ModelFileError, since a checkpoint carries a model.
class CheckpointError : public ModelFileError {
 public:
  using ModelFileError::ModelFileError;
};

/// Everything a checkpoint holds.
struct Checkpoint {
  ModelFile model;                    ///< architecture, input, classes, stage and the parameters
  std::vector<NamedTensor> optimizer; ///< Engine::get_optimizer_state() (e.g. "fc1.weight.velocity")
  /// Engine::engine_state(): named records of the engine's own choices (stage 06:
  /// "cudnn_conv_algorithms"), handed back to the engine of a resumed run (EngineConfig::engine_state).
  std::map<std::string, std::string> engine_state;

  /// Where the run stands: `epoch` whole epochs are done (so the next one has
  /// the 0-based index `epoch`), and of that next epoch the first `step`
  /// batches, `examples_done` examples, are trained already (0 at an epoch boundary).
  int epoch = 0;
  int step = 0;
  long examples_done = 0;

  /// The settings the numbers depend on, checked when the run is resumed.
  std::uint64_t seed = 0;
  int batch = 1;
  double lr = 0;
  std::string lr_schedule;  ///< --lr-schedule (course::scheduled_learning_rate)
  std::string lr_scaling = "none";  ///< --lr-scaling, --lr-reference-batch and --warmup-steps
  int lr_reference_batch = 64;      ///< (course::step_learning_rate); a checkpoint written before
  int warmup_steps = 0;             ///< they existed reads as none, 64 and 0
  int epochs = 0;           ///< --epochs of the run: the span of a schedule that decays over the run
  double momentum = 0;
  std::string loss;
  std::string dataset;
  long train_examples = 0;        ///< size of the training set (after --limit)
  std::uint64_t labels_hash = 0;  ///< course::labels_fingerprint() of the training set

  /// The per-epoch results so far, as the JSON array of --json (text), so the
  /// JSON of a resumed run lists every epoch. "[]" when there are none.
  std::string history = "[]";
};

/// The bytes of a checkpoint file (everything save_checkpoint() writes).
/// Throws CheckpointError for tensors that do not fit their shapes, and for
/// an engine record whose name breaks the rules above (or more than kMaxEngineRecords of them).
std::string encode_checkpoint(const Checkpoint& checkpoint);

/// Reads a checkpoint from bytes in memory; `path` names it in the messages.
/// Throws CheckpointError naming the problem: not a checkpoint (bad magic),
/// another format version, truncated, a damaged length or field, damaged
/// parameters or optimizer state, a bad engine record name (or names out of
/// order, or too many records), bytes after the checksum, or a checksum mismatch.
Checkpoint decode_checkpoint(const std::string& bytes, const std::string& path);

/// Saves a checkpoint atomically (the previous file stays whole on any
/// failure). `fail_after_bytes` is the test hook of course::write_file_atomically().
/// Throws CheckpointError naming the file.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint,
                     std::size_t fail_after_bytes = kNeverFail);

/// Reads a checkpoint file; throws CheckpointError naming the file and the problem.
Checkpoint load_checkpoint(const std::string& path);

/// FNV-1a 64 of a data set's labels and its example shape: cheap, and enough
/// to tell a resumed run that it was given other data (another --dataset,
/// --data-dir or --limit) than the run it continues.
std::uint64_t labels_fingerprint(const Dataset& data);

/// The examples epoch `epoch` has left after its first `done` examples,
/// arranged so that course::epoch_order(m, seed, epoch) over the result
/// (m = train.size() - done) visits them in the order the whole epoch would
/// have: result.image(epoch_order(m, seed, epoch)[i]) is
/// train.image(epoch_order(n, seed, epoch)[done + i]). An engine given this
/// set trains the rest of an interrupted epoch batch for batch, when `done` is
/// a whole number of batches. Throws std::invalid_argument when done is not in [0, n].
Dataset remaining_examples(const Dataset& train, std::uint64_t seed, int epoch, long done);

}  // namespace course
