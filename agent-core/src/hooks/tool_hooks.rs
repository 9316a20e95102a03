//! Tool-call hooks with their input types erased, so one list per tool holds hooks typed for
//! different views (one tool's args, an enum of several, JSON) of the same call.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::event::{AfterToolCall, BeforeToolCall};
use super::matcher::CompiledMatcher;
use super::run::{run_hook, run_sync};
use super::tool_context::{
    ModelResult, ToolCallContext, ToolCallDecision, ToolCallResultContext, ToolOutcome,
};
use super::{FailurePolicy, Hook, HookBody, HookFailure, RunAgent};
use crate::cancel::CancelToken;
use crate::message::Message;
use crate::store::CallAnswer;
use crate::util::{BoxFuture, catch_panic};
use serde_json::Value;

use crate::tool::{AnyValue, DynTool, ToolInput};

/// One tool call as the hooks see it, with its arguments parsed. What the turn and the tool's
/// slot hold is borrowed from them, not counted once more: a hook context clones it only when
/// one is made (atomic instructions per call 145 -> 137, the slope of `whole_turn_calls_agent`
/// in agent-providers/benches/stream.rs under callgrind).
pub(crate) struct CallState<'c> {
    pub(crate) agent: &'c Arc<RunAgent>,
    pub(crate) request_id: &'c Arc<str>,
    pub(crate) call_id: Arc<str>,
    pub(crate) tool_name: &'c Arc<str>,
    pub(crate) step: usize,
    pub(crate) dynamic: bool,
    pub(crate) messages: &'c Arc<Vec<Message>>,
    pub(crate) cancel: &'c CancelToken,
    pub(crate) tool: &'c Arc<dyn DynTool>,
    pub(crate) model_input: Arc<AnyValue>,
    pub(crate) effective_input: Arc<AnyValue>,
    /// How many preliminary results the tool reported (`tool_progress`), once it ran.
    pub(crate) preliminary: usize,
    /// The answer that approved the call, when it waited for approval.
    pub(crate) approval: Option<CallAnswer>,
    /// The result the model reads, once the result hooks ran (for after_tool_call).
    pub(crate) model_result: ModelResult,
    /// `effective_input` as JSON, handed back by the last untyped (`Value`) hook that read it
    /// so the next one takes it instead of serializing the arguments again: one serialization
    /// per call, not one per hook (3 allocations fewer per call with a `Value` before/after
    /// pair; the slope of `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
    /// Cleared when a hook modifies the input. The hooks of a call run one after another,
    /// each lent the state mutably, so it needs no lock (three lock and unlock pairs a call
    /// with a before/after pair, the same bench).
    pub(crate) input_json: Option<Value>,
}

impl CallState<'_> {
    /// The effective input as `I`: the kept JSON when `I` is `Value` and one is kept, else
    /// read from the arguments (`None` when `I` cannot carry them).
    fn input<I: ToolInput>(&mut self) -> Option<I> {
        let mut input: Option<I> = None;
        if let Some(json) = (&mut input as &mut dyn Any).downcast_mut::<Option<Value>>() {
            *json = self.input_json.take();
        }
        input.or_else(|| I::from_args(self.tool_name, &self.effective_input))
    }

    /// Keeps `input` (the effective input a hook read) for the next hook, when it is JSON.
    fn keep_input<I: ToolInput>(&mut self, input: &mut I) {
        if let Some(json) = (input as &mut dyn Any).downcast_mut::<Value>() {
            self.input_json = Some(std::mem::take(json));
        }
    }

    /// Forgets the kept JSON: the effective input changed.
    pub(crate) fn input_changed(&mut self, input: AnyValue) {
        self.effective_input = Arc::new(input);
        self.input_json = None;
    }
}

/// A before_tool_call decision with its input erased.
pub(crate) enum ErasedDecision {
    Allow,
    Modify(AnyValue),
    Block(Option<String>),
    Substitute(AnyValue),
    Ask(Option<String>),
    Defer(Option<String>),
    /// A `Modify` whose input the tool does not take (why): the call fails closed whatever
    /// the hook's failure policy, or a fail-open hook that meant to redact the input would let
    /// the model's through.
    Misfit(String),
}

