//! What a built agent holds at run time: its model, settings, tools with their resolved hooks,
//! the hook lists, its store and the state of its open sessions (turn locks, session
//! configurations), and the handoffs it may make. The facade's `Agent` is a shared handle on
//! one [`AgentRuntime`].

use hashbrown::HashMap;
use std::any::TypeId;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::guardrails::Guardrail;
use super::handoff_history::HandoffHistory;
pub(crate) use super::handoff_input::InputType;
pub(crate) use super::output_spec::OutputSpec;
use super::request::TurnOverlap;
use super::run_scope::RunContextValue;
use crate::hooks::Extension;
use crate::hooks::TurnHooks;
use crate::hooks::tool_hooks::{AfterHook, BeforeHook};
use crate::hooks::{TurnError, TurnErrorKind};
use crate::model::{CallSettings, Model};
use crate::session::{Configure, Opened};
use crate::store::PanicSafe;
use crate::tool::{DynTool, ToolSpec};
use crate::weak_table::WeakTable;

/// A built agent's runtime state, shared by every handle and turn.
pub(crate) struct AgentRuntime {
    pub(crate) name: Arc<str>,
    pub(crate) description: Option<String>,
    pub(crate) instructions: Option<String>,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) max_steps: usize,
    pub(crate) tool_concurrency: usize,
    /// The timeout of tools that set none.
    pub(crate) tool_timeout: Option<Duration>,
    /// The retry limit of tools that set none (`AgentBuilder::tool_retries`).
    pub(crate) tool_retries: Option<usize>,
    /// Whether the agent or one of its tools limits retries: only then are a step's failed
    /// calls counted (`tool_failures.rs`).
    pub(crate) counts_tool_failures: bool,
    /// The tools whose answered call ends the turn (`AgentBuilder::stop_at_tools`).
    pub(crate) stop_at_tools: Box<[Arc<str>]>,
    /// The turn's tool choice goes back to `Auto` once the model called tools
    /// (`AgentBuilder::reset_tool_choice`).
    pub(crate) reset_tool_choice: bool,
    pub(crate) overlap: TurnOverlap,
    pub(crate) settings: CallSettings,
    pub(crate) provider_options: Map<String, Value>,
    pub(crate) tools: Vec<ToolSlot>,
    /// Each tool's slot by name. hashbrown's map (foldhash, seeded per map), as every map a
    /// turn looks up: two lookups per tool call, where SipHash cost more than the lookup
    /// (`whole_turn_agent` in agent-providers/benches/stream.rs).
    pub(crate) tool_index: HashMap<String, usize>,
    pub(crate) specs: Vec<Arc<ToolSpec>>,
    pub(crate) hooks: TurnHooks,
    pub(crate) before_hooks: Vec<Arc<dyn BeforeHook>>,
    pub(crate) after_hooks: Vec<Arc<dyn AfterHook>>,
    pub(crate) store: Arc<PanicSafe>,
    /// The key that seals waiting calls' tokens (`AgentBuilder::approval_key`).
    pub(crate) approval_key: Option<Arc<[u8]>>,
    /// The type of run context the agent's turns need, with its name.
    pub(crate) context_type: Option<(TypeId, &'static str)>,
    /// Subscribers to JSON snapshots of the agent's turns (`hooks/extension.rs`), shared with
    /// each turn (not copied into a new allocation per turn).
    pub(crate) extensions: Arc<[Extension]>,
    /// Checks on each turn's input, before the first model call.
    pub(crate) input_guardrails: Vec<Guardrail>,
    /// Checks on the final output, before it is stored, streamed or reported.
    pub(crate) output_guardrails: Vec<Guardrail>,
    /// The agents this one may hand a turn to, each with its transfer tool.
    pub(crate) handoffs: Vec<HandoffSlot>,
    /// The teams of the agents this one holds as handoff targets or subagents: held (never
    /// read) so that their links to teammates, which are weak, stay alive as long as this agent.
    pub(crate) _teams: Vec<TeamAgents>,
    /// The mark of each open session (kept when the agent configures its sessions).
    pub(crate) sessions: OpenSessions,
    /// Builds each session's configuration when it opens.
    pub(crate) configure_session: Option<Configure>,
    /// The type the agent's final answer must parse into, when it has one (`output_spec.rs`).
    pub(crate) output: Option<Arc<OutputSpec>>,
}

