//! A handoff an agent may make ([`Handoff`]), given to [`AgentBuilder::handoff`](super::AgentBuilder::handoff).
//! Its target is an agent built before (`Handoff::to`) or a teammate named and linked when
//! the team is built (`Handoff::named`, [`Team`](super::Team)).

use super::Agent;
use crate::engine::HandoffHistory;
use crate::engine::runtime::InputType;

/// A handoff to another agent: the model sees a transfer tool (`transfer_to_<name>` unless
/// named) and calling it hands the rest of the turn to `target`, if every before_handoff hook
/// allows it. The transfer tool takes no arguments, or an input the target is given
/// ([`Handoff::input`]).
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
///
/// Agents that hand off to each other both ways (triage to billing and billing back to
/// triage) name each other with [`Handoff::named`] and are built together with
/// [`Team::build`](super::Team::build).
#[derive(Clone, Debug)]
pub struct Handoff {
    pub(crate) target: Target,
    pub(crate) tool_name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) history: HandoffHistory,
    pub(crate) inherit: bool,
    pub(crate) input: Option<InputType>,
}

/// Where a handoff goes.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// An agent built before this one.
    Agent(Agent),
    /// The teammate of this name, linked by [`Team::build`](super::Team::build).
    Named(String),
}

impl Handoff {
    /// A handoff to `target`, with the default transfer tool and the whole history.
    pub fn to(target: &Agent) -> Handoff {
        Handoff::with_target(Target::Agent(target.clone()))
    }

    /// A handoff to the agent named `name` of the same [`Team`](super::Team), which may be
    /// built after this one and may hand off back to it. The team links it when it is built;
    /// a name that is none of the team's agents, or an agent with such a handoff built alone
    /// (`AgentBuilder::build`), is a [`BuildError`](super::BuildError).
    ///
    /// ```
    /// use agent_core::{AgentBuilder, Handoff, ScriptedModel, Team};
    /// let team = Team::build([
    ///     AgentBuilder::new("triage")
    ///         .model(ScriptedModel::new([]))
    ///         .handoff(Handoff::named("billing")),
    ///     AgentBuilder::new("billing")
    ///         .model(ScriptedModel::new([]))
    ///         .handoff(Handoff::named("triage").tool_name("back_to_triage")),
    /// ])
    /// .unwrap();
    /// let triage = team.agent("triage").unwrap();
    /// # let _ = triage;
    /// ```
    pub fn named(name: impl Into<String>) -> Handoff {
        Handoff::with_target(Target::Named(name.into()))
    }

    fn with_target(target: Target) -> Handoff {
        Handoff {
            target,
            tool_name: None,
            description: None,
            history: HandoffHistory::All,
            inherit: false,
            input: None,
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

    /// Gives the transfer tool arguments: the model fills in a `T` (a struct deriving
    /// `serde::Deserialize` and `schemars::JsonSchema`, as a tool's arguments do) when it hands
    /// off, such as the reason for an escalation. The transfer tool's parameters become `T`'s
    /// JSON Schema, built as a `#[tool]`'s are (no `$schema`, the type's own title and doc
    /// comment dropped, `additionalProperties: false` for a struct) and adapted per provider as
    /// theirs (strict mode); without it the transfer tool takes no arguments. A type that is
    /// not a struct (an object schema) is a [`BuildError`](super::BuildError).
    ///
    /// Arguments that do not fit `T` (not JSON, a field of the wrong type, a required field
    /// missing, a field `T`'s schema does not list) do not hand off: the model reads an error
    /// result naming the transfer tool and the field, as for a tool's bad arguments, no
    /// before_handoff hook runs, and the agent goes on with its next step. Those that fit
    /// reach the before_handoff hooks as
    /// [`HandoffContext::input`](crate::HandoffContext::input), typed through
    /// [`HandoffContext::input_as`](crate::HandoffContext::input_as).
    ///
    /// The target reads the input where it reads the rest of the turn: in the transfer call
    /// (its arguments, as the model sent them) at the end of the history it is given,
    /// followed by the call's result ("Transferred to agent \`supervisor\`."), with
    /// [`HandoffHistory::All`] (the default) and
    /// [`HandoffHistory::Last`] of 2 or more; [`HandoffHistory::Input`] leaves it out, and a
    /// [`HandoffHistory::Custom`] filter decides.
    ///
    /// ```
    /// use agent_core::{AgentBuilder, Handoff, HandoffDecision, Hook, ScriptedModel, event};
    ///
    /// /// Why the customer is escalated, for the supervisor.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Escalation {
    ///     /// What went wrong, in a sentence.
    ///     reason: String,
    ///     /// 1 (low) to 3 (urgent).
    ///     priority: u8,
    /// }
    ///
    /// let supervisor = AgentBuilder::new("supervisor")
    ///     .model(ScriptedModel::new([]))
    ///     .build()
    ///     .unwrap();
    /// let support = AgentBuilder::new("support")
    ///     .model(ScriptedModel::new([]))
    ///     .handoff(Handoff::to(&supervisor).input::<Escalation>())
    ///     .hook(Hook::<event::BeforeHandoff>::sync("urgent only", |ctx| {
    ///         match ctx.input_as::<Escalation>() {
    ///             Ok(escalation) if escalation.priority < 3 => HandoffDecision::deny(format!(
    ///                 "not urgent enough for a supervisor: {}",
    ///                 escalation.reason
    ///             )),
    ///             _ => HandoffDecision::Allow,
    ///         }
    ///     }))
    ///     .build()
    ///     .unwrap();
    /// # let _ = support;
    /// ```
    pub fn input<T>(mut self) -> Handoff
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema + 'static,
    {
        self.input = Some(InputType::of::<T>());
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
