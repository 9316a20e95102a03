//! One tool call from the model's request to its result: lookup, argument parsing, the
//! before_tool_call chain (merge rule), execution, after_tool_call_success/failure,
//! after_tool_call, and the text the model reads.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use super::call_hooks::{Gate, gate, gate_now, observe_now, observe_outcome};
use super::inherit::{self, Inherited};
use super::plan::CallScope;
use super::preliminary;
use super::runtime::ToolSlot;
use super::subagent_call::{self, Resume, Suspension};
use super::tool_results;
use super::traced::{self, in_span};
use crate::hooks::extension::{self as extensions, ExtensionEvent};
use crate::hooks::tool_hooks::CallState;
use crate::hooks::{ModelResult, ToolOutcome, ToolOutcomeKind, ToolResultRecord, TurnError};
use crate::message::ToolCall;
use crate::store::{self, CallAnswer, PendingCall, PendingKind, SubagentTurn};
use crate::text::Text;
use crate::tool::{self, AnyValue, Report, ToolContext, ToolError};
use crate::util::{BoxFuture, boxed, catch_panic, catch_unwind, clip};

/// What a finished call contributes to the step. Its rare parts are boxed: a result is moved
/// from the call to the step about five times (224 bytes, not 320 with them inline: the slope
/// of `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
pub(crate) struct CallResult {
    pub(crate) record: ToolResultRecord,
    /// Set when a fail-closed after_tool_call hook failed: the turn fails after this step.
    pub(crate) error: Option<Box<TurnError>>,
    /// An after_tool_call_success/failure hook dropped the call from history.
    pub(crate) dropped: bool,
    /// A transfer call whose handoff was allowed: the current agent's handoff at this index.
    pub(crate) handoff: Option<usize>,
    /// The calls this call waits on for an answer from outside the turn (itself, or those of
    /// the subagent whose turn suspended inside it): it has no result yet.
    pub(crate) pending: Vec<PendingCall>,
    /// For a call to a subagent whose turn suspended: that turn, resumed with the answers.
    pub(crate) via: Option<Box<SubagentTurn>>,
}

#[cold]
pub(super) fn rejected(call: &ToolCall, content: String) -> CallResult {
    let record = ToolResultRecord {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: content.into(),
        is_error: true,
        outcome: ToolOutcomeKind::Rejected,
        duration: Duration::ZERO,
    };
    CallResult {
        record,
        error: None,
        dropped: false,
        handoff: None,
        pending: Vec::new(),
        via: None,
    }
}

/// A call that waits for an answer from outside the turn: a person's approval, a client's
/// result, or a deferred result.
#[cold]
fn waiting(
    call: &ToolCall,
    state: &CallState<'_>,
    kind: PendingKind,
    reason: Option<String>,
) -> CallResult {
    let reason = reason.unwrap_or_else(|| match kind {
        PendingKind::Client => format!("tool `{}` runs on the client", call.name),
        PendingKind::Deferred => format!("tool `{}` was deferred by a hook", call.name),
        _ => format!("tool `{}` needs approval", call.name),
    });
    let arguments = state.model_input.to_json().unwrap_or_default();
    let modified_arguments = (!Arc::ptr_eq(&state.model_input, &state.effective_input))
        .then(|| state.effective_input.to_json().unwrap_or_default())
        .filter(|modified| *modified != arguments);
    let pending = PendingCall {
        id: call.id.to_string(),
        tool: call.name.to_string(),
        fingerprint: store::fingerprint(&call.name, &arguments),
        arguments,
        modified_arguments,
        reason: reason.clone(),
        kind,
        // Sealed with the session and row when the turn keeps it (`tool_calls.rs`).
        token: None,
        path: Vec::new(),
    };
    suspended(call, reason, vec![pending], None)
}

/// A call left waiting: its suspended result, the calls it waits on and, for a subagent, the
/// turn its resume resumes.
#[cold]
fn suspended(
    call: &ToolCall,
    content: String,
    pending: Vec<PendingCall>,
    via: Option<SubagentTurn>,
) -> CallResult {
    let record = ToolResultRecord {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: content.into(),
        is_error: false,
        outcome: ToolOutcomeKind::Suspended,
        duration: Duration::ZERO,
    };
    CallResult {
        record,
        error: None,
        dropped: false,
        handoff: None,
        pending,
        via: via.map(Box::new),
    }
}

