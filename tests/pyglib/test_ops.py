"""scatterx.pyg_lib.ops: pyg-lib's ops against plain torch references (loops of torch.mm, torch.softmax per group,
indexing then arithmetic, a stable sort), their gradients (gradcheck, float64), and their checks of bad input."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd import gradcheck, gradgradcheck

from scatterx.pyg_lib import ops
from scatterx.pyg_lib.ops import (
    ArgumentError,
    ArgumentTypeError,
    grouped_matmul,
    index_sort,
    sampled_add,
    sampled_div,
    sampled_mul,
    sampled_sub,
    segment_matmul,
    softmax_csr,
)

SAMPLED = {"add": sampled_add, "sub": sampled_sub, "mul": sampled_mul, "div": sampled_div}
ARITH = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
}


# ----------------------------------------------------------------------------------------------- references
def ptr_of(sizes):
    return torch.tensor([0, *torch.tensor(sizes, dtype=torch.int64).cumsum(0).tolist()])


def segment_matmul_reference(x, ptr, w, bias=None):
    """A loop of torch.mm over the groups."""
    p = ptr.tolist()
    parts = [x[p[i] : p[i + 1]] @ w[i] + (0 if bias is None else bias[i]) for i in range(len(p) - 1)]
    return torch.cat(parts) if parts else x.new_zeros((0, w.size(2)))


def softmax_reference(src, ptr, dim):
    """torch.softmax of each group's slices along dim, concatenated."""
    p = ptr.tolist()
    parts = [torch.softmax(src.narrow(dim, p[i], p[i + 1] - p[i]), dim) for i in range(len(p) - 1)]
    return torch.cat(parts, dim) if parts else src.clone()


def random_sizes(draw, max_groups=6, max_rows=5):
    groups = draw(st.integers(0, max_groups))
    if draw(st.booleans()) and groups:  # one size for all: the bmm path
        return [draw(st.integers(0, max_rows))] * groups
    return draw(st.lists(st.integers(0, max_rows), min_size=groups, max_size=groups))


# ------------------------------------------------------------------------------------------ the public set
def test_the_module_has_what_pyg_probes_and_nothing_pyg_must_keep_missing():
    for name in ("segment_matmul", "grouped_matmul", "softmax_csr", "index_sort", "sampled_add"):
        assert hasattr(ops, name)
    for name in ("spline_basis", "spline_weighting", "grid_cluster", "graclus_cluster", "fps", "knn", "radius"):
        assert not hasattr(ops, name), name
    assert issubclass(ArgumentError, ValueError) and issubclass(ArgumentError, RuntimeError)
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(ArgumentTypeError, RuntimeError)


# ------------------------------------------------------------------------------------------- segment_matmul
@settings(max_examples=40)
@given(st.data())
def test_segment_matmul_matches_a_loop_of_mm(data):
    sizes = random_sizes(data.draw)
    k, m = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**31 - 1)))
    x = torch.randn(sum(sizes), k, generator=g, dtype=torch.float64)
    w = torch.randn(len(sizes), k, m, generator=g, dtype=torch.float64)
    bias = torch.randn(len(sizes), m, generator=g, dtype=torch.float64) if data.draw(st.booleans()) else None
    ptr = ptr_of(sizes).to(data.draw(st.sampled_from([torch.int64, torch.int32])))
    torch.testing.assert_close(segment_matmul(x, ptr, w, bias), segment_matmul_reference(x, ptr.long(), w, bias))


def test_segment_matmul_pyg_lib_example_and_layouts():
    x = torch.randn(8, 16)
    ptr = torch.tensor([0, 5, 8])
    w = torch.randn(2, 16, 32)
    out = segment_matmul(x, ptr, w)
    assert out.shape == (8, 32)
    torch.testing.assert_close(out[0:5], x[0:5] @ w[0])
    torch.testing.assert_close(out[5:8], x[5:8] @ w[1])
    # transposed (non-contiguous) operands, equal and unequal groups
    xt, wt = torch.randn(16, 8).t(), torch.randn(2, 32, 16).transpose(1, 2)
    for p in (ptr, torch.tensor([0, 4, 8])):
        torch.testing.assert_close(segment_matmul(xt, p, wt), segment_matmul_reference(xt, p, wt))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_segment_matmul_dtypes(dtype):
    x = torch.randint(-3, 4, (7, 3)).to(dtype)
    w = torch.randint(-3, 4, (3, 3, 2)).to(dtype)
    ptr = torch.tensor([0, 2, 2, 7])
    bias = torch.randint(-3, 4, (3, 2)).to(dtype)
    out = segment_matmul(x, ptr, w, bias)
    assert out.dtype == dtype
    torch.testing.assert_close(out, segment_matmul_reference(x, ptr, w, bias))


