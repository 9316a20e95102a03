//! Run hooks: observers of one turn across every agent it reaches ([`RunHooks`]), given per
//! turn (`TurnRequest::run_hooks`) or per session (`SessionConfig::run_hooks`).

use crate::message::ToolCall;
use crate::model::ModelRequest;
use crate::run_agent::RunAgent;

use super::{OutputReport, ToolResultRecord};

/// Observers of one turn across every agent it reaches: the agent asked, the targets of its
/// handoffs and the subagents they call (each subagent's own turn reports to the same hooks,
/// its path one level deeper). They observe only: every method has a default that does
/// nothing, runs inline (keep it quick; spawn for slow work), and a panic in one is logged and
/// ignored.
///
/// Order across a handoff (as Stratus): `on_agent_start(alpha)`, ..., `on_agent_end(alpha)`,
/// `on_handoff(alpha -> beta)`, `on_agent_start(beta)`, ..., `on_agent_end(beta)`.
///
/// Implement it by hand, or write the methods in an impl block under
/// [`#[run_hooks]`](macro@crate::run_hooks), which checks each against the trait's method of
/// its name.
pub trait RunHooks: Send + Sync + 'static {
    /// An agent starts working on the turn: the agent asked, a handoff's target, or a
    /// subagent's turn.
    fn on_agent_start(&self, agent: &RunAgent) {
        let _ = agent;
    }

    /// An agent stops: it handed the turn off (`output` is its last text), or the turn ended
    /// (`output` is the final answer, empty when it ended in error).
    fn on_agent_end(&self, agent: &RunAgent, output: &str) {
        let _ = (agent, output);
    }

    /// The turn ended with a typed answer from `agent` (an agent with an output type), just
    /// before its `on_agent_end`: the last answer as sent, and whether it validated.
    fn on_agent_output(&self, agent: &RunAgent, output: &OutputReport) {
        let _ = (agent, output);
    }

    /// `from` handed the turn to the agent named `to` (before_handoff allowed it).
    fn on_handoff(&self, from: &RunAgent, to: &str) {
        let _ = (from, to);
    }

    /// A tool call is about to go through the agent's tool hooks and run (transfer calls are
    /// handoffs, not tools).
    fn on_tool_start(&self, agent: &RunAgent, call: &ToolCall) {
        let _ = (agent, call);
    }

    /// A tool call ended, with its result as its `after_tool_call_success`/`_failure` hooks
    /// left it: `before_store_tool_result` and `before_create_message` run after this and may
    /// still change what is stored and what the model reads. Every `on_tool_start` has its
    /// end: a call cut off while it ran (its turn cancelled) ends with an error result saying
    /// it was stopped.
    fn on_tool_end(&self, agent: &RunAgent, result: &ToolResultRecord) {
        let _ = (agent, result);
    }

    /// A model call is about to be made.
    fn on_llm_start(&self, agent: &RunAgent, request: &ModelRequest) {
        let _ = (agent, request);
    }

    /// A model call ended: its text and how many tool calls it asked for.
    fn on_llm_end(&self, agent: &RunAgent, text: &str, tool_calls: usize) {
        let _ = (agent, text, tool_calls);
    }
}
