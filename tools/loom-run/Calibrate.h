//===- Calibrate.h - loom-run --calibrate ------------------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_RUN_CALIBRATE_H
#define LOOM_TOOLS_LOOM_RUN_CALIBRATE_H

#include <string>
#include <vector>

/// Measures this machine's core again and, with `mpirun` (`mpirun -np N`
/// and its flags) for `ranks` > 1, runs loom-calibrate (beside loom-run)
/// under it, then keeps both for the planner's cpu-local:N
/// (planner::recalibrateCpu). Prints what it measured; false with `error`.
bool calibrateMachine(std::vector<std::string> mpirun, int ranks, bool quick,
                      std::string &error);

#endif // LOOM_TOOLS_LOOM_RUN_CALIBRATE_H
