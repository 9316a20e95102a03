//! The hooks that run once a turn's outcome is decided (after_run, classify_chat_error,
//! on_chat_error, on_chat_response, on_session_end), each failing (an error or a panic) under
//! its default policy, `fail_open` and `fail_closed`: what the failure changes and what it
//! cannot, compared as full ordered traces.
//!
//! - after_run fails the turn by default (Stratus): status error at stage `turn`, the built
//!   result's text, steps and messages kept; `fail_open` only logs.
//! - The others cannot change the outcome.
//! - Whatever the policy, a failing hook never stops the later hooks of its event: each of
//!   these events is the hooks' only chance to run (issue 15 item 2).

use agent_core::{
    AgentBuilder, ChatErrorClassification, FailurePolicy, Hook, ScriptedModel, ScriptedStep,
    TurnError, TurnErrorKind, TurnResult, TurnStatus, TurnWideEvent, event,
};
use tests::{Failure, Recorded, Trace, failing, lines, status_name};

/// The policy a failing hook is given.
#[derive(Clone, Copy, Debug)]
enum Policy {
    Default,
    Open,
    Closed,
}

/// The steps of a turn whose model answers "hi", up to its outcome.
const ANSWERED: &[&str] = &[
    "before_run(go)",
    "before_turn",
    "before_step(0)",
    "on_llm_start(0)",
    "on_chunk(text:hi)",
    "on_llm_end(0)",
    "on_step_finish(0)",
];

/// The steps of a turn whose model reports an error in its stream, up to its outcome.
const ERRED: &[&str] = &[
    "before_run(go)",
    "before_turn",
    "before_step(0)",
    "on_llm_start(0)",
    "on_llm_end(0)",
];

/// Runs one turn with a failing hook of event `E` that runs first among that event's hooks,
/// tracing hooks after it (a classifier answering `rate_limit`, an on_chat_error replacing the
/// error with `replaced`), and an on_session_end tracer. `erring` makes the model fail.
async fn run_with<E>(failure: Failure, policy: Policy, erring: bool) -> (TurnResult, Vec<String>)
where
    E: TurnWideEvent,
    (): agent_core::HookReturn<E>,
{
    let trace = Trace::new();
    let step = if erring {
        ScriptedStep::new().in_band_error("boom")
    } else {
        ScriptedStep::new().text("hi")
    };
    let mut hook = failing::<E>("failing", failure).priority(-1);
    match policy {
        Policy::Default => {}
        Policy::Open => hook = hook.on_error(FailurePolicy::FailOpen),
        Policy::Closed => hook = hook.on_error(FailurePolicy::FailClosed),
    }
    let (t1, t2) = (trace.clone(), trace.clone());
    let agent = AgentBuilder::new("post")
        .model(ScriptedModel::new([step]))
        .hook(hook)
        .record_turn(&trace)
        .hook(
            Hook::<event::ClassifyChatError>::sync("late classifier", move |_| {
                t1.push("classify_chat_error(late)");
                Some(ChatErrorClassification::RateLimit)
            })
            .priority(1),
        )
        .hook(
            Hook::<event::OnChatError>::sync("late replacer", |_| {
                Some(TurnError::new(TurnErrorKind::Custom, "replaced"))
            })
            .priority(1),
        )
        .hook(Hook::<event::OnSessionEnd>::sync(
            "session end",
            move |ctx| t2.push(format!("on_session_end({})", status_name(ctx.status))),
        ))
        .build()
        .unwrap();
    let result = agent.run("go").await;
    (result, trace.take())
}

fn expected(head: &[&str], tail: &[&str]) -> Vec<String> {
    lines(head).into_iter().chain(lines(tail)).collect()
}

