#include "lower/lowering.hpp"

#include "lower/conv_family.hpp"
#include "lower/lower_families.hpp"
#include "lower/pool_family.hpp"

namespace tb::backend::libtorch {

const at::Tensor& OpContext::in(const ir::TensorIr& t) const {
  // Lowerings mostly read their inputs in the order the executor bound them (the op's visit
  // order): the next one is tried first, so a read costs no search.
  if (next_input_ < inputs.size() && inputs[next_input_].id == t.id.value) {
    return *inputs[next_input_++].tensor;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].id == t.id.value) {
      next_input_ = i + 1;
      return *inputs[i].tensor;
    }
  }
  // The executor resolves every input before the lowering runs: reaching here is a bug.
  throw std::logic_error(fmt::format("input #{} was not resolved", t.id.value));
}

const at::Tensor* OpContext::exclusive(const ir::TensorIr& t) const {
  const Input* found = nullptr;
  for (const Input& i : inputs) {
    if (i.id != t.id.value) continue;
    if (found) return nullptr;  // read twice by this op
    found = &i;
  }
  if (found == nullptr || !found->consumed) return nullptr;
  const at::Tensor& x = *found->tensor;
  if (!x.defined() || !x.has_storage()) return nullptr;
  if (x.requires_grad() || !x.is_non_overlapping_and_dense()) return nullptr;
  // Views the session keeps of a large tensor (Burn's LU holds the pivot row while it assigns
  // into the block column) would make it a copy of the whole: copying the views is cheaper.
  if (!sole_holder(x) && !(!x.is_view() && unshare(found->id, x) && sole_holder(x))) {
    return nullptr;
  }
  handed_out_ = x.storage().unsafeGetStorageImpl();
  return &x;
}

bool OpContext::sole_holder(const at::Tensor& x) {
  if (x.use_count() != 1) return false;
  // A view keeps its base tensor alive (ATen's view tracking): that base counts as a second
  // holder of the storage only while nothing but this view holds it.
  long holders = 1;
  if (x.is_view()) {
    if (x._base().use_count() != 1) return false;
    holders = 2;
  }
  return static_cast<long>(x.storage().use_count()) == holders;
}

std::optional<at::Tensor> OpContext::in(const std::optional<ir::TensorIr>& t) const {
  if (!t) return std::nullopt;
  return in(*t);
}

std::vector<at::Tensor> OpContext::in(const std::vector<ir::TensorIr>& ts) const {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(in(t));
  return out;
}

Status OpContext::out(const ir::TensorIr& t, const at::Tensor& value) {
  return out(t, value, t.dtype);
}

Status OpContext::out(const ir::TensorIr& t, const at::Tensor& value, const ir::DType& held) {
  if (!same_shape(value.sizes(), t.shape.dims)) {
    return make_error(ErrorCode::kInvalidArgument, "output #{} has shape {}, declared [{}]",
                      t.id.value, shape_string(value.sizes()), fmt::join(t.shape.dims, ", "));
  }
  at::Tensor v = to_storage(small_cpu::to(value, storage_type(held)), held);
  if (v.device() != device_) v = v.to(device_);
  store(t, std::move(v), held);
  return ok();
}

Status OpContext::declared_as(const ir::TensorIr& t, at::IntArrayRef expected) const {
  if (same_shape(expected, t.shape.dims)) return ok();
  return make_error(ErrorCode::kInvalidArgument,
                    "output #{} is declared [{}] but the op's scalars make {}", t.id.value,
                    fmt::join(t.shape.dims, ", "), shape_string(expected));
}

void LoweringTable::set(ir::OpKind kind, LowerFn fn) {
  auto& e = entries_[static_cast<std::size_t>(kind)];
  if (e.fn) duplicates_.push_back(kind);
  e.fn = std::move(fn);
}

void LoweringTable::limit(ir::OpKind kind, std::string note) {
  entries_[static_cast<std::size_t>(kind)].note = std::move(note);
}

namespace {

// What each row of the op tables registers (TB_OP_LEAVES): `own` and `split` rows their function
// (declared in lowering.hpp), a family row its family applied to the ATen function or parameter
// in its Fn column (the Numeric families instantiated for the row's category).
#define TB_LOWER_KIND(Cat, V) ::tb::ir::OpKind::TB_LEAF_ID(Cat, V)
#define TB_LOWER_ROW(Cat, V, P, Lowering, Fn, Wire) TB_LOWER_ROW_##Lowering(Cat, V, P, Fn)
#define TB_LOWER_ROW_own(Cat, V, P, Fn) t.on<TB_LOWER_KIND(Cat, V)>(&TB_LOWER_OWN(Cat, V));
#define TB_LOWER_ROW_split(Cat, V, P, Fn) t.on<TB_LOWER_KIND(Cat, V)>(&TB_LOWER_SPLIT(Cat, V));
#define TB_LOWER_ROW_FAMILY(Cat, V, P, call) \
  t.on<TB_LOWER_KIND(Cat, V)>([](OpContext& ctx, const ir::P& op) -> Status { return call; });
#define TB_LOWER_ROW_float_unary(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P,                \
                      unary_float(ctx, op, [](const at::Tensor& x) { return at::Fn(x); }))
