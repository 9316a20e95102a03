//! A turn's plan once before_turn has run: its model, prompt, messages, settings and tools
//! ([`TurnPlan`]), and the tools the model may call in each step ([`TurnTools`]).

use std::sync::Arc;

use super::history;
use super::inherit::Inherited;
use super::output_spec::Asked;
use super::reach::Reach;
use super::run_scope::RunScope;
use super::runtime::{AgentRuntime, ToolSlot};
use super::tool_failures::ToolFailures;
use crate::cancel::CancelToken;
use crate::hooks::Extension;
use crate::hooks::RunAgent;
use crate::hooks::{StepConfig, ToolResultRecord, TurnConfig};
use crate::message::Message;
use crate::model::{CallSettings, Model, ModelRequest, OutputSchema, ToolChoice};
use crate::store::PanicSafe;

/// The turn after before_turn: its model, prompt, messages, tools and settings.
pub(super) struct TurnPlan<'a> {
    pub(super) model: Arc<dyn Model>,
    pub(super) system: Option<String>,
    /// The history the next step sends. Shared with each step's request and hook contexts
    /// rather than copied into them (a copy of the whole history per step made a long
    /// conversation's steps linear in its length: `whole_turn_history_*` in
    /// agent-providers/benches/stream.rs); written through [`push_history`](Self::push_history)
    /// and [`history_mut`](Self::history_mut), replaced through
    /// [`set_history`](Self::set_history).
    pub(super) messages: Arc<Vec<Message>>,
    /// `messages` is the history the store lent (`SessionStore::load_history`) with only the
    /// turn's messages pushed after it: what the turn gives back to the store at its end
    /// ([`lent_history`](Self::lent_history)). Cleared by any other change.
    lent: bool,
    pub(super) tools: TurnTools<'a>,
    pub(super) tool_choice: ToolChoice,
    pub(super) max_steps: usize,
    pub(super) send_reasoning: bool,
    pub(super) settings: CallSettings,
    pub(super) provider_options: serde_json::Map<String, serde_json::Value>,
    pub(super) stall_timeout: Option<std::time::Duration>,
    pub(super) output_schema: Option<OutputSchema>,
    /// How the current step asks for the typed answer, when the agent running it has an
    /// output type (`output_spec.rs`).
    pub(super) asked: Option<Asked>,
    /// The turn's own output retries (`TurnRequest::output_retries`), over the agent's.
    pub(super) output_retries: Option<usize>,
    /// The current step's final-answer calls, by position, with their results.
    pub(super) output_answers: Vec<(usize, ToolResultRecord)>,
    /// Each tool's failures in a row, when the agent or a tool limits retries.
    pub(super) tool_failures: ToolFailures,
    /// Whether the current step is the last the agent's step limit allows: a typed answer
    /// that fails in it is not sent back, since no step would read the retry.
    pub(super) last_step: bool,
}

impl<'a> TurnPlan<'a> {
    pub(super) fn new(
        agent: &'a AgentRuntime,
        config: TurnConfig,
        system: Option<String>,
        messages: Vec<Message>,
        lent: bool,
    ) -> Self {
        // A turn's own tools (a hook's, a tool source's such as an MCP server's) go through
        // the checks the builder makes of the agent's: one with an invalid name or parameters
        // that are not an object schema, or a name the agent (or an earlier one) already has,
        // its final-answer tools' included, is left out with a warning; offered, it would make
        // the request one providers refuse, or a tool no call could reach.
        let mut names: Vec<String> = Vec::new();
        let extra = config
            .tools
            .into_iter()
            .filter(|tool| {
                let name = tool.spec().name.as_str();
                let taken = agent.tool_index.contains_key(name)
                    || agent
                        .handoffs
                        .iter()
                        .any(|handoff| handoff.spec.name == name)
                    || agent.output.as_ref().is_some_and(|spec| spec.answers(name))
                    || names.iter().any(|earlier| earlier == name);
                if taken
                    || !crate::tool::is_valid_tool_name(name)
                    || !crate::tool::is_object_schema(&tool.spec().parameters)
                {
                    tracing::warn!(
                        tool = name,
                        "a turn's tool is left out: its name is invalid (1 to 64 of \
                         `[A-Za-z0-9_-]`), its parameters are not an object schema, or \
                         another tool of the agent has it"
                    );
                    return false;
                }
                names.push(name.to_owned());
                true
            })
            .map(|tool| {
                ToolSlot::resolve(
                    tool,
                    true,
                    &agent.before_hooks,
                    &agent.after_hooks,
                    agent.tool_timeout,
                )
            })
            .collect();
        if config.max_steps == Some(0) {
            tracing::warn!(
                agent = &*agent.name,
                "a hook set the turn's max_steps to 0; the turn makes one step"
            );
        }
        let mut provider_options = agent.provider_options.clone();
        if let Some(more) = config.provider_options {
            provider_options.extend(more);
        }
        TurnPlan {
            model: config.model.unwrap_or_else(|| agent.model.clone()),
            system: config.system.or(system),
            lent: lent && config.messages.is_none(),
            messages: Arc::new(match config.messages {
                Some(given) => history::paired_from_hook("before_turn", given),
                None => messages,
            }),
            tools: TurnTools {
                agent,
                extra,
                active: config.active_tools,
                step_active: None,
            },
            tool_choice: config.tool_choice.unwrap_or_default(),
            max_steps: config.max_steps.unwrap_or(agent.max_steps).max(1),
            send_reasoning: config.send_reasoning.unwrap_or(false),
            settings: config.settings.or(&agent.settings),
            provider_options,
            stall_timeout: config.stall_timeout,
            output_schema: config.output_schema,
            asked: None,
            output_retries: None,
            output_answers: Vec::new(),
            tool_failures: ToolFailures::default(),
            last_step: false,
        }
    }