/// A call to the subagent `subagent` whose turn suspended: it waits on the subagent's waiting
/// calls (their path starting with the subagent), and its resume resumes that turn.
#[cold]
fn waiting_in_subagent(
    scope: &CallScope<'_>,
    call: &ToolCall,
    subagent: &str,
    suspension: Suspension,
) -> CallResult {
    let pending = suspension
        .pending
        .into_iter()
        .map(|mut waiting| {
            waiting.path.insert(0, subagent.to_owned());
            waiting
        })
        .collect();
    let arguments = serde_json::from_str(&call.arguments)
        .unwrap_or_else(|_| serde_json::Value::String(call.arguments.to_string()));
    let via = SubagentTurn {
        call_id: call.id.to_string(),
        tool: call.name.to_string(),
        arguments,
        session: suspension.session.session().to_owned(),
    };
    // The caller's session keeps the hold on the subagent's until it resumes the call (or is
    // freed, which frees the subagent's session with it).
    let (store, session) = scope.session;
    store.keep_hold(session, suspension.session);
    let content = format!("agent `{subagent}` suspended: its tool calls wait for an answer");
    suspended(call, content, pending, Some(via))
}

/// A call as [`start`] leaves it: finished on the spot, or a future to await.
pub(crate) enum Started<'s> {
    /// The call finished on the spot.
    Done(CallResult),
    /// The call goes on as a future (all of it, or what is left after a tool that reported).
    Running(BoxFuture<'s, CallResult>),
}

/// Starts one call, at `position` in its step: a call of a tool that runs on the spot
/// ([`ToolSlot::now`]: a plain `fn` tool whose hooks are sync) runs here and now, without a
/// future, when nothing else in its step waits either ([`CallScope::now`]), and so does a call
/// of an unknown tool; any other call is the future of [`execute`], the tool found once. A
/// call run on the spot makes no boxed future, no state machine and no tool future (the slope
/// of `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
pub(crate) fn start<'s>(
    scope: &'s CallScope<'_>,
    position: usize,
    call: &'s ToolCall,
    approval: Option<&'s CallAnswer>,
    resume: Option<Resume>,
) -> Started<'s> {
    let found = find(scope, call);
    if found.as_ref().is_ok_and(|slot| !(slot.now && scope.now)) {
        let call = execute(scope, position, call, approval, resume, found);
        return Started::Running(Box::pin(call));
    }
    let span = traced::recording(call_span(call));
    let end = CallEnd::start(scope, call);
    let ran = match &span {
        None => execute_now(scope, position, call, approval, found),
        Some(span) => span.in_scope(|| execute_now(scope, position, call, approval, found)),
    };
    match ran {
        Ok(result) => {
            end.ended(&result);
            Started::Done(result)
        }
        Err(rest) => Started::Running(Box::pin(async move {
            let result = match span {
                None => rest.await,
                Some(span) => rest.instrument(span).await,
            };
            end.ended(&result);
            result
        })),
    }
}

/// A call as a future of [`execute`], not started before it is polled: a call after one that
/// goes on as a future (the calls start in the model's order).
pub(crate) fn later<'s>(
    scope: &'s CallScope<'_>,
    position: usize,
    call: &'s ToolCall,
    approval: Option<&'s CallAnswer>,
    resume: Option<Resume>,
) -> BoxFuture<'s, CallResult> {
    let found = find(scope, call);
    boxed(|| execute(scope, position, call, approval, resume, found))
}

/// Runs one call, at `position` in its step, of the tool `found` (or the error the model reads
/// for an unknown one); `approval` is the answer that approved a call which waited for one, and
/// `resume` the suspended turn a call to a subagent resumes. Never panics on anything the
/// model sent: unknown tools and bad arguments become error results.
async fn execute(
    scope: &CallScope<'_>,
    position: usize,
    call: &ToolCall,
    approval: Option<&CallAnswer>,
    resume: Option<Resume>,
    found: Result<&ToolSlot, String>,
) -> CallResult {
    let span = call_span(call);
    let end = CallEnd::start(scope, call);
    let inner = std::pin::pin!(execute_inner(
        scope, position, call, approval, resume, found
    ));
    let result = in_span!(span, catch_unwind(inner)).unwrap_or_else(|panic| panicked(call, panic));
    end.ended(&result);
    result
}