/// The agents of a team, built together so that they may hand off to one another both ways.
/// Their links to each other are weak; whatever holds one of them from outside the team (an
/// `Agent` handle, or another agent using it as a handoff target or subagent) holds this, so
/// the team is freed with the last such holder.
pub(crate) type TeamAgents = Arc<[Arc<AgentRuntime>]>;

/// The agent a handoff goes to.
pub(crate) enum HandoffTarget {
    /// An agent built before the one handing off, held by it.
    Built(Arc<AgentRuntime>),
    /// A teammate named by the handoff, linked when the team is built (`link`). Held weakly:
    /// teammates may hand off to each other both ways, and strong links would make a cycle
    /// that is never freed; the team holds its agents instead (`TeamAgents`).
    Linked(OnceLock<Weak<AgentRuntime>>),
}

/// A handoff an agent may make: its target, the transfer tool the model sees and the history
/// filter.
pub(crate) struct HandoffSlot {
    pub(crate) target: HandoffTarget,
    /// The target's name.
    pub(crate) to: Arc<str>,
    pub(crate) spec: Arc<ToolSpec>,
    pub(crate) history: HandoffHistory,
    /// Whether the target inherits the handing agent's untyped tool hooks.
    pub(crate) inherit: bool,
    /// The type the transfer call's arguments must fit, when it takes any.
    pub(crate) input: Option<InputType>,
}

/// What a handoff's transfer tool is made from, besides its target.
pub(crate) struct TransferTool {
    pub(crate) tool_name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) history: HandoffHistory,
    pub(crate) inherit: bool,
    pub(crate) input: Option<InputType>,
}

impl HandoffSlot {
    /// The transfer tool of a handoff to the agent named `to` (whose description is
    /// `what`): `transfer_to_<name>` unless named, with a description naming the target (and
    /// what it does) unless given, and the input type's arguments (none without one).
    pub(crate) fn new(
        target: HandoffTarget,
        to: Arc<str>,
        what: Option<&str>,
        tool: TransferTool,
    ) -> HandoffSlot {
        let name = tool
            .tool_name
            .unwrap_or_else(|| format!("transfer_to_{to}"));
        let description = tool.description.unwrap_or_else(|| match what {
            Some(what) => format!("Hand the conversation to agent `{to}`: {what}"),
            None => format!("Hand the conversation to agent `{to}`."),
        });
        let parameters = match &tool.input {
            Some(input) => input.schema.clone(),
            None => json!({"type": "object", "properties": {}, "additionalProperties": false}),
        };
        let spec = ToolSpec {
            name,
            description,
            parameters,
        };
        HandoffSlot {
            target,
            to,
            spec: Arc::new(spec),
            history: tool.history,
            inherit: tool.inherit,
            input: tool.input,
        }
    }
}

/// Links every named handoff of a team's agents to the agent of its name (the builder checked
/// that each name is one agent's).
pub(crate) fn link(team: &[Arc<AgentRuntime>]) {
    for agent in team {
        for slot in &agent.handoffs {
            let HandoffTarget::Linked(link) = &slot.target else {
                continue;
            };
            if let Some(target) = team.iter().find(|target| target.name == slot.to) {
                // The agents were just built: nothing linked them before.
                let _ = link.set(Arc::downgrade(target));
            }
        }
    }
}

/// What marks a tool as a subagent: the agent it runs, and whether that agent's turn inherits
/// the caller's untyped tool hooks.
#[derive(Clone)]
pub(crate) struct SubagentMark {
    pub(crate) name: Arc<str>,
    pub(crate) inherit: bool,
}