    /// The history, to change anywhere (it is no longer what the store lent). Copied only
    /// when a request or hook context of an earlier step still holds it (a model or hook that
    /// kept it); otherwise changed in place.
    pub(super) fn history_mut(&mut self) -> &mut Vec<Message> {
        self.lent = false;
        Arc::make_mut(&mut self.messages)
    }

    /// Appends a message the turn stored to the history (copied first as
    /// [`history_mut`](Self::history_mut) says).
    #[inline]
    pub(super) fn push_history(&mut self, message: Message) {
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// Makes room in the history for `more` messages.
    #[inline]
    pub(super) fn reserve_history(&mut self, more: usize) {
        Arc::make_mut(&mut self.messages).reserve(more);
    }

    /// Replaces the history (compaction, a handoff's history filter).
    pub(super) fn set_history(&mut self, messages: Arc<Vec<Message>>) {
        self.lent = false;
        self.messages = messages;
    }

    /// The lent history with the turn's messages after it, for the store to keep; `None` when
    /// the turn changed it otherwise or a request or hook context still holds it.
    pub(super) fn lent_history(self) -> Option<Vec<Message>> {
        self.lent.then(|| Arc::into_inner(self.messages)).flatten()
    }

    /// Counts a step's failed calls against the tools' retry limits (final-answer calls left
    /// out); gives what ends the turn when a tool is past its limit. Inlined, with the count
    /// apart: a turn whose agent and tools limit no retries makes one check per step.
    #[inline]
    pub(super) fn past_retry_limit(&mut self, results: &[ToolResultRecord]) -> Option<String> {
        let limited = self.tools.agent.counts_tool_failures
            || self
                .tools
                .extra
                .iter()
                .any(|slot| slot.tool.retries().is_some());
        if limited {
            self.count_failures(results)
        } else {
            None
        }
    }

    /// [`past_retry_limit`](Self::past_retry_limit) when a limit applies.
    fn count_failures(&mut self, results: &[ToolResultRecord]) -> Option<String> {
        let tools = &self.tools;
        let agent = tools.agent;
        let output = agent.output.as_deref();
        let skip = |name: &str| output.is_some_and(|spec| spec.answers(name));
        let limit = |name: &str| {
            let own = tools.get(name).and_then(|slot| slot.tool.retries());
            own.or(agent.tool_retries)
        };
        self.tool_failures.count(results, skip, limit)
    }

    /// The model request of one step, with that step's overrides.
    pub(super) fn request(
        &mut self,
        model: &dyn Model,
        config: StepConfig,
        messages: Arc<Vec<Message>>,
    ) -> ModelRequest {
        self.tools.step_active = config.active_tools;
        let tools = self
            .tools
            .agent
            .tools
            .iter()
            .chain(&self.tools.extra)
            .map(|slot| slot.spec())
            .chain(
                self.tools
                    .agent
                    .handoffs
                    .iter()
                    .map(|handoff| &handoff.spec),
            )
            .filter(|spec| self.tools.is_active(&spec.name))
            .cloned()
            .collect();
        let mut request = ModelRequest {
            model: model.id().to_owned(),
            system: config.system.or_else(|| self.system.clone()),
            messages: config.messages.map_or(messages, |given| {
                Arc::new(history::paired_from_hook("before_step", given))
            }),
            tools,
            tool_choice: config
                .tool_choice
                .unwrap_or_else(|| self.tool_choice.clone()),
            settings: self.settings.clone(),
            send_reasoning: self.send_reasoning,
            provider_options: self.provider_options.clone(),
            stall_timeout: self.stall_timeout,
            output_schema: self.output_schema.clone(),
        };
        self.asked = self
            .tools
            .agent
            .output
            .as_ref()
            .map(|spec| spec.shape(model, &mut request));
        request
    }
}

/// The tools of one turn: the agent's, plus those a before_turn hook added, limited to the
/// active ones.
pub(super) struct TurnTools<'a> {
    pub(super) agent: &'a AgentRuntime,
    pub(super) extra: Vec<ToolSlot>,
    pub(super) active: Option<Vec<String>>,
    /// The current step's own limit (before_step's `active_tools`).
    pub(super) step_active: Option<Vec<String>>,
}

