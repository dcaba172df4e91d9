"""The aten op table of loom.torch: each entry turns one aten op of a
make_fx graph into `loom` ops. docs/pytorch.md lists them; test/Python
has a test per op (torch_ops_test.py)."""

import math

import torch


class TorchImportError(Exception):
    """A PyTorch program Loom cannot import; the message names the op and
    the user's source line."""


class UnsupportedOp(TorchImportError):
    """An aten op outside Loom's table."""

    def __init__(self, message, op):
        super().__init__(message)
        self.op = op


_DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
    torch.int8: "i8", torch.bool: "i1",
}


def element_type(dtype):
    """The MLIR element type of a torch dtype ("f32", "i64", ...)."""
    if dtype not in _DTYPES:
        raise TorchImportError(f"loom.torch: tensors of {dtype} are not supported")
    return _DTYPES[dtype]


def mlir_type(shape, dtype):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{element_type(dtype)}>"


_type_of = mlir_type


class Value:
    """An SSA value of the emitted function (an MLIR name, shape, dtype)."""

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.const = None  # the value, for constants known at import

    @property
    def type(self):
        return mlir_type(self.shape, self.dtype)

    @property
    def rank(self):
        return len(self.shape)


ATEN_OPS = {}


def op(*names):
    def register(fn):
        for n in names:
            ATEN_OPS[n] = fn
        return fn
    return register


# Helpers -------------------------------------------------------------------

_INF_BITS = {  # (+inf, -inf, nan) as hexadecimal literals
    torch.float32: ("0x7F800000", "0xFF800000", "0x7FC00000"),
    torch.float64: ("0x7FF0000000000000", "0xFFF0000000000000",
                    "0x7FF8000000000000"),
    torch.float16: ("0x7C00", "0xFC00", "0x7E00"),
    torch.bfloat16: ("0x7F80", "0xFF80", "0x7FC0"),
}


def literal(value, dtype):
    if dtype == torch.bool:
        return "true" if value else "false"
    if not dtype.is_floating_point:
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return _INF_BITS[dtype][2]
    if math.isinf(value):
        return _INF_BITS[dtype][0 if value > 0 else 1]
    # Enough digits to round-trip the type (float64: 17; a float32 constant
    # is a float32 already, so 9 reproduce it).
    return f"{value:.16e}" if dtype == torch.float64 else f"{value:.9e}"


def constant(im, tensor):
    """A dense constant holding `tensor` (a splat when all equal)."""
    t = tensor.detach()
    ty = mlir_type(t.shape, t.dtype)
    flat = t.reshape(-1)
    if flat.numel() == 0:
        raise im.error("empty tensors are not supported")
    if bool((flat == flat[0]).all()) or flat.numel() == 1:
        body = literal(flat[0].item(), t.dtype)
    else:
        body = "[" + ", ".join(literal(x, t.dtype) for x in flat.tolist()) + "]"
        if t.dim() > 1:
            body = _nest(flat.tolist(), list(t.shape), t.dtype)
    v = im.emit(f"loom.constant dense<{body}> : {ty}", t.shape, t.dtype)
    v.const = t
    return v


def _nest(flat, shape, dtype):
    if len(shape) == 1:
        return "[" + ", ".join(literal(x, dtype) for x in flat) + "]"
    step = len(flat) // shape[0]
    return "[" + ", ".join(_nest(flat[i * step:(i + 1) * step], shape[1:], dtype)
                           for i in range(shape[0])) + "]"


def scalar(im, value, dtype, shape=()):
    return constant(im, torch.full(shape, value, dtype=dtype))


def cast(im, v, dtype):
    if v.dtype == dtype:
        return v
    return im.emit(f"loom.cast {v.name} : {v.type} to "
                   f"{mlir_type(v.shape, dtype)}", v.shape, dtype)


def reshape(im, v, shape):
    shape = tuple(shape)
    if v.shape == shape:
        return v
    return im.emit(f"loom.reshape {v.name} : ({v.type}) -> "
                   f"{mlir_type(shape, v.dtype)}", shape, v.dtype)


def as_value(im, x, dtype):
    """A tensor operand of `dtype`: Python numbers become constants."""
    if isinstance(x, Value):
        return cast(im, x, dtype)
    return scalar(im, x, dtype)


