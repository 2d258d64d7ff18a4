// Shape ops (Base*: any dtype, quantized included): reshape, slice, cat, swap_dims, transpose,
// permute.
#include <algorithm>

#include "ops.hpp"

namespace tb::client {

using namespace detail;

namespace {

// Base ops keep the input's dtype; their category follows its kind.
template <class Payload>
ir::OperationIr base_op(ir::BaseOp variant, const ir::DType& dtype, Payload payload) {
  return make(base_category(kind_of(dtype)), variant, dtype, std::move(payload));
}

}  // namespace

Tensor reshape(Tensor x, Shape shape) {
  constexpr std::string_view kName = "reshape";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x}));
    Shape dims(shape.size());
    std::optional<std::size_t> inferred;
    std::int64_t known = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == -1 && !inferred) {
        inferred = i;
      } else if (shape[i] < 0) {
        return invalid(kName, fmt::format("bad dim {} in {}", shape[i], shape_text(shape)));
      } else {
        dims[i] = shape[i];
        known *= dims[i];
      }
    }
    if (inferred) {
      if (known == 0 || x.numel() % known != 0) {
        return invalid(kName, fmt::format("cannot infer -1 in {} for {} elements",
                                          shape_text(shape), x.numel()));
      }
      dims[*inferred] = x.numel() / known;
    }
    std::int64_t count = 1;
    for (std::int64_t d : dims) count *= d;
    if (count != x.numel()) {
      return invalid(kName, fmt::format("{} has {} elements, {} has {}", shape_text(x.shape()),
                                        x.numel(), shape_text(dims), count));
    }
    const ir::DType dtype = x.dtype();
    return emit(p, std::move(dims), dtype, [&](const ir::TensorIr& out) {
      return base_op(ir::BaseOp::Reshape, dtype, ir::ShapeOpIr{take(x), out});
    });
  });
}

Tensor slice(Tensor x, std::vector<Range> ranges) {
  constexpr std::string_view kName = "slice";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x}));
    if (static_cast<std::int64_t>(ranges.size()) > x.rank()) {
      return invalid(kName, fmt::format("{} ranges for a tensor of shape {}", ranges.size(),
                                        shape_text(x.shape())));
    }
    Shape dims = x.shape();
    std::vector<ir::Slice> slices;
    for (std::size_t d = 0; d < ranges.size(); ++d) {
      const auto& r = ranges[d];
      if (r.step <= 0) {
        return invalid(kName, fmt::format("dim {}: step {} (only positive steps)", d, r.step));
      }
      const std::int64_t n = dims[d];
      const auto clamp = [n](std::int64_t v) {
        return v < 0 ? std::max<std::int64_t>(0, n + v) : std::min(v, n);
      };
      const std::int64_t start = clamp(r.start);
      const std::int64_t end = r.end ? clamp(*r.end) : n;
      dims[d] = start >= end ? 0 : (end - start + r.step - 1) / r.step;
      slices.push_back(ir::Slice{start, std::max(start, end), r.step});
    }
    const ir::DType dtype = x.dtype();
    return emit(p, std::move(dims), dtype, [&](const ir::TensorIr& out) {
      return base_op(ir::BaseOp::Slice, dtype, ir::SliceOpIr{take(x), std::move(slices), out});
    });
  });
}

Tensor cat(std::vector<Tensor> tensors, std::int64_t dim) {
  constexpr std::string_view kName = "cat";
  return record([&]() -> Result<Tensor> {
    if (tensors.empty()) return invalid(kName, "no tensors");
    TB_TRY_ASSIGN(auto session, common_session(kName, tensors));
    const auto& first = tensors.front();
    TB_TRY_ASSIGN(const std::uint64_t axis, check_dim(kName, first, dim));
    Shape dims = first.shape();
    dims[axis] = 0;
    for (const auto& t : tensors) {
      bool fits = t.rank() == first.rank() && t.dtype() == first.dtype();
      for (std::int64_t i = 0; fits && i < t.rank(); ++i)
        fits = i == dim || t.dim(i) == first.dim(i);
      if (!fits) {
        return invalid(kName, fmt::format("{} {} does not fit {} {} along dim {}", t.dtype().name(),
                                          shape_text(t.shape()), first.dtype().name(),
                                          shape_text(first.shape()), dim));
      }
      dims[axis] += t.dim(dim);
    }
    const ir::DType dtype = first.dtype();
    return emit(Prepared{session, dtype}, std::move(dims), dtype, [&](const ir::TensorIr& out) {
      std::vector<ir::TensorIr> ins;
      for (auto& t : tensors) ins.push_back(take(t));
      return base_op(ir::BaseOp::Cat, dtype, ir::CatOpIr{std::move(ins), axis, out});
    });
  });
}

Tensor swap_dims(Tensor x, std::int64_t dim1, std::int64_t dim2) {
  constexpr std::string_view kName = "swap_dims";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x}));
    TB_TRY_ASSIGN(const std::uint64_t a, check_dim(kName, x, dim1));
    TB_TRY_ASSIGN(const std::uint64_t b, check_dim(kName, x, dim2));
    const ir::DType dtype = x.dtype();
    Shape dims = x.shape();
    std::swap(dims[a], dims[b]);
    return emit(p, std::move(dims), dtype, [&](const ir::TensorIr& out) {
      return base_op(ir::BaseOp::SwapDims, dtype, ir::SwapDimsOpIr{take(x), out, a, b});
    });
  });
}

Tensor transpose(Tensor x) {
  if (x.defined() && !x.error() && x.rank() < 2) {
    return Tensor::failed(
        invalid("transpose", fmt::format("needs rank >= 2, got {}", shape_text(x.shape()))));
  }
  const std::int64_t r = x.rank();
  return swap_dims(std::move(x), r - 2, r - 1);
}

Tensor permute(Tensor x, std::vector<std::int64_t> axes) {
  constexpr std::string_view kName = "permute";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x}));
    std::vector<bool> seen(x.shape().size(), false);
    bool valid = static_cast<std::int64_t>(axes.size()) == x.rank();
    for (auto a : axes) {
      valid = valid && a >= 0 && a < x.rank() && !seen[static_cast<std::size_t>(a)];
      if (valid) seen[static_cast<std::size_t>(a)] = true;
    }
    if (!valid) {
      return invalid(kName, fmt::format("[{}] is not a permutation of the dims of {}",
                                        fmt::join(axes, ", "), shape_text(x.shape())));
    }
    const ir::DType dtype = x.dtype();
    Shape dims(axes.size());
    for (std::size_t i = 0; i < axes.size(); ++i) dims[i] = x.dim(axes[i]);
    return emit(p, std::move(dims), dtype, [&](const ir::TensorIr& out) {
      std::vector<std::uint64_t> wire(axes.begin(), axes.end());
      return base_op(ir::BaseOp::Permute, dtype, ir::PermuteOpIr{take(x), out, std::move(wire)});
    });
  });
}

}  // namespace tb::client
