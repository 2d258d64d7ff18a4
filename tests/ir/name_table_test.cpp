// The decoder's variant-name lookup: every name found at its index, nothing else found, and the
// answer never depends on how names collide in the table.
#include "name_table.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "torchbridge/ir/operation.hpp"
#include "torchbridge/ir/types.hpp"

namespace tb::ir {
namespace {

template <const auto& Names>
void expect_each_name_and_no_other() {
  for (std::size_t i = 0; i < Names.size(); ++i) {
    const std::string name(Names[i]);
    EXPECT_EQ(find_name<Names>(name), static_cast<int>(i)) << name;
    EXPECT_EQ(find_name<Names>(name + "x"), -1) << name;
    EXPECT_EQ(find_name<Names>(name.substr(0, name.size() - 1)), -1) << name;
    std::string changed = name;
    changed[changed.size() / 2] ^= 0x20;  // same length, same first and last byte
    if (changed.size() > 2) {
      EXPECT_EQ(find_name<Names>(changed), -1) << changed;
    }
  }
  EXPECT_EQ(find_name<Names>(""), -1);
}

TEST(NameTable, FindsEveryNameOfAnEnumAndNoOther) {
  expect_each_name_and_no_other<EnumNames<DTypeKind>::kNames>();
  expect_each_name_and_no_other<EnumNames<TensorStatus>::kNames>();
  expect_each_name_and_no_other<EnumNames<OpCategory>::kNames>();
  expect_each_name_and_no_other<EnumNames<QuantValue>::kNames>();
}

// Every entry under one hash: the probe walks them all and still returns the one that matches.
TEST(NameTable, CollidingNamesAreToldApartByTheirBytes) {
  const std::vector<std::string> names = {"F32", "I32", "U32", "F64", "ReadWrite", "a", ""};
  NameTable<name_table_capacity(7)> table;
  for (std::size_t i = 0; i < names.size(); ++i) table.insert(42, i);
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(table.find(42, [&](std::size_t k) { return same_name(names[k], names[i]); }),
              static_cast<int>(i));
  }
  EXPECT_EQ(table.find(42, [&](std::size_t k) { return same_name(names[k], "F16"); }), -1);
}

// same_name compares words where names are long enough; every length up to 40 and a difference
// at each position.
TEST(NameTable, SameNameComparesEveryByte) {
  for (std::size_t n = 0; n <= 40; ++n) {
    const std::string a(n, 'q');
    EXPECT_TRUE(same_name(a, std::string(n, 'q')));
    EXPECT_FALSE(same_name(a, std::string(n + 1, 'q')));
    for (std::size_t k = 0; k < n; ++k) {
      std::string b = a;
      b[k] = 'r';
      EXPECT_FALSE(same_name(a, b)) << n << " " << k;
    }
  }
}

}  // namespace
}  // namespace tb::ir
