//===- LoomBase.td - Loom type constraints and op bases ----*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMBASE_TD
#define LOOM_DIALECT_LOOM_IR_LOOMBASE_TD

include "loom/Dialect/Loom/IR/LoomDialect.td"
include "loom/Dialect/Loom/IR/LoomAttrs.td"
include "loom/Dialect/Loom/IR/LoomInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Loom_FloatElement : AnyTypeOf<[F16, BF16, F32, F64], "floating-point">;
def Loom_IntElement : AnyTypeOf<[I1, I8, I16, I32, I64, UI8, UI16, UI32, UI64],
                                "integer">;
def Loom_Element : AnyTypeOf<[Loom_FloatElement, Loom_IntElement]>;

// Statically shaped, within the sizes Loom compiles (every dimension at most
// 2^31 - 1, at most 2^46 elements: what the ONNX importer accepts), so that
// IR input cannot ask a pass to count or allocate past 64 bits.
def Loom_WithinSizeLimits
    : CPred<"::mlir::loom::isWithinSizeLimits(::llvm::cast<::mlir::ShapedType>($_self))">;
class Loom_TensorOf<list<Type> allowed>
    : RankedTensorOf<allowed, [HasStaticShapePred, Loom_WithinSizeLimits],
                     "statically shaped tensor (dimensions at most 2^31 - 1, "
                     "at most 2^46 elements)">;
def Loom_Tensor : Loom_TensorOf<[Loom_Element]>;
def Loom_FloatTensor : Loom_TensorOf<[Loom_FloatElement]>;
// Integer or float: everything arithmetic except i1.
def Loom_NumericTensor : Loom_TensorOf<[F16, BF16, F32, F64, I8, I16, I32, I64,
                                        UI8, UI16, UI32, UI64]>;
def Loom_IndexTensor : Loom_TensorOf<[I32, I64]>;
def Loom_BoolTensor : Loom_TensorOf<[I1]>;
def Loom_SeedTensor : 0DTensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

// `ruleMethods`: ShardingRuleOpInterface methods with a default that the op
// overrides (adaptToLocalTypes).
class Loom_Op<string mnemonic, list<Trait> traits = [],
              list<string> ruleMethods = []>
    : Op<Loom_Dialect, mnemonic,
         !listconcat(traits,
                     [DeclareOpInterfaceMethods<Loom_ShardingRuleOpInterface,
                                                ruleMethods>])>;

// An op with a gradient rule (LoomGradients.cpp).
defvar Loom_Differentiable =
    DeclareOpInterfaceMethods<Loom_DifferentiableOpInterface, ["buildGradients"]>;
defvar Loom_DifferentiableSome =
    DeclareOpInterfaceMethods<Loom_DifferentiableOpInterface,
                              ["buildGradients", "isDifferentiableOperand"]>;

// Pure tensor op whose result types follow from operands and attributes.
class Loom_InferredOp<string mnemonic, list<Trait> traits = [],
                      list<string> ruleMethods = []>
    : Loom_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor]),
              ruleMethods>;

#endif // LOOM_DIALECT_LOOM_IR_LOOMBASE_TD
