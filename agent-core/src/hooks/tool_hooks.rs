//! Tool-call hooks with their input types erased, so one list per tool holds hooks typed for
//! different views (one tool's args, an enum of several, JSON) of the same call.

use std::any::TypeId;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::event::{AfterToolCall, BeforeToolCall};
use super::matcher::CompiledMatcher;
use super::run::run_hook;
use super::tool_context::{ToolCallContext, ToolCallDecision, ToolCallResultContext, ToolOutcome};
use super::{FailurePolicy, Hook, HookFailure, RunAgent};
use crate::cancel::CancelToken;
use crate::message::Message;
use crate::store::CallAnswer;
use crate::util::BoxFuture;
use serde_json::Value;

use crate::tool::{AnyValue, DynTool, ToolInput};

/// One tool call as the hooks see it, with its arguments parsed.
pub(crate) struct CallState {
    pub(crate) agent: Arc<RunAgent>,
    pub(crate) request_id: Arc<str>,
    pub(crate) call_id: Arc<str>,
    pub(crate) tool_name: Arc<str>,
    pub(crate) step: usize,
    pub(crate) dynamic: bool,
    pub(crate) messages: Arc<Vec<Message>>,
    pub(crate) cancel: CancelToken,
    pub(crate) tool: Arc<dyn DynTool>,
    pub(crate) model_input: Arc<AnyValue>,
    pub(crate) effective_input: Arc<AnyValue>,
    /// How many preliminary results the tool reported (`tool_progress`).
    pub(crate) preliminary: Arc<std::sync::atomic::AtomicUsize>,
    /// The answer that approved the call, when it waited for approval.
    pub(crate) approval: Option<CallAnswer>,
}

/// A before_tool_call decision with its input erased.
pub(crate) enum ErasedDecision {
    Allow,
    Modify(AnyValue),
    Block(Option<String>),
    Substitute(AnyValue),
    Ask(Option<String>),
    Defer(Option<String>),
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
    fn run<'a>(&'a self, call: &'a CallState)
    -> BoxFuture<'a, Result<ErasedDecision, HookFailure>>;
}

pub(crate) trait AfterHook: Send + Sync {
    fn meta(&self) -> &ToolHookMeta;
    fn run<'a>(
        &'a self,
        call: &'a CallState,
        outcome: &'a Arc<ToolOutcome>,
        duration: Duration,
    ) -> BoxFuture<'a, Result<(), HookFailure>>;
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

impl<I: ToolInput> BeforeHook for TypedBefore<I> {
    fn meta(&self) -> &ToolHookMeta {
        &self.meta
    }

    fn run<'a>(
        &'a self,
        call: &'a CallState,
    ) -> BoxFuture<'a, Result<ErasedDecision, HookFailure>> {
        Box::pin(async move {
            let input = I::from_args(&call.tool_name, &call.effective_input)
                .ok_or_else(|| misfit(&self.meta.name, &call.tool_name))?;
            let ctx = ToolCallContext {
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
            };
            Ok(match run_hook(&self.hook, &ctx).await? {
                ToolCallDecision::Allow => ErasedDecision::Allow,
                ToolCallDecision::Modify(input) => ErasedDecision::Modify(
                    input.into_args(&*call.tool).map_err(HookFailure::Error)?,
                ),
                ToolCallDecision::Block(reason) => ErasedDecision::Block(reason),
                ToolCallDecision::Substitute(output) => {
                    ErasedDecision::Substitute(AnyValue::new(output))
                }
                ToolCallDecision::Ask(reason) => ErasedDecision::Ask(reason),
                ToolCallDecision::Defer(reason) => ErasedDecision::Defer(reason),
            })
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

    fn run<'a>(
        &'a self,
        call: &'a CallState,
        outcome: &'a Arc<ToolOutcome>,
        duration: Duration,
    ) -> BoxFuture<'a, Result<(), HookFailure>> {
        Box::pin(async move {
            let ctx = result_view::<I, O>(call, outcome, duration)
                .ok_or_else(|| misfit(&self.meta.name, &call.tool_name))?;
            run_hook(&self.hook, &ctx).await
        })
    }
}

/// Builds a result context from a call's state. `I::from_args` may fail when a hook is registered
/// for a tool whose arguments it cannot carry; the caller reports that as the hook's failure.
pub(crate) fn result_view<I: ToolInput, O: 'static>(
    call: &CallState,
    outcome: &Arc<ToolOutcome>,
    duration: Duration,
) -> Option<ToolCallResultContext<I, O>> {
    let model_input = I::from_args(&call.tool_name, &call.model_input)?;
    let effective_input = I::from_args(&call.tool_name, &call.effective_input)?;
    let output_json = if TypeId::of::<O>() == TypeId::of::<Value>() {
        outcome.value().and_then(|v| v.to_json().ok())
    } else {
        None
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
        preliminary: call.preliminary.load(std::sync::atomic::Ordering::Relaxed),
        messages: call.messages.clone(),
        approval: call.approval.clone(),
        output_json,
        _output: PhantomData,
    })
}
