#!/usr/bin/env bash
# Builds the kernel tracer (tools/gpu/kernel_trace.cpp) into the library the CUDA driver
# loads with CUDA_INJECTION64_PATH; exit 1, saying why, where CUPTI (libcupti.so, cupti.h)
# is not installed. Used by profile.sh and fused_scaling.sh.
#
#   tools/gpu/build_kernel_trace.sh build/gpu/kernel_trace.so
set -u
[ $# -eq 1 ] || { echo "usage: $0 OUTPUT.so" >&2; exit 2; }
cd "$(dirname "$0")/../.."
CUPTI_SO=$(find /usr/local/cuda/ /usr/local/cuda-*/ /usr/lib -name libcupti.so 2>/dev/null | head -n 1)
CUPTI_H=$(find /usr/local/cuda/ /usr/local/cuda-*/ /usr/include -name cupti.h 2>/dev/null | head -n 1)
if [ -z "$CUPTI_SO" ] || [ -z "$CUPTI_H" ]; then
  echo "CUPTI not found (libcupti.so, cupti.h): no kernel traces" >&2
  exit 1
fi
g++ -O2 -shared -fPIC -I"$(dirname "$CUPTI_H")" tools/gpu/kernel_trace.cpp -o "$1" \
  -L"$(dirname "$CUPTI_SO")" -lcupti -Wl,-rpath,"$(dirname "$CUPTI_SO")"
