// Element-wise runs (elementwise_run.hpp): element-wise ops deferred and run as one loop must
// leave exactly what running each through its lowering leaves: the same tensors bit for bit (a NaN
// matches any NaN, see same_bits), the same ids consumed, the same errors. Every test runs one op
// stream twice, on an executor that fuses (the default) and on one that does not
// (BackendOptions::fuse_elementwise off), and compares everything; it also checks that the fusing
// executor did defer ops, since a stream it runs eagerly would compare eager with eager.
#include <ATen/Parallel.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>

#include "backends/libtorch/fused_compare.hpp"
#include "backends/libtorch/op_test_util.hpp"
#include "exec/elementwise_rows.hpp"
#include "exec/executor.hpp"

namespace tb::test {
namespace {

class ElementwiseRun : public FusedCompare {};

// The op-bound benchmark's chain as Burn's clients send it: add, mul, sub, div by constant tensors
// and relu, each consuming its input. The fusion client sends relu as a lower-equal mask and a
// mask fill, the plain client as Relu.
TEST_F(ElementwiseRun, TheBenchmarkChainIsBitForBitTheSame) {
  for (const bool relu_op : {false, true})
    for (const Dims& d : {Dims{16, 16}, Dims{3, 1000}, Dims{1}, Dims{2049}}) {
      const auto n = ir::num_elements(d);
      Stream s;
      s.inputs = {{1, f32_data(d, special_values(n, 1))},
                  {2, f32_data(d, special_values(n, 2))},
                  {3, f32_data(d, special_values(n, 3))}};
      std::uint64_t x = 1;
      std::uint64_t next = 10;
      const auto rw = TensorStatus::ReadWrite;
      for (int i = 0; i < 50; ++i) {
        const std::uint64_t y = next++;
        const auto in = f(x, d, x == 1 && i == 0 ? TensorStatus::ReadOnly : rw);
        switch (i % 5) {
          case 0:
            s.ops.push_back(make_op<OpKind::NumericFloat_Add>(
                BinaryOpIr{in, f(2, d), f(y, d, TensorStatus::NotInit)}, DTypeKind::F32));
            break;
          case 1:
            s.ops.push_back(make_op<OpKind::NumericFloat_Mul>(
                BinaryOpIr{in, f(3, d), f(y, d, TensorStatus::NotInit)}, DTypeKind::F32));
            break;
          case 2:
            s.ops.push_back(make_op<OpKind::NumericFloat_Sub>(
                BinaryOpIr{in, f(2, d), f(y, d, TensorStatus::NotInit)}, DTypeKind::F32));
            break;
          case 3:
            s.ops.push_back(make_op<OpKind::NumericFloat_Div>(
                BinaryOpIr{in, f(3, d), f(y, d, TensorStatus::NotInit)}, DTypeKind::F32));
            break;
          default: {
            if (relu_op) {
              s.ops.push_back(
                  make_op<OpKind::Activation_Relu>(UnaryOpIr{in, f(y, d, TensorStatus::NotInit)}));
              break;
            }
            const std::uint64_t m = next++;
            // Burn's relu: x <= 0 (false for NaN), then fill with 0.
            s.ops.push_back(make_op<OpKind::NumericFloat_LowerEqualElem>(
                ScalarOpIr{f(x, d), ScalarIr::f(0.0), mask_ir(m, d, TensorStatus::NotInit)},
                DTypeKind::F32));
            s.ops.push_back(make_op<OpKind::BaseFloat_MaskFill>(MaskFillOpIr{
                in, mask_ir(m, d, rw), ScalarIr::f(0.0), f(y, d, TensorStatus::NotInit)}));
          }
        }
        x = y;
      }
      s.reads = {f(x, d), f(1, d), f(2, d)};
      SCOPED_TRACE(relu_op ? "relu op" : "mask fill");
      expect_same(s);
      EXPECT_TRUE(fused_.deferred) << "the chain ran as a run";
    }
}

// The ops a run took before its list was read off the rows, with their kernels: the derivation
// must give exactly these, so a row that stops joining (its Fn or family changed, its family
// dropped from elementwise_rows.hpp) fails here instead of quietly running op by op, and so does
// one that starts joining.
using backend::libtorch::fused::Kernel;

// Whether `k` joins runs in this process: MKL's and SLEEF's kernels only where runtime/vml.hpp
// found them.
bool joins_here(Kernel k) {
  const auto fn = backend::libtorch::fused::vml_of(k);
  if (!fn || backend::libtorch::vml::usable(*fn)) return true;
  std::cout << "[  NOTE    ] " << static_cast<int>(k)
            << ": its vector function is not usable piecewise here; compared without a run\n";
  return false;
}
constexpr std::pair<OpKind, Kernel> kFusedToday[] = {
    {OpKind::NumericFloat_Add, Kernel::kAdd},
    {OpKind::NumericFloat_Sub, Kernel::kSub},
    {OpKind::NumericFloat_Mul, Kernel::kMul},
    {OpKind::NumericFloat_Div, Kernel::kDiv},
    {OpKind::NumericFloat_AddScalar, Kernel::kAdd},
    {OpKind::NumericFloat_SubScalar, Kernel::kSub},
    {OpKind::NumericFloat_MulScalar, Kernel::kMul},
    {OpKind::NumericFloat_DivScalar, Kernel::kDiv},
    {OpKind::NumericFloat_Neg, Kernel::kNeg},
    {OpKind::NumericFloat_Abs, Kernel::kAbs},
    {OpKind::NumericFloat_Sign, Kernel::kSign},
    {OpKind::Activation_Relu, Kernel::kRelu},
    {OpKind::Float_Recip, Kernel::kRecip},
    {OpKind::Float_Floor, Kernel::kFloor},
    {OpKind::Float_Ceil, Kernel::kCeil},
    {OpKind::Float_Trunc, Kernel::kTrunc},
    {OpKind::Float_Round, Kernel::kRound},
    {OpKind::Float_Exp, Kernel::kExp},
    {OpKind::Float_Log, Kernel::kLog},
    {OpKind::Float_Sqrt, Kernel::kSqrt},
    {OpKind::Float_Log1p, Kernel::kLog1p},
    {OpKind::BaseFloat_Zeros, Kernel::kZeros},
    {OpKind::BaseFloat_Ones, Kernel::kOnes},
    {OpKind::NumericFloat_Full, Kernel::kFull},
    {OpKind::NumericFloat_Lower, Kernel::kLower},
    {OpKind::NumericFloat_LowerEqual, Kernel::kLowerEqual},
    {OpKind::NumericFloat_Greater, Kernel::kGreater},
    {OpKind::NumericFloat_GreaterEqual, Kernel::kGreaterEqual},
    {OpKind::BaseFloat_Equal, Kernel::kEqual},
    {OpKind::BaseFloat_NotEqual, Kernel::kNotEqual},
    {OpKind::NumericFloat_LowerElem, Kernel::kLower},
    {OpKind::NumericFloat_LowerEqualElem, Kernel::kLowerEqual},
    {OpKind::NumericFloat_GreaterElem, Kernel::kGreater},
    {OpKind::NumericFloat_GreaterEqualElem, Kernel::kGreaterEqual},
    {OpKind::BaseFloat_EqualElem, Kernel::kEqual},
    {OpKind::BaseFloat_NotEqualElem, Kernel::kNotEqual},
    {OpKind::Float_IsNan, Kernel::kIsNan},
    {OpKind::Float_IsInf, Kernel::kIsInf},
    {OpKind::BaseFloat_MaskFill, Kernel::kMaskFill},
    {OpKind::BaseFloat_MaskWhere, Kernel::kMaskWhere},
    {OpKind::Bool_Not, Kernel::kNot},
    {OpKind::Bool_And, Kernel::kAnd},
    {OpKind::Bool_Or, Kernel::kOr},
    {OpKind::Bool_Xor, Kernel::kXor},
};

TEST(ElementwiseRunRows, ExactlyTodaysOpsJoinWithTheirKernels) {
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    Kernel expected = Kernel::kNone;
    for (const auto& [today, kernel] : kFusedToday) {
      if (today == kind) expected = kernel;
    }
    EXPECT_EQ(backend::libtorch::fused::fusion_of(kind).kernel, expected) << ir::op_name(kind);
  }
}

// The ops a run takes are read off the op tables' rows (elementwise_rows.hpp). Every leaf the rows
// give a kernel, alone in a stream, is deferred and leaves what its lowering leaves: a row whose
// kernel, family or payload form were mapped wrongly fails here.
TEST_F(ElementwiseRun, EveryRowWithAKernelJoinsARunAndMatchesItsLowering) {
  const Dims d{7, 15};  // every 7th value special: each of special_values' at least once
  const auto n = ir::num_elements(d);
  std::vector<std::uint8_t> bits(n);
  for (std::size_t i = 0; i < n; ++i) bits[i] = (i * 7 + 3) % 3 == 0;
  TensorData mask_data;
  mask_data.shape = d;
  mask_data.dtype = DType::boolean(BoolStore::Native);
  mask_data.bytes = ir::Bytes::copy_of(bits.data(), bits.size());
  std::size_t joined = 0;
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const auto fusion = backend::libtorch::fused::fusion_of(kind);
    if (fusion.kernel == backend::libtorch::fused::Kernel::kNone) continue;
    SCOPED_TRACE(ir::op_name(kind));
    const bool bool_in = backend::libtorch::fused::types_of(fusion.kernel).bool_in;
    const bool bool_out = backend::libtorch::fused::types_of(fusion.kernel).bool_out;
    const auto in = [&](std::uint64_t id) { return bool_in ? mask_ir(id, d) : f(id, d); };
    const TensorIr out =
        bool_out ? mask_ir(9, d, TensorStatus::NotInit) : f(9, d, TensorStatus::NotInit);
    OperationIr op;
    op.kind = kind;
    if (ir::category_has_dtype(ir::op_category(kind))) op.dtype = DTypeKind::F32;
    using backend::libtorch::fused::Form;
    switch (fusion.form) {
      case Form::kUnary:
        op.payload = UnaryOpIr{in(1), out};
        break;
      case Form::kBinary:
        op.payload = BinaryOpIr{in(1), in(2), out};
        break;
      case Form::kScalar:
        op.payload = ScalarOpIr{in(1), ScalarIr::f(0.5), out};
        break;
      case Form::kMaskFill:
        op.payload = MaskFillOpIr{in(1), mask_ir(3, d), ScalarIr::f(-2.0), out};
        break;
      case Form::kMaskWhere:
        op.payload = MaskWhereOpIr{in(1), mask_ir(3, d), in(2), out};
        break;
      case Form::kCreation:
        op.payload = CreationOpIr{out};
        break;
      case Form::kFull:
        op.payload = FullOpIr{out, ScalarIr::f(-2.5)};
        break;
      default:
        ADD_FAILURE() << "a kernel without a form";
        continue;
    }
    Stream s;
    s.inputs = {{1, bool_in ? mask_data : f32_data(d, special_values(n, 1))},
                {2, bool_in ? mask_data : f32_data(d, special_values(n, 2))},
                {3, mask_data}};
    s.ops = {op};
    s.reads = {out};
    expect_same(s, joins_here(fusion.kernel));
    ++joined;
  }
  EXPECT_EQ(joined, std::size(kFusedToday));
}