/// The result of a call whose handling panicked outside the guards around the tool and each
/// hook: a value of the tool's or of a hook's whose `Drop` panicked as the engine dropped it
/// (the tool's output once the model's text is made of it, a hook's decision). The call
/// fails, as it does when its tool panics, and the turn goes on.
#[cold]
fn panicked(call: &ToolCall, panic: String) -> CallResult {
    let mut result = rejected(call, format!("tool `{}` panicked: {panic}", call.name));
    result.record.outcome = ToolOutcomeKind::Failed;
    result
}

/// The span of a call.
fn call_span(call: &ToolCall) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
    )
}

/// A call's on_tool_start and on_tool_end, for the run hooks observing it: started when made,
/// and ended with the call's result, or, when the call is dropped before it ended (its turn
/// was cancelled while it ran), with an error saying so, so every start has its end.
struct CallEnd<'a, 's> {
    scope: &'a CallScope<'s>,
    call: &'a ToolCall,
    ended: bool,
}

impl<'a, 's> CallEnd<'a, 's> {
    /// Fires on_tool_start.
    fn start(scope: &'a CallScope<'s>, call: &'a ToolCall) -> Self {
        if let Some(run) = scope.run {
            run.fire(scope.me, "on_tool_start", |hooks, agent| {
                hooks.on_tool_start(agent, call)
            });
        }
        CallEnd {
            scope,
            call,
            ended: false,
        }
    }

    /// Fires on_tool_end with the call's result.
    fn ended(mut self, result: &CallResult) {
        self.ended = true;
        self.fire(result);
    }

    fn fire(&self, result: &CallResult) {
        if let Some(run) = self.scope.run {
            run.fire(self.scope.me, "on_tool_end", |hooks, agent| {
                hooks.on_tool_end(agent, &result.record)
            });
        }
    }
}

impl Drop for CallEnd<'_, '_> {
    // Inlined, its rare work out of line: every call drops one, and a call of it cost 11
    // instructions a tool call (`whole_turn_calls_agent` in agent-providers/benches/stream.rs).
    #[inline]
    fn drop(&mut self) {
        if !self.ended && self.scope.run.is_some() {
            self.cut_off();
        }
    }
}

impl CallEnd<'_, '_> {
    /// on_tool_end for a call dropped before it ended.
    #[cold]
    fn cut_off(&self) {
        let why = match self.scope.cancel.is_cancelled() {
            true => "the turn was cancelled",
            false => "the turn ended",
        };
        let mut result = rejected(
            self.call,
            format!(
                "tool `{}` was stopped before it ended: {why}",
                self.call.name
            ),
        );
        result.record.outcome = ToolOutcomeKind::Failed;
        self.fire(&result);
    }
}

