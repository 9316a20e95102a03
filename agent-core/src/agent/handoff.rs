//! A handoff an agent may make ([`Handoff`]), given to [`AgentBuilder::handoff`](super::AgentBuilder::handoff).

use super::Agent;
use crate::engine::HandoffHistory;

/// A handoff to another agent: the model sees a transfer tool (`transfer_to_<name>` unless
/// named) and calling it hands the rest of the turn to `target`, if every before_handoff hook
/// allows it.
///
/// ```
/// use agent_core::{AgentBuilder, Handoff, HandoffHistory, ScriptedModel};
/// let billing = AgentBuilder::new("billing")
///     .description("Answers questions about invoices.")
///     .model(ScriptedModel::new([]))
///     .build()
///     .unwrap();
/// let triage = AgentBuilder::new("triage")
///     .model(ScriptedModel::new([]))
///     .handoff(Handoff::to(&billing).history(HandoffHistory::Last(6)))
///     .build()
///     .unwrap();
/// # let _ = triage;
/// ```
#[derive(Clone, Debug)]
pub struct Handoff {
    pub(crate) target: Agent,
    pub(crate) tool_name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) history: HandoffHistory,
    pub(crate) inherit: bool,
}

impl Handoff {
    /// A handoff to `target`, with the default transfer tool and the whole history.
    pub fn to(target: &Agent) -> Handoff {
        Handoff {
            target: target.clone(),
            tool_name: None,
            description: None,
            history: HandoffHistory::All,
            inherit: false,
        }
    }

    /// Names the transfer tool (default `transfer_to_<target name>`).
    pub fn tool_name(mut self, name: impl Into<String>) -> Handoff {
        self.tool_name = Some(name.into());
        self
    }

    /// Describes the transfer tool to the model (default: names the target and its
    /// description).
    pub fn description(mut self, description: impl Into<String>) -> Handoff {
        self.description = Some(description.into());
        self
    }

    /// Whether the handing agent's untyped (JSON) before/after_tool_call hooks, and those it
    /// inherited, also run on the target's tool calls, before its own (default `false`:
    /// isolated, the target runs its own hooks only). Typed hooks never follow.
    pub fn inherit_tool_hooks(mut self, inherit: bool) -> Handoff {
        self.inherit = inherit;
        self
    }

    /// What history the target sees on its first step (default: all of it).
    pub fn history(mut self, history: HandoffHistory) -> Handoff {
        self.history = history;
        self
    }
}

impl From<&Agent> for Handoff {
    fn from(target: &Agent) -> Handoff {
        Handoff::to(target)
    }
}
