//! Guardrails (issue 9 item 7): an input guardrail checks the user's input before any model
//! call or store write; an output guardrail checks the final reply before it is stored,
//! streamed or reported; a trip ends the turn with a typed error naming the guardrail;
//! parallel ones run at once.

use std::sync::Arc;

use agent_core::{
    AgentBuilder, FnTool, Guardrail, GuardrailKind, GuardrailVerdict, Hook, MemoryStore,
    ScriptedModel, ScriptedStep, SessionStore, ToolError, TurnErrorKind, TurnEvent, TurnStatus,
    event,
};
use serde_json::{Value, json};
use tests::{Trace, assert_whole, describe_chunk, lines, within};

fn no_secrets(text: &str) -> GuardrailVerdict {
    if text.contains("password") {
        GuardrailVerdict::trip("it mentions a password")
    } else {
        GuardrailVerdict::Pass
    }
}

/// An agent that looks something up, then answers `answer`; its on_chunk, on_chat_error and
/// on_chat_response hooks record what they see.
fn agent(trace: &Trace, answer: &str, store: &Arc<dyn SessionStore>) -> AgentBuilder {
    let lookup = FnTool::new(
        "lookup",
        "Looks it up.",
        json!({"type": "object"}),
        |_, _| async { Ok::<Value, ToolError>(json!("found")) },
    );
    let (t1, t2, t3) = (trace.clone(), trace.clone(), trace.clone());
    AgentBuilder::new("guarded")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .text("Looking.")
                .tool_call("c1", "lookup", "{}"),
            ScriptedStep::new().text(answer),
        ]))
        .store(store.clone())
        .dyn_tool(lookup)
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            t1.push(format!("on_chunk({})", describe_chunk(&ctx.chunk)));
        }))
        .hook(Hook::<event::OnChatError>::sync("error", move |ctx| {
            t2.push(format!("on_chat_error({})", ctx.error.message));
        }))
        .hook(Hook::<event::OnChatResponse>::sync(
            "response",
            move |ctx| {
                t3.push(format!(
                    "on_chat_response({} {:?})",
                    ctx.status,
                    ctx.message.text()
                ));
            },
        ))
}

#[tokio::test]
async fn a_tripped_input_guardrail_ends_the_turn_before_any_model_call_or_write() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let model_calls = ScriptedModel::new([ScriptedStep::new().text("never")]);
    let agent = agent(&trace, "unused", &store)
        .model(model_calls.clone())
        .input_guardrail(Guardrail::new("no secrets", no_secrets))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let result = conversation.run("my password is hunter2").await;
    assert_eq!(result.status, TurnStatus::Error);
    let error = result.error.unwrap();
    assert_eq!(
        error.kind,
        TurnErrorKind::Guardrail {
            kind: GuardrailKind::Input,
            name: "no secrets".to_owned()
        }
    );
    assert_eq!(
        error.message,
        "input guardrail `no secrets` tripped: it mentions a password"
    );
    assert!(model_calls.requests().is_empty(), "no model call");
    assert!(
        store.load("s").await.unwrap().is_empty(),
        "the input is not stored"
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "on_chat_error(input guardrail `no secrets` tripped: it mentions a password)",
            "on_chat_response(error \"\")",
        ])
    );
}

/// User messages given with the request (`run_messages`) are input too: a guardrail reads
/// them with the input, and a trip stores none of them. Assistant and tool messages are not
/// the user's, and are not checked.
#[tokio::test]
async fn input_guardrails_check_user_messages_given_with_the_request() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let model_calls = ScriptedModel::new([ScriptedStep::new().text("Noted.")]);
    let agent = agent(&trace, "unused", &store)
        .model(model_calls.clone())
        .input_guardrail(Guardrail::new("no secrets", move |text| {
            record.lock().unwrap().push(text.to_owned());
            no_secrets(text)
        }))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let result = conversation
        .run_messages([
            agent_core::Message::assistant("What is your password?"),
            agent_core::Message::user("my password is hunter2"),
        ])
        .await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(
        result.error.unwrap().message,
        "input guardrail `no secrets` tripped: it mentions a password"
    );
    assert!(model_calls.requests().is_empty(), "no model call");
    assert!(store.load("s").await.unwrap().is_empty(), "nothing stored");

    let result = conversation
        .run_messages([
            agent_core::Message::user("first"),
            agent_core::Message::assistant("the password is not a user's"),
            agent_core::Message::user("second"),
        ])
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(
        *seen.lock().unwrap(),
        ["my password is hunter2", "first\nsecond"]
    );
}

