#include "torchbridge/ir/format.hpp"

#include <gtest/gtest.h>

namespace tb::ir {
namespace {

TEST(Format, TensorsAndOps) {
  TensorIr t{TensorId{3}, Shape{{2, 3}}, TensorStatus::ReadWrite, DTypeKind::BF16};
  EXPECT_EQ(fmt::format("{}", t), "#3[2, 3] bf16 ReadWrite");
  auto op =
      make_op<OpKind::NumericFloat_AddScalar>(ScalarOpIr{t, ScalarIr::f(1.5), t}, DTypeKind::BF16);
  EXPECT_EQ(fmt::format("{}", op),
            "NumericFloat.AddScalar(bf16) ScalarOpIr {lhs: #3[2, 3] bf16 ReadWrite, rhs: 1.5f, "
            "out: #3[2, 3] bf16 ReadWrite}");
  EXPECT_EQ(fmt::format("{}", DType::boolean(BoolStore::U8)), "bool(u8)");
  EXPECT_EQ(fmt::format("{}", ExecutionError{ExecutionErrorKind::Generic, "x"}), "Generic(\"x\")");
}

TEST(Format, Tasks) {
  Task task = SyncBackendTask{4, StreamId{1}};
  EXPECT_EQ(fmt::format("{}", task), "SyncBackendTask {request_id: 4, stream_id: stream 1}");
  EXPECT_EQ(task_name(task), "SyncBackend");
}

}  // namespace
}  // namespace tb::ir