@pytest.mark.parametrize("ptr", [[0, 5, 8], [0, 4, 8]], ids=["uneven", "equal"])
def test_segment_matmul_bias_rounds_as_pyg_lib(ptr):
    # pyg-lib adds the bias to the product rounded to the dtype: in bfloat16 its tests expect exactly that
    x, w, bias = torch.randn(8, 16).bfloat16(), torch.randn(2, 16, 32).bfloat16(), torch.randn(2, 32).bfloat16()
    p = torch.tensor(ptr)
    expected = torch.cat([x[ptr[0] : ptr[1]] @ w[0] + bias[0], x[ptr[1] : ptr[2]] @ w[1] + bias[1]])
    assert torch.equal(segment_matmul(x, p, w, bias), expected)
    assert torch.equal(
        torch.cat(grouped_matmul([x[:5], x[5:]], list(w), list(bias))),
        torch.cat([x[:5] @ w[0] + bias[0], x[5:] @ w[1] + bias[1]]),
    )


@pytest.mark.parametrize("sizes", [[3, 0, 2, 4], [2, 2, 2], [0, 0], []], ids=["uneven", "equal", "empty", "none"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_segment_matmul_gradcheck(sizes, with_bias):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(sum(sizes), 3, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(len(sizes), 3, 2, generator=g, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(len(sizes), 2, generator=g, dtype=torch.float64, requires_grad=True) if with_bias else None
    ptr = ptr_of(sizes)
    args = (x, w) if bias is None else (x, w, bias)

    def f(*a):
        return segment_matmul(a[0], ptr, a[1], a[2] if len(a) > 2 else None)

    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


@pytest.mark.parametrize("ptr", [[0, 1, 6, 9], [0, 3, 6, 9]], ids=["uneven", "equal"])
def test_segment_matmul_gradient_matches_the_loop_and_respects_requires_grad(ptr):
    x = torch.randn(9, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    ptr = torch.tensor(ptr)
    segment_matmul(x, ptr, w, bias).sum().backward()  # an expanded (stride-0) gradient
    got = [t.grad.clone() for t in (x, w, bias)]
    for t in (x, w, bias):
        t.grad = None
    segment_matmul_reference(x, ptr, w, bias).sum().backward()
    for a, t in zip(got, (x, w, bias)):
        torch.testing.assert_close(a, t.grad)
    frozen = torch.randn(3, 4, 5, dtype=torch.float64)
    xs = x.detach().requires_grad_()
    segment_matmul(xs, ptr, frozen).sum().backward()
    assert xs.grad is not None and not frozen.requires_grad
    assert not segment_matmul(x.detach(), ptr, frozen).requires_grad


def test_segment_matmul_matches_pyg_hetero_linear_naive():
    pyg = pytest.importorskip("torch_geometric.nn")
    lin = pyg.HeteroLinear(6, 4, num_types=3, bias=False)
    x = torch.randn(10, 6)
    type_ptr = torch.tensor([0, 3, 3, 10])
    torch.testing.assert_close(segment_matmul(x, type_ptr, lin.weight), lin.forward_naive(x, type_ptr))


# ------------------------------------------------------------------------------------------- grouped_matmul
@settings(max_examples=30)
@given(st.data())
def test_grouped_matmul_matches_a_loop_of_mm(data):
    n = data.draw(st.integers(0, 4))
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**31 - 1)))
    xs, ws, bs, expected = [], [], [], []
    for _ in range(n):
        rows, k, m = (data.draw(st.integers(0, 4)) for _ in range(3))
        x = torch.randn(rows, k, generator=g, dtype=torch.float64)
        w = torch.randn(m, k, generator=g, dtype=torch.float64).t() if data.draw(st.booleans()) else None
        w = torch.randn(k, m, generator=g, dtype=torch.float64) if w is None else w
        b = torch.randn(m, generator=g, dtype=torch.float64) if data.draw(st.booleans()) else None
        xs.append(x), ws.append(w), bs.append(b)
        expected.append(x @ w + (0 if b is None else b))
    with_biases = data.draw(st.booleans())
    outs = grouped_matmul(xs, ws, bs if with_biases else None)
    assert isinstance(outs, list) and len(outs) == n
    for out, x, w, e in zip(outs, xs, ws, expected):
        torch.testing.assert_close(out, e if with_biases else x @ w)


def test_grouped_matmul_pyg_lib_example_and_gradcheck():
    inputs = [torch.randn(5, 16), torch.randn(3, 32)]
    others = [torch.randn(16, 32), torch.randn(32, 64)]
    outs = grouped_matmul(inputs, others)
    assert [o.shape for o in outs] == [(5, 32), (3, 64)]
    torch.testing.assert_close(outs[1], inputs[1] @ others[1])
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(r, k, generator=g, dtype=torch.float64, requires_grad=True) for r, k in ((3, 2), (0, 3), (2, 4))]
    ws = [torch.randn(k, m, generator=g, dtype=torch.float64, requires_grad=True) for k, m in ((2, 3), (3, 1), (4, 2))]
    bs = [torch.randn(m, generator=g, dtype=torch.float64, requires_grad=True) for m in (3, 1, 2)]

    def f(*a):
        return tuple(grouped_matmul(list(a[0:3]), list(a[3:6]), [a[6], None, a[7]]))

    assert gradcheck(f, (*xs, *ws, bs[0], bs[2]))


# ---------------------------------------------------------------------------------------------- softmax_csr
@settings(max_examples=40)
@given(st.data())
def test_softmax_csr_matches_torch_softmax_per_group(data):
    ndim = data.draw(st.integers(1, 3))
    dim = data.draw(st.integers(-ndim, ndim - 1))
    shape = [data.draw(st.integers(1, 3)) for _ in range(ndim)]
    sizes = data.draw(st.lists(st.integers(0, 4), min_size=0, max_size=5))
    shape[dim] = sum(sizes)
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**31 - 1)))
    src = torch.randn(shape, generator=g, dtype=torch.float64) * 3
    ptr = ptr_of(sizes).to(data.draw(st.sampled_from([torch.int64, torch.int32])))
    torch.testing.assert_close(softmax_csr(src, ptr, dim), softmax_reference(src, ptr.long(), dim % ndim))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_csr_gradcheck(dim):
    src = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    ptr = torch.tensor([0, 1, 1, 4, 5]) if dim == 0 else torch.tensor([0, 2, 6])
    assert gradcheck(lambda s: softmax_csr(s, ptr, dim), (src,))
    assert gradgradcheck(lambda s: softmax_csr(s, ptr, dim), (src,))