impl TurnTools<'_> {
    /// Whether the model may call this tool in the current step.
    pub(super) fn is_active(&self, name: &str) -> bool {
        let allowed = |list: &Option<Vec<String>>| {
            list.as_ref()
                .is_none_or(|names| names.iter().any(|n| n == name))
        };
        allowed(&self.active) && allowed(&self.step_active)
    }

    /// Whether the agent or the turn has a tool of this name, active in this step or not.
    pub(super) fn has(&self, name: &str) -> bool {
        self.agent.tool_index.contains_key(name)
            || self.extra.iter().any(|slot| slot.spec().name == name)
    }

    pub(super) fn get(&self, name: &str) -> Option<&ToolSlot> {
        if !self.is_active(name) {
            return None;
        }
        match self.agent.tool_index.get(name) {
            Some(&index) => self.agent.tools.get(index),
            None => self.extra.iter().find(|slot| slot.spec().name == name),
        }
    }

    pub(super) fn names(&self) -> Vec<&str> {
        let all = self
            .agent
            .tools
            .iter()
            .chain(&self.extra)
            .map(|slot| slot.spec().name.as_str())
            .chain(self.agent.handoffs.iter().map(|h| h.spec.name.as_str()));
        all.filter(|name| self.is_active(name)).collect()
    }

    /// The current agent's handoff whose transfer tool this is, when the model may call it.
    pub(super) fn handoff(&self, name: &str) -> Option<usize> {
        // Most agents hand off to none: their calls are not looked up a second time (about 85
        // instructions a call, `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
        if self.agent.handoffs.is_empty()
            || !self.is_active(name)
            || self.agent.tool_index.contains_key(name)
        {
            return None;
        }
        self.agent
            .handoffs
            .iter()
            .position(|handoff| handoff.spec.name == name)
    }
}

/// Where a call runs: the turn's id, step and tools.
pub(super) struct CallScope<'a> {
    /// The turn's session, and the store that keeps it.
    pub(super) session: (&'a PanicSafe, &'a str),
    pub(super) request_id: &'a Arc<str>,
    pub(super) step: usize,
    pub(super) messages: &'a Arc<Vec<Message>>,
    pub(super) cancel: &'a CancelToken,
    pub(super) tools: &'a TurnTools<'a>,
    /// The run hooks observing the call, if any.
    pub(super) run: Option<&'a RunScope>,
    /// The agent making the call.
    pub(super) me: &'a Arc<RunAgent>,
    /// The agents the turn may hand off to.
    pub(super) reach: &'a Reach,
    /// The tool hooks this agent inherited (`inherit.rs`).
    pub(super) inherited: &'a Inherited,
    /// The turn's extensions (`hooks/extension.rs`).
    pub(super) extensions: &'a [Extension],
    /// Where the calls' preliminary results go (`preliminary.rs`).
    pub(super) progress: &'a Arc<crate::tool::Reported>,
    /// What the subagents' turns the calls ran used (`Outcome::subagent_usage`).
    pub(super) subagent_usage: &'a std::sync::Mutex<crate::model::Usage>,
    /// Nothing of the step's but its tools and their hooks waits: no extension, no inherited
    /// async hook, no after_tool_call_success/failure hook. A call of a tool that runs now then
    /// runs on the spot (`tool_call::start`).
    pub(super) now: bool,
}