/// Lookup and parsing, before_tool_call, the tool itself, the result hooks and after_tool_call.
async fn execute_inner(
    scope: &CallScope<'_>,
    position: usize,
    call: &ToolCall,
    approval: Option<&CallAnswer>,
    resume: Option<Resume>,
    found: Result<&ToolSlot, String>,
) -> CallResult {
    // An earlier call of the step (its hook or its tool) cancelled the turn: this one runs
    // nothing (neither hook nor tool), and the turn ends aborted after the step.
    if scope.cancel.is_cancelled() {
        return rejected(call, not_run(call));
    }
    let (slot, parsed) = match found.and_then(|slot| parse(slot, call)) {
        Ok(found) => found,
        Err(why) => return rejected(call, why),
    };
    let mut state = call_state(scope, slot, call, parsed, approval);
    // Hooks inherited from the agents that handed work to this one run first.
    let name = slot.spec().name.as_str();
    let before = scope.inherited.before_for(name).chain(&slot.before);
    let has_after = has_after(scope, slot);
    let gated = match admit(gate(before, &mut state, call).await, slot, &state, call) {
        ControlFlow::Continue(gated) => gated.or_else(|| cancelled(scope, call)),
        ControlFlow::Break(waiting) => return waiting,
    };
    // Extensions see the call after the agent's own gates, with the input that runs. Most
    // agents have none: their calls neither make nor poll the extensions' future (boxed, out
    // of this one's code; the slope of `whole_turn_calls_agent` in
    // agent-providers/benches/stream.rs).
    let call_snapshot = if scope.extensions.is_empty() {
        None
    } else {
        let announced: BoxFuture<'_, _> = Box::pin(announce(scope, call, &state));
        announced.await
    };
    let (outcome, duration, mut state) = match gated {
        Some(outcome) => (outcome, Duration::ZERO, Some(state)),
        None if slot.subagent.is_some() => {
            // A subagent's call (its start and stop hooks, the hooks it passes on, its turn's
            // suspension) runs in a future of its own, boxed: its code and state stay out of a
            // plain call's (the slope of `whole_turn_calls_agent` in
            // agent-providers/benches/stream.rs). One allocation per subagent call, which runs
            // a whole turn.
            let invoked: BoxFuture<'_, _> = Box::pin(invoke_subagent(
                scope, position, slot, state, call, has_after, resume,
            ));
            match invoked.await {
                Invoked::Ran(outcome, duration, state) => (outcome, duration, state),
                Invoked::Suspended(subagent, suspension) => {
                    return waiting_in_subagent(scope, call, &subagent, suspension);
                }
            }
        }
        None => {
            // The call's state stays here, lent, not moved through the tool's future.
            let (args, ctx, reporter, state) = hand_over(scope, position, state, has_after);
            let (outcome, duration) = invoke(slot, call, args, ctx, reporter).await;
            (outcome, duration, state)
        }
    };
    // The step forwards the call's preliminary results while it waits: let it deliver the
    // last ones before the result hooks run. The count is final: a call reports only while
    // its tool runs.
    let preliminary = scope.progress.count(position);
    if preliminary > 0 {
        tokio::task::yield_now().await;
    }
    if let Some(state) = &mut state {
        state.preliminary = preliminary;
    }
    let (content, is_error) = guarded_model_text(&call.name, &outcome);
    let kind = outcome.kind();
    let mut checked = if tool_results::wanted(scope, is_error) {
        tool_results::check(scope, call, kind, content, is_error).await
    } else {
        tool_results::Checked::unchanged(content, is_error)
    };
    // Observers see the tool's outcome and what the model reads (a result hook's, if one
    // replaced it).
    let result_snapshot = call_snapshot
        .filter(|_| extensions::subscribed(scope.extensions, ExtensionEvent::AfterToolCall))
        .map(|snapshot| {
            extensions::result_snapshot(snapshot, duration, &outcome, &checked.model_result())
        });
    let mut error = checked.error.take();
    if let Some(mut state) = state.filter(|_| has_after) {
        state.model_result = checked.model_result();
        let after = scope.inherited.after_for(name).chain(&slot.after);
        error = error.or(observe_outcome(after, &mut state, outcome, duration).await);
    }
    if let Some(snapshot) = result_snapshot {
        let event = ExtensionEvent::AfterToolCall;
        let dispatched: BoxFuture<'_, _> =
            Box::pin(extensions::dispatch(scope.extensions, event, || snapshot));
        dispatched.await;
    }
    finished(call, checked, kind, duration, error)
}

/// [`execute_inner`] on the spot, for a call [`start`] let run so (a tool that runs now, sync
/// hooks, no extension, no result hook): its result; or, when the tool reported preliminary
/// results, the rest of the call as a future, so that the step forwards them before
/// after_tool_call runs.
fn execute_now<'s>(
    scope: &'s CallScope<'_>,
    position: usize,
    call: &'s ToolCall,
    approval: Option<&CallAnswer>,
    found: Result<&'s ToolSlot, String>,
) -> Result<CallResult, BoxFuture<'s, CallResult>> {
    // As in `execute_inner`: an earlier call of the step cancelled the turn.
    if scope.cancel.is_cancelled() {
        return Ok(rejected(call, not_run(call)));
    }
    let (slot, parsed) = match found.and_then(|slot| parse(slot, call)) {
        Ok(found) => found,
        Err(why) => return Ok(rejected(call, why)),
    };
    let mut state = call_state(scope, slot, call, parsed, approval);
    let name = slot.spec().name.as_str();
    let before = scope.inherited.before_for(name).chain(&slot.before);
    let has_after = has_after(scope, slot);
    let gated = match admit(gate_now(before, &mut state, call), slot, &state, call) {
        ControlFlow::Continue(gated) => gated.or_else(|| cancelled(scope, call)),
        ControlFlow::Break(waiting) => return Ok(waiting),
    };
    let (outcome, duration, state) = match gated {
        Some(outcome) => (outcome, Duration::ZERO, Some(state)),
        None => {
            let (args, ctx, reporter, state) = hand_over(scope, position, state, has_after);
            let (outcome, duration) = invoke_now(slot, call, args, ctx, reporter);
            (outcome, duration, state)
        }
    };
    let preliminary = scope.progress.count(position);
    let state = state.filter(|_| has_after);
    if preliminary > 0 {
        return Err(Box::pin(async move {
            tokio::task::yield_now().await;
            finish_now(scope, call, slot, state, outcome, duration, preliminary)
        }));
    }
    Ok(finish_now(scope, call, slot, state, outcome, duration, 0))
}

