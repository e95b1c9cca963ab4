// The vocabulary's tables against the wire contract: every value the wire defines (but
// UNSPECIFIED) has exactly one word, its name is its own, and each conversion goes there and back.
// A value added to handoff.proto without a row fails here, not in an operator's status.
#include <cctype>
#include <optional>
#include <set>
#include <string>

#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "proto/vocabulary/node_state.h"
#include "proto/vocabulary/outcome.h"
#include "proto/vocabulary/phase.h"
#include "proto/vocabulary/strategy.h"

namespace handoff {
namespace {

// Each value of `descriptor` but the zero one (UNSPECIFIED), for `check`.
template <typename Wire, typename Check>
void ForEachWireValue(const google::protobuf::EnumDescriptor* descriptor, Check check) {
  for (int i = 0; i < descriptor->value_count(); ++i) {
    if (descriptor->value(i)->number() == 0) continue;
    check(static_cast<Wire>(descriptor->value(i)->number()), descriptor->value(i)->name());
  }
}

TEST(VocabularyTest, EveryWireNodeStateHasOneStateWithItsOwnName) {
  std::set<std::string> names;
  ForEachWireValue<v1::NodeState>(
      v1::NodeState_descriptor(), [&](v1::NodeState wire, const std::string& wire_name) {
        std::optional<NodeState> state = FromProto(wire);
        ASSERT_TRUE(state.has_value()) << wire_name;
        EXPECT_EQ(ToProto(*state), wire) << wire_name;
        const std::string name(NodeStateName(*state));
        EXPECT_TRUE(names.insert(name).second) << name << " names two states";
        EXPECT_EQ(NodeStateNamed(name), state) << name;
        // The name is the wire's, lower case, with a dash: NODE_STATE_IN_TREE is "in-tree".
        std::string expected = wire_name.substr(std::string("NODE_STATE_").size());
        for (char& c : expected) c = c == '_' ? '-' : static_cast<char>(std::tolower(c));
        EXPECT_EQ(name, expected);
        EXPECT_EQ(ParseTargetState(name).ok(), *state != NodeState::kInconsistent) << name;
      });
  EXPECT_EQ(FromProto(v1::NODE_STATE_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(NodeStateNamed("in_tree"), std::nullopt);
}

TEST(VocabularyTest, EveryWirePhaseHasOnePhaseANameAndTheMetricsLabel) {
  std::set<std::string> names;
  ForEachWireValue<v1::RolloutStatus::Phase>(
      v1::RolloutStatus::Phase_descriptor(),
      [&](v1::RolloutStatus::Phase wire, const std::string& wire_name) {
        std::string label = wire_name;
        for (char& c : label) c = static_cast<char>(std::tolower(c));
        EXPECT_EQ(PhaseLabel(wire), label);
        std::string name = label;
        for (char& c : name) c = c == '_' ? '-' : c;
        EXPECT_EQ(PhaseName(wire), name);
        EXPECT_TRUE(names.insert(name).second) << name;
      });
  // Every phase the engine derives reaches the wire.
  for (int i = 0; i <= static_cast<int>(Phase::kMovingWorkers); ++i) {
    EXPECT_NE(ToProto(static_cast<Phase>(i)), v1::RolloutStatus::PHASE_UNSPECIFIED) << i;
  }
  EXPECT_EQ(PhaseName(v1::RolloutStatus::PHASE_UNSPECIFIED), "-");
}

TEST(VocabularyTest, EveryWireStrategyHasOneStrategyWithTheNameTheStoreKeeps) {
  std::set<std::string> names;
  ForEachWireValue<v1::Strategy>(v1::Strategy_descriptor(),
                                 [&](v1::Strategy wire, const std::string& wire_name) {
                                   std::optional<Strategy> strategy = FromProto(wire);
                                   ASSERT_TRUE(strategy.has_value()) << wire_name;
                                   EXPECT_EQ(ToProto(*strategy), wire);
                                   const std::string name(StrategyName(*strategy));
                                   EXPECT_TRUE(names.insert(name).second) << name;
                                   EXPECT_EQ(StrategyNamed(name), strategy);
                                 });
  EXPECT_EQ(names, (std::set<std::string>{"leader-migration", "downtime", "replace"}));
  EXPECT_EQ(FromProto(v1::STRATEGY_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(PathOf(Strategy::kReplace), Strategy::kLeaderMigration);
  EXPECT_EQ(PathOf(Strategy::kDowntime), Strategy::kDowntime);
}

TEST(VocabularyTest, EveryWireOutcomeHasANameAndTheLabelBothDaemonsUse) {
  ForEachWireValue<v1::CommandResult::Outcome>(
      v1::CommandResult::Outcome_descriptor(),
      [&](v1::CommandResult::Outcome wire, const std::string& wire_name) {
        std::string label = wire_name;
        for (char& c : label) c = static_cast<char>(std::tolower(c));
        EXPECT_EQ(MoveOutcomeLabel(wire), label);
        std::string name = label;
        for (char& c : name) c = c == '_' ? ' ' : c;
        EXPECT_EQ(OutcomeName(wire), name);
      });
  EXPECT_EQ(MoveOutcomeLabel(v1::CommandResult::OUTCOME_UNSPECIFIED), "unknown");
}

}  // namespace
}  // namespace handoff
