//! The integration tests of the workspace, as one test binary (one link instead of one per file):
//! engine traces, decisions, failures and persistence, the macros, the stores, sessions and spans.

mod durability;
mod engine_call_ids;
mod engine_cancel;
mod engine_config;
mod engine_continue;
mod engine_decisions;
mod engine_discard;
mod engine_empty_replies;
mod engine_endings;
mod engine_failures;
mod engine_matchers;
mod engine_message_hooks;
mod engine_model;
mod engine_panics;
mod engine_persistence;
mod engine_post_outcome;
mod engine_settled;
mod engine_tool_boundary;
mod engine_trace;
mod hook_index;
mod macro_agent;
mod macro_hooks;
mod macro_multi_agent;
mod macro_tools;
mod multi_agent_context;
mod multi_agent_guardrails;
mod multi_agent_handoff;
mod multi_agent_limits;
mod multi_agent_run_hooks;
mod multi_agent_subagent;
mod session_compaction;
mod store_memory;
mod store_sqlite;
mod store_turn_lease;
mod tracing_spans;