/// The end of a call run on the spot: the text the model reads, after_tool_call (when `state`
/// is kept for it) and the result. The outcome is dropped guarded, as [`execute`] guards a
/// call's future: a tool's output whose `Drop` panics fails the call.
fn finish_now(
    scope: &CallScope<'_>,
    call: &ToolCall,
    slot: &ToolSlot,
    state: Option<CallState<'_>>,
    outcome: ToolOutcome,
    duration: Duration,
    preliminary: usize,
) -> CallResult {
    let (content, is_error) = guarded_model_text(&call.name, &outcome);
    let kind = outcome.kind();
    let checked = tool_results::Checked::unchanged(content, is_error);
    let mut state = state;
    // The outcome is moved in: dropped inside the guard, whether or not hooks read it.
    let settled = catch_panic(|| {
        let mut state = state.take()?;
        state.preliminary = preliminary;
        state.model_result = checked.model_result();
        let after = scope.inherited.after_for(&slot.name).chain(&slot.after);
        observe_now(after, &mut state, outcome, duration)
    });
    match settled {
        Ok(error) => finished(call, checked, kind, duration, error),
        Err(panic) => panicked(call, panic),
    }
}

/// A call's state for its hooks and its tool, before any hook ran.
fn call_state<'c>(
    scope: &'c CallScope<'_>,
    slot: &'c ToolSlot,
    call: &ToolCall,
    parsed: Arc<AnyValue>,
    approval: Option<&CallAnswer>,
) -> CallState<'c> {
    CallState {
        agent: scope.me,
        request_id: scope.request_id,
        // Shared with the call's `Text`, not copied.
        call_id: Arc::from(&call.id),
        tool_name: &slot.name,
        step: scope.step,
        dynamic: slot.dynamic,
        messages: scope.messages,
        cancel: scope.cancel,
        tool: &slot.tool,
        model_input: parsed.clone(),
        effective_input: parsed,
        preliminary: 0,
        approval: approval.cloned(),
        model_result: ModelResult::default(),
        input_json: None,
    }
}

/// Whether after_tool_call hooks (the tool's, or inherited) will read the call.
fn has_after(scope: &CallScope<'_>, slot: &ToolSlot) -> bool {
    !slot.after.is_empty() || scope.inherited.after_for(&slot.name).next().is_some()
}

/// What the before_tool_call chain's verdict leaves of the call: go on with the outcome a hook
/// decided (the tool does not run) or none (it runs), or stop with the result of a call left
/// waiting.
fn admit(
    gate: Gate,
    slot: &ToolSlot,
    state: &CallState<'_>,
    call: &ToolCall,
) -> ControlFlow<CallResult, Option<ToolOutcome>> {
    let client = slot.tool.runs_on_client();
    let (kind, reason) = match gate {
        Gate::Decided(outcome) => return ControlFlow::Continue(Some(outcome)),
        Gate::Defer(reason) => (PendingKind::Deferred, reason),
        Gate::Run if client => (PendingKind::Client, None),
        Gate::Ask(reason) if client => (PendingKind::Client, reason),
        // An approval given satisfies every ask.
        Gate::Run | Gate::Ask(_) if state.approval.is_some() => return ControlFlow::Continue(None),
        Gate::Ask(reason) => (PendingKind::Approval, reason),
        // The tool's own rule, guarded as the tool is: a panic fails the call.
        Gate::Run => match catch_panic(|| slot.tool.needs_approval(&state.effective_input)) {
            Ok(true) => (PendingKind::Approval, None),
            Ok(false) => return ControlFlow::Continue(None),
            Err(panic) => {
                let message = format!(
                    "deciding whether tool `{}` needs approval panicked: {panic}",
                    call.name
                );
                return ControlFlow::Continue(Some(ToolOutcome::Failed(ToolError::new(message))));
            }
        },
    };
    ControlFlow::Break(waiting(call, state, kind, reason))
}

