//===- Launch.h - loom-run -np N: run the ranks, repeat their errors -*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_RUN_LAUNCH_H
#define LOOM_TOOLS_LOOM_RUN_LAUNCH_H

#include <string>
#include <vector>

/// Runs `command` (mpirun and the ranks' command line) as a child and
/// returns its exit status (a signal that ended it ends loom-run too).
/// The ranks keep their error messages in a directory named by
/// $LOOM_ERROR_DIR (loom_keep_rank_error); after the job, each is printed
/// once more as "loom-run: error: rank R: MESSAGE", since mpirun may drop
/// a failing rank's last output while it tears the job down. SIGTERM and
/// SIGHUP are passed on to mpirun; if loom-run itself is killed, mpirun
/// gets SIGTERM (PR_SET_PDEATHSIG). Returns -1 with `error` when mpirun
/// cannot be started.
int launchRanks(std::vector<std::string> command, int ranks,
                std::string &error);

#endif // LOOM_TOOLS_LOOM_RUN_LAUNCH_H
