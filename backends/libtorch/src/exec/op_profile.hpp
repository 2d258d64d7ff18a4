// Where a session's executor spends its time, per op kind: set TB_OP_PROFILE=1 in the host's
// environment and each session prints a table to stderr when it ends (docs/benchmarks.md, issue 18
// item 6). Off, it costs one branch per op.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "torchbridge/ir/operation.hpp"

namespace tb::backend::libtorch {

class OpProfile {
 public:
  using Clock = std::chrono::steady_clock;

  // A profile when TB_OP_PROFILE is set (to anything but "0"), else null.
  static std::unique_ptr<OpProfile> from_env() {
    const char* v = std::getenv("TB_OP_PROFILE");
    if (v == nullptr || std::string(v) == "0") return nullptr;
    return std::make_unique<OpProfile>();
  }

  // `deferred`: the op joined an element-wise run (its time is the run's, counted at the flush).
  void op(ir::OpKind kind, Clock::duration spent, bool deferred) {
    Row& r = rows_[static_cast<std::size_t>(kind)];
    ++r.count;
    r.ns += static_cast<std::uint64_t>(std::chrono::nanoseconds(spent).count());
    if (deferred) ++r.deferred;
  }
  // Time spent in runs so far.
  Clock::duration flushed() const { return std::chrono::nanoseconds(flush_ns_); }
  void flush(Clock::duration spent, std::size_t ops) {
    ++flushes_;
    flushed_ops_ += ops;
    flush_ns_ += static_cast<std::uint64_t>(std::chrono::nanoseconds(spent).count());
  }

  // A destructor must not throw: a table that cannot be formatted (memory ran out) is not printed.
  ~OpProfile() {
    try {
      print();
    } catch (...) {
    }
  }

 private:
  void print() const {
    struct Line {
      std::string name;
      Row row;
    };
    std::vector<Line> lines;
    std::uint64_t total = flush_ns_;
    for (std::size_t k = 0; k < rows_.size(); ++k) {
      if (rows_[k].count == 0) continue;
      lines.push_back({std::string(ir::op_name(static_cast<ir::OpKind>(k))), rows_[k]});
      total += rows_[k].ns;
    }
    if (flushes_ > 0) lines.push_back({"(element-wise runs)", {flushes_, flushed_ops_, flush_ns_}});
    std::sort(lines.begin(), lines.end(),
              [](const Line& a, const Line& b) { return a.row.ns > b.row.ns; });
    std::string out =
        fmt::format("op profile: {:.3f} ms in all\n{:<40} {:>9} {:>9} {:>11} {:>8}\n",
                    static_cast<double>(total) * 1e-6, "op", "count", "deferred", "ms", "us/op");
    for (const Line& l : lines) {
      out += fmt::format("{:<40} {:>9} {:>9} {:>11.3f} {:>8.2f}\n", l.name, l.row.count,
                         l.row.deferred, static_cast<double>(l.row.ns) * 1e-6,
                         static_cast<double>(l.row.ns) * 1e-3 / static_cast<double>(l.row.count));
    }
    std::fputs(out.c_str(), stderr);
  }

  struct Row {
    std::uint64_t count = 0;
    std::uint64_t deferred = 0;  // for the runs' line: the ops they ran
    std::uint64_t ns = 0;
  };
  std::array<Row, ir::kOpKindCount> rows_{};
  std::uint64_t flushes_ = 0, flushed_ops_ = 0, flush_ns_ = 0;
};

}  // namespace tb::backend::libtorch
