// RUN: loom-opt %s --loom-schedule-pipeline="schedule=gpipe report=true" | FileCheck %s --check-prefix=GPIPE
// RUN: loom-opt %s --loom-schedule-pipeline="schedule=zb-h1 report=true" | FileCheck %s --check-prefix=ZB
// RUN: sed -e 's/ranks = 2/ranks = 4/' -e 's/micro_batches = 4/micro_batches = 8/' %s | loom-opt --loom-schedule-pipeline="schedule=1f1b report=true" | FileCheck %s --check-prefix=P4
// RUN: sed -e 's/ranks = 2/ranks = 4/' -e 's/micro_batches = 4/micro_batches = 8/' %s | loom-opt --loom-schedule-pipeline="schedule=zb-h1 report=true" | FileCheck %s --check-prefix=ZB4
// RUN: sed -e 's/virtual_stages = 1/virtual_stages = 2/' %s | loom-opt --loom-schedule-pipeline="schedule=interleaved report=true" | FileCheck %s --check-prefix=INTER
// RUN: not loom-opt %s --loom-schedule-pipeline="schedule=pipedream" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: sed -e 's/virtual_stages = 1/virtual_stages = 2/' %s | not loom-opt --loom-schedule-pipeline="schedule=1f1b" 2>&1 | FileCheck %s --check-prefix=VIRTUAL

// The schedules' action lists per pipeline rank, simulated with forward 1
// and backward 2 time units: 1F1B's bubble is (p - 1) / (m + p - 1).

// GPipe: every forward, then every backward.
// GPIPE: rank 0: F(0,0) SEND_F(0,0) F(0,1) SEND_F(0,1) F(0,2) SEND_F(0,2) F(0,3) SEND_F(0,3) RECV_B(0,0) B(0,0) RECV_B(0,1) B(0,1) RECV_B(0,2) B(0,2) RECV_B(0,3) B(0,3) U(0)
// GPIPE: rank 1: RECV_F(1,0) F(1,0) RECV_F(1,1) F(1,1) RECV_F(1,2) F(1,2) RECV_F(1,3) F(1,3) B(1,0) SEND_B(1,0) B(1,1) SEND_B(1,1) B(1,2) SEND_B(1,2) B(1,3) SEND_B(1,3) U(1)

// ZB-H1 (Qi et al. 2023): backward split into input (I) and weight (W)
// halves, each taking 1 unit; rank r defers r W's into the cool-down, so
// the input gradients travel back at the pace of I alone. Its bubble is
// the paper's (p - 1) / (3m + p - 1): 1/13 for p = 2, m = 4 (1F1B: 0.200),
// 3/27 for p = 4, m = 8 (1F1B: 0.273).
// ZB: bubble fraction 0.077 (2 ranks, 2 stages, 4 micro-batches)
// ZB: rank 0: F(0,0) SEND_F(0,0) F(0,1) SEND_F(0,1) RECV_B(0,0) I(0,0) W(0,0) F(0,2) SEND_F(0,2) RECV_B(0,1) I(0,1) W(0,1) F(0,3) SEND_F(0,3) RECV_B(0,2) I(0,2) W(0,2) RECV_B(0,3) I(0,3) W(0,3) U(0)
// ZB: rank 1: RECV_F(1,0) F(1,0) I(1,0) SEND_B(1,0) RECV_F(1,1) F(1,1) I(1,1) SEND_B(1,1) W(1,0) RECV_F(1,2) F(1,2) I(1,2) SEND_B(1,2) W(1,1) RECV_F(1,3) F(1,3) I(1,3) SEND_B(1,3) W(1,2) W(1,3) U(1)
// ZB4: bubble fraction 0.111 (4 ranks, 4 stages, 8 micro-batches)
// ZB4: rank 3: RECV_F(3,0) F(3,0) I(3,0) SEND_B(3,0) RECV_F(3,1) F(3,1) I(3,1) SEND_B(3,1) RECV_F(3,2) F(3,2) I(3,2) SEND_B(3,2) RECV_F(3,3) F(3,3) I(3,3) SEND_B(3,3) W(3,0) RECV_F(3,4)
// ZB4-SAME: W(3,4) W(3,5) W(3,6) W(3,7) U(3)

// 1F1B on 4 ranks, 8 micro-batches: rank r warms up with 3 - r forwards.
// P4: bubble fraction 0.273 (4 ranks, 4 stages, 8 micro-batches)
// P4: rank 0: F(0,0) SEND_F(0,0) F(0,1) SEND_F(0,1) F(0,2) SEND_F(0,2) F(0,3) SEND_F(0,3) RECV_B(0,0) B(0,0) F(0,4)
// P4: rank 3: RECV_F(3,0) F(3,0) B(3,0) SEND_B(3,0) RECV_F(3,1) F(3,1) B(3,1)

// Interleaved: rank 0 holds stages 0 and 2, rank 1 stages 1 and 3;
// forwards cycle through the rank's stages in groups of 2 micro-batches.
// INTER: bubble fraction 0.111 (2 ranks, 4 stages, 4 micro-batches)
// INTER: rank 0: F(0,0) SEND_F(0,0) F(0,1) SEND_F(0,1) RECV_F(2,0) F(2,0) SEND_F(2,0) RECV_F(2,1) F(2,1) SEND_F(2,1)
// INTER-SAME: U(0) U(2)
// INTER: rank 1: RECV_F(1,0) F(1,0) SEND_F(1,0) RECV_F(1,1) F(1,1) SEND_F(1,1) RECV_F(3,0) F(3,0) B(3,0) SEND_B(3,0)

// UNKNOWN: error: loom-schedule-pipeline: unknown schedule 'pipedream' (expected gpipe, 1f1b, interleaved or zb-h1)
// VIRTUAL: error: loom-schedule-pipeline: virtual stages (2 per rank) need the interleaved schedule, not 1f1b

module attributes {loom.pipeline = {ranks = 2 : i64, virtual_stages = 1 : i64, micro_batches = 4 : i64}} {
}
