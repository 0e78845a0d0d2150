/// @file bucket_plan.cpp
/// @brief Stage 09 (Task 9.3): grouping the layers' gradient ranges into buckets.
#include "09_multi_gpu/bucket_plan.hpp"

#include <stdexcept>

#include "common/core/not_implemented.hpp"

namespace course {

namespace {

std::string first_word(const std::string& name) { return name.substr(0, name.find(' ')); }

}  // namespace

std::vector<Bucket> plan_buckets(const std::vector<GradientRange>& ranges, std::size_t cap_bytes) {
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (ranges[k].end <= ranges[k].begin)
      throw std::invalid_argument("gradient range " + std::to_string(k) + " (" + ranges[k].name + ") is empty: [" +
                                  std::to_string(ranges[k].begin) + ", " + std::to_string(ranges[k].end) + ")");
    if (k > 0 && ranges[k].end != ranges[k - 1].begin)
      throw std::invalid_argument("gradient range " + std::to_string(k) + " (" + ranges[k].name + ", ends at " +
                                  std::to_string(ranges[k].end) + ") is not next to the range finished before it (" +
                                  ranges[k - 1].name + ", begins at " + std::to_string(ranges[k - 1].begin) + ")");
  }
  std::vector<Bucket> buckets;
  // BEGIN Task 9.3: walk the ranges in backward order, adding each to the open bucket; close the bucket once it holds at least cap_bytes, and close the last one at the end
  // HINT: a bucket's values are [begin, end) of the flat buffer: walking backwards, each new range extends it downwards (begin moves, end stays).
  // HINT: Bucket::bytes() counts floats; first and last are indices into `ranges`.
  bool open = false;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (!open) {
      buckets.push_back({ranges[k].begin, ranges[k].end, k, k});
      open = true;
    }
    Bucket& b = buckets.back();
    b.begin = ranges[k].begin;
    b.last = k;
    if (b.bytes() >= cap_bytes) open = false;
  }
  // END Task 9.3
  return buckets;
}

std::string bucket_layers(const Bucket& bucket, const std::vector<GradientRange>& ranges) {
  if (bucket.last >= ranges.size() || bucket.first > bucket.last)
    throw std::out_of_range("bucket of ranges [" + std::to_string(bucket.first) + ", " + std::to_string(bucket.last) +
                            "] among " + std::to_string(ranges.size()));
  const std::string first = first_word(ranges[bucket.first].name), last = first_word(ranges[bucket.last].name);
  return bucket.first == bucket.last ? first : first + "-" + last;
}

}  // namespace course