#[tokio::test]
async fn a_failing_after_run_fails_the_turn_by_default_and_keeps_the_result() {
    for failure in [Failure::Error, Failure::Panic, Failure::Timeout] {
        for policy in [Policy::Default, Policy::Closed] {
            let (result, trace) = run_with::<event::AfterRun>(failure, policy, false).await;
            assert_eq!(result.status, TurnStatus::Error, "{failure:?} {policy:?}");
            assert_eq!(
                result.error.as_ref().map(|e| e.message.clone()),
                Some("replaced".to_owned()),
                "on_chat_error ran and replaced the error"
            );
            // The built result stays readable.
            assert_eq!(result.text, "hi");
            assert_eq!(result.steps.len(), 1);
            assert_eq!(result.messages.len(), 1);
            assert_eq!(
                result.classification,
                Some(ChatErrorClassification::RateLimit)
            );
            assert_eq!(
                trace,
                expected(
                    ANSWERED,
                    &[
                        // The tracer after the failing after_run still runs.
                        "after_run(completed)",
                        "classify_chat_error(turn)",
                        "classify_chat_error(late)",
                        "on_chat_error(turn)",
                        "on_chat_response(error)",
                        "on_session_end(error)",
                    ]
                ),
                "{failure:?} {policy:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_fail_open_after_run_only_logs() {
    for failure in [Failure::Error, Failure::Panic] {
        let (result, trace) = run_with::<event::AfterRun>(failure, Policy::Open, false).await;
        assert_eq!(result.status, TurnStatus::Completed, "{failure:?}");
        assert_eq!(result.error, None);
        assert_eq!(
            trace,
            expected(
                ANSWERED,
                &[
                    "after_run(completed)",
                    "on_chat_response(completed)",
                    "on_session_end(completed)",
                ]
            )
        );
    }
}

#[tokio::test]
async fn a_failing_on_chat_response_cannot_change_the_outcome() {
    for failure in [Failure::Error, Failure::Panic] {
        for policy in [Policy::Default, Policy::Open, Policy::Closed] {
            let (result, trace) = run_with::<event::OnChatResponse>(failure, policy, false).await;
            assert_eq!(
                result.status,
                TurnStatus::Completed,
                "{failure:?} {policy:?}"
            );
            assert_eq!(result.error, None);
            let tail = [
                "after_run(completed)",
                "on_chat_response(completed)",
                "on_session_end(completed)",
            ];
            assert_eq!(trace, expected(ANSWERED, &tail), "{failure:?} {policy:?}");
        }
    }
}

#[tokio::test]
async fn a_failing_on_session_end_cannot_change_the_outcome() {
    for failure in [Failure::Error, Failure::Panic] {
        for policy in [Policy::Default, Policy::Open, Policy::Closed] {
            let (result, trace) = run_with::<event::OnSessionEnd>(failure, policy, false).await;
            assert_eq!(
                result.status,
                TurnStatus::Completed,
                "{failure:?} {policy:?}"
            );
            let tail = [
                "after_run(completed)",
                "on_chat_response(completed)",
                "on_session_end(completed)",
            ];
            assert_eq!(trace, expected(ANSWERED, &tail), "{failure:?} {policy:?}");
        }
    }
}

#[tokio::test]
async fn a_failing_classifier_leaves_the_error_and_the_later_classifiers_run() {
    for failure in [Failure::Error, Failure::Panic] {
        for policy in [Policy::Default, Policy::Open, Policy::Closed] {
            let (result, trace) = run_with::<event::ClassifyChatError>(failure, policy, true).await;
            assert_eq!(result.status, TurnStatus::Error, "{failure:?} {policy:?}");
            assert_eq!(
                result.error.as_ref().map(|e| e.message.as_str()),
                Some("replaced")
            );
            // The later classifier still answers.
            assert_eq!(
                result.classification,
                Some(ChatErrorClassification::RateLimit)
            );
            let tail = [
                "classify_chat_error(stream)",
                "classify_chat_error(late)",
                "on_chat_error(stream)",
                "on_chat_response(error)",
                "on_session_end(error)",
            ];
            assert_eq!(trace, expected(ERRED, &tail), "{failure:?} {policy:?}");
        }
    }
}

#[tokio::test]
async fn a_failing_on_chat_error_leaves_the_later_hooks_to_replace_the_error() {
    for failure in [Failure::Error, Failure::Panic] {
        for policy in [Policy::Default, Policy::Open, Policy::Closed] {
            let (result, trace) = run_with::<event::OnChatError>(failure, policy, true).await;
            assert_eq!(result.status, TurnStatus::Error, "{failure:?} {policy:?}");
            // The later hook still replaces the error.
            let surfaced = result.error.as_ref().map(|e| e.message.clone()).unwrap();
            assert_eq!(surfaced, "replaced");
            let tail = [
                "classify_chat_error(stream)",
                "classify_chat_error(late)",
                "on_chat_error(stream)",
                "on_chat_response(error)",
                "on_session_end(error)",
            ];
            assert_eq!(trace, expected(ERRED, &tail), "{failure:?} {policy:?}");
        }
    }
}