// The float_unary rows that join a run do so because their results are exact, so the run's plain
// C loop gives ATen's bits. Checked over 32,767 f32 bit patterns spread over the whole space (every
// sign, exponent, subnormals, infinities, NaNs); all 2^32 were checked once for the pinned wheel.
// MKL's exp, log and sqrt and SLEEF's log1p join the same way, calling ATen's own functions block
// by block: 32 blocks of 1,024 here against ATen's one call over the whole.
TEST_F(ElementwiseRun, ExactUnaryKernelsGiveAtensBitsAcrossTheF32Space) {
  const Dims d{32767};  // under kParallelFrom: a run takes it at any thread count
  std::vector<float> v(32767);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto bits = static_cast<std::uint32_t>(i * 131071u + 12345u);
    std::memcpy(&v[i], &bits, 4);
  }
  for (const OpKind kind : {OpKind::Float_Recip, OpKind::Float_Floor, OpKind::Float_Ceil,
                            OpKind::Float_Trunc, OpKind::Float_Round, OpKind::Float_Exp,
                            OpKind::Float_Log, OpKind::Float_Sqrt, OpKind::Float_Log1p}) {
    SCOPED_TRACE(ir::op_name(kind));
    OperationIr op;
    op.kind = kind;
    op.dtype = DTypeKind::F32;
    op.payload = UnaryOpIr{f(1, d), f(2, d, TensorStatus::NotInit)};
    Stream s;
    s.inputs = {{1, f32_data(d, v)}};
    s.ops = {op};
    s.reads = {f(2, d)};
    expect_same(s, joins_here(backend::libtorch::fused::fusion_of(kind).kernel));
  }
}

