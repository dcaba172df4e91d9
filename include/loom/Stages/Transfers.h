//===- Transfers.h - What a pipeline stage boundary sends, emitted and priced -===//
//
// loom-split-stages routes each distinct value that a stage's forward
// program makes and the next stage reads to one "send" port of the sender
// and one "recv" port of the receiver (values may cross to the adjacent
// stage only), and the gradients of those the receiver differentiates back
// through "send_grad"/"recv_grad" ports; the pipeline runtime
// (runtime/src/program/pipeline.cpp) posts one isend and one irecv per
// port and micro-batch. The planner prices a boundary with the same rule
// and the same count (PipelineSearch.cpp's layerCosts, InterOp.h), so a
// second value crossing is a second message there too (issue 42 item 5,
// as Buckets.h for gradient buckets and TopKExchange.h for top-k).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_STAGES_TRANSFERS_H
#define LOOM_STAGES_TRANSFERS_H

namespace mlir::loom::stages {

/// Whether a value made by the forward program of stage `from` travels to
/// stage `to` by the pipeline's send/recv: to the next stage only (any
/// other crossing is loom-split-stages' error, or made again where it is
/// needed when it is the same for every micro-batch).
inline bool sentToStage(int from, int to) { return from + 1 == to; }

/// The messages one boundary sends per micro-batch in one direction.
struct BoundaryTransfer {
  int messages = 0;
  /// Bytes per device.
  double bytes = 0;

  /// One more value of `valueBytes` per device (one port).
  void add(double valueBytes) {
    ++messages;
    bytes += valueBytes;
  }
  /// Seconds over a link that costs `perMessage` per message (latency and
  /// the call's overhead) and `perByte` per byte.
  double seconds(double perMessage, double perByte) const {
    return messages * perMessage + bytes * perByte;
  }
};

} // namespace mlir::loom::stages

#endif // LOOM_STAGES_TRANSFERS_H
