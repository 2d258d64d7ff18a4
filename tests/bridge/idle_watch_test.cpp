// The idle rule of a session's websocket (transport/idle_watch.hpp).
#include "transport/idle_watch.hpp"

#include <gtest/gtest.h>

namespace tb::test {
namespace {

using bridge::IdleWatch;
using Action = IdleWatch::Action;

TEST(IdleWatch, ASilentClientIsPingedThenClosed) {
  IdleWatch w;
  EXPECT_EQ(w.tick(true), Action::kPing);
  EXPECT_EQ(w.tick(true), Action::kClose);
}

TEST(IdleWatch, AnyTrafficInAPeriodKeepsTheConnection) {
  IdleWatch w;
  for (int i = 0; i < 5; ++i) {
    w.heard();
    EXPECT_EQ(w.tick(true), Action::kNone);
  }
  EXPECT_EQ(w.tick(true), Action::kPing);
  w.heard();  // the pong
  EXPECT_EQ(w.tick(true), Action::kNone);
  EXPECT_EQ(w.tick(true), Action::kPing) << "a new silence starts over with a ping";
}

TEST(IdleWatch, AConnectionThatIsNotReadIsNeverPingedOrClosed) {
  IdleWatch w;
  EXPECT_EQ(w.tick(true), Action::kPing);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(w.tick(false), Action::kNone);
  EXPECT_EQ(w.tick(true), Action::kPing) << "reading again starts a new silence";
  EXPECT_EQ(w.tick(true), Action::kClose);
}

}  // namespace
}  // namespace tb::test