/// What both tool-hook kinds share: name, policy, matcher and the input check.
pub(crate) struct ToolHookMeta {
    pub(crate) name: String,
    pub(crate) priority: i32,
    pub(crate) policy: FailurePolicy,
    pub(crate) compiled: CompiledMatcher,
    pub(crate) accepts: fn(&str) -> bool,
    /// Whether the hook reads calls as JSON (`Value`): such a hook can follow a turn into
    /// another agent's tools (inheritance), a typed one cannot.
    pub(crate) untyped: bool,
}

pub(crate) trait BeforeHook: Send + Sync {
    fn meta(&self) -> &ToolHookMeta;
    /// A sync hook's run on the spot, panics caught; `None` for an async hook, which
    /// [`run`](Self::run) then runs. Saves a boxed future per sync hook per call (the slope of
    /// `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
    fn run_now(&self, call: &mut CallState<'_>) -> Option<Result<ErasedDecision, HookFailure>>;
    /// Whether the hook is sync: [`run_now`](Self::run_now) always runs it.
    fn is_sync(&self) -> bool;
    fn run<'a>(
        &'a self,
        call: &'a mut CallState<'_>,
    ) -> BoxFuture<'a, Result<ErasedDecision, HookFailure>>;
}

pub(crate) trait AfterHook: Send + Sync {
    fn meta(&self) -> &ToolHookMeta;
    /// A sync hook's run on the spot, as [`BeforeHook::run_now`].
    fn run_now(
        &self,
        call: &mut CallState<'_>,
        outcome: &Arc<ToolOutcome>,
        duration: Duration,
    ) -> Option<Result<(), HookFailure>>;
    /// Whether the hook is sync, as [`BeforeHook::is_sync`].
    fn is_sync(&self) -> bool;
    fn run<'a>(
        &'a self,
        call: &'a mut CallState<'_>,
        outcome: &'a Arc<ToolOutcome>,
        duration: Duration,
    ) -> BoxFuture<'a, Result<(), HookFailure>>;
}

/// Runs a sync hook's whole call (context, body, decision) with panics caught, as the boxed
/// future of an async hook is.
fn guarded<T>(run: impl FnOnce() -> Result<T, HookFailure>) -> Result<T, HookFailure> {
    catch_panic(run).unwrap_or_else(|panic| Err(HookFailure::Panic(panic)))
}

fn misfit(hook: &str, tool: &str) -> HookFailure {
    HookFailure::Error(format!(
        "hook `{hook}` cannot take the arguments of tool `{tool}`"
    ))
}

pub(crate) struct TypedBefore<I: ToolInput> {
    pub(crate) meta: ToolHookMeta,
    pub(crate) hook: Hook<BeforeToolCall<I>>,
}

impl<I: ToolInput> TypedBefore<I> {
    /// The hook's context for `call`, its arguments read as `I`.
    fn context(&self, call: &mut CallState<'_>) -> Result<ToolCallContext<I>, HookFailure> {
        let input = call
            .input::<I>()
            .ok_or_else(|| misfit(&self.meta.name, call.tool_name))?;
        Ok(ToolCallContext {
            agent: call.agent.clone(),
            request_id: call.request_id.clone(),
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            input,
            step: call.step,
            dynamic: call.dynamic,
            messages: call.messages.clone(),
            cancel: call.cancel.clone(),
            approval: call.approval.clone(),
        })
    }
}

/// The hook's decision with its input erased.
fn erase<I: ToolInput>(
    decision: ToolCallDecision<I>,
    call: &CallState<'_>,
) -> Result<ErasedDecision, HookFailure> {
    Ok(match decision {
        ToolCallDecision::Allow => ErasedDecision::Allow,
        ToolCallDecision::Modify(input) => match input.into_args(&**call.tool) {
            Ok(args) => ErasedDecision::Modify(args),
            Err(why) => ErasedDecision::Misfit(why),
        },
        ToolCallDecision::Block(reason) => ErasedDecision::Block(reason),
        ToolCallDecision::Substitute(output) => ErasedDecision::Substitute(AnyValue::new(output)),
        ToolCallDecision::Ask(reason) => ErasedDecision::Ask(reason),
        ToolCallDecision::Defer(reason) => ErasedDecision::Defer(reason),
    })
}

