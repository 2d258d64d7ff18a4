// `torchbridge ops`: every Burn IR leaf, the wire versions that have it, and whether it is lowered.
#pragma once

#include <cstdint>
#include <ostream>

namespace tb::cli {

enum class OpsFormat { kText, kJson, kMarkdown };

// `protocol` 0: every served version (the markdown then has one section per version); otherwise
// that version's leaves only. Returns the exit code (2 for a version this host does not serve).
int list_ops(OpsFormat format, std::uint16_t protocol);
// docs/op-coverage.md.
void print_ops_markdown(std::ostream& out, std::uint16_t protocol);

}  // namespace tb::cli
