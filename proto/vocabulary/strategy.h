// How a rollout moves the nodes: one enum for the engine, the store, the wire and the CLI, and
// one table in strategy.cc giving each strategy its wire value (handoff.v1.Strategy) and its
// name (what the store keeps and the operator reads).
#ifndef HANDOFF_PROTO_VOCABULARY_STRATEGY_H_
#define HANDOFF_PROTO_VOCABULARY_STRATEGY_H_

#include <optional>
#include <string_view>

#include "handoff/v1/handoff.pb.h"

namespace handoff {

// Leader Migration (in-tree ⇄ prepared ⇄ migrated ⇄ finalized); AWS's downtime path (in-tree ⇄
// stopped ⇄ external ⇄ finalized), whose only forward goal is finalized and only backward one
// in-tree; or Leader Migration by replacing nodes (coordinator/rollout/replacement.h), whose
// nodes move along the Leader Migration path.
enum class Strategy { kLeaderMigration, kDowntime, kReplace };

// "leader-migration", "downtime", "replace".
std::string_view StrategyName(Strategy strategy);
std::optional<Strategy> StrategyNamed(std::string_view name);
v1::Strategy ToProto(Strategy strategy);
// std::nullopt for STRATEGY_UNSPECIFIED (the caller's default) and values this build does not
// know.
std::optional<Strategy> FromProto(v1::Strategy strategy);
// The path a node of the strategy moves along: a replacement's nodes go by Leader Migration.
Strategy PathOf(Strategy strategy);

}  // namespace handoff

#endif  // HANDOFF_PROTO_VOCABULARY_STRATEGY_H_