// A binary op's second operand may be a stored one-element tensor, broadcast (Burn's LU divides
// its column by the pivot, a [1, 1] tensor): each of add, sub, mul, div and the comparisons, with
// every special value as that element, read when the run is flushed.
TEST_F(ElementwiseRun, AOneElementSecondOperandIsBroadcast) {
  const Dims col{9, 1};
  const Dims one{1, 1};
  const auto n = ir::num_elements(col);
  const std::vector<float> specials = {0.0f,
                                       -0.0f,
                                       std::numeric_limits<float>::infinity(),
                                       -std::numeric_limits<float>::infinity(),
                                       std::nanf(""),
                                       1e-40f,
                                       -2.5f,
                                       3.0f};
  const std::vector<OpKind> kinds = {OpKind::NumericFloat_Add,   OpKind::NumericFloat_Sub,
                                     OpKind::NumericFloat_Mul,   OpKind::NumericFloat_Div,
                                     OpKind::NumericFloat_Lower, OpKind::NumericFloat_GreaterEqual,
                                     OpKind::BaseFloat_Equal,    OpKind::BaseFloat_NotEqual};
  for (const float pivot : specials) {
    for (const OpKind kind : kinds) {
      SCOPED_TRACE(std::string(ir::op_name(kind)) + " by " + std::to_string(pivot));
      const bool bool_out =
          backend::libtorch::fused::types_of(backend::libtorch::fused::fusion_of(kind).kernel)
              .bool_out;
      Stream s;
      s.inputs = {{1, f32_data(col, special_values(n, 5))}, {2, f32_data(one, {pivot})}};
      OperationIr op;
      op.kind = kind;
      if (ir::category_has_dtype(ir::op_category(kind))) op.dtype = DTypeKind::F32;
      // Negated first, so the op joins a run that is already there; the pivot is consumed.
      s.ops.push_back(make_op<OpKind::NumericFloat_Neg>(
          UnaryOpIr{f(1, col), f(3, col, TensorStatus::NotInit)}, DTypeKind::F32));
      const TensorIr out =
          bool_out ? mask_ir(4, col, TensorStatus::NotInit) : f(4, col, TensorStatus::NotInit);
      op.payload =
          BinaryOpIr{f(3, col, TensorStatus::ReadWrite), f(2, one, TensorStatus::ReadWrite), out};
      s.ops.push_back(op);
      s.reads = {bool_out ? mask_ir(4, col) : f(4, col), f(1, col)};
      expect_same(s);
      EXPECT_EQ(fused_.deferred_after.back(), 2u) << "both ops in one run";
    }
  }
  // A one-element tensor as the first operand, or of another dtype, ends the run instead.
  Stream s;
  s.inputs = {{1, f32_data(col, special_values(n, 6))}, {2, f32_data(one, {2.0f})}};
  s.ops.push_back(make_op<OpKind::NumericFloat_Neg>(
      UnaryOpIr{f(1, col), f(3, col, TensorStatus::NotInit)}, DTypeKind::F32));
  s.ops.push_back(make_op<OpKind::NumericFloat_Div>(
      BinaryOpIr{f(2, one), f(3, col), f(4, col, TensorStatus::NotInit)}, DTypeKind::F32));
  s.reads = {f(4, col)};
  expect_same(s);
  EXPECT_EQ(fused_.deferred_after.back(), 0u) << "the run was flushed, the division ran alone";
}

