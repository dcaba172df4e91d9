"""loom.torch's op table, part 3: PyTorch's own backward ops, which a step
traced with autodiff="pytorch" contains (torch.autograd.grad's graph), and
the small ops they use (sgn, logical_and/or)."""

import math

import torch

from loom.torch_nn_ops import _reduce_to, _valid
from loom.torch_ops import (_ints, _type_of, as_value, binary, cast, constant,
                            element_type, op, reshape, scalar, unary)

def _onehot_rows(im, target, classes, dtype):
    """[N, C] with 1 where column == target[n] (a compare against iota)."""
    n = target.shape[0]
    iota = constant(im, torch.arange(classes, dtype=target.dtype))
    col = reshape(im, target, (n, 1))
    hit = binary(im, "compare eq,", col, iota, shape=(n, classes),
                 dtype=torch.bool, operand_dtype=target.dtype)
    return cast(im, hit, dtype)


@op("nll_loss_backward")
def _nll_loss_backward(im, grad, x, target, weight, reduction, ignore_index,
                       total_weight):
    if weight is not None or x.rank != 2:
        raise im.error("nll_loss_backward is supported for 2-D inputs without "
                       "class weights")
    n, c = x.shape
    hot = _onehot_rows(im, target, c, x.dtype)
    valid = reshape(im, _valid(im, target, ignore_index, x.dtype), (n, 1))
    g = grad if grad.rank == 0 else reshape(im, grad, (n, 1))
    if reduction == 1:
        g = binary(im, "div", g, total_weight, shape=g.shape, dtype=x.dtype)
    g = binary(im, "mul", g, -1.0, shape=g.shape, dtype=x.dtype)
    hot = binary(im, "mul", hot, valid, shape=(n, c), dtype=x.dtype)
    return binary(im, "mul", hot, g, shape=(n, c), dtype=x.dtype)


def _sum_keep(im, x, dim):
    return _reduce_to(im, "reduce_sum", x, [dim], True)


@op("_log_softmax_backward_data")
def _log_softmax_backward(im, grad, output, dim, input_dtype=None):
    dim = dim % grad.rank
    e = unary(im, "exp", output)
    s = _sum_keep(im, grad, dim)
    return binary(im, "sub", grad,
                  binary(im, "mul", e, s, shape=grad.shape, dtype=grad.dtype))


@op("_softmax_backward_data")
def _softmax_backward(im, grad, output, dim, input_dtype=None):
    dim = dim % grad.rank
    go = binary(im, "mul", grad, output, shape=grad.shape, dtype=grad.dtype)
    s = _sum_keep(im, go, dim)
    d = binary(im, "sub", grad, s, shape=grad.shape, dtype=grad.dtype)
    return binary(im, "mul", output, d)


