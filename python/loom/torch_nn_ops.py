"""loom.torch's op table, part 2: matrix products, normalization,
convolution and pooling, reductions, losses and dropout."""

import math

import torch

from loom.torch_ops import (Value, literal, _ints, _type_of, as_value, binary, cast,
                            constant, dims_of, element_type, op, reshape,
                            scalar, slice_, transpose, unary)


def dot(im, a, b, batch, contract, shape=None, dtype=None):
    out_shape, out_dtype = im.out()
    shape = out_shape if shape is None else shape
    dtype = out_dtype if dtype is None else dtype
    a, b = cast(im, a, dtype), cast(im, b, dtype)
    batching = ""
    if batch[0]:
        batching = f" batching_dims = {_ints(batch[0])} x {_ints(batch[1])}"
    return im.emit(f"loom.dot_general {a.name}, {b.name}{batching} "
                   f"contracting_dims = {_ints(contract[0])} x "
                   f"{_ints(contract[1])} : ({a.type}, {b.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


@op("mm")
def _mm(im, a, b):
    return dot(im, a, b, ([], []), ([1], [0]))


def _scaled_sum(im, product, bias, beta, alpha):
    """beta * bias + alpha * product (bias broadcast to the product's shape),
    as addmm/baddbmm/addbmm define it: beta = 0 ignores bias."""
    if alpha != 1:
        product = binary(im, "mul", product, alpha)
    if beta == 0:
        return product
    if beta != 1:
        bias = binary(im, "mul", bias, beta, shape=bias.shape)
    return binary(im, "add", product, bias)


@op("addmm")
def _addmm(im, bias, a, b, beta=1, alpha=1):
    return _scaled_sum(im, dot(im, a, b, ([], []), ([1], [0])), bias, beta, alpha)


@op("bmm")
def _bmm(im, a, b):
    return dot(im, a, b, ([0], [0]), ([2], [1]))


@op("baddbmm")
def _baddbmm(im, bias, a, b, beta=1, alpha=1):
    """beta * bias + alpha * (a @ b) per batch: nn.MultiheadAttention's
    scores with an attention mask (the mask as bias)."""
    return _scaled_sum(im, dot(im, a, b, ([0], [0]), ([2], [1])), bias, beta, alpha)


@op("addbmm")
def _addbmm(im, bias, a, b, beta=1, alpha=1):
    """beta * bias + alpha * (sum over the batch of a[i] @ b[i])."""
    return _scaled_sum(im, dot(im, a, b, ([], []), ([0, 2], [0, 1])), bias, beta, alpha)


@op("matmul")
def _matmul(im, a, b):
    shape, dtype = im.out()
    if a.rank == 2 and b.rank == 2:
        return _mm(im, a, b)
    if a.rank >= 2 and b.rank == 2:
        return dot(im, a, b, ([], []), ([a.rank - 1], [0]))
    if a.rank == b.rank and a.rank >= 3:
        batch = list(range(a.rank - 2))
        return dot(im, a, b, (batch, batch), ([a.rank - 1], [b.rank - 2]))
    raise im.error(f"aten.matmul of ranks {a.rank} and {b.rank} is not "
                   "supported")


def gather(im, x, index, axis, shape=None):
    """loom.gather of x's positions `index` along `axis` (result `shape`:
    the op's output by default)."""
    out_shape, dtype = im.out()
    shape = out_shape if shape is None else tuple(shape)
    return im.emit(f"loom.gather {x.name}[{index.name}] axis = {axis} "
                   f": ({x.type}, {index.type}) -> {_type_of(shape, x.dtype)}",
                   shape, x.dtype)


@op("embedding")
def _embedding(im, weight, indices, padding_idx=-1, scale_grad_by_freq=False,
               sparse=False):
    if padding_idx != -1 and padding_idx is not None:
        raise im.error("nn.Embedding with padding_idx is not supported (its "
                       "row gets no gradient in PyTorch)")
    if scale_grad_by_freq or sparse:
        raise im.error("nn.Embedding with scale_grad_by_freq or sparse "
                       "gradients is not supported")
    return gather(im, weight, indices, 0)


@op("index_select")
def _index_select(im, x, dim, index):
    return gather(im, x, index, dim % x.rank)


@op("index")
def _index(im, x, indices):
    """x[..., idx, ...]: advanced indexing by one integer tensor (Swin's and
    MaxViT's relative position bias table[index]) is a loom.gather along
    that dimension (dimensions before it taken whole: None in `indices`);
    boolean masks and several index tensors are refused by name."""
    given = [(d, t) for d, t in enumerate(indices) if t is not None]
    if len(given) != 1 or not isinstance(given[0][1], Value):
        raise im.error("indexing with several index tensors is not supported "
                       "(one integer tensor, e.g. table[idx] or x[:, idx], is)")
    d, idx = given[0]
    if idx.dtype == torch.bool or idx.dtype.is_floating_point:
        raise im.error("indexing with a boolean mask is not supported (its "
                       "result's size depends on the data)")
    return gather(im, x, cast(im, idx, torch.int64), d)


def _softmax_like(name):
    def handler(im, x, dim, half_to_float=False):
        if half_to_float:
            raise im.error(f"aten.{name} with half_to_float is not supported")
        return unary(im, name, x, f" axis = {dim % x.rank}")
    return handler


op("_softmax", "softmax")(_softmax_like("softmax"))
op("_log_softmax", "log_softmax")(_softmax_like("log_softmax"))


@op("native_layer_norm")
def _layer_norm(im, x, normalized_shape, weight, bias, eps):
    shape, dtype = im.out(0)
    inner = tuple(normalized_shape)
    axis = x.rank - len(inner)
    weight = weight if weight is not None else scalar(im, 1.0, dtype, inner)
    bias = bias if bias is not None else scalar(im, 0.0, dtype, inner)
    y = im.emit(f"loom.layer_norm {x.name}, {weight.name}, {bias.name} axis = "
                f"{axis} epsilon = {float(eps):.16e} : ({x.type}, {weight.type}, "
                f"{bias.type}) -> {_type_of(shape, dtype)}", shape, dtype)
    if not any(u.args[1] in (1, 2) for u in im.node.users):
        return [y, None, None]
    # Mean and 1/std, for PyTorch's own backward (autodiff="pytorch").
    dims = list(range(axis, x.rank))
    mean = _reduce_to(im, "reduce_mean", x, dims, True)
    d = binary(im, "sub", x, mean, shape=x.shape, dtype=dtype)
    var = _reduce_to(im, "reduce_mean",
                     binary(im, "mul", d, d, shape=x.shape, dtype=dtype),
                     dims, True)
    rstd = unary(im, "rsqrt", binary(im, "add", var, eps, shape=var.shape,
                                     dtype=dtype))
    return [y, mean, rstd]


@op("native_batch_norm")
def _batch_norm(im, x, weight, bias, running_mean, running_var, training,
                momentum, eps):
    shape, dtype = im.out(0)
    channels = (x.shape[1],)
    weight = weight if weight is not None else scalar(im, 1.0, dtype, channels)
    bias = bias if bias is not None else scalar(im, 0.0, dtype, channels)
    types = f"{x.type}, {weight.type}, {bias.type}"
    if not training:
        if running_mean is None:
            raise im.error("batch norm in eval mode needs running statistics")
        y = im.emit(f"loom.batch_norm_inference {x.name}, {weight.name}, "
                    f"{bias.name}, {running_mean.name}, {running_var.name} "
                    f"epsilon = {float(eps):.16e} : ({types}, {running_mean.type}, "
                    f"{running_var.type}) -> {_type_of(shape, dtype)}",
                    shape, dtype)
        return [y, None, None]
    stat = _type_of(channels, dtype)
    names = im.emit(f"loom.batch_norm_training {x.name}, {weight.name}, "
                    f"{bias.name} epsilon = {float(eps):.16e} : ({types}) -> "
                    f"({_type_of(shape, dtype)}, {stat}, {stat})",
                    shape, dtype, results=3)
    y, mean, var = (Value(n, s, dtype) for n, s in
                    zip(names, (shape, channels, channels)))
    if running_mean is not None:
        # PyTorch: running = (1 - momentum) * running + momentum * batch
        # statistic, the variance unbiased (n / (n - 1)).
        n = 1
        for i, d in enumerate(x.shape):
            n = n * d if i != 1 else n
        unbiased = binary(im, "mul", var, n / max(n - 1, 1), shape=channels,
                          dtype=dtype)
        im.rebind(im.node.args[3], _ema(im, running_mean, mean, momentum))
        im.rebind(im.node.args[4], _ema(im, running_var, unbiased, momentum))
    return [y, None, None]


def _ema(im, running, batch, momentum):
    dtype, shape = running.dtype, running.shape
    old = binary(im, "mul", running, 1.0 - momentum, shape=shape, dtype=dtype)
    new = binary(im, "mul", batch, momentum, shape=shape, dtype=dtype)
    return binary(im, "add", old, new, shape=shape, dtype=dtype)


@op("convolution")
def _convolution(im, x, weight, bias, stride, padding, dilation, transposed,
                 output_padding, groups):
    if transposed:
        return _conv_transpose(im, x, weight, bias, stride, padding, dilation,
                               output_padding, groups)
    shape, dtype = im.out()
    pads = list(padding) + list(padding)
    y = im.emit(f"loom.conv {x.name}, {weight.name} strides = {_ints(stride)} "
                f"padding = {_ints(pads)} dilations = {_ints(dilation)} groups = "
                f"{groups} : ({x.type}, {weight.type}) -> "
                f"{_type_of(shape, dtype)}", shape, dtype)
    if bias is None:
        return y
    spatial = len(shape) - 2
    b = reshape(im, bias, (bias.shape[0],) + (1,) * spatial)
    return binary(im, "add", y, b)


def _conv_transpose(im, x, weight, bias, stride, padding, dilation,
                    output_padding, groups):
    """The convolution of the zero-dilated input with the kernel flipped and
    its channel dimensions swapped (as the ONNX importer's ConvTranspose)."""
    if groups != 1:
        raise im.error("transposed convolution with groups > 1 is not "
                       "supported")
    shape, dtype = im.out()
    k = len(stride)
    for i, s in enumerate(stride):
        if s == 1:
            continue
        d = 2 + i
        col = x.shape[:d + 1] + (1,) + x.shape[d + 1:]
        one = reshape(im, x, col)
        zshape = list(col)
        zshape[d + 1] = s - 1
        zeros = scalar(im, 0.0, x.dtype, tuple(zshape))
        spread_shape = list(col)
        spread_shape[d + 1] = s
        spread = im.emit(f"loom.concat {one.name}, {zeros.name} axis = {d + 1} : "
                         f"({one.type}, {zeros.type}) -> "
                         f"{_type_of(spread_shape, x.dtype)}", spread_shape, x.dtype)
        flat = list(x.shape)
        flat[d] = x.shape[d] * s
        x = reshape(im, spread, flat)
        limits = list(flat)
        limits[d] = (flat[d] // s - 1) * s + 1
        x = slice_(im, x, [0] * len(flat), limits, [1] * len(flat))
    low, high = [0] * x.rank, [0] * x.rank
    starts, limits = [0] * x.rank, list(x.shape)
    for i in range(k):
        d = 2 + i
        reach = dilation[i] * (weight.shape[d] - 1)
        lo, hi = reach - padding[i], reach - padding[i] + output_padding[i]
        low[d], high[d] = max(lo, 0), max(hi, 0)
        starts[d], limits[d] = max(-lo, 0), x.shape[d] - max(-hi, 0)
    x = slice_(im, x, starts, limits, [1] * x.rank)
    padded = tuple(s + lo + hi for s, lo, hi in zip(x.shape, low, high))
    if padded != x.shape:
        x = im.emit(f"loom.pad {x.name} low = {_ints(low)} high = {_ints(high)} "
                    f"value = 0.0 : {element_type(x.dtype)} : ({x.type}) -> "
                    f"{_type_of(padded, x.dtype)}", padded, x.dtype)
    w = transpose(im, weight, [1, 0] + list(range(2, weight.rank)))
    for i in range(k):
        d = 2 + i
        size = w.shape[d]
        w = gather(im, w, constant(im, torch.arange(size - 1, -1, -1)), d, w.shape)
    y = im.emit(f"loom.conv {x.name}, {w.name} strides = {_ints([1] * k)} "
                f"padding = {_ints([0] * 2 * k)} dilations = {_ints(dilation)} "
                f"groups = 1 : ({x.type}, {w.type}) -> {_type_of(shape, dtype)}",
                shape, dtype)
    if bias is None:
        return y
    b = reshape(im, bias, (bias.shape[0],) + (1,) * k)
    return binary(im, "add", y, b)


def _pool(im, name, x, kernel, stride, padding, dilation=None, extra=""):
    spatial = len(kernel)
    stride = list(stride) if stride else list(kernel)
    padding = list(padding) * (spatial if len(padding) == 1 else 1)
    pads = padding + padding
    shape, dtype = im.out(0) if name == "max_pool" else im.out()
    # ceil_mode's extra window at the end (PyTorch's output size says
    # whether there is one): more padding after the input, which a max
    # ignores.
    dil = list(dilation or [1] * spatial)
    for i in range(spatial):
        size = x.shape[x.rank - spatial + i]
        out = shape[len(shape) - spatial + i]
        need = (out - 1) * stride[i] + dil[i] * (kernel[i] - 1) + 1 - size - padding[i]
        pads[spatial + i] = max(pads[spatial + i], need)
    dil = f" dilations = {_ints(dilation or [1] * spatial)}" \
        if name == "max_pool" else ""
    return im.emit(f"loom.{name} {x.name} kernel = {_ints(kernel)} strides = "
                   f"{_ints(stride)} padding = {_ints(pads)}{dil}{extra} : "
                   f"({x.type}) -> {_type_of(shape, dtype)}", shape, dtype)


@op("max_pool2d_with_indices", "max_pool1d_with_indices",
    "max_pool3d_with_indices")
def _max_pool(im, x, kernel, stride=(), padding=(0,), dilation=(1,),
              ceil_mode=False):
    kernel = list(kernel)
    dilation = list(dilation) * (len(kernel) if len(dilation) == 1 else 1)
    return [_pool(im, "max_pool", x, kernel, stride, padding, dilation), None]


@op("avg_pool2d", "avg_pool1d", "avg_pool3d")
def _avg_pool(im, x, kernel, stride=(), padding=(0,), ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    kernel = list(kernel)
    if not ceil_mode and divisor_override is None:
        extra = " count_include_pad" if count_include_pad and any(padding) else ""
        return _pool(im, "avg_pool", x, kernel, stride, padding, extra=extra)
    # ceil_mode's last window (past the padding) and divisor_override:
    # window sums (the average over the whole kernel, padding counted as
    # zeros) scaled by kernel size / PyTorch's divisor at each output.
    y = _pool(im, "avg_pool", x, kernel, stride, padding,
              extra=" count_include_pad")
    spatial = len(kernel)
    stride = list(stride) if stride else kernel
    pads = list(padding) * (spatial if len(padding) == 1 else 1)
    out = y.shape[y.rank - spatial:]
    divisor = torch.ones(out, dtype=torch.float64)
    for i in range(spatial):
        size = x.shape[x.rank - spatial + i]
        sizes = []
        for o in range(out[i]):
            # PyTorch's avg_pool: the window clipped to the padded input
            # counts padding; clipped to the input, it does not.
            start = o * stride[i] - pads[i]
            end = min(start + kernel[i], size + pads[i])
            inside = min(end, size) - max(start, 0)
            sizes.append(end - start if count_include_pad else inside)
        view = [1] * spatial
        view[i] = out[i]
        divisor = divisor * torch.tensor(sizes, dtype=torch.float64).reshape(view)
    if divisor_override is not None:
        divisor = torch.full(out, float(divisor_override), dtype=torch.float64)
    factor = (math.prod(kernel) / divisor).to(y.dtype)
    f = constant(im, factor.reshape((1,) * (y.rank - spatial) + tuple(out)))
    return binary(im, "mul", y, f, shape=y.shape, dtype=y.dtype)


def _reduce(name):
    def handler(im, x, dims=None, keepdim=False, dtype=None):
        shape, out_dtype = im.out()
        x = cast(im, x, out_dtype)
        dims = list(range(x.rank)) if dims in (None, []) else \
            sorted(set(dims_of(dims, x.rank)))
        if x.rank == 0:
            return x
        keep = " keepdims" if keepdim else ""
        return im.emit(f"loom.{name} {x.name} dims = {_ints(dims)}{keep} : "
                       f"({x.type}) -> {_type_of(shape, out_dtype)}",
                       shape, out_dtype)
    return handler


def _contiguous(size, stride):
    """Whether `stride` reads a tensor of `size` in its logical (row-major)
    order (size-1 dimensions may have any stride)."""
    step = 1
    for n, st in zip(reversed(list(size)), reversed(list(stride))):
        if n != 1 and st != step:
            return False
        step *= n
    return True


@op("as_strided")
def _as_strided(im, x, size, stride, storage_offset=None):
    """as_strided(_) that reads a row-major tensor's elements in their
    logical order: the tensor itself (a layout change: PyTorch restrides a
    pooled [N, C, 1, 1] result of a channels-last tensor in place, in
    ConvNeXt's and Swin's avgpool) or a reshape of it (PyTorch's own
    backward of writes into views). Loom's tensors have no layout; any
    other view of the storage is refused."""
    val = im.node.args[0].meta.get("val")
    row_major = val is None or _contiguous(val.shape, val.stride())
    if not (row_major and storage_offset in (None, 0)
            and math.prod(size) == math.prod(x.shape)
            and _contiguous(size, stride)):
        raise im.error(f"as_strided to size {list(size)}, stride "
                       f"{list(stride)} of a {list(x.shape)} tensor reads its "
                       "storage in another order than its shape: not "
                       "supported")
    return reshape(im, x, tuple(size))


@op("norm")
def _norm(im, x, p=2, dims=None, keepdim=False, dtype=None):
    """torch.norm / linalg vector norms of order 2 (F.normalize) and 1."""
    shape, out_dtype = im.out()
    p = 2 if p is None else p
    if p not in (1, 2):
        raise im.error(f"a norm of order {p} is not supported (1 and 2 are)")
    x = cast(im, x, out_dtype)
    dims = list(range(x.rank)) if dims in (None, []) else \
        sorted(set(dims_of(dims, x.rank)))
    y = unary(im, "abs", x) if p == 1 else binary(im, "mul", x, x,
                                                   shape=x.shape, dtype=out_dtype)
    keep = " keepdims" if keepdim else ""
    s = im.emit(f"loom.reduce_sum {y.name} dims = {_ints(dims)}{keep} : "
                f"({y.type}) -> {_type_of(shape, out_dtype)}", shape, out_dtype)
    return s if p == 1 else im.emit(f"loom.sqrt {s.name} : {s.type}", shape,
                                    out_dtype)


op("sum")(_reduce("reduce_sum"))
op("mean")(_reduce("reduce_mean"))
op("amax")(_reduce("reduce_max"))
op("amin")(_reduce("reduce_min"))

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _valid(im, target, ignore_index, dtype):
    """[N] 1.0 where target != ignore_index."""
    ok = binary(im, "compare ne,", target, ignore_index, shape=target.shape,
                dtype=torch.bool, operand_dtype=target.dtype)
    return cast(im, ok, dtype)


def nll_total_weight(im, x, target, weight, reduction, ignore_index):
    """nll_loss_forward's second result: the number of counted targets."""
    if weight is not None or x.rank != 2:
        raise im.error("nll_loss_forward's total weight is supported for 2-D "
                       "inputs without class weights")
    valid = _valid(im, target, ignore_index, x.dtype)
    return im.emit(f"loom.reduce_sum {valid.name} dims = [0] : ({valid.type}) "
                   f"-> {_type_of((), x.dtype)}", (), x.dtype)


@op("nll_loss_forward", "nll_loss")
def _nll_loss(im, x, target, weight=None, reduction=1, ignore_index=-100):
    shape, dtype = im.out(0) if "forward" in str(im.node.target) else im.out()
    w = f" weight = {weight.name}" if weight is not None else ""
    wt = f", {weight.type}" if weight is not None else ""
    loss = im.emit(f"loom.nll_loss {x.name}, {target.name}{w} reduction = "
                   f"{_REDUCTIONS[reduction]} ignore_index = {ignore_index} : "
                   f"({x.type}, {target.type}{wt}) -> {_type_of(shape, dtype)}",
                   shape, dtype)
    if "forward" not in str(im.node.target):
        return loss
    total = None
    if any(u.args[1] == 1 for u in im.node.users):  # PyTorch's backward reads it
        total = nll_total_weight(im, x, target, weight, reduction, ignore_index)
    return [loss, total]


@op("mse_loss")
def _mse_loss(im, x, target, reduction=1):
    shape, dtype = im.out()
    target = cast(im, target, x.dtype)
    return im.emit(f"loom.mse_loss {x.name}, {target.name} reduction = "
                   f"{_REDUCTIONS[reduction]} : ({x.type}, {target.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


@op("native_dropout")
def _dropout(im, x, p, train):
    if not train or p == 0:
        return [x, None]
    seed = scalar(im, im.next_seed(), torch.int64)
    shape, dtype = im.out(0)
    names = im.emit(f"loom.dropout {x.name}, {seed.name} ratio = {p:.9e} : "
                    f"({x.type}, {seed.type}) -> ({x.type}, "
                    f"{_type_of(shape, torch.bool)})", shape, dtype, results=2)
    return [Value(names[0], shape, dtype), None]


def _pad_source(mode, j, low, n):
    """The input index output position j of an axis of n elements padded by
    `low` in front reads (reflect: mirrored about the edge elements;
    replicate: the edge repeated)."""
    i = j - low
    if mode == "replicate":
        return min(max(i, 0), n - 1)
    if n == 1:
        return 0
    period = 2 * (n - 1)
    i %= period
    return i if i < n else period - i


def pad_indices(im, mode, low, high, n):
    """The constant input positions an axis of n elements padded by (low,
    high) reads (a padding's gather, its backward's scatter-add)."""
    return constant(im, torch.tensor(
        [_pad_source(mode, j, low, n) for j in range(n + low + high)], dtype=torch.int64))


def _index_pad(im, x, padding, mode):
    """F.pad's (left, right, top, bottom, ...) padding of x's last dims, one
    gather per padded dimension (its gradient a scatter-add)."""
    shape, dtype = im.out()
    y = x
    for k in range(len(padding) // 2):
        d = x.rank - 1 - k
        low, high = padding[2 * k], padding[2 * k + 1]
        if low == 0 and high == 0:
            continue
        n = x.shape[d]
        if mode == "reflect" and (low >= n or high >= n):
            raise im.error(f"reflection padding ({low}, {high}) of a dimension of "
                           f"{n} must be smaller than it (PyTorch's rule)")
        out_shape = list(y.shape)
        out_shape[d] = n + low + high
        y = gather(im, y, pad_indices(im, mode, low, high, n), d, out_shape)
    return reshape(im, y, shape)


@op("_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_avg_pool1d")
def _adaptive_avg_pool(im, x, output_size):
    """PyTorch's adaptive average pooling: output i of a dimension of n
    averages inputs floor(i * n / m) to ceil((i + 1) * n / m) - 1, i.e. a
    constant [m, n] averaging matrix contracted with that dimension (one
    dot_general per pooled dimension; AlexNet's pool to 6 x 6, any size)."""
    shape, dtype = im.out()
    sizes = list(output_size)
    y = x
    for i, m in enumerate(sizes):
        d = x.rank - len(sizes) + i
        n = y.shape[d]
        if n == m:
            continue
        avg = torch.zeros(m, n, dtype=dtype)
        for o in range(m):
            start, end = (o * n) // m, -((-(o + 1) * n) // m)
            avg[o, start:end] = 1.0 / (end - start)
        a = constant(im, avg)
        rest = [s for j, s in enumerate(y.shape) if j != d]
        z = dot(im, y, a, ([], []), ([d], [1]), shape=rest + [m], dtype=dtype)
        perm = list(range(d)) + [len(rest)] + list(range(d, len(rest)))
        y = transpose(im, z, perm)
    return reshape(im, y, shape)


@op("roll")
def _roll(im, x, shifts, dims=()):
    """torch.roll (Swin's shifted windows): per rolled dimension a gather of
    the positions (j - shift) mod n; without dims, of the flattened tensor."""
    shape, dtype = im.out()
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    y = x
    if not dims:
        y, dims = reshape(im, x, (math.prod(x.shape),)), [0]
    for shift, d in zip(shifts, dims):
        d %= y.rank
        n = y.shape[d]
        idx = constant(im, torch.tensor([(j - shift) % n for j in range(n)],
                                        dtype=torch.int64))
        y = gather(im, y, idx, d, y.shape)
    return reshape(im, y, shape)


@op("constant_pad_nd")
def _constant_pad(im, x, pad, value=0):
    """F.pad(x, pad, value=v) (pad: before/after pairs from the last
    dimension): loom.pad for the positive amounts, a slice for negative
    ones (PyTorch crops there)."""
    shape, dtype = im.out()
    pad = list(pad)
    low, high = [0] * x.rank, [0] * x.rank
    starts, limits = [0] * x.rank, list(x.shape)
    for k in range(len(pad) // 2):
        d = x.rank - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        low[d], high[d] = max(lo, 0), max(hi, 0)
        starts[d], limits[d] = max(-lo, 0), x.shape[d] - max(-hi, 0)
    y = slice_(im, x, starts, limits, [1] * x.rank)
    padded = tuple(s + lo + hi for s, lo, hi in zip(y.shape, low, high))
    if padded != y.shape:
        v = literal(value, dtype) if dtype.is_floating_point else str(int(value))
        y = im.emit(f"loom.pad {y.name} low = {_ints(low)} high = {_ints(high)} "
                    f"value = {v} : {element_type(dtype)} : ({y.type}) -> "
                    f"{_type_of(padded, dtype)}", padded, dtype)
    return reshape(im, y, shape)


@op("reflection_pad1d", "reflection_pad2d", "reflection_pad3d")
def _reflection_pad(im, x, padding):
    return _index_pad(im, x, list(padding), "reflect")


@op("replication_pad1d", "replication_pad2d", "replication_pad3d")
def _replication_pad(im, x, padding):
    return _index_pad(im, x, list(padding), "replicate")


@op("empty_like", "new_empty", "empty", "empty_strided", "new_empty_strided")
def _empty(im, *args, **kwargs):
    """An uninitialized tensor: zeros (what a program may read from one is
    unspecified). Remembers the tensor it was made like, so that a random
    fill (`bernoulli_`) draws its mask where that tensor lives: torch 1.13
    traces nn.Dropout on the CPU as empty_like + bernoulli_ + div_ + mul."""
    shape, dtype = im.out()
    v = constant(im, torch.zeros(shape, dtype=dtype))
    src = args[0] if args and isinstance(args[0], Value) else None
    v.like = src if src is not None and tuple(src.shape) == tuple(shape) else None
    return v


@op("bernoulli")
def _bernoulli(im, x, p=None, generator=None):
    """`x` filled with ones with probability `p` (a number), zeros
    otherwise: Loom's seeded dropout mask (kept with probability p), drawn
    on the tensor `x` was made like when it is an empty_like, so that
    micro-batches and data-parallel shards draw their rows' mask as a
    dropout of that tensor does. A probability per element (a tensor `p`,
    or `x` as the probabilities) is not supported."""
    overload = str(im.node.target).rsplit(".", 1)[-1]
    if p is None and overload == "float":  # bernoulli_(p=0.5): nn.Dropout2d's
        p = 0.5
    if isinstance(p, Value) or p is None:
        raise im.error("bernoulli with a tensor of probabilities is not "
                       "supported (only bernoulli_(p) with a number, as "
                       "nn.Dropout traces to)")
    p = float(p)
    shape, dtype = im.out()
    if not 0.0 <= p <= 1.0:
        raise im.error(f"bernoulli probability {p} is not in [0, 1]")
    if p == 0.0:
        return scalar(im, 0, dtype, shape)
    src = getattr(x, "like", None) or x
    if not src.dtype.is_floating_point:
        src = cast(im, src, torch.float32)
    seed = scalar(im, im.next_seed(), torch.int64)
    names = im.emit(f"loom.dropout {src.name}, {seed.name} ratio = {1.0 - p:.17e} : "
                    f"({src.type}, {seed.type}) -> ({src.type}, "
                    f"{_type_of(src.shape, torch.bool)})", src.shape, src.dtype, results=2)
    mask = Value(names[1], tuple(src.shape), torch.bool)
    return cast(im, mask, dtype)


# Activations and small math, spelled out in loom ops ------------------------

def _clamp_value(im, x, lo, hi):
    shape, dtype = im.out()
    y = cast(im, x, dtype)
    if lo is not None:
        y = binary(im, "max", y, lo, shape=shape, dtype=dtype)
    if hi is not None:
        y = binary(im, "min", y, hi, shape=shape, dtype=dtype)
    return y


@op("clamp", "clip")
def _clamp(im, x, min=None, max=None):
    return _clamp_value(im, x, min, max)


@op("clamp_min")
def _clamp_min(im, x, lo):
    return _clamp_value(im, x, lo, None)


@op("clamp_max")
def _clamp_max(im, x, hi):
    return _clamp_value(im, x, None, hi)


@op("hardtanh")
def _hardtanh(im, x, min_val=-1.0, max_val=1.0):
    return _clamp_value(im, x, min_val, max_val)


def _where_positive(im, x, pos, neg):
    """select(x > 0, pos, neg) on x's shape."""
    shape, dtype = im.out()
    cond = binary(im, "compare gt,", x, 0.0, shape=shape, dtype=torch.bool,
                  operand_dtype=dtype)
    pos, neg = as_value(im, pos, dtype), as_value(im, neg, dtype)
    return im.emit(f"loom.select {cond.name}, {pos.name}, {neg.name} : "
                   f"({cond.type}, {pos.type}, {neg.type}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


@op("leaky_relu")
def _leaky_relu(im, x, negative_slope=0.01):
    shape, dtype = im.out()
    return _where_positive(im, x, x,
                           binary(im, "mul", x, negative_slope, shape=shape))


@op("elu")
def _elu(im, x, alpha=1.0, scale=1.0, input_scale=1.0):
    shape, dtype = im.out()
    e = unary(im, "exp", binary(im, "mul", x, input_scale, shape=shape))
    neg = binary(im, "mul", binary(im, "sub", e, 1.0, shape=shape),
                 alpha * scale, shape=shape)
    return _where_positive(im, x, binary(im, "mul", x, scale, shape=shape), neg)


@op("hardsigmoid")
def _hardsigmoid(im, x):
    shape, _ = im.out()
    y = binary(im, "add", binary(im, "div", x, 6.0, shape=shape), 0.5,
               shape=shape)
    return _clamp_value(im, y, 0.0, 1.0)


@op("hardswish")
def _hardswish(im, x):
    shape, _ = im.out()
    return binary(im, "mul", x, _hardsigmoid(im, x), shape=shape)


@op("reciprocal")
def _reciprocal(im, x):
    return binary(im, "div", 1.0, x)


@op("log1p")
def _log1p(im, x):
    shape, _ = im.out()
    return unary(im, "log", binary(im, "add", x, 1.0, shape=shape))


@op("expm1")
def _expm1(im, x):
    shape, _ = im.out()
    return binary(im, "sub", unary(im, "exp", x), 1.0, shape=shape)


@op("square")
def _square(im, x):
    return binary(im, "mul", x, x)


@op("stack")
def _stack(im, tensors, dim=0):
    shape, dtype = im.out()
    dim = dim % len(shape)
    parts = [reshape(im, cast(im, t, dtype), shape[:dim] + (1,) + shape[dim + 1:])
             for t in tensors]
    if len(parts) == 1:
        return parts[0]
    names = ", ".join(p.name for p in parts)
    types = ", ".join(p.type for p in parts)
    return im.emit(f"loom.concat {names} axis = {dim} : ({types}) -> "
                   f"{_type_of(shape, dtype)}", shape, dtype)


def _reduce_to(im, name, x, dims, keep):
    """loom.<name> over `dims` (sorted), keeping them when `keep`."""
    dims = sorted(set(dims_of(dims, x.rank)))
    shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape)) \
        if keep else tuple(s for d, s in enumerate(x.shape) if d not in dims)
    flag = " keepdims" if keep else ""
    return im.emit(f"loom.{name} {x.name} dims = {_ints(dims)}{flag} : "
                   f"({x.type}) -> {_type_of(shape, x.dtype)}", shape, x.dtype)


@op("logsumexp")
def _logsumexp(im, x, dims, keepdim=False):
    """max + log(sum(exp(x - max))), stable as PyTorch's."""
    shape, dtype = im.out()
    x = cast(im, x, dtype)
    dims = list(range(x.rank)) if dims in (None, []) else dims
    m = _reduce_to(im, "reduce_max", x, dims, True)
    e = unary(im, "exp", binary(im, "sub", x, m, shape=x.shape, dtype=dtype))
    s = unary(im, "log", _reduce_to(im, "reduce_sum", e, dims, True))
    y = binary(im, "add", s, m, shape=m.shape, dtype=dtype)
    return reshape(im, y, shape)


@op("var", "std")
def _var(im, x, dims=None, correction=None, keepdim=False, unbiased=None):
    """mean((x - mean)^2) * n / (n - correction); std its square root."""
    shape, dtype = im.out()
    if correction is None:
        correction = 1 if unbiased in (None, True) else 0
    dims = list(range(x.rank)) if dims in (None, []) else dims_of(dims, x.rank)
    n = 1
    for d in set(dims):
        n *= x.shape[d]
    mean = _reduce_to(im, "reduce_mean", x, dims, True)
    centred = binary(im, "sub", x, mean, shape=x.shape, dtype=dtype)
    sq = binary(im, "mul", centred, centred, shape=x.shape, dtype=dtype)
    v = _reduce_to(im, "reduce_mean", sq, dims, keepdim)
    if correction:
        v = binary(im, "mul", v, n / max(n - correction, 1), shape=v.shape,
                   dtype=dtype)
    if "std" in str(im.node.target):
        v = unary(im, "sqrt", v)
    return reshape(im, v, shape)


@op("max", "min")
def _max_dim(im, x, dim=None, keepdim=False):
    """max(x, dim) / min(x, dim): the values; their indices are refused
    (only PyTorch's backward or argmax-style uses read them)."""
    name = "reduce_max" if "max" in str(im.node.target) else "reduce_min"
    if isinstance(dim, Value):  # torch.max(a, b): elementwise
        return binary(im, name[7:], x, dim)
    if dim is None:
        return _reduce_to(im, name, x, list(range(x.rank)), False)
    values = _reduce_to(im, name, x, [dim], keepdim)
    return [values, None]


@op("logical_not", "bitwise_not")
def _logical_not(im, x):
    if x.dtype != torch.bool:
        raise im.error("bitwise_not of integers is not supported")
    return binary(im, "compare eq,", x, False, operand_dtype=torch.bool)