def test_softmax_csr_float32_and_pyg_lib_reference_case():
    # pyg-lib's own test case: groups of 1, 3, 1, dim_size - 6 and 1 along each dim
    src = torch.rand(8, 10, 12)
    for dim in range(3):
        n = src.size(dim)
        ptr = torch.tensor([0, 1, 4, 5, n - 1, n])
        torch.testing.assert_close(softmax_csr(src, ptr, dim), softmax_reference(src, ptr, dim))


# ----------------------------------------------------------------------------------------------- index_sort
@settings(max_examples=30)
@given(st.lists(st.integers(0, 6), max_size=40), st.sampled_from([torch.int64, torch.int32, torch.uint8]))
def test_index_sort_is_a_stable_sort(values, dtype):
    inputs = torch.tensor(values, dtype=dtype)
    out, perm = index_sort(inputs, max_value=6)
    expected = torch.sort(inputs, stable=True)
    assert out.dtype == dtype and perm.dtype == torch.int64
    assert torch.equal(out, expected.values) and torch.equal(perm, expected.indices)
    assert torch.equal(inputs[perm], out)
    assert isinstance(index_sort(inputs), tuple)


@pytest.mark.parametrize("shuffle_at", [None, 0, 70_000])
def test_index_sort_of_a_long_input_sorted_or_nearly(shuffle_at):
    # from 2^16 entries a sorted input is recognised and not sorted again; one swap anywhere makes it a sort
    inputs = torch.arange(100_000) // 3
    if shuffle_at is not None:
        inputs[shuffle_at], inputs[shuffle_at + 1000] = inputs[shuffle_at + 1000].clone(), inputs[shuffle_at].clone()
    out, perm = index_sort(inputs)
    expected = torch.sort(inputs, stable=True)
    assert torch.equal(out, expected.values) and torch.equal(perm, expected.indices)
    assert out.data_ptr() != inputs.data_ptr()


