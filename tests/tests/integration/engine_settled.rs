//! Every way a hook can end a turn leaves the stored session whole the moment the turn ends
//! (issue 15, items 1 and 10): for every hook event, failing with an error and with a panic,
//! under each failure policy, the session read straight from the store (before any later
//! turn's repair) has no pending row, every call answered exactly once and nothing that
//! answers no call, and on_chat_response fired exactly once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{
    AgentBuilder, Event, FailurePolicy, FnTool, Hook, HookReturn, Matcher, MemoryStore,
    ScriptedModel, ScriptedStep, SessionStore, ToolError, TurnStatus, TurnWideEvent, event,
};
use serde_json::{Value, json};
use tests::{Add, Failure, Trace, assert_whole};

/// What a case's failing hook and the turn around it report.
#[derive(Default)]
struct Seen {
    /// How often the failing hook ran.
    fired: AtomicUsize,
    responses: AtomicUsize,
    /// on_chat_error's `messages_persisted`, when it ran.
    persisted: std::sync::Mutex<Option<bool>>,
}

fn body<C>(seen: &Arc<Seen>, failure: Failure) -> impl Fn(&C) -> Result<(), String> + use<C> {
    let seen = seen.clone();
    move |_: &C| {
        seen.fired.fetch_add(1, Ordering::SeqCst);
        match failure {
            Failure::Panic => panic!("it exploded"),
            _ => Err("it broke".to_owned()),
        }
    }
}

fn with_policy<E: Event>(hook: Hook<E>, policy: Option<FailurePolicy>) -> Hook<E> {
    match policy {
        Some(policy) => hook.on_error(policy),
        None => hook,
    }
}

/// The turn: step 0 streams text and calls `add` and `broken` (a tool that fails), step 1
/// calls `add` again and reaches the two-step limit (on_stop); `erring` makes step 1 an
/// in-band model error instead, so the error hooks run.
fn agent(erring: bool, seen: &Arc<Seen>, store: &Arc<dyn SessionStore>) -> AgentBuilder {
    let last = if erring {
        ScriptedStep::new().in_band_error("boom")
    } else {
        ScriptedStep::new().tool_call("c3", "add", r#"{"a":3,"b":4}"#)
    };
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Let me check.")
            .tool_call("c1", "add", r#"{"a":1,"b":2}"#)
            .tool_call("c2", "broken", "{}"),
        last,
    ]);
    let broken = FnTool::new(
        "broken",
        "Always fails.",
        json!({"type": "object"}),
        |_, _| async { Err::<Value, _>(ToolError::new("no")) },
    );
    let (responses, persisted) = (seen.clone(), seen.clone());
    AgentBuilder::new("settled")
        .model(model)
        .max_steps(2)
        .store(store.clone())
        .tool(Add::traced(&Trace::new()))
        .dyn_tool(broken)
        .hook(Hook::<event::OnChatResponse>::sync("count", move |_| {
            responses.responses.fetch_add(1, Ordering::SeqCst);
        }))
        .hook(Hook::<event::OnChatError>::sync("persisted", move |ctx| {
            *persisted.persisted.lock().unwrap() = Some(ctx.messages_persisted);
        }))
}

/// Runs one case and checks the session and the response count.
async fn check(
    name: &str,
    erring: bool,
    failure: Failure,
    policy: Option<FailurePolicy>,
    add: impl FnOnce(AgentBuilder, &Arc<Seen>) -> AgentBuilder,
) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = add(agent(erring, &seen, &store), &seen);
    let conversation = builder.build().unwrap().session("s");
    let result = conversation.run("go").await;
    let case = format!(
        "{name} {failure:?} {policy:?}: {:?} {:?}",
        result.status, result.error
    );
    assert!(
        seen.fired.load(Ordering::SeqCst) > 0,
        "{case}: the failing hook never ran"
    );
    assert_eq!(
        seen.responses.load(Ordering::SeqCst),
        1,
        "{case}: on_chat_response"
    );
    // Straight from the store: no later turn has repaired anything.
    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    if !rows.is_empty() {
        assert!(
            matches!(result.status, TurnStatus::Completed | TurnStatus::Error),
            "{case}"
        );
    }
    seen
}