@op("threshold_backward")
def _threshold_backward(im, grad, x, threshold):
    shape, dtype = im.out()
    cond = binary(im, "compare gt,", x, threshold, shape=shape,
                  dtype=torch.bool, operand_dtype=x.dtype)
    zero = scalar(im, 0.0, dtype)
    return im.emit(f"loom.select {cond.name}, {grad.name}, {zero.name} : "
                   f"({cond.type}, {grad.type}, {zero.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


@op("mse_loss_backward")
def _mse_loss_backward(im, grad, x, target, reduction):
    shape, dtype = im.out()
    diff = binary(im, "sub", x, target, shape=shape, dtype=dtype)
    if reduction == 0:
        raise im.error("mse_loss_backward with reduction='none' is not "
                       "supported")
    scale = 2.0 / math.prod(x.shape) if reduction == 1 else 2.0
    g = binary(im, "mul", grad, scale, shape=grad.shape, dtype=dtype)
    return binary(im, "mul", diff, g, shape=shape, dtype=dtype)


@op("native_layer_norm_backward")
def _layer_norm_backward(im, grad, x, normalized_shape, mean, rstd, weight,
                         bias, output_mask):
    """dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = grad * weight;
    dweight = sum(grad * xhat), dbias = sum(grad) over the outer dims."""
    dtype = x.dtype
    axis = x.rank - len(normalized_shape)
    inner, outer = list(range(axis, x.rank)), list(range(axis))
    xhat = binary(im, "mul", binary(im, "sub", x, mean, shape=x.shape,
                                    dtype=dtype), rstd, shape=x.shape, dtype=dtype)
    results = [None, None, None]
    if output_mask[0]:
        g = grad if weight is None else binary(im, "mul", grad, weight,
                                               shape=x.shape, dtype=dtype)
        mg = _reduce_to(im, "reduce_mean", g, inner, True)
        gx = binary(im, "mul", g, xhat, shape=x.shape, dtype=dtype)
        mgx = _reduce_to(im, "reduce_mean", gx, inner, True)
        t = binary(im, "sub", binary(im, "sub", g, mg, shape=x.shape, dtype=dtype),
                   binary(im, "mul", xhat, mgx, shape=x.shape, dtype=dtype),
                   shape=x.shape, dtype=dtype)
        results[0] = binary(im, "mul", t, rstd, shape=x.shape, dtype=dtype)
    if output_mask[1] and weight is not None:
        gw = binary(im, "mul", grad, xhat, shape=x.shape, dtype=dtype)
        results[1] = _reduce_to(im, "reduce_sum", gw, outer, False) if outer else gw
    if output_mask[2] and bias is not None:
        results[2] = _reduce_to(im, "reduce_sum", grad, outer, False) if outer else grad
    return results


@op("gelu_backward")
def _gelu_backward(im, grad, x, approximate="none"):
    shape, dtype = im.out()

    def c(v):
        return scalar(im, v, dtype)

    def mul(a, b):
        return binary(im, "mul", a, b, shape=shape, dtype=dtype)

    def add(a, b):
        return binary(im, "add", a, b, shape=shape, dtype=dtype)
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        x2 = mul(x, x)
        inner = mul(add(x, mul(mul(x2, x), c(0.044715))), c(k))
        t = unary(im, "tanh", inner)
        left = mul(x, c(0.5))
        right = add(t, c(1.0))
        dt = binary(im, "sub", c(1.0), mul(t, t), shape=shape, dtype=dtype)
        dinner = mul(add(mul(x2, c(3 * 0.044715)), c(1.0)), c(k))
        d = add(mul(right, c(0.5)), mul(mul(left, dt), dinner))
    else:
        cdf = mul(add(unary(im, "erf", mul(x, c(1 / math.sqrt(2.0)))), c(1.0)),
                  c(0.5))
        pdf = mul(unary(im, "exp", mul(mul(x, x), c(-0.5))),
                  c(1 / math.sqrt(2 * math.pi)))
        d = add(cdf, mul(x, pdf))
    return mul(grad, d)


@op("embedding_dense_backward")
def _embedding_backward(im, grad, indices, num_weights, padding_idx,
                        scale_grad_by_freq):
    if scale_grad_by_freq or padding_idx not in (-1, None):
        raise im.error("embedding_dense_backward with padding_idx or "
                       "scale_grad_by_freq is not supported")
    shape, dtype = im.out()
    return im.emit(f"loom.scatter_add {grad.name}[{indices.name}] axis = 0 : "
                   f"({grad.type}, {indices.type}) -> {_type_of(shape, dtype)}",
                   shape, dtype)


def _index_pad_backward(im, grad, x, padding, mode):
    """The backward of reflection/replication padding: per padded dimension
    (the forward's last first), the gradient scatter-added to the input
    positions the outputs read."""
    from loom.torch_nn_ops import pad_indices
    shape, dtype = im.out()
    g = grad
    dims = []
    for k in range(len(padding) // 2):
        d = x.rank - 1 - k
        if padding[2 * k] or padding[2 * k + 1]:
            dims.append((k, d))
    for k, d in reversed(dims):
        low, high = padding[2 * k], padding[2 * k + 1]
        n = x.shape[d]
        idx = pad_indices(im, mode, low, high, n)
        out_shape = list(g.shape)
        out_shape[d] = n
        g = im.emit(f"loom.scatter_add {g.name}[{idx.name}] axis = {d} : "
                    f"({g.type}, {idx.type}) -> {_type_of(out_shape, dtype)}",
                    out_shape, dtype)
    return g


@op("reflection_pad1d_backward", "reflection_pad2d_backward",
    "reflection_pad3d_backward")
def _reflection_pad_backward(im, grad, x, padding):
    return _index_pad_backward(im, grad, x, list(padding), "reflect")


@op("replication_pad1d_backward", "replication_pad2d_backward",
    "replication_pad3d_backward")
def _replication_pad_backward(im, grad, x, padding):
    return _index_pad_backward(im, grad, x, list(padding), "replicate")


def _pad_into(im, grad, sizes, starts, strides):
    """Zeros of `sizes` with `grad` at `starts` (a slice's backward)."""
    if any(s != 1 for s in strides):
        raise im.error("the backward of a strided slice is not supported")
    low = list(starts)
    high = [n - s - g for n, s, g in zip(sizes, starts, grad.shape)]
    elem = element_type(grad.dtype)
    return im.emit(f"loom.pad {grad.name} low = {_ints(low)} high = "
                   f"{_ints(high)} value = 0.0 : {elem} : ({grad.type}) -> "
                   f"{_type_of(sizes, grad.dtype)}", tuple(sizes), grad.dtype)


@op("slice_backward")
def _slice_backward(im, grad, input_sizes, dim, start, end, step):
    from loom.torch_ops import _norm_range
    sizes = list(input_sizes)
    dim = dim % len(sizes)
    s, _ = _norm_range(sizes[dim], start, end)
    starts, strides = [0] * len(sizes), [1] * len(sizes)
    starts[dim], strides[dim] = s, step
    return _pad_into(im, grad, sizes, starts, strides)


@op("select_backward")
def _select_backward(im, grad, input_sizes, dim, index):
    sizes = list(input_sizes)
    dim = dim % len(sizes)
    index = index % sizes[dim]
    shape = list(sizes)
    shape[dim] = 1
    g = reshape(im, grad, tuple(shape))
    starts = [0] * len(sizes)
    starts[dim] = index
    return _pad_into(im, g, sizes, starts, [1] * len(sizes))


def _mask_grad(im, grad, cond, other=0.0):
    """select(cond, grad, other)."""
    shape, dtype = im.out()
    other = as_value(im, other, dtype)
    return im.emit(f"loom.select {cond.name}, {grad.name}, {other.name} : "
                   f"({cond.type}, {grad.type}, {other.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


@op("tanh_backward")
def _tanh_backward(im, grad, y):
    one_minus = binary(im, "sub", 1.0, binary(im, "mul", y, y))
    return binary(im, "mul", grad, one_minus)


@op("sigmoid_backward")
def _sigmoid_backward(im, grad, y):
    return binary(im, "mul", grad, binary(im, "mul", y,
                                          binary(im, "sub", 1.0, y)))


@op("hardtanh_backward")
def _hardtanh_backward(im, grad, x, min_val, max_val):
    shape, _ = im.out()
    above = binary(im, "compare gt,", x, min_val, shape=shape,
                   dtype=torch.bool, operand_dtype=x.dtype)
    below = binary(im, "compare lt,", x, max_val, shape=shape,
                   dtype=torch.bool, operand_dtype=x.dtype)
    inside = binary(im, "mul", cast(im, above, x.dtype), cast(im, below, x.dtype),
                    shape=shape, dtype=x.dtype)
    return binary(im, "mul", grad, inside)


@op("leaky_relu_backward")
def _leaky_relu_backward(im, grad, x, slope, self_is_result=False):
    shape, _ = im.out()
    cond = binary(im, "compare gt,", x, 0.0, shape=shape, dtype=torch.bool,
                  operand_dtype=x.dtype)
    return _mask_grad(im, grad, cond,
                      binary(im, "mul", grad, slope, shape=shape))


@op("elu_backward")
def _elu_backward(im, grad, alpha, scale, input_scale, is_result, x):
    if is_result:
        raise im.error("elu_backward on the result (in-place ELU) is not "
                       "supported")
    shape, _ = im.out()
    cond = binary(im, "compare gt,", x, 0.0, shape=shape, dtype=torch.bool,
                  operand_dtype=x.dtype)
    e = unary(im, "exp", binary(im, "mul", x, input_scale, shape=shape))
    neg = binary(im, "mul", grad, binary(im, "mul", e,
                                         alpha * scale * input_scale,
                                         shape=shape), shape=shape)
    pos = binary(im, "mul", grad, scale, shape=shape)
    return _mask_grad(im, pos, cond, neg)


@op("hardsigmoid_backward")
def _hardsigmoid_backward(im, grad, x):
    shape, _ = im.out()
    above = binary(im, "compare gt,", x, -3.0, shape=shape, dtype=torch.bool,
                   operand_dtype=x.dtype)
    below = binary(im, "compare lt,", x, 3.0, shape=shape, dtype=torch.bool,
                   operand_dtype=x.dtype)
    inside = binary(im, "mul", cast(im, above, x.dtype),
                    cast(im, below, x.dtype), shape=shape, dtype=x.dtype)
    return binary(im, "mul", grad,
                  binary(im, "mul", inside, 1.0 / 6.0, shape=shape))


@op("sgn", "sign")
def _sign(im, x):
    shape, dtype = im.out()
    pos = cast(im, binary(im, "compare gt,", x, 0.0, shape=shape,
                          dtype=torch.bool, operand_dtype=x.dtype), dtype)
    neg = cast(im, binary(im, "compare lt,", x, 0.0, shape=shape,
                          dtype=torch.bool, operand_dtype=x.dtype), dtype)
    return binary(im, "sub", pos, neg)


def _bool_binary(name):
    def handler(im, a, b):
        shape, _ = im.out()
        fa, fb = cast(im, a, torch.float32), cast(im, b, torch.float32)
        combined = binary(im, name, fa, fb, shape=shape, dtype=torch.float32)
        return binary(im, "compare ne,", combined, 0.0, shape=shape,
                      dtype=torch.bool, operand_dtype=torch.float32)
    return handler


op("logical_and", "bitwise_and")(_bool_binary("mul"))
op("logical_or", "bitwise_or")(_bool_binary("max"))


@op("hardswish_backward")
def _hardswish_backward(im, grad, x):
    """0 below -3, grad above 3, grad * (2x + 3) / 6 between."""
    shape, dtype = im.out()
    mid = binary(im, "mul", grad,
                 binary(im, "div", binary(im, "add", binary(im, "mul", x, 2.0,
                                                            shape=shape),
                                          3.0, shape=shape), 6.0, shape=shape),
                 shape=shape)
    upper = binary(im, "compare gt,", x, 3.0, shape=shape, dtype=torch.bool,
                   operand_dtype=x.dtype)
    lower = binary(im, "compare lt,", x, -3.0, shape=shape, dtype=torch.bool,
                   operand_dtype=x.dtype)
    y = _mask_grad(im, grad, upper, mid)
    zero = scalar(im, 0.0, dtype)
    return im.emit(f"loom.select {lower.name}, {zero.name}, {y.name} : "
                   f"({lower.type}, {zero.type}, {y.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)
