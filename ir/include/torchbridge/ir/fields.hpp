// TB_STRUCT: declare an IR aggregate once; its field list drives codec, equality and printing.
//
//   TB_STRUCT(UnaryOpIr, (TensorIr, input), (TensorIr, out));
//
// declares `struct UnaryOpIr { TensorIr input; TensorIr out; };` plus a FieldList<UnaryOpIr>
// specialisation with the wire order, the field names and a visitor. A field type may not contain
// a top-level comma: use the aliases in types.hpp (Usizes<N>, PaddingPairs<N>, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace tb::ir {

// Specialised by TB_STRUCT for every aggregate.
template <class T>
struct FieldList;

template <class T, class = void>
struct HasFieldList : std::false_type {};
template <class T>
struct HasFieldList<T, std::void_t<decltype(FieldList<T>::kCount)>> : std::true_type {};
template <class T>
inline constexpr bool kHasFieldList = HasFieldList<T>::value;

// A struct whose wire layout changed at one protocol version: fields only the layouts before
// `kSince` carry (kOld) and fields only the layouts from `kSince` carry (kNew), as bit masks of
// field indices. The two layouts differ in length, so a decoder tells them apart by the array's
// length alone, whatever the session's version; a writer picks by its protocol version.
// `complete` fills the fields the decoded layout lacks from those it has, so that every consumer
// reads one set of fields whatever version sent them. Specialised with TB_FIELD_LAYOUTS.
template <class T>
struct FieldLayouts {
  static constexpr std::uint16_t kSince = 0;
  static constexpr std::uint64_t kOld = 0;
  static constexpr std::uint64_t kNew = 0;
  static void complete(T&, bool /*old_layout*/) {}
};

// The bit of each named field of T (names as declared), for FieldLayouts' masks.
template <class T>
constexpr std::uint64_t field_bits(std::initializer_list<const char*> names) {
  std::uint64_t bits = 0;
  for (const char* want : names) {
    bool found = false;
    for (std::size_t i = 0; i < FieldList<T>::kCount; ++i) {
      const char* have = FieldList<T>::kFieldNames[i];
      std::size_t k = 0;
      while (have[k] != 0 && have[k] == want[k]) ++k;
      if (have[k] == want[k]) {
        bits |= std::uint64_t{1} << i;
        found = true;
      }
    }
    if (!found) throw "field_bits: no such field";  // a compile error in a constant expression
  }
  return bits;
}

constexpr std::size_t bit_count(std::uint64_t bits) {
  std::size_t n = 0;
  for (; bits; bits &= bits - 1) ++n;
  return n;
}

}  // namespace tb::ir