#define TB_LOWER_ROW_float_binary(Cat, V, P, Fn)                                           \
  TB_LOWER_ROW_FAMILY(Cat, V, P,                                                           \
                      binary_float(ctx, op, [](const at::Tensor& a, const at::Tensor& b) { \
                        return at::Fn(a, b);                                               \
                      }))
#define TB_LOWER_ROW_along_dim(Cat, V, P, Fn)                                                 \
  TB_LOWER_ROW_FAMILY(Cat, V, P, along_dim(ctx, op, [](const at::Tensor& x, std::int64_t d) { \
                        return at::Fn(x, d);                                                  \
                      }))
#define TB_LOWER_ROW_bitwise(Cat, V, P, Fn)                                                  \
  TB_LOWER_ROW_FAMILY(Cat, V, P,                                                             \
                      bitwise_binary(ctx, op, [](const at::Tensor& a, const at::Tensor& b) { \
                        return at::Fn(a, b);                                                 \
                      }))
#define TB_LOWER_ROW_bitwise_scalar(Cat, V, P, Fn)                                           \
  TB_LOWER_ROW_FAMILY(Cat, V, P,                                                             \
                      bitwise_scalar(ctx, op, [](const at::Tensor& a, const at::Tensor& b) { \
                        return at::Fn(a, b);                                                 \
                      }))
#define TB_LOWER_ROW_logical(Cat, V, P, Fn)                                                      \
  TB_LOWER_ROW_FAMILY(Cat, V, P, logical(ctx, op, [](const at::Tensor& a, const at::Tensor& b) { \
                        return at::Fn(a, b);                                                     \
                      }))
#define TB_LOWER_ROW_arith(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, lower_arith<TB_LOWER_IS_FLOAT(Cat)>(Arith::Fn, ctx, op))
#define TB_LOWER_ROW_arith_scalar(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, lower_arith_scalar<TB_LOWER_IS_FLOAT(Cat)>(Arith::Fn, ctx, op))
#define TB_LOWER_ROW_compare(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, lower_compare<TB_LOWER_IS_FLOAT(Cat)>(Cmp::Fn, ctx, op))
#define TB_LOWER_ROW_compare_elem(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, lower_compare_elem<TB_LOWER_IS_FLOAT(Cat)>(Cmp::Fn, ctx, op))

// The families of regular rows whose helper has no ATen function to take (issue 43): the Fn
// column is the helper's parameter, `_` where it has none (the payload picks the rank).
#define TB_LOWER_ROW_conv(Cat, V, P, Fn) TB_LOWER_ROW_FAMILY(Cat, V, P, conv::lower_conv(ctx, op))
#define TB_LOWER_ROW_conv_backward(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, conv::lower_conv_backward(ctx, op, conv::Grad::Fn))
#define TB_LOWER_ROW_conv_bias_backward(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, conv::lower_bias_backward(ctx, op))
#define TB_LOWER_ROW_conv_transpose(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, conv::lower_conv_transpose(ctx, op))
#define TB_LOWER_ROW_conv_transpose_weight_backward(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, conv::lower_conv_transpose_weight_backward(ctx, op))
#define TB_LOWER_ROW_avg_pool(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, pool::lower_avg_pool(ctx, op))
#define TB_LOWER_ROW_avg_pool_backward(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, pool::lower_avg_pool_backward(ctx, op))
#define TB_LOWER_ROW_max_pool(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, pool::lower_max_pool(ctx, op))
#define TB_LOWER_ROW_max_pool_backward(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, pool::lower_max_pool_backward(ctx, op))

#define TB_LOWER_ROW_extremum(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, extremum(ctx, op, Extreme::Fn))
#define TB_LOWER_ROW_arg_extremum(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, arg_extremum(ctx, op, Extreme::Fn))
#define TB_LOWER_ROW_clamp_bound(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, clamp_bound<TB_LOWER_IS_FLOAT(Cat)>(ctx, op, Bound::Fn))

#define TB_LOWER_ROW_float_test(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, float_test(ctx, op, small_cpu::FloatTest::Fn))
#define TB_LOWER_ROW_shift(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, lower_shift(ctx, op, Shift::Fn))
#define TB_LOWER_ROW_shift_scalar(Cat, V, P, Fn) \
  TB_LOWER_ROW_FAMILY(Cat, V, P, lower_shift_scalar(ctx, op, Shift::Fn))

LoweringTable build_lowering_table() {
  LoweringTable t;
  TB_OP_LEAVES(TB_LOWER_ROW)
  // Documented limits of lowered leaves (`torchbridge ops`, docs/op-coverage.md).
  t.limit(ir::OpKind::Float_GridSample2d,
          "modes Nearest, Bilinear, Bicubic (ATen's); NearestExact and Lanczos3 answer an error");
  t.limit(ir::OpKind::Distributed_AllReduce,
          "run by the host across the devices it serves (sessions of one host only)");
  return t;
}

}  // namespace

const LoweringTable& lowering_table() {
  static const LoweringTable table = build_lowering_table();
  return table;
}

LoweringStatus lowering_status(ir::OpKind kind) {
  const auto& e = lowering_table().entry(kind);
  if (!e.fn) return {false, "not lowered yet"};
  return {true, e.note};
}

}  // namespace tb::backend::libtorch
