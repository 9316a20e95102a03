//! The builder every agent is made with, by hand or by `#[agent]`.

use hashbrown::HashMap;
use std::any::TypeId;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::handoff::Target;
use super::team::Roster;
use super::{Agent, CommandHook, Handoff, Subagent};
use crate::engine::runtime::{
    AgentRuntime, HandoffSlot, HandoffTarget, SubagentMark, TeamAgents, ToolSlot, TransferTool,
};
use crate::engine::{Guardrail, TurnOverlap};
use crate::hooks::Extension;
use crate::hooks::event::{AfterToolCall, BeforeToolCall};
use crate::hooks::tool_hooks::{AfterHook, BeforeHook, ToolHookMeta, TypedAfter, TypedBefore};
use crate::hooks::{Hook, Matcher, TurnHooks, TurnWideEvent};
use crate::model::{CallSettings, Model};
use crate::store::{MemoryStore, SessionStore};
use crate::tool::{DynTool, Tool, ToolInput, TypedTool, is_object_schema, is_valid_tool_name};

/// The agent could not be built. Lists every problem found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    /// One line per problem.
    pub problems: Vec<String>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the agent cannot be built: {}", self.problems.join("; "))
    }
}

impl std::error::Error for BuildError {}

/// Builds an [`Agent`]: model, options, tools and hooks.
///
/// ```
/// use agent_core::{AgentBuilder, Hook, Matcher, ScriptedModel, ScriptedStep, event};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let agent = AgentBuilder::new("echo")
///     .model(ScriptedModel::new([ScriptedStep::new().text("hi")]))
///     .hook(Hook::<event::OnChunk>::sync("meter", |_ctx| {}))
///     .build()
///     .unwrap();
/// assert_eq!(agent.run("hello").await.text, "hi");
/// # }
/// ```
pub struct AgentBuilder {
    name: String,
    description: Option<String>,
    instructions: Option<String>,
    model: Option<Arc<dyn Model>>,
    max_steps: usize,
    tool_concurrency: usize,
    tool_timeout: Option<Duration>,
    tool_retries: Option<usize>,
    stop_at_tools: Vec<String>,
    reset_tool_choice: bool,
    overlap: TurnOverlap,
    settings: CallSettings,
    provider_options: Map<String, Value>,
    tools: Vec<ToolEntry>,
    hooks: TurnHooks,
    before: Vec<(Matcher, Arc<dyn BeforeHook>)>,
    after: Vec<(Matcher, Arc<dyn AfterHook>)>,
    store: Option<Arc<dyn SessionStore>>,
    approval_key: Option<Arc<[u8]>>,
    handoffs: Vec<Handoff>,
    subagents: Vec<Subagent>,
    context_type: Option<(std::any::TypeId, &'static str)>,
    input_guardrails: Vec<Guardrail>,
    output_guardrails: Vec<Guardrail>,
    extensions: Vec<Extension>,
    configure_session: Option<crate::session::Configure>,
    pub(super) output: super::output::OutputOptions,
    problems: Vec<String>,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl AgentBuilder {
    /// A builder for an agent with this name. Defaults: 10 steps, 8 concurrent tool calls, an
    /// in-memory history store.
    pub fn new(name: impl Into<String>) -> Self {
        AgentBuilder {
            name: name.into(),
            description: None,
            instructions: None,
            model: None,
            max_steps: 10,
            tool_concurrency: 8,
            tool_timeout: None,
            tool_retries: None,
            stop_at_tools: Vec::new(),
            reset_tool_choice: false,
            overlap: TurnOverlap::Wait,
            settings: CallSettings::default(),
            provider_options: Map::new(),
            tools: Vec::new(),
            hooks: TurnHooks::default(),
            before: Vec::new(),
            after: Vec::new(),
            store: None,
            approval_key: None,
            handoffs: Vec::new(),
            subagents: Vec::new(),
            context_type: None,
            input_guardrails: Vec::new(),
            output_guardrails: Vec::new(),
            extensions: Vec::new(),
            configure_session: None,
            output: Default::default(),
            problems: Vec::new(),
        }
    }

    /// Lets the agent hand a turn to another agent: its model sees a transfer tool for the
    /// target (see [`Handoff`]); once a call of it is allowed by every before_handoff hook,
    /// the target's model, instructions, tools and step hooks run the rest of the turn. Takes
    /// `&agent` or a configured [`Handoff`].
    pub fn handoff(mut self, handoff: impl Into<Handoff>) -> Self {
        self.handoffs.push(handoff.into());
        self
    }

    /// Declares the type of run context every turn of this agent carries
    /// ([`TurnRequest::context`](crate::TurnRequest::context)): a turn without one, or with
    /// one of another type, ends at once with [`TurnErrorKind::Context`](crate::TurnErrorKind::Context)
    /// naming both types, before any hook runs.
    pub fn context_type<T: std::any::Any + Send + Sync>(mut self) -> Self {
        self.context_type = Some((std::any::TypeId::of::<T>(), std::any::type_name::<T>()));
        self
    }

    /// Checks every turn's input before the first model call (see [`Guardrail`]): a trip
    /// ends the turn with [`TurnErrorKind::Guardrail`](crate::TurnErrorKind::Guardrail)
    /// before the input is stored or any model sees it. Only the guardrails of the agent a
    /// turn starts on run: a handoff target's are not run for the turn handed to it.
    pub fn input_guardrail(mut self, guardrail: Guardrail) -> Self {
        self.input_guardrails.push(guardrail);
        self
    }

    /// Checks the final output (the reply with no tool call, or the arguments of a typed
    /// answer's final-answer call) before it is stored, streamed or reported: a trip ends the
    /// turn with
    /// [`TurnErrorKind::Guardrail`](crate::TurnErrorKind::Guardrail) and the output reaches
    /// neither the store, nor on_chunk and the stream API, nor on_chat_response. An agent with
    /// output guardrails delivers each step's chunks when the step's reply is settled, not as
    /// they stream. They check the replies of this agent only: after a handoff, the target's
    /// output guardrails check the final reply, not the handing agent's.
    pub fn output_guardrail(mut self, guardrail: Guardrail) -> Self {
        self.output_guardrails.push(guardrail);
        self
    }

    /// Adds a subscriber to JSON snapshots of this agent's turns (see [`Extension`]): it runs
    /// after the agent's own hooks, after the extensions added before it. A zero
    /// [`Extension::timeout`], or [`Extension::chunk_types`] that select no chunk, is a build
    /// error.
    pub fn extension(mut self, extension: Extension) -> Self {
        self.problems.extend(extension.problems());
        self.extensions.push(extension);
        self
    }

    /// Adds a program run on an event (see [`CommandHook`]); one with an empty command or a
    /// zero timeout is a build error.
    pub fn command_hook(mut self, hook: CommandHook) -> Self {
        if let Some(problem) = hook.problem() {
            self.problems.push(problem);
            return self;
        }
        hook.register(self)
    }

    /// Offers another agent to the model as a tool (see [`Subagent`]): a call runs that
    /// agent's own turn on its input and returns its final answer. Takes `&agent` or a
    /// configured [`Subagent`].
    pub fn subagent(mut self, subagent: impl Into<Subagent>) -> Self {
        self.subagents.push(subagent.into());
        self
    }

    /// What the agent does.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The agent's instructions: the system prompt of every turn.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The model turns use unless a hook picks another.
    pub fn model(self, model: impl Model + 'static) -> Self {
        self.model_arc(Arc::new(model))
    }

    /// The model, shared.
    pub fn model_arc(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// The step limit of a turn (default 10, at least 1).
    pub fn max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// Stops any tool call that runs longer than `limit` (its future is dropped) and gives the
    /// model a timeout error result, unless the tool has its own timeout (`Tool::TIMEOUT`,
    /// `#[tool(timeout_ms = N)]`, `FnTool::with_timeout`). Default: no limit. Zero, here or a
    /// tool's own, is a build error (every call would time out at once). A tool that runs on
    /// the spot (a `#[tool]` on a plain `fn`, `FnTool::sync`) runs inline and is not bounded:
    /// a timeout of its own is a build error.
    pub fn tool_timeout(mut self, limit: Duration) -> Self {
        self.tool_timeout = Some(limit);
        self
    }

    /// Fails the turn when a tool fails more than `retries` times in a row: the model may call
    /// a tool again after a failed call `retries` times, and the next failure ends the turn
    /// (Pydantic AI's `retries`). A tool's own limit (`Tool::RETRIES`, `#[tool(retries = N)]`,
    /// `FnTool::with_retries`) comes first. Default: no limit, so a model that keeps failing
    /// is stopped by `max_steps` alone, as it always was.
    ///
    /// A failed call is one whose result the model reads as an error: arguments that do not
    /// parse, the tool's error, panic or timeout, a before_tool_call hook failing closed (a
    /// failure hook that replaces the error with a valid result makes it a success; a block
    /// or a substitute is not a failure). A call to a tool the agent does not have (or not in
    /// this step) counts under the name called, against this limit. The count is per tool and
    /// per turn, by step: a step in which a call of the tool failed adds one, a step in which
    /// every call of it succeeded resets it to zero, and a step that does not call it leaves
    /// it. Final-answer calls are counted by the output retries instead.
    ///
    /// Past the limit, once the step's results are stored and on_step_finish has fired,
    /// on_stop fires with [`StopReason::ToolRetries`](crate::StopReason::ToolRetries); unless it
    /// supplies an output, the turn fails with
    /// [`TurnErrorKind::Limit`](crate::TurnErrorKind::Limit) and a message naming the tool, the
    /// count, the limit and the last error.
    ///
    /// ```
    /// use agent_core::{AgentBuilder, FnTool, ScriptedModel, ScriptedStep, StopReason, ToolError, TurnErrorKind};
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let flaky = FnTool::sync("lookup", "Looks it up.", json!({"type": "object"}), |_, _| {
    ///     Err(ToolError::new("the index is down"))
    /// });
    /// let model = ScriptedModel::new((0..3).map(|step| {
    ///     ScriptedStep::new().tool_call(format!("c{step}"), "lookup", "{}")
    /// }));
    /// let agent = AgentBuilder::new("researcher")
    ///     .model(model)
    ///     .dyn_tool(flaky)
    ///     .tool_retries(1)
    ///     .build()
    ///     .unwrap();
    /// let error = agent.run("look it up").await.error.unwrap();
    /// assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::ToolRetries));
    /// assert_eq!(
    ///     error.message,
    ///     "tool `lookup` failed 2 times in a row, past its limit of 1 retry; last error: the index is down"
    /// );
    /// # }
    /// ```
    pub fn tool_retries(mut self, retries: usize) -> Self {
        self.tool_retries = Some(retries);
        self
    }

    /// Ends the turn once one of these tools has answered a call: its result is the turn's
    /// answer, and the model does not read it (the OpenAI Agents SDK's `StopAtTools`, the AI
    /// SDK's `stopWhen: hasToolCall(..)`, Google ADK's `skip_summarization`). After a step
    /// whose calls are all answered, stored, and on_step_finish has fired, the first call of
    /// such a tool, in the model's order, whose tool ran (or whose output a gate substituted)
    /// and whose result is not an error ends the turn as completed, with
    /// [`StopReason::Tool`](crate::StopReason::Tool) and that result's text as
    /// [`TurnResult::text`](crate::TurnResult::text). A failed call does not: the model reads
    /// its error and may try again. A limit reached in the same step (budget, tool retries)
    /// and a handoff made in it come first; a call answered when a suspended turn resumes
    /// counts as in its step, and so does one answered before its step suspended (its answer
    /// is kept with the waiting calls). Each name must be one of the agent's tools (a
    /// subagent's tool too: its answer becomes the turn's); an agent with an output type
    /// answers through it instead, so naming stop tools for one is a build error.
    ///
    /// ```
    /// use agent_core::{AgentBuilder, FnTool, ScriptedModel, ScriptedStep, StopReason};
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let report = FnTool::sync("report", "Writes the report.", json!({"type": "object"}), |_, _| {
    ///     Ok(json!("Q3 revenue: 12.4M"))
    /// });
    /// let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "report", "{}")]);
    /// let agent = AgentBuilder::new("analyst")
    ///     .model(model)
    ///     .dyn_tool(report)
    ///     .stop_at_tools(["report"])
    ///     .build()
    ///     .unwrap();
    /// let result = agent.run("Write the Q3 report.").await;
    /// assert_eq!(result.stop_reason, Some(StopReason::Tool));
    /// assert_eq!(result.text, "Q3 revenue: 12.4M");
    /// # }
    /// ```
    pub fn stop_at_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.stop_at_tools.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets a turn's tool choice ([`TurnConfig::tool_choice`](crate::TurnConfig::tool_choice))
    /// back to `Auto` once the model has called tools, as the OpenAI Agents SDK's
    /// `reset_tool_choice` does: a turn-wide `Required` or named tool then forces the first
    /// call, and lets the model answer in text after it rather than calling tools until the
    /// step limit. A `before_step` hook's choice, for its step only, is not changed. Default:
    /// off, the choice holds for every step (the AI SDK's `toolChoice`).
    pub fn reset_tool_choice(mut self, reset: bool) -> Self {
        self.reset_tool_choice = reset;
        self
    }

    /// Seals every waiting call of a suspended turn with a token
    /// ([`PendingCall::token`](crate::PendingCall::token)), HMAC-SHA256 under `key`: answers
    /// must then come through [`Conversation::answer`](crate::Conversation::answer) with the
    /// call's token, so an answer that is forged, made for another call or replayed against a
    /// later suspension of the same call id is refused. Keep the key secret (32 random bytes,
    /// say) and the same across the processes that answer; an empty key is a build error.
    pub fn approval_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.approval_key = Some(Arc::from(key.into()));
        self
    }

    /// How many tool calls of one step run at once (default 8; 1 runs them one at a time; 0
    /// is a build error, as it would run none).
    pub fn tool_concurrency(mut self, limit: usize) -> Self {
        self.tool_concurrency = limit;
        self
    }

    /// What a turn does while another turn of its session runs, in this agent or any other on
    /// the same store (default: wait).
    pub fn turn_overlap(mut self, overlap: TurnOverlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// Default sampling and length settings.
    pub fn settings(mut self, settings: CallSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Default provider options, passed through to the model.
    pub fn provider_options(mut self, options: Map<String, Value>) -> Self {
        self.provider_options = options;
        self
    }

    /// Where conversations keep their history (default: in memory).
    pub fn store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Configures each session once when it opens (its first turn in this process): context
    /// blocks that compose the system prompt after the instructions, compaction and the token
    /// counter. See [`SessionConfig`](crate::SessionConfig).
    pub fn configure_session(
        mut self,
        configure: impl Fn(crate::SessionConfig) -> crate::SessionConfig + Send + Sync + 'static,
    ) -> Self {
        self.configure_session = Some(Arc::new(configure));
        self
    }

    /// Adds a statically typed tool.
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        self.tools.push((Arc::new(TypedTool::new(tool)), false));
        self
    }

    /// Adds a tool made at run time ([`FnTool`](crate::FnTool) or any [`DynTool`]); hook
    /// contexts report it as `dynamic`.
    pub fn dyn_tool(mut self, tool: impl DynTool) -> Self {
        self.tools.push((Arc::new(tool), true));
        self
    }

    /// Adds a hook of a turn-wide event (a zero [`Hook::timeout`], or one on a sync hook, is a
    /// build error).
    pub fn hook<E: TurnWideEvent>(mut self, hook: Hook<E>) -> Self {
        self.hook_timeout(&hook.name, hook.options.timeout, hook.is_sync());
        E::slot(&mut self.hooks).push(hook);
        self
    }

    /// Adds hooks defined apart from the agent (a `#[hook]` free function's type).
    pub fn hooks(self, hooks: impl super::HookSet) -> Self {
        hooks.register(self)
    }

    /// Adds a before_tool_call hook for the tools `matcher` selects.
    pub fn before_tool_call<I: ToolInput>(
        mut self,
        matcher: Matcher,
        hook: Hook<BeforeToolCall<I>>,
    ) -> Self {
        self.hook_timeout(&hook.name, hook.options.timeout, hook.is_sync());
        if let Some(meta) = self.meta(
            &matcher,
            &hook.name,
            hook.options.priority,
            hook.policy(),
            I::accepts,
            TypeId::of::<I>() == TypeId::of::<serde_json::Value>(),
        ) {
            self.before
                .push((matcher, Arc::new(TypedBefore { meta, hook })));
        }
        self
    }

    /// Adds an after_tool_call hook for the tools `matcher` selects.
    pub fn after_tool_call<I: ToolInput, O: Send + Sync + 'static>(
        mut self,
        matcher: Matcher,
        hook: Hook<AfterToolCall<I, O>>,
    ) -> Self {
        self.hook_timeout(&hook.name, hook.options.timeout, hook.is_sync());
        if let Some(meta) = self.meta(
            &matcher,
            &hook.name,
            hook.options.priority,
            hook.policy(),
            I::accepts,
            TypeId::of::<I>() == TypeId::of::<serde_json::Value>(),
        ) {
            self.after
                .push((matcher, Arc::new(TypedAfter { meta, hook })));
        }
        self
    }

    /// Notes a hook's timeout that could not work as a build problem: a sync hook's (it runs
    /// inline, where nothing can stop it), or a zero one (every run would time out at once).
    /// The macros refuse `timeout_ms` on a sync hook and `timeout_ms = 0` the same way.
    fn hook_timeout(&mut self, name: &str, timeout: Option<Duration>, sync: bool) {
        if timeout.is_some() && sync {
            self.problems.push(format!(
                "hook `{name}`: a timeout applies to async hooks; a sync hook runs inline and \
                 cannot be stopped: make it async, or remove its timeout"
            ));
        } else if timeout == Some(Duration::ZERO) {
            self.problems.push(format!(
                "hook `{name}`: its timeout is zero, so every run would time out at once; give \
                 a positive limit, or none"
            ));
        }
    }

    fn meta(
        &mut self,
        matcher: &Matcher,
        name: &str,
        priority: i32,
        policy: crate::FailurePolicy,
        accepts: fn(&str) -> bool,
        untyped: bool,
    ) -> Option<ToolHookMeta> {
        match matcher.compile() {
            Ok(compiled) => Some(ToolHookMeta {
                name: name.to_owned(),
                priority,
                policy,
                compiled,
                accepts,
                untyped,
            }),
            Err(error) => {
                self.problems.push(format!("hook `{name}`: {error}"));
                None
            }
        }
    }

    /// Builds the agent, checking tool names, that each tool's parameters are an object schema,
    /// and every hook's matcher against the tools. An agent with a [`Handoff::named`] is built
    /// with its teammates by [`Team::build`](super::Team::build) instead.
    pub fn build(self) -> Result<Agent, BuildError> {
        Ok(Agent {
            inner: Arc::new(self.runtime(None)?),
            team: None,
        })
    }

    /// The agent's name and description, as its teammates' handoffs see them.
    pub(super) fn roster_entry(&self) -> (String, Option<String>) {
        (self.name.clone(), self.description.clone())
    }

    /// The agent's runtime, its named handoffs checked against `team` (the names and
    /// descriptions of its team's agents, `None` when it is built alone) and left to link.
    pub(super) fn runtime(self, team: Option<&Roster>) -> Result<AgentRuntime, BuildError> {
        let AgentBuilder {
            name,
            description,
            instructions,
            model,
            max_steps,
            tool_concurrency,
            tool_timeout,
            tool_retries,
            stop_at_tools,
            reset_tool_choice,
            overlap,
            settings,
            provider_options,
            tools,
            mut hooks,
            mut before,
            mut after,
            store,
            approval_key,
            handoffs,
            subagents,
            context_type,
            input_guardrails,
            output_guardrails,
            extensions,
            configure_session,
            output,
            mut problems,
        } = self;
        let mut teams: Vec<TeamAgents> = Vec::new();
        let (tools, subagent_names) = with_subagents(tools, subagents, &mut teams);
        if model.is_none() {
            // Every other problem is listed too.
            problems.push("no model: call `.model(...)` on the builder".to_owned());
        }
        if max_steps == 0 {
            problems.push("`max_steps` must be at least 1".to_owned());
        }
        if tool_concurrency == 0 {
            problems.push(
                "`tool_concurrency` must be at least 1 (1 runs a step's tool calls one at a time)"
                    .to_owned(),
            );
        }
        if tool_timeout == Some(Duration::ZERO) {
            problems.push(
                "`tool_timeout` is zero, so every tool call would time out at once; give a \
                 positive limit, or none"
                    .to_owned(),
            );
        }
        if approval_key.as_deref().is_some_and(<[u8]>::is_empty) {
            problems.push(
                "`approval_key` is empty: anyone could make its tokens; give a secret key (32 \
                 random bytes, say)"
                    .to_owned(),
            );
        }
        let tool_index = index_tools(&tools, &subagent_names, &mut problems);
        let handoffs = handoff_slots(handoffs, team, &tool_index, &mut teams, &mut problems);
        let output = output.build(&tool_index, &mut problems);
        if let Some(spec) = &output {
            // The model would be offered two tools of one name, which providers refuse.
            let answers = std::iter::once(&spec.tool).chain(spec.variants.iter().map(|v| &v.tool));
            for name in answers.map(|tool| &tool.name) {
                if handoffs.iter().any(|slot| slot.spec.name == *name) {
                    problems.push(format!(
                        "the transfer tool name `{name}` is the final-answer tool's; name one of \
                         them with `Handoff::tool_name` or `output_tool`"
                    ));
                }
            }
        }
        let names: Vec<&str> = tools
            .iter()
            .map(|(tool, _)| tool.spec().name.as_str())
            .collect();
        let output_type = output.as_ref().map(|spec| spec.kind.type_name);
        check_stop_tools(&stop_at_tools, &names, output_type, &mut problems);
        check_matchers(
            before.iter().map(|(m, h)| (m, h.meta())),
            &names,
            &mut problems,
        );
        check_matchers(
            after.iter().map(|(m, h)| (m, h.meta())),
            &names,
            &mut problems,
        );
        let (Some(model), true) = (model, problems.is_empty()) else {
            return Err(BuildError { problems });
        };
        hooks.sort();
        before.sort_by_key(|(_, hook)| hook.meta().priority);
        after.sort_by_key(|(_, hook)| hook.meta().priority);
        let before_hooks: Vec<_> = before.into_iter().map(|(_, hook)| hook).collect();
        let after_hooks: Vec<_> = after.into_iter().map(|(_, hook)| hook).collect();
        let (before_of, after_of) = (&before_hooks[..], &after_hooks[..]);
        let counts_tool_failures =
            tool_retries.is_some() || tools.iter().any(|(tool, _)| tool.retries().is_some());
        let slots = tool_slots(tools, subagent_names, before_of, after_of, tool_timeout);
        let specs = slots.iter().map(|slot| slot.spec().clone()).collect();
        Ok(AgentRuntime {
            name: name.into(),
            description,
            instructions,
            model,
            max_steps,
            tool_concurrency,
            tool_timeout,
            tool_retries,
            counts_tool_failures,
            stop_at_tools: stop_at_tools.into_iter().map(Arc::from).collect(),
            reset_tool_choice,
            overlap,
            settings,
            provider_options,
            tools: slots,
            tool_index,
            specs,
            hooks,
            before_hooks,
            after_hooks,
            store: Arc::new(crate::store::PanicSafe(
                store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
            )),
            approval_key,
            handoffs,
            _teams: teams,
            context_type,
            input_guardrails,
            output_guardrails,
            extensions: extensions.into(),
            sessions: Default::default(),
            configure_session,
            output,
        })
    }
}

/// Each of `stop_at_tools` must name one of the agent's tools, and an agent with an output
/// type answers through it instead.
fn check_stop_tools(
    stop_at_tools: &[String],
    tools: &[&str],
    output_type: Option<&str>,
    problems: &mut Vec<String>,
) {
    for name in stop_at_tools {
        if !tools.contains(&name.as_str()) {
            problems.push(format!(
                "`stop_at_tools`: no tool named `{name}` (tools: {})",
                tools.join(", ")
            ));
        }
    }
    if let (Some(output_type), false) = (output_type, stop_at_tools.is_empty()) {
        problems.push(format!(
            "`stop_at_tools` makes a tool's result the answer, but the agent answers with its \
             output type `{output_type}`: drop one of them"
        ));
    }
}

/// A tool of the agent, and whether hooks take it as dynamic (JSON input).
type ToolEntry = (Arc<dyn DynTool>, bool);

/// The agent's tools with a tool per subagent after them, and which of them are subagents
/// (the teams of the subagents go to `teams`).
fn with_subagents(
    mut tools: Vec<ToolEntry>,
    subagents: Vec<Subagent>,
    teams: &mut Vec<TeamAgents>,
) -> (Vec<ToolEntry>, Vec<Option<SubagentMark>>) {
    let mut subagent_names = vec![None; tools.len()];
    for subagent in subagents {
        teams.extend(subagent.agent.team);
        let mark = SubagentMark {
            name: subagent.agent.inner.name.clone(),
            inherit: subagent.inherit,
        };
        let tool = crate::engine::subagent::tool(
            subagent.agent.inner,
            subagent.tool_name,
            subagent.description,
        );
        tools.push((Arc::new(tool), false));
        subagent_names.push(Some(mark));
    }
    (tools, subagent_names)
}

/// Each tool with the tool-call hooks (before, after) whose matchers select it and its
/// timeout, resolved once.
fn tool_slots(
    tools: Vec<ToolEntry>,
    subagents: Vec<Option<SubagentMark>>,
    before: &[Arc<dyn BeforeHook>],
    after: &[Arc<dyn AfterHook>],
    tool_timeout: Option<Duration>,
) -> Vec<ToolSlot> {
    tools
        .into_iter()
        .zip(subagents)
        .map(|((tool, dynamic), subagent)| ToolSlot {
            subagent,
            ..ToolSlot::resolve(tool, dynamic, before, after, tool_timeout)
        })
        .collect()
}

/// The handoffs' transfer tools (the teams of their built targets go to `teams`); a name that
/// is invalid or taken by a tool or another handoff is a problem, and so is a named target
/// that is none of the team's agents (or any, for an agent built alone).
fn handoff_slots(
    handoffs: Vec<Handoff>,
    team: Option<&Roster>,
    tools: &HashMap<String, usize>,
    teams: &mut Vec<TeamAgents>,
    problems: &mut Vec<String>,
) -> Vec<HandoffSlot> {
    let mut slots: Vec<HandoffSlot> = Vec::with_capacity(handoffs.len());
    for handoff in handoffs {
        let tool = TransferTool {
            tool_name: handoff.tool_name,
            description: handoff.description,
            history: handoff.history,
            inherit: handoff.inherit,
            input: handoff.input,
        };
        let slot = match handoff.target {
            Target::Agent(agent) => {
                teams.extend(agent.team);
                let (to, what) = (agent.inner.name.clone(), agent.inner.description.clone());
                HandoffSlot::new(HandoffTarget::Built(agent.inner), to, what.as_deref(), tool)
            }
            Target::Named(name) => {
                let what = match team {
                    Some(team) => team.description(&name, problems),
                    None => {
                        problems.push(format!(
                            "handoff to `{name}` names its target: build this agent and `{name}` together with `Team::build`"
                        ));
                        None
                    }
                };
                let linked = HandoffTarget::Linked(Default::default());
                HandoffSlot::new(linked, name.into(), what, tool)
            }
        };
        let name = &slot.spec.name;
        let target = &slot.to;
        if let Some(input) = &slot.input
            && !is_object_schema(&input.schema)
        {
            problems.push(format!(
                "handoff to `{target}`: its input type `{}` is not a struct: the transfer tool's parameters must be an object schema (providers refuse any other)",
                input.name
            ));
        }
        if !is_valid_tool_name(name) {
            problems.push(format!(
                "handoff to `{target}`: invalid transfer tool name `{name}`: use 1 to 64 of `[A-Za-z0-9_-]` (name it with `Handoff::tool_name`)"
            ));
        }
        if tools.contains_key(name) || slots.iter().any(|other| other.spec.name == *name) {
            problems.push(format!(
                "handoff to `{target}`: the transfer tool name `{name}` is taken; name it with `Handoff::tool_name`"
            ));
        }
        slots.push(slot);
    }
    slots
}

/// Each tool's position by name; invalid and duplicate names, and parameters that are not an
/// object schema, are problems (a subagent's name, from `subagents`, saying how to name its
/// tool).
fn index_tools(
    tools: &[(Arc<dyn DynTool>, bool)],
    subagents: &[Option<SubagentMark>],
    problems: &mut Vec<String>,
) -> HashMap<String, usize> {
    let mut index = HashMap::new();
    for (position, (tool, _)) in tools.iter().enumerate() {
        let tool_name = &tool.spec().name;
        let subagent = subagents.get(position).and_then(Option::as_ref);
        let valid = is_valid_tool_name(tool_name);
        let taken = index.insert(tool_name.clone(), position).is_some();
        match subagent {
            Some(mark) => {
                let name = &mark.name;
                if !valid {
                    problems.push(format!(
                        "subagent `{name}`: invalid tool name `{tool_name}`: use 1 to 64 of \
                         `[A-Za-z0-9_-]` (name it with `Subagent::tool_name`)"
                    ));
                }
                if taken {
                    problems.push(format!(
                        "subagent `{name}`: the tool name `{tool_name}` is taken; name it with \
                         `Subagent::tool_name`"
                    ));
                }
            }
            None => {
                if !valid {
                    problems.push(format!(
                        "invalid tool name `{tool_name}`: use 1 to 64 of `[A-Za-z0-9_-]`"
                    ));
                }
                if taken {
                    problems.push(format!("duplicate tool name `{tool_name}`"));
                }
            }
        }
        if tool.timeout() == Some(Duration::ZERO) {
            problems.push(format!(
                "tool `{tool_name}`: its timeout is zero, so every call would time out at once; \
                 give a positive limit, or none"
            ));
        } else if tool.timeout().is_some() && tool.runs_now() {
            problems.push(format!(
                "tool `{tool_name}`: a timeout applies to async tools; a tool that runs on the \
                 spot (`FnTool::sync`, `Tool::RUNS_NOW`) runs inline and cannot be stopped: make \
                 it async, or remove its timeout"
            ));
        }
        if !is_object_schema(&tool.spec().parameters) {
            problems.push(format!(
                "tool `{tool_name}`: its parameters schema must be an object schema, `{{\"type\": \"object\", \"properties\": {{...}}}}` (providers refuse any other)"
            ));
        }
    }
    index
}

/// A matcher that matches no tool is a mistake unless it is `dynamic`; a hook whose input type
/// cannot carry a matched tool's arguments is always one.
fn check_matchers<'a>(
    hooks: impl Iterator<Item = (&'a Matcher, &'a ToolHookMeta)>,
    tools: &[&str],
    problems: &mut Vec<String>,
) {
    for (matcher, meta) in hooks {
        let matched: Vec<&str> = tools
            .iter()
            .copied()
            .filter(|tool| meta.compiled.matches(tool))
            .collect();
        if matched.is_empty() && !matcher.is_dynamic() {
            let tools = if tools.is_empty() {
                "it has none".to_owned()
            } else {
                tools.join(", ")
            };
            problems.push(format!(
                "hook `{}`: `{matcher}` matches none of the agent's tools ({tools}); add `dynamic` if tools are added at run time",
                meta.name,
            ));
        }
        if !matcher.is_dynamic() && !matched.is_empty() {
            for name in matcher.names().unwrap_or_default() {
                if !tools.contains(&name.as_str()) {
                    problems.push(format!(
                        "hook `{}`: no tool named `{name}` (tools: {})",
                        meta.name,
                        tools.join(", ")
                    ));
                }
            }
        }
        for tool in matched {
            if !(meta.accepts)(tool) {
                problems.push(format!(
                    "hook `{}`: its input type cannot carry the arguments of tool `{tool}`",
                    meta.name
                ));
            }
        }
    }
}