#[tokio::test]
async fn a_tripped_output_guardrail_keeps_the_output_from_the_store_the_stream_and_the_response() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let agent = agent(&trace, "The password is hunter2.", &store)
        .output_guardrail(Guardrail::new("no secrets", no_secrets))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let mut stream = conversation.stream("what is the password?");
    let mut streamed = Vec::new();
    let mut result = None;
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::Chunk { chunk, .. } => streamed.push(describe_chunk(&chunk)),
            TurnEvent::Finished(done) => result = Some(done),
            _ => {}
        }
    }
    let result = result.unwrap();
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(result.text, "");
    let error = result.error.unwrap();
    assert_eq!(
        error.kind,
        TurnErrorKind::Guardrail {
            kind: GuardrailKind::Output,
            name: "no secrets".to_owned()
        }
    );
    // The first step's chunks went out once its reply was settled; nothing of the second.
    assert_eq!(
        streamed,
        [
            "text:Looking.",
            "tool_start:c1 lookup",
            "tool_input:c1",
            "tool_call:c1 lookup",
            "tool_result:c1 lookup ok"
        ]
    );
    let seen = trace.take();
    assert!(seen.iter().all(|l| !l.contains("hunter2")), "{seen:?}");
    assert_eq!(
        seen.last().unwrap(),
        "on_chat_response(error \"Looking.\")",
        "on_chat_response reports the last stored reply, not the tripped one"
    );
    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    assert!(
        rows.iter().all(|r| !r.message.text().contains("hunter2")),
        "the output is not stored"
    );
}

#[tokio::test]
async fn a_passing_output_guardrail_delivers_every_chunk_in_order() {
    let plain_trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let plain = agent(&plain_trace, "All clear.", &store).build().unwrap();
    plain.run("check").await;

    let guarded_trace = Trace::new();
    let guarded = agent(&guarded_trace, "All clear.", &store)
        .output_guardrail(Guardrail::new("no secrets", no_secrets))
        .build()
        .unwrap();
    let result = guarded.run("check").await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(result.text, "All clear.");
    assert_eq!(guarded_trace.take(), plain_trace.take());
}

#[tokio::test]
async fn parallel_guardrails_run_at_once_and_a_panicking_one_trips() {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let both = |name: &str| {
        let barrier = barrier.clone();
        Guardrail::new_async(name, move |_| {
            let barrier = barrier.clone();
            async move {
                // Passes only when the other parallel guardrail runs at the same time.
                barrier.wait().await;
                GuardrailVerdict::Pass
            }
        })
        .parallel()
    };
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let agent = agent(&Trace::new(), "Fine.", &store)
        .input_guardrail(both("a"))
        .input_guardrail(both("b"))
        .build()
        .unwrap();
    let result = within("parallel guardrails", agent.run("hello")).await;
    assert_eq!(result.status, TurnStatus::Completed);

    let agent = agent_with_panic(&store);
    let result = agent.run("hello").await;
    assert_eq!(
        result.error.unwrap().message,
        "input guardrail `buggy` tripped: it panicked: checker bug"
    );
}

fn agent_with_panic(store: &Arc<dyn SessionStore>) -> agent_core::Agent {
    agent(&Trace::new(), "Fine.", store)
        .input_guardrail(Guardrail::new("buggy", |_| panic!("checker bug")))
        .build()
        .unwrap()
}