# --------------------------------------------------------------------------------------------- sampled ops
@settings(max_examples=40)
@given(st.data())
def test_sampled_ops_match_index_then_arithmetic(data):
    op = data.draw(st.sampled_from(sorted(SAMPLED)))
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**31 - 1)))
    f = data.draw(st.integers(1, 3))
    n_left, n_right = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    e = data.draw(st.integers(0, 6))
    left = torch.randn(n_left, f, generator=g, dtype=torch.float64)
    right = torch.rand(n_right, f, generator=g, dtype=torch.float64) + 0.5
    li = torch.randint(0, n_left, (e,), generator=g) if data.draw(st.booleans()) else None
    ri = torch.randint(0, n_right, (e,), generator=g) if data.draw(st.booleans()) else None
    a = left if li is None else left[li]
    b = right if ri is None else right[ri]
    if a.size(0) != b.size(0) and not ((li is not None or ri is not None) and 1 in (a.size(0), b.size(0))):
        with pytest.raises(ValueError, match="rows"):
            SAMPLED[op](left, right, li, ri)
        return
    torch.testing.assert_close(SAMPLED[op](left, right, li, ri), ARITH[op](a, b))


@pytest.mark.parametrize("op", sorted(SAMPLED))
def test_sampled_ops_gradcheck(op):
    g = torch.Generator().manual_seed(2)
    left = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    right = (torch.rand(8, 3, generator=g, dtype=torch.float64) + 0.5).requires_grad_()
    li, ri = torch.tensor([0, 1, 3, 3]), torch.tensor([7, 4, 5, 4])
    assert gradcheck(lambda a, b: SAMPLED[op](a, b, li, ri), (left, right))
    assert gradcheck(lambda a, b: SAMPLED[op](a, b, li, None), (left, right[:4]))
    assert gradcheck(lambda a, b: SAMPLED[op](a, b, None, None), (left, right[:6]))
    assert gradcheck(lambda a, b: SAMPLED[op](a, b, li, None), (left, right[:1]))  # one row broadcast


def test_sampled_ops_pyg_lib_cases():
    # pyg-lib's C++ test: no index, a left index, a right index, both
    a_index, b_index = torch.tensor([0, 1, 3]), torch.tensor([3, 4, 5])
    a, b = torch.randn(3, 8), torch.randn(3, 8)
    torch.testing.assert_close(sampled_add(a, b), a + b)
    a6, b6, b8 = torch.randn(6, 8), torch.randn(6, 8), torch.randn(8, 8)
    torch.testing.assert_close(sampled_sub(a6, b, a_index), a6[a_index] - b)
    torch.testing.assert_close(sampled_mul(a, b6, None, b_index), a * b6[b_index])
    torch.testing.assert_close(sampled_div(a6, b8, a_index, b_index), a6[a_index] / b8[b_index])


