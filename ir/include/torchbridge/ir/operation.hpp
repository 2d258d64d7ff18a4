// OperationIr: Burn's operation tree, flattened to one leaf kind per (category, variant).
//
// Burn nests enums (`OperationIr::NumericFloat(DType, NumericOperationIr::Add(BinaryOpIr))`); the
// C++ form keeps the same information as a flat OpKind (`OpKind::NumericFloat_Add`), the DType
// the category carries, and the payload struct. All of it is generated from the .def tables.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <variant>

#include "torchbridge/ir/payloads.hpp"

namespace tb::ir {

// The tables, one per inner Burn enum.
#include "torchbridge/ir/activation_ops.def"
#include "torchbridge/ir/base_ops.def"
#include "torchbridge/ir/bool_ops.def"
#include "torchbridge/ir/distributed_ops.def"
#include "torchbridge/ir/float_ops.def"
#include "torchbridge/ir/int_ops.def"
#include "torchbridge/ir/module_ops.def"
#include "torchbridge/ir/numeric_ops.def"

// The inner Burn enums, one enumerator per row.
#define TB_INNER_ENUMERATOR(Cat, V, P, ...) V,
enum class BaseOp : std::uint8_t { TB_BASE_OPS(TB_INNER_ENUMERATOR, _) };
enum class NumericOp : std::uint8_t { TB_NUMERIC_OPS(TB_INNER_ENUMERATOR, _) };
enum class FloatOp : std::uint8_t { TB_FLOAT_OPS(TB_INNER_ENUMERATOR, _) };
enum class IntOp : std::uint8_t { TB_INT_OPS(TB_INNER_ENUMERATOR, _) };
enum class BoolOp : std::uint8_t { TB_BOOL_OPS(TB_INNER_ENUMERATOR, _) };
enum class ModuleOp : std::uint8_t { TB_MODULE_OPS(TB_INNER_ENUMERATOR, _) };
enum class ActivationOp : std::uint8_t { TB_ACTIVATION_OPS(TB_INNER_ENUMERATOR, _) };
enum class DistributedOp : std::uint8_t { TB_DISTRIBUTED_OPS(TB_INNER_ENUMERATOR, _) };
#undef TB_INNER_ENUMERATOR

// OperationIr's variants, in Burn's declaration order.
TB_UNIT_ENUM(OpCategory, BaseFloat, BaseInt, BaseBool, NumericFloat, NumericInt, Bool, Int, Float,
             Module, Init, Custom, Drop, Distributed, Activation);

// The protocol versions whose IR has a leaf (the tables' Wire column).
struct WireRange {
  std::uint16_t since;
  std::uint16_t until;
  constexpr bool has(std::uint16_t version) const { return since <= version && version <= until; }
};
#define TB_WIRE_all     \
  ::tb::ir::WireRange { \
    0, 0xffff           \
  }
#define TB_WIRE_v2      \
  ::tb::ir::WireRange { \
    0, 5                \
  }
#define TB_WIRE_v6      \
  ::tb::ir::WireRange { \
    6, 0xffff           \
  }

// Every leaf of the tree. The X-macro TB_OP_LEAVES(X) calls X(Category, Variant, Payload, Lowering,
// Fn, Wire) per leaf, with Variant `Op` for the categories that have no inner enum
// (OpKind::Init_Op, "Init"). The IR reads the first three; see the .def tables for the last two.
// clang-format off
#define TB_OP_LEAVES(X)                                                                \
  TB_BASE_OPS(X, BaseFloat) TB_BASE_OPS(X, BaseInt) TB_BASE_OPS(X, BaseBool)            \
  TB_NUMERIC_OPS(X, NumericFloat) TB_NUMERIC_OPS(X, NumericInt)                         \
  TB_BOOL_OPS(X, Bool) TB_INT_OPS(X, Int) TB_FLOAT_OPS(X, Float) TB_MODULE_OPS(X, Module) \
  X(Init, Op, InitOperationIr, own, _, all) X(Custom, Op, CustomOpIr, own, _, all)      \
  X(Drop, Op, TensorIr, own, _, all)                                                    \
  TB_DISTRIBUTED_OPS(X, Distributed) TB_ACTIVATION_OPS(X, Activation)
// clang-format on

enum class OpKind : std::uint16_t {
#define TB_LEAF_ENUM(Cat, V, P, ...) TB_LEAF_ID(Cat, V),
#define TB_LEAF_ID(Cat, V) TB_LEAF_ID_I(Cat, V)
#define TB_LEAF_ID_I(Cat, V) Cat##_##V
  TB_OP_LEAVES(TB_LEAF_ENUM)
#undef TB_LEAF_ENUM
};

inline constexpr std::size_t kOpKindCount = 0
#define TB_LEAF_COUNT(Cat, V, P, ...) +1
    TB_OP_LEAVES(TB_LEAF_COUNT)
#undef TB_LEAF_COUNT
    ;

// The category of every leaf, and the first leaf of a category, at compile time.
#define TB_LEAF_CATEGORY(Cat, V, P, ...) OpCategory::Cat,
inline constexpr OpCategory kLeafCategories[] = {TB_OP_LEAVES(TB_LEAF_CATEGORY)};
#undef TB_LEAF_CATEGORY
constexpr OpKind first_kind_of(OpCategory c) {
  for (std::size_t k = 0; k < kOpKindCount; ++k)
    if (kLeafCategories[k] == c) return static_cast<OpKind>(k);
  return static_cast<OpKind>(kOpKindCount);
}
// The leaf of an inner-enum variant under a category: leaf_of(OpCategory::BaseInt, BaseOp::Cat).
template <class Inner>
constexpr OpKind leaf_of(OpCategory c, Inner variant) {
  return static_cast<OpKind>(static_cast<std::size_t>(first_kind_of(c)) +
                             static_cast<std::size_t>(variant));
}

// ---- The payload variant: every distinct payload type once, in first-use order. -------------
namespace detail {
template <class... Ts>
struct TypeList {};
template <class List, class T>
struct AppendUnique;
template <class... Ts, class T>
struct AppendUnique<TypeList<Ts...>, T> {
  using type =
      std::conditional_t<(std::is_same_v<T, Ts> || ...), TypeList<Ts...>, TypeList<Ts..., T>>;
};
template <class Acc, class... Ts>
struct Unique {
  using type = Acc;
};
template <class Acc, class T, class... Ts>
struct Unique<Acc, T, Ts...> : Unique<typename AppendUnique<Acc, T>::type, Ts...> {};
template <class List>
struct ToVariant;
template <class... Ts>
struct ToVariant<TypeList<Ts...>> {
  using type = std::variant<Ts...>;
};
#define TB_LEAF_PAYLOAD(Cat, V, P, ...) , P
using AllPayloads = Unique<TypeList<>, UnitPayload TB_OP_LEAVES(TB_LEAF_PAYLOAD)>::type;
#undef TB_LEAF_PAYLOAD
}  // namespace detail

using OpPayload = detail::ToVariant<detail::AllPayloads>::type;

// Leaf metadata, indexed by OpKind.
struct OpInfo {
  OpCategory category;
  std::uint8_t variant;           // index in the inner enum (0 for Init/Custom/Drop)
  std::string_view name;          // "NumericFloat.Add", "Init"
  std::string_view variant_name;  // "Add", "" for Init/Custom/Drop
  std::uint8_t payload_index;     // OpPayload alternative
  WireRange wire;                 // the protocol versions that have it
};

const OpInfo& op_info(OpKind kind);
inline std::string_view op_name(OpKind kind) {
  return op_info(kind).name;
}
inline OpCategory op_category(OpKind kind) {
  return op_info(kind).category;
}
// Whether protocol `version`'s IR has the leaf.
inline bool op_on_wire(OpKind kind, std::uint16_t version) {
  return op_info(kind).wire.has(version);
}
// The first leaf of a category and its number of leaves.
OpKind first_kind(OpCategory category);
std::size_t kind_count(OpCategory category);
// Whether the category carries a DType before its inner enum (NumericFloat, NumericInt, Float).
constexpr bool category_has_dtype(OpCategory c) {
  return c == OpCategory::NumericFloat || c == OpCategory::NumericInt || c == OpCategory::Float;
}

struct OperationIr {
  OpKind kind{};
  DType dtype;  // for NumericFloat, NumericInt and Float
  OpPayload payload;