async fn turn_wide<E>(erring: bool)
where
    E: TurnWideEvent,
    (): HookReturn<E>,
{
    for failure in [Failure::Error, Failure::Panic] {
        for policy in [
            None,
            Some(FailurePolicy::FailOpen),
            Some(FailurePolicy::FailClosed),
        ] {
            check(E::NAME, erring, failure, policy, |builder, seen| {
                builder.hook(with_policy(
                    Hook::<E>::sync("failing", body(seen, failure)),
                    policy,
                ))
            })
            .await;
        }
    }
}

#[tokio::test]
async fn every_turn_wide_hook_failing_leaves_the_session_whole() {
    turn_wide::<event::OnSessionStart>(false).await;
    turn_wide::<event::BeforeRun>(false).await;
    turn_wide::<event::FilterMessages>(false).await;
    turn_wide::<event::BeforeTurn>(false).await;
    turn_wide::<event::BeforeStep>(false).await;
    turn_wide::<event::PrefilterLlmHistory>(false).await;
    turn_wide::<event::OnLlmStart>(false).await;
    turn_wide::<event::OnChunk>(false).await;
    turn_wide::<event::OnLlmEnd>(false).await;
    turn_wide::<event::PostProcessMessage>(false).await;
    turn_wide::<event::BeforeCreateMessage>(false).await;
    turn_wide::<event::AfterCreateMessage>(false).await;
    turn_wide::<event::BeforeUpdateMessage>(false).await;
    turn_wide::<event::AfterUpdateMessage>(false).await;
    turn_wide::<event::AfterToolCallSuccess>(false).await;
    turn_wide::<event::AfterToolCallFailure>(false).await;
    turn_wide::<event::BeforeStoreToolResult>(false).await;
    turn_wide::<event::OnStepFinish>(false).await;
    turn_wide::<event::OnStop>(false).await;
    turn_wide::<event::AfterRun>(false).await;
    turn_wide::<event::OnChatResponse>(false).await;
    turn_wide::<event::OnSessionEnd>(false).await;
    turn_wide::<event::ClassifyChatError>(true).await;
    turn_wide::<event::OnChatError>(true).await;
}

#[tokio::test]
async fn failing_tool_call_hooks_leave_the_session_whole() {
    for failure in [Failure::Error, Failure::Panic] {
        for policy in [
            None,
            Some(FailurePolicy::FailOpen),
            Some(FailurePolicy::FailClosed),
        ] {
            check(
                "before_tool_call",
                false,
                failure,
                policy,
                |builder, seen| {
                    let hook =
                        Hook::<event::BeforeToolCall<Value>>::sync("failing", body(seen, failure));
                    builder.before_tool_call(Matcher::all(), with_policy(hook, policy))
                },
            )
            .await;
            check(
                "after_tool_call",
                false,
                failure,
                policy,
                |builder, seen| {
                    let hook =
                        Hook::<event::AfterToolCall<Value>>::sync("failing", body(seen, failure));
                    builder.after_tool_call(Matcher::all(), with_policy(hook, policy))
                },
            )
            .await;
        }
    }
}

#[tokio::test]
async fn on_chat_error_reads_that_the_user_message_is_stored_when_an_after_hook_failed() {
    for failure in [Failure::Error, Failure::Panic] {
        let seen = check(
            "after_create_message",
            false,
            failure,
            Some(FailurePolicy::FailClosed),
            |builder, seen| {
                builder.hook(
                    Hook::<event::AfterCreateMessage>::sync("failing", body(seen, failure))
                        .on_error(FailurePolicy::FailClosed),
                )
            },
        )
        .await;
        assert_eq!(*seen.persisted.lock().unwrap(), Some(true), "{failure:?}");
    }
}