impl<I: ToolInput> BeforeHook for TypedBefore<I> {
    fn meta(&self) -> &ToolHookMeta {
        &self.meta
    }

    fn run_now(&self, call: &mut CallState<'_>) -> Option<Result<ErasedDecision, HookFailure>> {
        let HookBody::Sync(body) = &self.hook.body else {
            return None;
        };
        Some(guarded(|| {
            let mut ctx = self.context(call)?;
            let decision = run_sync::<BeforeToolCall<I>>(body, &ctx);
            call.keep_input(&mut ctx.input);
            erase(decision?, call)
        }))
    }

    fn is_sync(&self) -> bool {
        matches!(self.hook.body, HookBody::Sync(_))
    }

    fn run<'a>(
        &'a self,
        call: &'a mut CallState<'_>,
    ) -> BoxFuture<'a, Result<ErasedDecision, HookFailure>> {
        Box::pin(async move {
            let mut ctx = self.context(call)?;
            let decision = run_hook(&self.hook, &ctx).await;
            call.keep_input(&mut ctx.input);
            erase(decision?, call)
        })
    }
}

pub(crate) struct TypedAfter<I: ToolInput, O: Send + Sync + 'static> {
    pub(crate) meta: ToolHookMeta,
    pub(crate) hook: Hook<AfterToolCall<I, O>>,
}

impl<I: ToolInput, O: Send + Sync + 'static> AfterHook for TypedAfter<I, O> {
    fn meta(&self) -> &ToolHookMeta {
        &self.meta
    }

    fn run_now(
        &self,
        call: &mut CallState<'_>,
        outcome: &Arc<ToolOutcome>,
        duration: Duration,
    ) -> Option<Result<(), HookFailure>> {
        let HookBody::Sync(body) = &self.hook.body else {
            return None;
        };
        Some(guarded(|| {
            let mut ctx = result_view::<I, O>(call, outcome, duration)
                .ok_or_else(|| misfit(&self.meta.name, call.tool_name))?;
            let run = run_sync::<AfterToolCall<I, O>>(body, &ctx);
            call.keep_input(&mut ctx.effective_input);
            run
        }))
    }

    fn is_sync(&self) -> bool {
        matches!(self.hook.body, HookBody::Sync(_))
    }

    fn run<'a>(
        &'a self,
        call: &'a mut CallState<'_>,
        outcome: &'a Arc<ToolOutcome>,
        duration: Duration,
    ) -> BoxFuture<'a, Result<(), HookFailure>> {
        Box::pin(async move {
            let mut ctx = result_view::<I, O>(call, outcome, duration)
                .ok_or_else(|| misfit(&self.meta.name, call.tool_name))?;
            let run = run_hook(&self.hook, &ctx).await;
            call.keep_input(&mut ctx.effective_input);
            run
        })
    }
}

/// Builds a result context from a call's state. `I::from_args` may fail when a hook is registered
/// for a tool whose arguments it cannot carry; the caller reports that as the hook's failure.
pub(crate) fn result_view<I: ToolInput, O: 'static>(
    call: &mut CallState<'_>,
    outcome: &Arc<ToolOutcome>,
    duration: Duration,
) -> Option<ToolCallResultContext<I, O>> {
    let effective_input = call.input::<I>()?;
    // Unmodified, the model's input is the effective one: the context holds it once.
    let model_input = if Arc::ptr_eq(&call.model_input, &call.effective_input) {
        None
    } else {
        Some(I::from_args(call.tool_name, &call.model_input)?)
    };
    Some(ToolCallResultContext {
        agent: call.agent.clone(),
        request_id: call.request_id.clone(),
        call_id: call.call_id.clone(),
        tool_name: call.tool_name.clone(),
        model_input,
        effective_input,
        step: call.step,
        dynamic: call.dynamic,
        outcome: outcome.clone(),
        duration,
        preliminary: call.preliminary,
        messages: call.messages.clone(),
        approval: call.approval.clone(),
        model_result: call.model_result.clone(),
        output_json: OnceLock::new(),
        _output: PhantomData,
    })
}