  // Defined once, in operation.cpp: inline, every unit that copied, moved, destroyed or compared
  // an op instantiated the payload variant's machinery for all its alternatives again (about half
  // of the compile time of a unit such as the graph cache's; docs/decisions.md, "A cold run").
  OperationIr();
  OperationIr(const OperationIr& other);
  OperationIr(OperationIr&& other) noexcept;
  OperationIr& operator=(const OperationIr& other);
  OperationIr& operator=(OperationIr&& other) noexcept;
  ~OperationIr();

  template <class P>
  const P& as() const {
    return std::get<P>(payload);
  }
  template <class P>
  P& as() {
    return std::get<P>(payload);
  }
  OpCategory category() const { return op_category(kind); }
  std::string_view name() const { return op_name(kind); }

  friend bool operator==(const OperationIr& a, const OperationIr& b);
  friend bool operator!=(const OperationIr& a, const OperationIr& b) { return !(a == b); }
};

// The payload type of a leaf, at compile time: PayloadOf<OpKind::Float_Exp>::type is UnaryOpIr.
template <OpKind K>
struct PayloadOf;
#define TB_LEAF_PAYLOAD_OF(Cat, V, P, ...)       \
  template <>                                    \
  struct PayloadOf<OpKind::TB_LEAF_ID(Cat, V)> { \
    using type = P;                              \
  };
TB_OP_LEAVES(TB_LEAF_PAYLOAD_OF)
#undef TB_LEAF_PAYLOAD_OF
template <OpKind K>
using PayloadOfT = typename PayloadOf<K>::type;

// Builds an op of a given leaf.
template <OpKind K>
OperationIr make_op(PayloadOfT<K> payload, DType dtype = DType{}) {
  OperationIr op;
  op.kind = K;
  op.dtype = dtype;
  op.payload = std::move(payload);
  return op;
}

}  // namespace tb::ir