#define TB_PP_NARGS(...) \
  TB_PP_NARGS_IMPL(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define TB_PP_NARGS_IMPL(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, N, \
                         ...)                                                                      \
  N
#define TB_PP_CAT(a, b) TB_PP_CAT_I(a, b)
#define TB_PP_CAT_I(a, b) a##b
// TB_PP_FOR_EACH(M, sep, x1, ..., xn) -> M(x1) sep M(x2) ... (sep is a macro name expanding to the
// separator)
#define TB_PP_FOR_EACH(M, S, ...) TB_PP_CAT(TB_PP_FE_, TB_PP_NARGS(__VA_ARGS__))(M, S, __VA_ARGS__)
#define TB_PP_FE_1(M, S, x) M(x)
#define TB_PP_FE_2(M, S, x, ...) M(x) S() TB_PP_FE_1(M, S, __VA_ARGS__)
#define TB_PP_FE_3(M, S, x, ...) M(x) S() TB_PP_FE_2(M, S, __VA_ARGS__)
#define TB_PP_FE_4(M, S, x, ...) M(x) S() TB_PP_FE_3(M, S, __VA_ARGS__)
#define TB_PP_FE_5(M, S, x, ...) M(x) S() TB_PP_FE_4(M, S, __VA_ARGS__)
#define TB_PP_FE_6(M, S, x, ...) M(x) S() TB_PP_FE_5(M, S, __VA_ARGS__)
#define TB_PP_FE_7(M, S, x, ...) M(x) S() TB_PP_FE_6(M, S, __VA_ARGS__)
#define TB_PP_FE_8(M, S, x, ...) M(x) S() TB_PP_FE_7(M, S, __VA_ARGS__)
#define TB_PP_FE_9(M, S, x, ...) M(x) S() TB_PP_FE_8(M, S, __VA_ARGS__)
#define TB_PP_FE_10(M, S, x, ...) M(x) S() TB_PP_FE_9(M, S, __VA_ARGS__)
#define TB_PP_FE_11(M, S, x, ...) M(x) S() TB_PP_FE_10(M, S, __VA_ARGS__)
#define TB_PP_FE_12(M, S, x, ...) M(x) S() TB_PP_FE_11(M, S, __VA_ARGS__)
#define TB_PP_FE_13(M, S, x, ...) M(x) S() TB_PP_FE_12(M, S, __VA_ARGS__)
#define TB_PP_FE_14(M, S, x, ...) M(x) S() TB_PP_FE_13(M, S, __VA_ARGS__)
#define TB_PP_FE_15(M, S, x, ...) M(x) S() TB_PP_FE_14(M, S, __VA_ARGS__)
#define TB_PP_FE_16(M, S, x, ...) M(x) S() TB_PP_FE_15(M, S, __VA_ARGS__)
#define TB_PP_SEP_NONE()
#define TB_PP_SEP_AND() &&
#define TB_PP_SEP_COMMA() ,

#define TB_FIELD_TYPE(pair) TB_FIELD_TYPE_I pair
#define TB_FIELD_TYPE_I(type, name) type
#define TB_FIELD_NAME(pair) TB_FIELD_NAME_I pair
#define TB_FIELD_NAME_I(type, name) name

#define TB_FIELD_DECLARE(pair) TB_FIELD_TYPE(pair) TB_FIELD_NAME(pair){};
#define TB_FIELD_NAME_STR(pair) TB_PP_STR(TB_FIELD_NAME(pair))
#define TB_FIELD_VISIT(pair) v(TB_PP_STR(TB_FIELD_NAME(pair)), s.TB_FIELD_NAME(pair))
#define TB_FIELD_EQUAL(pair) (a.TB_FIELD_NAME(pair) == b.TB_FIELD_NAME(pair))
#define TB_PP_STR(x) TB_PP_STR_I(x)
#define TB_PP_STR_I(x) #x

// Declares the struct in the current namespace; FieldList lives in tb::ir, so use TB_STRUCT only
// inside namespace tb::ir.
#define TB_STRUCT(Name, ...)                                                   \
  struct Name {                                                                \
    TB_PP_FOR_EACH(TB_FIELD_DECLARE, TB_PP_SEP_NONE, __VA_ARGS__)              \
    friend bool operator==(const Name& a, const Name& b) {                     \
      return TB_PP_FOR_EACH(TB_FIELD_EQUAL, TB_PP_SEP_AND, __VA_ARGS__);       \
    }                                                                          \
    friend bool operator!=(const Name& a, const Name& b) { return !(a == b); } \
  };                                                                           \
  template <>                                                                  \
  struct FieldList<Name> {                                                     \
    static constexpr const char* kName = #Name;                                \
    static constexpr std::size_t kCount = TB_PP_NARGS(__VA_ARGS__);            \
    static constexpr const char* kFieldNames[] = {                             \
        TB_PP_FOR_EACH(TB_FIELD_NAME_STR, TB_PP_SEP_COMMA, __VA_ARGS__)};      \
    /* Calls v(name, field) in wire order, stopping at the first false. */     \
    template <class S, class V>                                                \
    static bool visit(S& s, V&& v) {                                           \
      return TB_PP_FOR_EACH(TB_FIELD_VISIT, TB_PP_SEP_AND, __VA_ARGS__);       \
    }                                                                          \
  }

#include <array>
#include <cstdint>
#include <string_view>

namespace tb::ir {
// Specialised by TB_UNIT_ENUM: the Burn variant names of a fieldless enum, in declaration order.
template <class E>
struct EnumNames;

template <class E, class = void>
struct IsUnitEnum : std::false_type {};
template <class E>
struct IsUnitEnum<E, std::void_t<decltype(EnumNames<E>::kNames)>> : std::true_type {};
template <class E>
inline constexpr bool kIsUnitEnum = IsUnitEnum<E>::value;

template <class E>
constexpr std::string_view enum_name(E e) {
  const auto i = static_cast<std::size_t>(e);
  return i < EnumNames<E>::kNames.size() ? EnumNames<E>::kNames[i] : std::string_view("?");
}
}  // namespace tb::ir

#define TB_ENUM_STR(x) #x
// A Burn enum whose variants carry no data: serialised as the bare variant name.
#define TB_UNIT_ENUM(Name, ...)                                                        \
  enum class Name : std::uint8_t { __VA_ARGS__ };                                      \
  template <>                                                                          \
  struct EnumNames<Name> {                                                             \
    static constexpr const char* kName = #Name;                                        \
    static constexpr std::array<std::string_view, TB_PP_NARGS(__VA_ARGS__)> kNames = { \
        TB_PP_FOR_EACH(TB_ENUM_STR, TB_PP_SEP_COMMA, __VA_ARGS__)};                    \
  }
