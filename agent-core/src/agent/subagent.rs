//! An agent offered to another as a tool ([`Subagent`]), given to
//! [`AgentBuilder::subagent`](super::AgentBuilder::subagent).

use super::Agent;

/// An agent the model may ask as a tool: a call runs the agent's own turn (a session of its
/// own, its own hooks) on `{"input": "..."}` and returns its final answer. The calling agent's
/// before_tool_call hooks gate the call (block, substitute and modify all apply; unlike
/// Stratus, a modified input reaches the subagent), after_tool_call sees its outcome, and
/// on_subagent_start / on_subagent_stop fire around it. A subagent's turn that suspends (a
/// call waiting for approval or a result) suspends the call to it and its caller's turn,
/// whose resume resumes the subagent's turn (see [`SubagentTurn`](crate::SubagentTurn)).
///
/// ```
/// use agent_core::{AgentBuilder, ScriptedModel, Subagent};
/// let researcher = AgentBuilder::new("researcher")
///     .description("Finds facts.")
///     .model(ScriptedModel::new([]))
///     .build()
///     .unwrap();
/// let writer = AgentBuilder::new("writer")
///     .model(ScriptedModel::new([]))
///     .subagent(Subagent::of(&researcher).tool_name("research"))
///     .build()
///     .unwrap();
/// # let _ = writer;
/// ```
#[derive(Clone, Debug)]
pub struct Subagent {
    pub(crate) agent: Agent,
    pub(crate) tool_name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) inherit: bool,
}

impl Subagent {
    /// `agent` as a tool named after it.
    pub fn of(agent: &Agent) -> Subagent {
        Subagent {
            agent: agent.clone(),
            tool_name: None,
            description: None,
            inherit: false,
        }
    }

    /// Names the tool (default: the agent's name).
    pub fn tool_name(mut self, name: impl Into<String>) -> Subagent {
        self.tool_name = Some(name.into());
        self
    }

    /// Describes the tool to the model (default: names the agent and its description).
    pub fn description(mut self, description: impl Into<String>) -> Subagent {
        self.description = Some(description.into());
        self
    }

    /// Whether the calling agent's untyped (JSON) before/after_tool_call hooks, and those it
    /// inherited, also run on the subagent's tool calls, before its own (default `false`:
    /// isolated, the subagent runs its own hooks only). Typed hooks never follow: they read
    /// one agent's tool types.
    pub fn inherit_tool_hooks(mut self, inherit: bool) -> Subagent {
        self.inherit = inherit;
        self
    }
}

impl From<&Agent> for Subagent {
    fn from(agent: &Agent) -> Subagent {
        Subagent::of(agent)
    }
}