# ------------------------------------------------------------------------------------------------ bad input
X, W, PTR = torch.randn(5, 3), torch.randn(2, 3, 4), torch.tensor([0, 2, 5])
SRC = torch.randn(5, 2)
BAD = [
    # segment_matmul
    (lambda: segment_matmul([[1.0]], PTR, W), TypeError, "inputs must be a torch.Tensor"),
    (lambda: segment_matmul(X, PTR.float(), W), TypeError, "ptr must have dtype"),
    (lambda: segment_matmul(X, PTR, W.double()), TypeError, "other has dtype"),
    (lambda: segment_matmul(X, PTR, W, torch.zeros(2, 4, dtype=torch.float64)), TypeError, "bias has dtype"),
    (lambda: segment_matmul(X[0], PTR, W), ValueError, "inputs must be 2-D"),
    (lambda: segment_matmul(X, PTR, W[0]), ValueError, "other must be 3-D"),
    (lambda: segment_matmul(X, PTR.view(1, 3), W), ValueError, "ptr must be 1-D"),
    (lambda: segment_matmul(X, PTR, torch.randn(2, 4, 4)), ValueError, "other.size\\(1\\)=4"),
    (lambda: segment_matmul(X, torch.tensor([0, 5]), W), ValueError, "ptr has 2 entries"),
    (lambda: segment_matmul(X, torch.tensor([1, 2, 5]), W), ValueError, "ptr must start at 0"),
    (lambda: segment_matmul(X, torch.tensor([0, 4, 3, 5]), torch.randn(3, 3, 4)), ValueError, "non-decreasing"),
    (lambda: segment_matmul(X, torch.tensor([0, 2, 4]), W), ValueError, "ptr must end at inputs.size\\(0\\)=5"),
    (lambda: segment_matmul(X, PTR, W, torch.zeros(4)), ValueError, "bias must have shape"),
    # grouped_matmul
    (lambda: grouped_matmul(X, [W[0]]), TypeError, "inputs must be a list"),
    (lambda: grouped_matmul([X], [W[0].double()]), TypeError, "others\\[0\\] has dtype"),
    (lambda: grouped_matmul([X, X], [W[0]]), ValueError, "inputs has 2 tensors but others has 1"),
    (lambda: grouped_matmul([X], [W[0].t()]), ValueError, "others\\[0\\].size\\(0\\)"),
    (lambda: grouped_matmul([X], [W]), ValueError, "others\\[0\\] must be 2-D"),
    (lambda: grouped_matmul([X], [W[0]], [torch.zeros(3)]), ValueError, "biases\\[0\\] of shape"),
    (lambda: grouped_matmul([X], [W[0]], []), ValueError, "biases has 0 entries"),
    # softmax_csr
    (lambda: softmax_csr(SRC.long(), PTR), TypeError, "floating-point src"),
    (lambda: softmax_csr(SRC, PTR.double()), TypeError, "ptr must have dtype"),
    (lambda: softmax_csr(SRC, PTR, 2), IndexError, "dim 2 is out of range"),
    (lambda: softmax_csr(SRC, PTR, 0.0), TypeError, "dim must be an int"),
    (lambda: softmax_csr(torch.tensor(1.0), PTR), ValueError, "at least one dimension"),
    (lambda: softmax_csr(SRC, torch.tensor([0, 2])), ValueError, "ptr must end at src.size\\(0\\)=5"),
    (lambda: softmax_csr(SRC, torch.tensor([0, 3, 2, 5])), ValueError, "non-decreasing"),
    (lambda: softmax_csr(SRC, torch.tensor([], dtype=torch.long)), ValueError, "at least one entry"),
    # index_sort
    (lambda: index_sort(torch.randint(0, 9, (4, 2))), ValueError, "inputs must be 1-D"),
    (lambda: index_sort(torch.rand(4)), TypeError, "integer dtype"),
    (lambda: index_sort(torch.arange(4), max_value=3.0), TypeError, "max_value must be an int"),
    # sampled ops
    (lambda: sampled_add(SRC, SRC.double()), TypeError, "right has dtype"),
    (lambda: sampled_add(SRC, torch.randn(5, 3)), ValueError, "every dimension but the first"),
    (lambda: sampled_add(SRC, torch.randn(4, 2)), ValueError, "left.size\\(0\\) must equal right.size\\(0\\)"),
    (lambda: sampled_mul(SRC, SRC, torch.tensor([0.0])), TypeError, "left_index must have dtype"),
    (lambda: sampled_mul(SRC, SRC, torch.tensor([[0]])), ValueError, "left_index must be 1-D"),
    (lambda: sampled_sub(SRC, SRC, None, torch.tensor([0, 5, 1, 2, 3])), IndexError, "right_index holds 5"),
    (lambda: sampled_div(SRC, SRC, torch.tensor([-1, 0, 1, 2, 3])), IndexError, "left_index holds -1"),
    (lambda: sampled_div(SRC, SRC, torch.tensor([0, 1])), ValueError, "rows"),
]


@pytest.mark.parametrize("call,error,message", BAD, ids=[f"{i}-{e.__name__}" for i, (_, e, _) in enumerate(BAD)])
def test_bad_input_raises_before_anything_is_computed(call, error, message):
    before = [t.clone() for t in (X, W, PTR, SRC)]
    with pytest.raises(error, match=message) as info:
        call()
    if error is not IndexError:  # as pyg-lib's checks raise (its TORCH_CHECKs), a RuntimeError as well
        assert isinstance(info.value, RuntimeError)
    for a, b in zip(before, (X, W, PTR, SRC)):
        assert torch.equal(a, b)  # nothing was written