// Burn's CTC loss decomposition computes log(exp(a) + exp(b)) element-wise at every time step
// (burn-backend's ctc.rs, log_sum_exp): its masks, masked choices, abs, neg, exp (MKL's) and log1p
// (SLEEF's), where both are usable piecewise, are one run, the same bits as op by op.
TEST_F(ElementwiseRun, CtcLogSumExpIsOneRun) {
  const Dims d{2, 9};
  const auto nd = TensorStatus::NotInit;
  const auto rw = TensorStatus::ReadWrite;
  const float inf = std::numeric_limits<float>::infinity();
  const auto bool_ir = [&](std::uint64_t id, TensorStatus st = TensorStatus::ReadOnly) {
    return mask_ir(id, d, st);
  };
  Stream s;
  s.inputs.push_back({1, f32_data(d, {-inf, -inf, 0.5f, -1.0f, 3.0f, -inf, 2.0f, -0.0f, 1e-3f, -inf,
                                      7.0f, -7.0f, 0.0f, -inf, 1.0f, 2.0f, -inf, 4.0f})});
  s.inputs.push_back({2, f32_data(d, {-inf, 1.0f, -inf, -1.5f, 3.0f, 2.0f, -inf, 0.0f, -1e-3f,
                                      0.25f, -inf, -7.5f, -0.0f, -inf, 1.5f, -2.0f, 8.0f, -inf})});
  const ScalarIr neg_inf = ScalarIr::f(-std::numeric_limits<double>::infinity());
  s.ops = {
      make_op<OpKind::BaseFloat_EqualElem>(ScalarOpIr{f(1, d), neg_inf, bool_ir(3, nd)}),
      make_op<OpKind::BaseFloat_EqualElem>(ScalarOpIr{f(2, d), neg_inf, bool_ir(4, nd)}),
      make_op<OpKind::Bool_Or>(BinaryOpIr{bool_ir(3), bool_ir(4), bool_ir(5, nd)}),
      make_op<OpKind::BaseFloat_MaskFill>(
          MaskFillOpIr{f(1, d), bool_ir(3, rw), ScalarIr::f(0.0), f(6, d, nd)}),
      make_op<OpKind::BaseFloat_MaskFill>(
          MaskFillOpIr{f(2, d), bool_ir(4, rw), ScalarIr::f(0.0), f(7, d, nd)}),
      make_op<OpKind::NumericFloat_Lower>(BinaryOpIr{f(1, d), f(2, d), bool_ir(8, nd)},
                                          DTypeKind::F32),
      make_op<OpKind::BaseFloat_MaskWhere>(
          MaskWhereOpIr{f(1, d, rw), bool_ir(8, rw), f(2, d, rw), f(9, d, nd)}),
      make_op<OpKind::NumericFloat_Sub>(BinaryOpIr{f(6, d, rw), f(7, d, rw), f(10, d, nd)},
                                        DTypeKind::F32),
      make_op<OpKind::NumericFloat_Abs>(UnaryOpIr{f(10, d, rw), f(11, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Neg>(UnaryOpIr{f(11, d, rw), f(12, d, nd)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_MaskFill>(
          MaskFillOpIr{f(12, d, rw), bool_ir(5, rw), neg_inf, f(13, d, nd)}),
      make_op<OpKind::Float_Exp>(UnaryOpIr{f(13, d, rw), f(14, d, nd)}, DTypeKind::F32),
      make_op<OpKind::Float_Log1p>(UnaryOpIr{f(14, d, rw), f(15, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(9, d, rw), f(15, d, rw), f(16, d, nd)},
                                        DTypeKind::F32),
  };
  if (joins_here(Kernel::kExp) && joins_here(Kernel::kLog1p)) {
    auto fused = backend_->new_executor();
    for (const auto& [id, data] : s.inputs) {
      ASSERT_TRUE(fused->register_tensor(TensorId{id}, data));
    }
    for (const auto& op : s.ops) ASSERT_TRUE(fused->execute(op));
    EXPECT_EQ(dynamic_cast<backend::libtorch::LibTorchExecutor&>(*fused).deferred_ops(),
              s.ops.size());
  }
  s.reads = {f(16, d)};
  expect_same(s);
}

// Burn's autodiff of a masked choice makes a zero tensor for the branch not taken, and CTC loss's
// backward divides by a sum: 19,256 zero tensors and 3,216 reciprocals per CTC backward, each of
// which ended a run. Zeros, ones, fills and reciprocals are now ops of the run, first or later.
TEST_F(ElementwiseRun, CtcBackwardsZerosAndReciprocalsStayInItsRun) {
  const Dims d{2, 9};
  const auto nd = TensorStatus::NotInit;
  const auto rw = TensorStatus::ReadWrite;
  Stream s;
  s.inputs = {{1, f32_data(d, special_values(18, 5))}, {2, f32_data(d, special_values(18, 6))}};
  s.ops = {
      make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{f(3, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_LowerElem>(
          ScalarOpIr{f(2, d), ScalarIr::f(0.0), mask_ir(4, d, nd)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_MaskWhere>(
          MaskWhereOpIr{f(1, d), mask_ir(4, d), f(3, d, rw), f(5, d, nd)}),
      make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{f(6, d, nd)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_MaskWhere>(
          MaskWhereOpIr{f(6, d, rw), mask_ir(4, d, rw), f(5, d), f(7, d, nd)}),
      make_op<OpKind::NumericFloat_AddScalar>(ScalarOpIr{f(2, d), ScalarIr::f(1.0), f(8, d, nd)},
                                              DTypeKind::F32),
      make_op<OpKind::Float_Recip>(UnaryOpIr{f(8, d, rw), f(9, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Mul>(BinaryOpIr{f(7, d, rw), f(9, d, rw), f(10, d, nd)},
                                        DTypeKind::F32),
      make_op<OpKind::NumericFloat_Full>(FullOpIr{f(11, d, nd), ScalarIr::f(0.1)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(10, d, rw), f(11, d, rw), f(12, d, nd)},
                                        DTypeKind::F32),
      make_op<OpKind::BaseFloat_Ones>(CreationOpIr{f(13, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Sub>(BinaryOpIr{f(12, d, rw), f(13, d), f(14, d, nd)},
                                        DTypeKind::F32),
      make_op<OpKind::Float_Round>(UnaryOpIr{f(14, d), f(15, d, nd)}, DTypeKind::F32),
  };
  s.reads = {f(5, d), f(13, d), f(14, d), f(15, d)};
  expect_same(s);
  EXPECT_EQ(fused_.longest_run(), s.ops.size()) << "one run";
}

// A fill the run cannot hold exactly runs through its lowering: zeros of another dtype (f64, f16,
// i32, bool), a full whose value is an integer or past f32's range. Each ends the run before it.
TEST_F(ElementwiseRun, FillsOfOtherDtypesOrValuesRunThroughTheirLowerings) {
  const Dims d{3, 5};
  const auto nd = TensorStatus::NotInit;
  Stream s;
  s.ops = {
      make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{f(1, d, nd)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{tir(2, d, DTypeKind::F64, nd)}, DTypeKind::F64),
      make_op<OpKind::BaseFloat_Ones>(CreationOpIr{f(3, d, nd)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_Ones>(CreationOpIr{tir(4, d, DTypeKind::F16, nd)}, DTypeKind::F16),
      make_op<OpKind::NumericFloat_Full>(FullOpIr{f(5, d, nd), ScalarIr::f(-0.0)}, DTypeKind::F32),
      make_op<OpKind::BaseInt_Zeros>(CreationOpIr{tir(6, d, DTypeKind::I32, nd)}, DTypeKind::I32),
      make_op<OpKind::NumericFloat_Full>(FullOpIr{f(7, d, nd), ScalarIr::f(3.0)}, DTypeKind::F32),
      make_op<OpKind::BaseBool_Zeros>(
          CreationOpIr{tir(8, d, DType::boolean(BoolStore::Native), nd)}),
      make_op<OpKind::NumericFloat_Full>(FullOpIr{f(9, d, nd), ScalarIr::i(3)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Full>(FullOpIr{f(10, d, nd), ScalarIr::f(1e39)}, DTypeKind::F32),
  };
  s.reads = {f(1, d), tir(2, d, DTypeKind::F64),
             f(3, d), tir(4, d, DTypeKind::F16),
             f(5, d), tir(6, d, DTypeKind::I32),
             f(7, d), tir(8, d, DType::boolean(BoolStore::Native)),
             f(9, d), f(10, d)};
  expect_same(s);
  const std::vector<std::size_t> runs = {1, 0, 1, 0, 1, 0, 1, 0, 0, 0};
  EXPECT_EQ(fused_.deferred_after, runs);
}

TEST_F(ElementwiseRun, ScalarOperandsAndResultsStillReferencedAfterTheRun) {
  const Dims d{5, 7};
  Stream s;
  s.inputs = {{1, f32_data(d, special_values(35, 4))}};
  const auto nd = TensorStatus::NotInit;
  const auto rw = TensorStatus::ReadWrite;
  s.ops = {
      make_op<OpKind::NumericFloat_AddScalar>(ScalarOpIr{f(1, d), ScalarIr::f(0.1), f(2, d, nd)},
                                              DTypeKind::F32),
      make_op<OpKind::NumericFloat_SubScalar>(ScalarOpIr{f(2, d), ScalarIr::f(-2.5), f(3, d, nd)},
                                              DTypeKind::F32),
      make_op<OpKind::NumericFloat_MulScalar>(ScalarOpIr{f(3, d), ScalarIr::f(1e30), f(4, d, nd)},
                                              DTypeKind::F32),
      make_op<OpKind::NumericFloat_DivScalar>(
          ScalarOpIr{f(4, d, rw), ScalarIr::f(3.0), f(5, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_DivScalar>(ScalarOpIr{f(5, d), ScalarIr::f(0.0), f(6, d, nd)},
                                              DTypeKind::F32),
      // x + x, and a mask that outlives the run.
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(6, d), f(6, d, rw), f(7, d, nd)},
                                        DTypeKind::F32),
      make_op<OpKind::NumericFloat_LowerElem>(
          ScalarOpIr{f(7, d), ScalarIr::f(1.0), mask_ir(8, d, nd)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_MaskFill>(
          MaskFillOpIr{f(3, d, rw), mask_ir(8, d), ScalarIr::f(-7.25), f(9, d, nd)}),
      make_op<OpKind::NumericFloat_GreaterElem>(
          ScalarOpIr{f(9, d), ScalarIr::f(-0.0), mask_ir(10, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_GreaterEqualElem>(
          ScalarOpIr{f(1, d), ScalarIr::f(0.5), mask_ir(11, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_LowerElem>(
          ScalarOpIr{f(1, d), ScalarIr::f(1e-40), mask_ir(12, d, nd)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_MaskFill>(
          MaskFillOpIr{f(9, d, rw), mask_ir(10, d, rw), ScalarIr::f(1e39), f(13, d, nd)}),
  };
  s.reads = {f(1, d),        f(2, d),        f(3, d),       f(4, d), f(5, d),
             f(6, d),        f(7, d),        mask_ir(8, d), f(9, d), mask_ir(10, d),
             mask_ir(11, d), mask_ir(12, d), f(13, d)};
  expect_same(s);
  // One run of every op but the last: a fill with 1e39, past f32's range, is left to the lowering
  // (which reports it), so it runs the run first.
  EXPECT_EQ(fused_.longest_run(), s.ops.size() - 1);
  EXPECT_EQ(fused_.deferred_after.back(), 0u);
}

// Ops that cannot join a run end it: the run's results are there for them, and after them a new
// run starts. Errors come out as op by op: a consumed tensor read again is unknown.
TEST_F(ElementwiseRun, OtherOpsAndErrorsInTheMiddleOfAGraph) {
  const Dims d{4, 4};
  const Dims other{2, 8};
  Stream s;
  s.inputs = {{1, f32_data(d, special_values(16, 5))}, {2, f32_data(other, special_values(16, 6))}};
  const auto nd = TensorStatus::NotInit;
  const auto rw = TensorStatus::ReadWrite;
  s.ops = {
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(1, d), f(1, d), f(3, d, nd)}, DTypeKind::F32),
      make_op<OpKind::Float_Erf>(UnaryOpIr{f(3, d), f(4, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Mul>(BinaryOpIr{f(4, d, rw), f(3, d), f(5, d, nd)},
                                        DTypeKind::F32),
      // Another shape: its own run.
      make_op<OpKind::NumericFloat_MulScalar>(
          ScalarOpIr{f(2, other), ScalarIr::f(2.0), f(6, other, nd)}, DTypeKind::F32),
      // f64: not fused, runs as it is.
      make_op<OpKind::NumericFloat_AddScalar>(
          ScalarOpIr{tir(1, d, DTypeKind::F32), ScalarIr::f(1.0), f(7, d, nd)}, DTypeKind::F64),
      // #5 is consumed here and unknown after.
      make_op<OpKind::NumericFloat_SubScalar>(
          ScalarOpIr{f(5, d, rw), ScalarIr::f(1.0), f(8, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(5, d), f(8, d), f(9, d, nd)}, DTypeKind::F32),
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(9, d), f(1, d), f(10, d, nd)}, DTypeKind::F32),
      // An unknown input.
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(99, d), f(1, d), f(11, d, nd)},
                                        DTypeKind::F32),
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{f(8, d), f(1, d), f(12, d, nd)}, DTypeKind::F32),
  };
  s.reads = {f(3, d), f(4, d), f(5, d),  f(6, other), f(7, d),
             f(8, d), f(9, d), f(10, d), f(11, d),    f(12, d)};
  expect_same(s);
  // The runs: [add], log1p (ends it), [mul], [mul_scalar on the other shape], the f64 op (ends
  // it), [sub_scalar], the adds on a consumed, a failed and an unknown input (each fails, eager),
  // [add], read at the end.
  EXPECT_EQ(fused_.deferred_after, (std::vector<std::size_t>{1, 0, 1, 1, 0, 1, 0, 0, 0, 1}));
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// Random streams over every op a run accepts, some it does not, with random operands (fresh
// results, stored tensors, masks), statuses and scalars: the run must always match op by op.
TEST_F(ElementwiseRun, RandomStreamsMatchOpByOp) {
  const Dims d{3, 5};
  const auto nd = TensorStatus::NotInit;
  std::size_t longest = 0;
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    Stream s;
    std::vector<std::uint64_t> floats = {1, 2, 3};
    std::vector<std::uint64_t> masks;
    for (std::uint64_t id : floats)
      s.inputs.push_back({id, f32_data(d, special_values(15, seed * 7 + id))});
    std::uint64_t next = 10;
    const std::vector<double> scalars = {0.0, -0.0, 1.5, -3.0, 1e-40, 2.0, 0.1, 1e39, -1e30};
    const auto status = [&] {
      return pick(4) == 0 ? TensorStatus::ReadWrite : TensorStatus::ReadOnly;
    };
    for (int i = 0; i < 40; ++i) {
      const std::uint64_t a = floats[pick(floats.size())];
      const std::uint64_t b = floats[pick(floats.size())];
      const ScalarIr sc = ScalarIr::f(scalars[pick(scalars.size())]);
      const std::uint64_t y = next++;
      OperationIr op;
      bool to_mask = false;
      switch (pick(22)) {
        case 0:
          op = make_op<OpKind::NumericFloat_Add>(
              BinaryOpIr{f(a, d, status()), f(b, d), f(y, d, nd)}, DTypeKind::F32);
          break;
        case 1:
          op = make_op<OpKind::NumericFloat_Sub>(
              BinaryOpIr{f(a, d), f(b, d, status()), f(y, d, nd)}, DTypeKind::F32);
          break;
        case 2:
          op = make_op<OpKind::NumericFloat_Mul>(
              BinaryOpIr{f(a, d, status()), f(b, d), f(y, d, nd)}, DTypeKind::F32);
          break;
        case 3:
          op = make_op<OpKind::NumericFloat_Div>(BinaryOpIr{f(a, d), f(b, d), f(y, d, nd)},
                                                 DTypeKind::F32);
          break;
        case 4:
          op = make_op<OpKind::NumericFloat_AddScalar>(
              ScalarOpIr{f(a, d, status()), sc, f(y, d, nd)}, DTypeKind::F32);
          break;
        case 5:
          op = make_op<OpKind::NumericFloat_DivScalar>(ScalarOpIr{f(a, d), sc, f(y, d, nd)},
                                                       DTypeKind::F32);
          break;
        case 6:
          op = make_op<OpKind::NumericFloat_MulScalar>(ScalarOpIr{f(a, d), sc, f(y, d, nd)},
                                                       DTypeKind::F32);
          break;
        case 7:
          op = make_op<OpKind::NumericFloat_SubScalar>(
              ScalarOpIr{f(a, d, status()), sc, f(y, d, nd)}, DTypeKind::F32);
          break;
        case 8:
          op = make_op<OpKind::NumericFloat_LowerEqualElem>(
              ScalarOpIr{f(a, d), sc, mask_ir(y, d, nd)}, DTypeKind::F32);
          to_mask = true;
          break;
        case 9:
          op = make_op<OpKind::NumericFloat_GreaterElem>(
              ScalarOpIr{f(a, d, status()), sc, mask_ir(y, d, nd)}, DTypeKind::F32);
          to_mask = true;
          break;
        case 10:
          if (masks.empty()) {
            op = make_op<OpKind::Float_Exp>(UnaryOpIr{f(a, d), f(y, d, nd)}, DTypeKind::F32);
          } else {
            op = make_op<OpKind::BaseFloat_MaskFill>(
                MaskFillOpIr{f(a, d, status()), mask_ir(masks[pick(masks.size())], d, status()), sc,
                             f(y, d, nd)});
          }
          break;
        case 11:
          op = make_op<OpKind::Activation_Relu>(UnaryOpIr{f(a, d, status()), f(y, d, nd)});
          break;
        case 12:
          op = make_op<OpKind::NumericFloat_Neg>(UnaryOpIr{f(a, d, status()), f(y, d, nd)},
                                                 DTypeKind::F32);
          break;
        case 13:
          op = make_op<OpKind::NumericFloat_Abs>(UnaryOpIr{f(a, d, status()), f(y, d, nd)},
                                                 DTypeKind::F32);
          break;
        case 14:
          op = make_op<OpKind::NumericFloat_Lower>(
              BinaryOpIr{f(a, d), f(b, d, status()), mask_ir(y, d, nd)}, DTypeKind::F32);
          to_mask = true;
          break;
        case 15:
          op = make_op<OpKind::NumericFloat_GreaterEqual>(
              BinaryOpIr{f(a, d, status()), f(b, d), mask_ir(y, d, nd)}, DTypeKind::F32);
          to_mask = true;
          break;
        case 16:
          op = pick(2) ? make_op<OpKind::BaseFloat_Equal>(
                             BinaryOpIr{f(a, d, status()), f(b, d), mask_ir(y, d, nd)})
                       : make_op<OpKind::BaseFloat_NotEqual>(
                             BinaryOpIr{f(a, d), f(b, d), mask_ir(y, d, nd)});
          to_mask = true;
          break;
        case 17:
          op =
              pick(2)
                  ? make_op<OpKind::BaseFloat_EqualElem>(ScalarOpIr{f(a, d), sc, mask_ir(y, d, nd)})
                  : make_op<OpKind::BaseFloat_NotEqualElem>(
                        ScalarOpIr{f(a, d, status()), sc, mask_ir(y, d, nd)});
          to_mask = true;
          break;
        case 18:
          if (masks.empty()) {
            op = make_op<OpKind::Float_Log>(UnaryOpIr{f(a, d), f(y, d, nd)}, DTypeKind::F32);
          } else {
            op = make_op<OpKind::BaseFloat_MaskWhere>(
                MaskWhereOpIr{f(a, d, status()), mask_ir(masks[pick(masks.size())], d),
                              f(b, d, status()), f(y, d, nd)});
          }
          break;
        case 19:
        case 20:
          if (masks.empty()) {
            op = make_op<OpKind::Float_Exp>(UnaryOpIr{f(a, d), f(y, d, nd)}, DTypeKind::F32);
          } else {
            const std::uint64_t m1 = masks[pick(masks.size())];
            const std::uint64_t m2 = masks[pick(masks.size())];
            switch (pick(4)) {
              case 0:
                op = make_op<OpKind::Bool_Not>(
                    UnaryOpIr{mask_ir(m1, d, status()), mask_ir(y, d, nd)});
                break;
              case 1:
                op = make_op<OpKind::Bool_And>(
                    BinaryOpIr{mask_ir(m1, d), mask_ir(m2, d, status()), mask_ir(y, d, nd)});
                break;
              case 2:
                op = make_op<OpKind::Bool_Or>(
                    BinaryOpIr{mask_ir(m1, d, status()), mask_ir(m2, d), mask_ir(y, d, nd)});
                break;
              default:
                op = make_op<OpKind::Bool_Xor>(
                    BinaryOpIr{mask_ir(m1, d), mask_ir(m2, d), mask_ir(y, d, nd)});
            }
            to_mask = true;
          }
          break;
        default:  // not fusible: ends the run
          op = make_op<OpKind::Float_Erf>(UnaryOpIr{f(a, d), f(y, d, nd)}, DTypeKind::F32);
      }
      s.ops.push_back(op);
      (to_mask ? masks : floats).push_back(y);
    }
    for (std::uint64_t id : floats) s.reads.push_back(f(id, d));
    for (std::uint64_t id : masks) s.reads.push_back(mask_ir(id, d));
    SCOPED_TRACE(seed);
    expect_same(s);
    longest = std::max(longest, fused_.longest_run());
  }
  // Runs of ten ops and more came up, not only short ones.
  EXPECT_GE(longest, 10u);
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// A stream of `x + 1` ops on one stored input of shape `d`, each result kept alive (never
// consumed); `deferred_after(n)` adds n more and returns the ops deferred then.
class KeptResults {
  // Runs of large tensors are only formed single-threaded (with more threads ATen's parallel
  // kernels win): pin one thread, whatever the LibTorch's default (Debian's 1.13 takes 1 on this
  // 2-core machine, PyTorch 2.15 takes 2).
  struct OneThread {
    int was = at::get_num_threads();
    OneThread() { at::set_num_threads(1); }
    ~OneThread() { at::set_num_threads(was); }
  } one_thread_;

 public:
  KeptResults(backend::Backend& backend, Dims d) : d_(std::move(d)), exec_(backend.new_executor()) {
    const auto n = static_cast<std::size_t>(ir::num_elements(d_));
    EXPECT_TRUE(exec_->register_tensor(TensorId{1},
                                       make_data(d_, DTypeKind::F32, std::vector<double>(n, 1))));
  }
  std::size_t deferred_after(std::uint64_t results) {
    for (std::uint64_t i = 0; i < results; ++i) {
      EXPECT_TRUE(exec_->execute(make_op<OpKind::NumericFloat_AddScalar>(
          ScalarOpIr{f(1, d_), ScalarIr::f(1.0), f(next_++, d_, TensorStatus::NotInit)},
          DTypeKind::F32)));
      // Deferred or not, every result counts as live at once (the host's memory limits).
      EXPECT_EQ(exec_->stats().live_tensors, next_ - 100 + 1);
      EXPECT_EQ(exec_->stats().live_bytes, (next_ - 100 + 1) * ir::num_elements(d_) * 4);
    }
    return dynamic_cast<backend::libtorch::LibTorchExecutor&>(*exec_).deferred_ops();
  }

 private:
  Dims d_;
  std::unique_ptr<backend::Executor> exec_;
  std::uint64_t next_ = 100;
};

// A run ends before its live results could take more than its bound (16 MiB).
TEST_F(ElementwiseRun, ARunEndsBeforeItsLiveResultsOutgrowItsBound) {
  KeptResults g(*backend_, {1024, 1024});  // 4 MiB per result: the fifth live result ends the run
  EXPECT_EQ(g.deferred_after(4), 4u) << "four results (16 MiB) stay deferred";
  EXPECT_EQ(g.deferred_after(1), 1u) << "the fifth ended the run and began the next";
}

TEST_F(ElementwiseRun, ARunEndsAtItsOpBoundWhateverItsBytes) {
  KeptResults g(*backend_, {1});  // the byte bound never ends this run; the op bound (1024) does
  EXPECT_EQ(g.deferred_after(1024), 1024u) << "1024 results stay deferred";
  EXPECT_EQ(g.deferred_after(1), 1u) << "the 1025th ended the run and began the next";
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// Ops may stay deferred across calls (the plain client sends them one task at a time), so every
// other entry point runs them first: none may see the tensors as they were before the ops.
TEST_F(ElementwiseRun, EveryOtherEntryPointRunsWhatIsDeferred) {
  const Dims d{2, 3};
  const auto nd = TensorStatus::NotInit;
  const auto deferred_add = [&](Executor& e) {
    EXPECT_TRUE(e.register_tensor(TensorId{1}, f32_data(d, {1, 2, 3, 4, 5, 6})));
    EXPECT_TRUE(e.execute(make_op<OpKind::NumericFloat_AddScalar>(
        ScalarOpIr{f(1, d, TensorStatus::ReadWrite), ScalarIr::f(1.0), f(2, d, nd)},
        DTypeKind::F32)));
    EXPECT_TRUE(e.has_deferred());
  };
  const std::vector<Entry> entries = every_other_entry(
      f(2, d), f32_data(d, {0, 0, 0, 0, 0, 0}),
      make_op<OpKind::Float_Erf>(UnaryOpIr{f(2, d), f(4, d, nd)}, DTypeKind::F32));
  for (const auto& [name, entry] : entries) {
    SCOPED_TRACE(name);
    auto e = backend_->new_executor();
    deferred_add(*e);
    EXPECT_EQ(e->stats().live_tensors, 1u) << "#2 counts as live, #1 as consumed, as if run";
    EXPECT_EQ(e->stats().live_bytes, 6u * 4);
    entry(*e);
    EXPECT_FALSE(e->has_deferred());
    auto* lt = dynamic_cast<backend::libtorch::LibTorchExecutor*>(e.get());
    ASSERT_NE(lt, nullptr);
    EXPECT_FALSE(lt->stored(1).defined()) << "#1 was consumed by the add";
    if (std::string(name) != "transfer") {
      const at::Tensor two = lt->stored(2);
      ASSERT_TRUE(two.defined());
      EXPECT_EQ(two[1][2].item<float>(), 7.0f);
    }
  }
}

}  // namespace
}  // namespace tb::test