/// A cancel stops an async guardrail at once, input or output, as it stops an async hook: the
/// turn ends aborted at the moment of the cancel, and a checked reply is not stored.
#[tokio::test(start_paused = true)]
async fn a_cancel_stops_a_slow_guardrail_at_once() {
    for output in [false, true] {
        let slow = || {
            Guardrail::new_async("slow", |_| async {
                tokio::time::sleep(std::time::Duration::from_secs(3_600)).await;
                GuardrailVerdict::Pass
            })
        };
        let store: Arc<dyn SessionStore> = Arc::new(agent_core::MemoryStore::new());
        let builder = AgentBuilder::new("careful")
            .model(ScriptedModel::new([ScriptedStep::new().text("hi")]))
            .store(store.clone());
        let agent = match output {
            false => builder.input_guardrail(slow()),
            true => builder.output_guardrail(slow()),
        }
        .build()
        .unwrap();
        let cancel = agent_core::CancelToken::new();
        let canceller = cancel.clone();
        let cancelled_at = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            canceller.cancel();
            tokio::time::Instant::now()
        });
        let conversation = agent.session("s");
        let result = conversation
            .run(agent_core::TurnRequest::new("hello").cancel(cancel))
            .await;
        let late = tokio::time::Instant::now() - cancelled_at.await.unwrap();
        assert_eq!(result.status, TurnStatus::Aborted, "output: {output}");
        assert_eq!(late, std::time::Duration::ZERO, "output: {output}");
        let rows = store.load("s").await.unwrap();
        assert!(
            rows.iter().all(|row| row.message.text() != "hi"),
            "the reply under check is not stored (output: {output})"
        );
        assert_whole(&rows);
    }
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    number: String,
    total_cents: u64,
}

/// A typed answer given through the final-answer tool is the turn's output too: the output
/// guardrails check its arguments, and a trip keeps it from the store and the result.
#[tokio::test]
async fn output_guardrails_check_an_answer_given_by_the_final_answer_tool() {
    for leaks in [true, false] {
        let checked = Trace::new();
        let seen = checked.clone();
        let number = if leaks { "password-7" } else { "INV-7" };
        let arguments = format!(r#"{{"number":"{number}","total_cents":1250}}"#);
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        let agent = AgentBuilder::new("typed")
            .model(ScriptedModel::new([ScriptedStep::new().tool_call(
                "c1",
                "final_result",
                &arguments,
            )]))
            .store(store.clone())
            .output::<Invoice>()
            .output_guardrail(Guardrail::new("no_secrets", move |text| {
                seen.push(text.to_owned());
                no_secrets(text)
            }))
            .build()
            .unwrap();
        let result = agent.session("s").run("extract").await;
        assert_eq!(
            checked.take(),
            std::slice::from_ref(&arguments),
            "leaks: {leaks}"
        );
        let rows = store.load("s").await.unwrap();
        assert_whole(&rows);
        if leaks {
            assert_eq!(result.status, TurnStatus::Error);
            assert!(matches!(
                result.error.as_ref().map(|e| &e.kind),
                Some(TurnErrorKind::Guardrail {
                    kind: GuardrailKind::Output,
                    ..
                })
            ));
            assert!(result.output.is_none());
            assert!(
                rows.iter()
                    .all(|row| !format!("{:?}", row.message).contains("password")),
                "the tripped answer is not stored"
            );
        } else {
            assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
            let invoice: &Invoice = result.output().unwrap();
            assert_eq!(invoice.number, "INV-7");
        }
    }
}

/// Guardrails are the agent's own and do not follow a handoff: the entry agent's input
/// guardrails check the turn's input (the target's never run: the input was checked before
/// the turn began), and the output guardrails that check the final reply are those of the
/// agent giving it, the target (the entry agent's never run), as in the OpenAI Agents SDK.
#[tokio::test]
async fn after_a_handoff_the_input_is_checked_by_the_entry_agent_and_the_reply_by_the_target() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let guardrail = |name: &'static str| {
        let seen = seen.clone();
        Guardrail::new(name, move |text: &str| {
            seen.lock().unwrap().push(format!("{name}({text})"));
            no_secrets(text)
        })
    };
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([
            ScriptedStep::new().text("Your password is hunter2.")
        ]))
        .input_guardrail(guardrail("billing input"))
        .output_guardrail(guardrail("billing output"))
        .build()
        .unwrap();
    let triage = tests::triage_handing_to(&billing)
        .input_guardrail(guardrail("triage input"))
        .output_guardrail(guardrail("triage output"))
        .build()
        .unwrap();
    let result = triage.run("What is my account's secret?").await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(
        result.error.unwrap().message,
        "output guardrail `billing output` tripped: it mentions a password"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "triage input(What is my account's secret?)",
            "billing output(Your password is hunter2.)",
        ]
    );
}
