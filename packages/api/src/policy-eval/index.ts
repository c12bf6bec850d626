/**
 * `@calico-ts/api/policy-eval`: the reference policy evaluator with a trace. Given the resources
 * (a `PolicyWorld`) and one flow, `new PolicyEvaluator(world).evaluate(flow)` returns the verdict
 * and, for each direction, the tiers, policies, rules and selectors that led to it, and what the
 * staged policies would change. Pure calculation; reading the resources is the caller's job.
 */
export { PolicyEvaluator } from './evaluator.js';
export { carriesUnenforcedField } from './match.js';
export type {
  Check,
  Decision,
  Direction,
  DirectionOutcome,
  DirectionTrace,
  EndOfTierDecision,
  EndpointKind,
  EndpointSummary,
  Flow,
  FlowProtocol,
  NoProfileDecision,
  PolicyKind,
  PolicyTrace,
  PolicyWorld,
  ProfileDecision,
  ProfileTrace,
  RuleDecision,
  RuleTrace,
  StagedChangeSummary,
  StagedTrace,
  TierTrace,
  Verdict,
} from './types.js';
