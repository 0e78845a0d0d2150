#!/usr/bin/env bash
# The failure messages of the GPU stages' tests, checked on planted mistakes: for each patch
# of this folder (one small mistake in solutions/), apply it, rebuild its stage's test binary,
# run the one test it breaks, check that the test fails and that its message holds the
# expected words (the diagnosis), keep the message, and take the mistake back out.
#
#   OUT=/some/folder tools/gpu/planted_messages/run.sh [NAME...]   (NAME: a patch without .patch)
#
# Needs a configured build/gpu (tools/gpu/check_all.sh or stage0N.sh configure it; BUILD
# overrides). The tree must be clean of other changes to solutions/. Each patch costs an
# incremental build with the mistake and one without it again: 07 (rounding.cuh is included
# by the tensor-core kernels) and 08 (dense_fused.cuh by the fused kernels) rebuild the most.
# Results: $OUT/planted_messages.log (everything) and one line per patch at its end.
set -u -o pipefail
cd "$(dirname "$0")/../../.."
HERE=tools/gpu/planted_messages
BUILD=${BUILD:-build/gpu}
OUT=${OUT:-$PWD/out-planted}
mkdir -p "$OUT"
LOG=$OUT/planted_messages.log
: >"$LOG"
JOBS=${JOBS:-$(nproc)}

# name | test binary | gtest filter | words the failure message must hold
TABLE="
04_grid_transposed_store|s04_tests_solution|Task4_2_Grid.MatchesCublasOnSmallAwkwardSizes|laid out with m and n swapped
04_dense_bias_wrong_index|s04_tests_solution|Task4_6_DenseGpu.ForwardMatchesStage01|a term indexed by n where one indexed by o belongs
05_im2col_tap_off_by_one|s05_tests_solution|Task5_1_Im2col.MatchesTheReferenceForEveryPaddingStrideAndKernel|shifted by one along kw
05_maxpool_argmax_window_offset|s05_tests_solution|Task5_7_MaxPoolForward.MatchesStage02OnEveryShape|actual is what the offset in the window (dh * K + dw)
06_dense_dW_column_major|s06_tests_solution|Task6_9_Dense.SmallOddSizes|laid out with o and i swapped
07_bf16_ties_away|s07_tests_solution|Task7_5_Rounding.Bf16RoundsToNearestTiesToEven|a tie rounded away from zero where it goes to even
08_dense_ticket_not_reset|s08_tests_solution|Task8_4_DenseForward.MatchesStage01WithTheSumSplit|counters left at the number of slices
08_conv_parts_not_added|s08_tests_solution|Task8_1_ConvBlockForward.MatchesStage02OverTheShapeGrid|only part 0's channels summed
08_conv_bias_left_out|s08_tests_solution|Task8_1_ConvBlockForward.MatchesStage02OverTheShapeGrid|the bias left out (Task 8.1's last hole
08_dense_slices_not_added|s08_tests_solution|Task8_4_DenseForward.MatchesStage01WithTheSumSplit|slice 0's sum alone
09_slices_in_reverse_rank_order|s09_tests_solution|Task9_1_ShardPlan.SlicesOfAStepAreTheOneGpuBatchInRankOrder|rank 0 [2, 4), rank 1 [0, 2)
04_relu_backward_mask_inverted|s04_tests_solution|Task4_7_ActivationsGpu.BackwardMatchesStage01|the mask is inverted: actual is 0 exactly where expected is not
04_softmax_gradient_not_divided_by_batch|s04_tests_solution|Task4_8_LossGpu.SoftmaxCrossEntropyMatchesStage01|actual = 37 x expected at every entry: a constant factor
05_col2im_pixel_off_by_one|s05_tests_solution|Task5_2_Col2im.MatchesTheReferenceForEveryPaddingStrideAndKernel|shifted along h and w at once
05_maxpool_window_off_by_one|s05_tests_solution|Task5_7_MaxPoolForward.MatchesStage02OnEveryShape|shifted along h and w at once
06_softmax_gradient_without_label|s06_tests_solution|Task6_8_SoftmaxLoss.MatchesStage01|(= 1/37) at each wrong entry: one constant term left out
"

RESULTS=()
while IFS='|' read -r name binary filter expect; do
  [ -n "$name" ] || continue
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  patch=$HERE/$name.patch
  echo "==> $name: $filter" | tee -a "$LOG"
  if ! git apply "$patch" >>"$LOG" 2>&1; then
    RESULTS+=("$(printf '%-34s does not apply' "$name")")
    continue
  fi
  verdict="ok"
  if ! cmake --build "$BUILD" -j"$JOBS" --target "$binary" >>"$LOG" 2>&1; then
    verdict="BUILD FAILED"
  else
    message=$OUT/$name.txt
    "$BUILD/bin/$binary" --gtest_filter="$filter" --gtest_color=no >"$message" 2>&1
    rc=$?
    cat "$message" >>"$LOG"
    if grep -q "SKIPPED \]" "$message" && ! grep -q "FAILED  \]" "$message"; then
      verdict="skipped (no GPU, or too few)"
    elif [ $rc -eq 0 ]; then
      verdict="NOT CAUGHT: the test passed"
    elif ! grep -qF -- "$expect" "$message"; then
      verdict="caught, but the message lacks: $expect"
    fi
  fi
  git apply -R "$patch" >>"$LOG" 2>&1 || verdict="$verdict; COULD NOT TAKE THE PATCH BACK OUT"
  RESULTS+=("$(printf '%-34s %s' "$name" "$verdict")")
  echo "<== $name: $verdict" | tee -a "$LOG"
done <<<"$TABLE"

# The binaries without the mistakes again (only what changed is rebuilt).
for binary in $(echo "$TABLE" | cut -d'|' -f2 | sort -u); do
  cmake --build "$BUILD" -j"$JOBS" --target "$binary" >>"$LOG" 2>&1
done
{
  echo
  echo "summary:"
  printf '  %s\n' "${RESULTS[@]}"
} | tee -a "$LOG"