/// The failed outcome of a call whose gates let it run in a turn cancelled meanwhile (a hook
/// cancelled it): the tool does not run, as a cancelled gate does not let it run.
fn cancelled(scope: &CallScope<'_>, call: &ToolCall) -> Option<ToolOutcome> {
    let cancelled = scope.cancel.is_cancelled();
    cancelled.then(|| ToolOutcome::Failed(ToolError::new(not_run(call))))
}

/// The result of a call the turn's cancel kept from running (stored: the turn ends aborted
/// after the step).
#[cold]
fn not_run(call: &ToolCall) -> String {
    format!("tool `{}` did not run: the turn was cancelled", call.name)
}

/// A finished call's result.
fn finished(
    call: &ToolCall,
    checked: tool_results::Checked,
    outcome: ToolOutcomeKind,
    duration: Duration,
    error: Option<TurnError>,
) -> CallResult {
    let record = ToolResultRecord {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: checked.content,
        is_error: checked.is_error,
        outcome,
        duration,
    };
    CallResult {
        record,
        error: error.map(Box::new),
        dropped: checked.dropped,
        handoff: None,
        pending: Vec::new(),
        via: None,
    }
}

/// For extensions subscribed to a call's events: its snapshot (with the input that runs), once
/// beforeToolCall is dispatched; `None` when none is subscribed.
async fn announce(scope: &CallScope<'_>, call: &ToolCall, state: &CallState<'_>) -> Option<Value> {
    let wanted = extensions::subscribed(scope.extensions, ExtensionEvent::BeforeToolCall)
        || extensions::subscribed(scope.extensions, ExtensionEvent::AfterToolCall);
    if !wanted {
        return None;
    }
    let input = state.effective_input.to_json().unwrap_or_default();
    let (name, step) = (&state.tool_name, scope.step);
    let snapshot = extensions::call_snapshot(name, &call.id, input, step, state.dynamic);
    let event = ExtensionEvent::BeforeToolCall;
    extensions::dispatch(scope.extensions, event, || snapshot.clone()).await;
    Some(snapshot)
}

/// The call's tool; for an unknown tool, the error text the model reads.
fn find<'s>(scope: &'s CallScope<'_>, call: &ToolCall) -> Result<&'s ToolSlot, String> {
    scope.tools.get(&call.name).ok_or_else(|| {
        let names = scope.tools.names();
        let name = clip(&call.name);
        match names.is_empty() {
            true => format!("unknown tool `{name}`: no tool is available now"),
            false => format!(
                "unknown tool `{name}`; available tools: {}",
                names.join(", ")
            ),
        }
    })
}

/// The call's tool with its parsed arguments; for arguments that do not parse or a parser that
/// panics, the error text the model reads.
fn parse<'s>(slot: &'s ToolSlot, call: &ToolCall) -> Result<(&'s ToolSlot, Arc<AnyValue>), String> {
    // Everything user code runs for a call (parsing, the tool, serializing its output, building
    // hook contexts) is guarded: a panic becomes an error result, never the turn's end.
    match catch_panic(|| slot.tool.parse_args(&call.arguments)) {
        Ok(Ok(args)) => Ok((slot, Arc::new(args))),
        Ok(Err(error)) => Err(error.to_string()),
        Err(panic) => {
            let message = format!(
                "parsing the arguments of tool `{}` panicked: {panic}",
                call.name
            );
            Err(message)
        }
    }
}

/// The text the model reads of `outcome`; a panic serializing the output is an error text.
fn guarded_model_text(tool: &str, outcome: &ToolOutcome) -> (Text, bool) {
    catch_panic(|| model_text(tool, outcome)).unwrap_or_else(|panic| {
        let message = format!("serializing the output of tool `{tool}` panicked: {panic}");
        (message.into(), true)
    })
}

/// What running a subagent's tool gave.
enum Invoked<'c> {
    /// Its outcome and how long it ran, with the call's state when after_tool_call hooks will
    /// read it.
    Ran(ToolOutcome, Duration, Option<CallState<'c>>),
    /// The subagent it runs (named) suspended its turn.
    Suspended(Arc<str>, Suspension),
}

