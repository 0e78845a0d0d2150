// s03_pool_study: the max-pooling study's CPU parts (pool_study.hpp); a GPU stage's build adds the GPU's.
#include "benchmarks/03_openmp/pool_study/pool_study.hpp"

int main(int argc, char** argv) { return course::pool_study::run(argc, argv, "s03_pool_study", nullptr); }
