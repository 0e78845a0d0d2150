/// @file load_data.hpp
/// @brief What the trainers call to get their data: a data set found by name, loaded, limited,
/// transformed and split (load_data.cpp), above the readers of data.hpp and the transforms of
/// data_transform.hpp, which know nothing of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/data/data.hpp"

namespace course {

/// What to load. `data_dir` empty means: look in the usual places.
struct DataOptions {
  std::string dataset = "fashion-mnist";  ///< fashion-mnist, mnist, cifar10, csv, folder, synthetic
  std::string data_dir;                   ///< --data-dir
  long limit = 0;                         ///< --limit N: keep the first N training examples (0 = all)
  std::uint64_t seed = 42;                ///< for the synthetic set and the validation split
  ImageSize resize;                       ///< --resize: every example resized to it (empty = keep)
  int channels = 0;                       ///< --channels: every example converted to it (0 = keep)
  double val_fraction = 0;                ///< --val-fraction: share of the training set held out
  std::string transform_why;              ///< why `resize` and `channels` were set, appended to what they did in
                                          ///< the note (" for m0's input ..."); empty: the user's own flags
};

/// The data set names load_data() accepts.
std::vector<std::string> dataset_names();

/// Loads a training and a test set.
///
/// fashion-mnist and mnist are searched in `data_dir` (when given), then
/// ./data/NAME, ./data, and for fashion-mnist /usr/share/datasets/fashion-mnist
/// (Debian package dataset-fashion-mnist). cifar10 is searched in data_dir,
/// ./data/cifar10 and ./data/cifar-10-batches-bin; csv reads train.csv and
/// test.csv from data_dir. When a data set other than csv is not found and no
/// data_dir was given, the synthetic set of the same shape is used and
/// `note` says so; a data_dir that lacks the files is an error. The synthetic
/// set (asked for, or as the fallback) has 8000 training and 2000 test examples.
/// folder reads `data_dir` with load_image_folder(), its pictures resized to
/// `resize` (else to the first training picture's size).
///
/// Then, in this order (common/data/data_transform.hpp): `limit` keeps the first
/// `limit` training examples (the test set is kept whole); `resize` and
/// `channels` convert the training and test examples (transform_examples());
/// `val_fraction` moves a share of the training examples into `val`
/// (split_validation(), drawn from `seed`). `note` says what each step did.
/// Throws DataError for bad files, and std::invalid_argument for an unknown
/// name or a transform or split that cannot be done (its message names the flag).
DataSplit load_data(const DataOptions& options);

}  // namespace course