/// Runs a plain tool (not a subagent) with the effective input, a panic becoming a failed
/// outcome: the outcome and how long it ran.
async fn invoke(
    slot: &ToolSlot,
    call: &ToolCall,
    args: Arc<AnyValue>,
    ctx: ToolContext,
    reporter: Report,
) -> (ToolOutcome, Duration) {
    // A tool that runs on the spot needs no future whatever waits around it (an async hook, an
    // extension): its future would finish at its first poll, before any timeout.
    if slot.tool.runs_now() {
        return invoke_now(slot, call, args, ctx, reporter);
    }
    // A turn a plain tool starts inherits nothing: inside a call that passes hooks on, the tool
    // is scoped with none; elsewhere there is nothing to hide, and no scope is polled.
    let isolate = Inherited::passed_here();
    // tokio's clock: the same as the system's, except in tests that pause time.
    let started = tokio::time::Instant::now();
    let tool = &slot.tool;
    // The tool is called inside the guarded future: a `DynTool` may panic while making its
    // future (an `FnTool` closure), not only while it runs. Pinned on this future's stack, not
    // boxed: one allocation fewer per call (the slope of `whole_turn_calls_agent`).
    // In an `Option`, to be dropped here, guarded, rather than as this future ends.
    let mut run = std::pin::pin!(Some(async move {
        let call = tool.call(args, ctx);
        let call = if isolate {
            Box::pin(inherit::passing(None, call))
        } else {
            call
        };
        tool::reporting(reporter, call).await
    }));
    let polled = std::future::poll_fn(|cx| match run.as_mut().as_pin_mut() {
        Some(run) => run.poll(cx),
        None => Poll::Pending,
    });
    let result = guarded(slot.timeout, polled).await;
    let duration = started.elapsed();
    // A future its timeout stopped is dropped with what it holds: the tool's own future,
    // whose `Drop` may panic.
    let outcome = match catch_panic(|| run.set(None)) {
        Ok(()) => outcome_of(result, call, slot),
        Err(panic) => dropped_panicking(result, call, slot, panic),
    };
    (outcome, duration)
}

/// The outcome of a call whose tool's future panicked as it was dropped: a timeout says so
/// too; a call that ended fails as if its tool had panicked.
#[cold]
fn dropped_panicking(
    result: Guarded,
    call: &ToolCall,
    slot: &ToolSlot,
    panic: String,
) -> ToolOutcome {
    let message = match result {
        None => format!(
            "{}; dropping its future panicked: {panic}",
            timed_out(call, slot)
        ),
        Some(_) => format!("tool `{}` panicked: {panic}", call.name),
    };
    ToolOutcome::Failed(ToolError::new(message))
}

/// Runs a tool that runs on the spot ([`DynTool::runs_now`](crate::DynTool::runs_now)), a
/// panic becoming a failed outcome and its preliminary results reported: the outcome and how
/// long it ran.
fn invoke_now(
    slot: &ToolSlot,
    call: &ToolCall,
    args: Arc<AnyValue>,
    ctx: ToolContext,
    reporter: Report,
) -> (ToolOutcome, Duration) {
    // tokio's clock, as in `invoke`.
    let started = tokio::time::Instant::now();
    let tool = &slot.tool;
    let result = tool::reporting_now(reporter, || catch_panic(|| tool.call_now(args, ctx)));
    (outcome_of(Some(result), call, slot), started.elapsed())
}

