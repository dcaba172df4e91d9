//===- Passes.td - Loom transformation passes --------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_TRANSFORMS_PASSES_TD
#define LOOM_DIALECT_LOOM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomPrintShardingRules : Pass<"loom-print-sharding-rules"> {
  let summary = "Report every op's sharding factor rule as a remark";
  let description = [{
    For every op implementing `ShardingRuleOpInterface` that has operands or
    results, checks the rule
    against the op's types and emits it as a remark at the op, e.g.

    ```
    remark: sharding rule: ([i, j], [j, k]) -> ([i, k]) {i=8, j=16, k=32} reduction={j:sum}
    ```

    Fails if a rule is inconsistent with its op. Useful to see how an
    imported model can be split before planning it.
  }];
}

#endif // LOOM_DIALECT_LOOM_TRANSFORMS_PASSES_TD