/// A tool with the hooks that apply to it, resolved once when the agent (or turn) is built.
#[derive(Clone)]
pub(crate) struct ToolSlot {
    pub(crate) tool: Arc<dyn DynTool>,
    /// The tool's name, shared with each call's hook and tool contexts rather than copied per
    /// call (one allocation fewer per call: `whole_turn_calls_agent` in
    /// agent-providers/benches/stream.rs).
    pub(crate) name: Arc<str>,
    pub(crate) dynamic: bool,
    pub(crate) before: Vec<Arc<dyn BeforeHook>>,
    pub(crate) after: Vec<Arc<dyn AfterHook>>,
    /// The tool's own timeout, else the agent's.
    pub(crate) timeout: Option<Duration>,
    /// The agent this tool runs, when it is a subagent (`engine/subagent.rs`).
    pub(crate) subagent: Option<SubagentMark>,
    /// The tool runs on the spot ([`DynTool::runs_now`]) and its hooks are sync: a call can
    /// run without a future (`tool_call::start`).
    pub(crate) now: bool,
}

impl ToolSlot {
    pub(crate) fn spec(&self) -> &Arc<ToolSpec> {
        self.tool.spec()
    }

    /// Attaches every hook whose matcher matches this tool.
    pub(crate) fn resolve(
        tool: Arc<dyn DynTool>,
        dynamic: bool,
        before: &[Arc<dyn BeforeHook>],
        after: &[Arc<dyn AfterHook>],
        default_timeout: Option<Duration>,
    ) -> ToolSlot {
        let name = tool.spec().name.as_str();
        let before: Vec<Arc<dyn BeforeHook>> = before
            .iter()
            .filter(|h| h.meta().compiled.matches(name))
            .cloned()
            .collect();
        let after: Vec<Arc<dyn AfterHook>> = after
            .iter()
            .filter(|h| h.meta().compiled.matches(name))
            .cloned()
            .collect();
        let now = tool.runs_now()
            && before.iter().all(|hook| hook.is_sync())
            && after.iter().all(|hook| hook.is_sync());
        ToolSlot {
            now,
            name: name.into(),
            timeout: tool.timeout().or(default_timeout),
            subagent: None,
            tool,
            dynamic,
            before,
            after,
        }
    }
}

/// The open sessions of an agent that configures its sessions: every
/// [`Conversation`](crate::Conversation) opened on one session id shares one [`Opened`] mark,
/// which holds the session's configuration, while any is alive.
#[derive(Default)]
pub(crate) struct OpenSessions {
    marks: WeakTable<Opened>,
}

impl AgentRuntime {
    /// Whether the agent's sessions carry an [`Opened`] mark: it configures them, or has
    /// on_session_start hooks (which fire once per opening at most).
    pub(crate) fn marks_sessions(&self) -> bool {
        self.configure_session.is_some() || !self.hooks.on_session_start.is_empty()
    }
}

impl OpenSessions {
    /// The mark of `session`, shared with every open handle on it.
    pub(crate) fn opened(&self, session: &str) -> Arc<Opened> {
        self.marks.get_or_make(session, Opened::default)
    }
}

impl AgentRuntime {
    /// The error of a turn of this agent run with `context` when the agent declares a context
    /// type the turn does not carry.
    pub(crate) fn missing_context(&self, context: Option<&RunContextValue>) -> Option<TurnError> {
        let (id, name) = self.context_type?;
        let message = match context {
            Some(context) if context.is(id) => return None,
            Some(context) => format!(
                "agent `{}` needs a run context of type `{name}`, and the turn carries a `{}`",
                self.name,
                context.type_name()
            ),
            None => format!(
                "agent `{}` needs a run context of type `{name}`: give one with `TurnRequest::context`",
                self.name
            ),
        };
        Some(TurnError::new(TurnErrorKind::Context, message))
    }
}