/// Runs a subagent's tool, as [`invoke`] a plain one, with what a subagent adds:
/// on_subagent_start, the hooks the call passes on and the suspended turn it resumes, the
/// suspension its turn leaves, and on_subagent_stop.
async fn invoke_subagent<'c>(
    scope: &CallScope<'_>,
    position: usize,
    slot: &ToolSlot,
    state: CallState<'c>,
    call: &ToolCall,
    has_after: bool,
    resume: Option<Resume>,
) -> Invoked<'c> {
    if let Err(outcome) = subagent_call::started(scope, slot, &state).await {
        let state = has_after.then_some(state);
        return Invoked::Ran(outcome, Duration::ZERO, state);
    }
    let call_id = state.call_id.clone();
    let (args, ctx, reporter, state) = hand_over(scope, position, state, has_after);
    let started = tokio::time::Instant::now();
    let tool = &slot.tool;
    // A subagent's turn inherits the caller's untyped tool hooks when marked to.
    let passed = slot
        .subagent
        .as_ref()
        .filter(|subagent| subagent.inherit)
        .map(|_| Inherited::passed_on(scope.tools.agent, scope.inherited));
    // A subagent's turn takes the suspended turn to resume and leaves its suspension here.
    let passing = subagent_call::passing(resume);
    let cell = passing.clone();
    let run = std::pin::pin!(async move {
        let call = inherit::passing(passed, tool.call(args, ctx));
        subagent_call::scoped(cell, tool::reporting(reporter, call)).await
    });
    let result = guarded(slot.timeout, run).await;
    let duration = started.elapsed();
    subagent_call::count_spent(&passing, scope.subagent_usage);
    if let Some(suspension) = subagent_call::suspension(&passing)
        && let Some(mark) = &slot.subagent
    {
        return Invoked::Suspended(mark.name.clone(), suspension);
    }
    let outcome = outcome_of(result, call, slot);
    let outcome = subagent_call::stopped(scope, slot, &call_id, outcome).await;
    Invoked::Ran(outcome, duration, state)
}

/// What the tool's call takes: its arguments, its context and the reporter of its preliminary
/// results; with the call's state when after_tool_call hooks will read it.
fn hand_over<'c>(
    scope: &CallScope<'_>,
    position: usize,
    state: CallState<'c>,
    has_after: bool,
) -> (Arc<AnyValue>, ToolContext, Report, Option<CallState<'c>>) {
    let reporter = preliminary::reporter(
        state.call_id.clone(),
        state.tool_name.clone(),
        position,
        scope.progress.clone(),
    );
    let ctx = ToolContext {
        agent: state.agent.clone(),
        call_id: state.call_id.clone(),
        tool_name: state.tool_name.clone(),
        step: state.step,
        cancel: state.cancel.clone(),
    };
    // Without after hooks nobody reads the inputs again: hand the tool the only reference, so
    // it takes its arguments without a clone.
    if !has_after {
        let CallState {
            effective_input,
            model_input,
            ..
        } = state;
        drop(model_input);
        (effective_input, ctx, reporter, None)
    } else {
        (state.effective_input.clone(), ctx, reporter, Some(state))
    }
}

/// What a guarded tool call gave: `None` when it timed out, `Err` with the panic's message
/// when it panicked.
type Guarded = Option<Result<Result<AnyValue, ToolError>, String>>;

/// Runs the tool's future with its panics caught, stopped after `limit` if one is set (on
/// expiry the future is dropped, which stops it).
async fn guarded<F>(limit: Option<Duration>, run: F) -> Guarded
where
    F: Future<Output = Result<AnyValue, ToolError>> + Unpin,
{
    let run = catch_unwind(run);
    match limit {
        Some(limit) => tokio::time::timeout(limit, run).await.ok(),
        None => Some(run.await),
    }
}

/// The outcome of a tool's guarded call.
fn outcome_of(result: Guarded, call: &ToolCall, slot: &ToolSlot) -> ToolOutcome {
    match result {
        Some(Ok(Ok(output))) => ToolOutcome::Executed(output),
        Some(Ok(Err(error))) => ToolOutcome::Failed(error),
        Some(Err(panic)) => ToolOutcome::Failed(ToolError::new(format!(
            "tool `{}` panicked: {panic}",
            call.name
        ))),
        None => ToolOutcome::Failed(ToolError::new(timed_out(call, slot))),
    }
}

/// What the model reads of a call its timeout stopped.
fn timed_out(call: &ToolCall, slot: &ToolSlot) -> String {
    format!(
        "tool `{}` timed out after {:?} and was stopped",
        call.name,
        slot.timeout.unwrap_or_default()
    )
}

/// The text the model reads for an outcome, and whether it is an error.
fn model_text(tool: &str, outcome: &ToolOutcome) -> (Text, bool) {
    match outcome {
        ToolOutcome::Executed(value) | ToolOutcome::Substituted(value) => {
            match value.model_text() {
                Ok(text) => (text, false),
                Err(error) => (
                    format!("tool `{tool}` returned an output that cannot be serialized: {error}")
                        .into(),
                    true,
                ),
            }
        }
        ToolOutcome::Blocked(reason) => (reason.as_str().into(), false),
        ToolOutcome::Failed(error) => (error.message().into(), true),
    }
}