def binary(im, name, a, b, dtype=None, shape=None, operand_dtype=None):
    if shape is None or dtype is None:
        out_shape, out_dtype = im.out()
        shape = out_shape if shape is None else shape
        dtype = out_dtype if dtype is None else dtype
    odt = operand_dtype or dtype
    a, b = as_value(im, a, odt), as_value(im, b, odt)
    return im.emit(f"loom.{name} {a.name}, {b.name} : ({a.type}, {b.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


def unary(im, name, x, extra=""):
    """An elementwise loom op on x (its shape; the node's result type when
    the node has one tensor result, else x's)."""
    val = im.node.meta.get("val")
    dtype = val.dtype if isinstance(val, torch.Tensor) else x.dtype
    x = cast(im, x, dtype)
    shape = x.shape
    return im.emit(f"loom.{name} {x.name}{extra} : {x.type}", shape, dtype)


def dims_of(dims, rank):
    if isinstance(dims, int):
        dims = [dims]
    return [d % rank if rank else 0 for d in dims]


def _ints(xs):
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


# Views and layout ----------------------------------------------------------

@op("clone", "alias", "lift_fresh_copy", "contiguous")
def _identity(im, x, *args, **kwargs):
    return x


@op("detach")
def _detach(im, x):
    if im.node.args[0] in im.trainable_dependent:
        raise im.error("detach() of a value computed from trainable "
                       "parameters is not supported yet (Loom has no "
                       "stop-gradient op; its gradient would flow)")
    return x


@op("view", "_unsafe_view", "_reshape_alias", "reshape", "unsqueeze",
    "squeeze", "flatten", "view_as", "unflatten")
def _view(im, x, *args, **kwargs):
    shape, _ = im.out()
    return reshape(im, x, shape)


@op("expand", "expand_as", "broadcast_to")
def _expand(im, x, *args, **kwargs):
    shape, _ = im.out()
    if shape == x.shape:
        return x
    offset = len(shape) - x.rank
    return im.emit(f"loom.broadcast {x.name} dims = "
                   f"{_ints(range(offset, len(shape)))} : ({x.type}) -> "
                   f"{_type_of(shape, x.dtype)}", shape, x.dtype)


def transpose(im, x, perm):
    if list(perm) == list(range(x.rank)):
        return x
    shape = tuple(x.shape[p] for p in perm)
    return im.emit(f"loom.transpose {x.name} permutation = {_ints(perm)} : "
                   f"({x.type}) -> {_type_of(shape, x.dtype)}", shape, x.dtype)


@op("t", "numpy_T")
def _t(im, x):
    return transpose(im, x, list(reversed(range(x.rank))))


@op("transpose")
def _transpose(im, x, d0, d1):
    perm = list(range(x.rank))
    d0, d1 = d0 % x.rank, d1 % x.rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return transpose(im, x, perm)


@op("permute")
def _permute(im, x, dims):
    return transpose(im, x, dims_of(dims, x.rank))


def slice_(im, x, starts, limits, strides):
    shape = tuple(max(0, -(-(l - s) // st)) for s, l, st in
                  zip(starts, limits, strides))
    if shape == x.shape:
        return x
    ranges = ", ".join(f"{s}:{l}" + (f":{st}" if st != 1 else "")
                       for s, l, st in zip(starts, limits, strides))
    return im.emit(f"loom.slice {x.name} [{ranges}] : ({x.type}) -> "
                   f"{_type_of(shape, x.dtype)}", shape, x.dtype)


def _norm_range(size, start, end):
    start = 0 if start is None else start
    end = size if end is None else end
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    return max(0, min(start, size)), max(0, min(end, size))


@op("slice")
def _slice(im, x, dim=0, start=None, end=None, step=1):
    dim = dim % x.rank
    s, e = _norm_range(x.shape[dim], start, end)
    e = max(s, e)
    starts, limits, strides = [0] * x.rank, list(x.shape), [1] * x.rank
    starts[dim], limits[dim], strides[dim] = s, e, step
    return slice_(im, x, starts, limits, strides)


@op("select")
def _select(im, x, dim, index):
    dim = dim % x.rank
    index = index % x.shape[dim]
    v = _slice(im, x, dim, index, index + 1)
    return reshape(im, v, im.out()[0])


@op("split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes")
def _split(im, x, sizes, dim=0):
    dim = dim % x.rank
    n = x.shape[dim]
    if isinstance(sizes, int):
        sizes = [sizes] * (-(-n // sizes))
        sizes[-1] = n - sizes[0] * (len(sizes) - 1)
    out, start = [], 0
    for s in sizes:
        out.append(_slice(im, x, dim, start, start + s))
        start += s
    return out


@op("unbind")
def _unbind(im, x, dim=0):
    dim = dim % x.rank
    out = []
    for i in range(x.shape[dim]):
        v = _slice(im, x, dim, i, i + 1)
        shape = x.shape[:dim] + x.shape[dim + 1:]
        out.append(reshape(im, v, shape))
    return out


@op("cat")
def _cat(im, tensors, dim=0):
    shape, dtype = im.out()
    tensors = [cast(im, t, dtype) for t in tensors if t.shape != (0,)]
    if len(tensors) == 1:
        return tensors[0]
    dim = dim % len(shape)
    names = ", ".join(t.name for t in tensors)
    types = ", ".join(t.type for t in tensors)
    return im.emit(f"loom.concat {names} axis = {dim} : ({types}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


@op("_to_copy", "to", "type_as")
def _to_copy(im, x, *args, **kwargs):
    _, dtype = im.out()
    return cast(im, x, dtype)


# Constants -----------------------------------------------------------------

@op("arange", "full", "zeros", "ones", "scalar_tensor", "tril", "triu",
    "new_zeros", "new_ones", "new_full", "zeros_like", "ones_like",
    "full_like", "eye")
def _constant(im, *args, **kwargs):
    """Ops whose value does not depend on traced tensor values (the *_like
    ops only read their input's shape): evaluated now, a constant."""
    node = im.node
    shape, dtype = im.out()
    shape_only = node.target.__name__.split(".")[0].endswith(
        ("_like", "new_zeros", "new_ones", "new_full"))
    real = []
    for a in args:
        if isinstance(a, Value) and a.const is None and not shape_only:
            raise im.error(f"{node.target} of a computed tensor is not "
                           "supported")
        if isinstance(a, Value):
            a = a.const if a.const is not None else \
                torch.zeros(a.shape, dtype=a.dtype)
        real.append(a)
    kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "pin_memory")}
    value = node.target(*real, **kwargs)
    return constant(im, value.to(dtype).reshape(shape))


# Elementwise ---------------------------------------------------------------

def _alpha(im, b, alpha, dtype):
    if alpha == 1:
        return b
    if isinstance(b, Value):
        return binary(im, "mul", b, alpha, dtype=dtype, shape=b.shape)
    return b * alpha


@op("add")
def _add(im, a, b, alpha=1):
    _, dtype = im.out()
    return binary(im, "add", a, _alpha(im, b, alpha, dtype))


@op("sub")
def _sub(im, a, b, alpha=1):
    _, dtype = im.out()
    return binary(im, "sub", a, _alpha(im, b, alpha, dtype))


@op("rsub")
def _rsub(im, a, b, alpha=1):
    _, dtype = im.out()
    return binary(im, "sub", b, _alpha(im, a, alpha, dtype))


@op("mul")
def _mul(im, a, b):
    return binary(im, "mul", a, b)


@op("div")
def _div(im, a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise im.error(f"aten.div with rounding_mode={rounding_mode!r} is "
                       "not supported")
    return binary(im, "div", a, b)


@op("pow")
def _pow(im, a, b):
    if not isinstance(b, Value) and b == 2:
        return binary(im, "mul", a, a)
    if not isinstance(b, Value) and b == 0.5:
        return unary(im, "sqrt", a)
    return binary(im, "pow", a, b)


@op("maximum")
def _maximum(im, a, b):
    return binary(im, "max", a, b)


@op("minimum")
def _minimum(im, a, b):
    return binary(im, "min", a, b)


def _promoted(a, b):
    ta = torch.empty((), dtype=a.dtype) if isinstance(a, Value) else a
    tb = torch.empty((), dtype=b.dtype) if isinstance(b, Value) else b
    if isinstance(a, Value) and isinstance(b, Value):
        return torch.promote_types(a.dtype, b.dtype)
    return torch.result_type(ta, tb)


def _compare(direction):
    def handler(im, a, b):
        return binary(im, "compare " + direction + ",", a, b,
                      operand_dtype=_promoted(a, b))
    return handler


for _d in ("eq", "ne", "lt", "le", "gt", "ge"):
    op(_d)(_compare(_d))


for _name in ("neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
              "relu", "abs", "erf", "sin", "cos", "floor", "ceil"):
    op(_name)(lambda im, x, _n=_name: unary(im, _n, x))


@op("gelu")
def _gelu(im, x, approximate="none"):
    extra = " approximate = tanh" if approximate == "tanh" else ""
    return unary(im, "gelu", x, extra)


@op("silu")
def _silu(im, x):
    s = unary(im, "sigmoid", x)
    return binary(im, "mul", x, s)


@op("where")
def _where(im, cond, a, b):
    shape, dtype = im.out()
    cond = cast(im, cond, torch.bool)
    a, b = as_value(im, a, dtype), as_value(im, b, dtype)
    return im.emit(f"loom.select {cond.name}, {a.name}, {b.name} : "
                   f"({cond.type}, {a.type}, {b.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


@op("copy")
def _copy(im, dst, src, non_blocking=False):
    """copy_(dst, src): src broadcast and cast to dst (a write into a view
    of a tensor is written back into it: loom.torch's _write_back)."""
    src = as_value(im, src, dst.dtype)
    if src.shape == dst.shape:
        return src
    offset = len(dst.shape) - src.rank
    return im.emit(f"loom.broadcast {src.name} dims = "
                   f"{_ints(range(offset, len(dst.shape)))} : ({src.type}) -> "
                   f"{dst.type}", dst.shape, dst.dtype)


@op("fill")
def _fill(im, x, value):
    """fill_(x, v): v everywhere (x's shape and dtype)."""
    if isinstance(value, Value):
        if value.shape != ():
            raise im.error("fill_ with a non-scalar tensor")
        return _copy(im, x, value)
    return scalar(im, value, x.dtype, x.shape)


@op("zero")
def _zero(im, x):
    return scalar(im, 0, x.dtype, x.shape)


@op("masked_fill")
def _masked_fill(im, x, mask, value):
    if isinstance(value, Value):
        if value.shape != ():
            raise im.error("masked_fill with a non-scalar value")
    return _where(im, mask, value, x)


# Registers the linear-algebra, normalization, pooling and loss ops.
from loom import torch_nn_ops  # noqa: E402,F401
from loom import torch_backward_ops  # noqa: E402,F401
