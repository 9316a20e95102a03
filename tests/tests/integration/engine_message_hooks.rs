//! The message hooks (docs/design.md §4): filter_messages, prefilter_llm_history, post_process_message,
//! before/after_create_message, before/after_update_message, after_tool_call_success/failure,
//! before_store_tool_result, on_session_start/end, and `Conversation::inject_message`. Store
//! writes are traced together with the hooks, so each test compares one full ordered list.

use agent_core::{
    AgentBuilder, Chunk, Extension, ExtensionEvent, Guardrail, GuardrailVerdict, HistoryDecision,
    Hook, Matcher, Message, MessageStatus, ScriptedModel, ScriptedStep, ToolCall,
    ToolResultDecision, ToolStatus, TurnStatus, event,
};
use serde_json::Value;
use tests::{Add, Failure, Recorded, Trace, TracedStore, failing, lines, status_name};

/// One recording hook for each message hook, all keeping what they receive.
fn record_message_hooks(builder: AgentBuilder, trace: &Trace) -> AgentBuilder {
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::OnSessionStart>::sync("trace", move |_| {
        t.push("on_session_start")
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::OnSessionEnd>::sync("trace", move |ctx| {
        t.push(format!("on_session_end({})", status_name(ctx.status)))
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::FilterMessages>::sync("trace", move |ctx| {
        t.push(format!("filter_messages({} rows)", ctx.rows.len()))
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::PrefilterLlmHistory>::sync(
        "trace",
        move |ctx| {
            t.push(format!(
                "prefilter_llm_history({} {} messages)",
                ctx.step,
                ctx.messages.len()
            ))
        },
    ));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::PostProcessMessage>::sync(
        "trace",
        move |ctx| t.push(format!("post_process_message({:?})", ctx.message.text())),
    ));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::BeforeCreateMessage>::sync(
        "trace",
        move |ctx| t.push(format!("before_create_message({})", ctx.row.message.role())),
    ));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::AfterCreateMessage>::sync(
        "trace",
        move |ctx| t.push(format!("after_create_message({})", ctx.row.id)),
    ));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::BeforeUpdateMessage>::sync(
        "trace",
        move |ctx| t.push(format!("before_update_message({})", ctx.id)),
    ));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::AfterUpdateMessage>::sync(
        "trace",
        move |ctx| t.push(format!("after_update_message({})", ctx.id)),
    ));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::AfterToolCallSuccess>::sync(
        "trace",
        move |ctx| {
            t.push(format!(
                "after_tool_call_success({} {:?})",
                ctx.call.id, ctx.content
            ))
        },
    ));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::AfterToolCallFailure>::sync(
        "trace",
        move |ctx| {
            t.push(format!(
                "after_tool_call_failure({} {:?})",
                ctx.call.id, ctx.content
            ))
        },
    ));
    let t = trace.clone();
    builder.hook(Hook::<event::BeforeStoreToolResult>::sync(
        "trace",
        move |ctx| {
            t.push(format!(
                "before_store_tool_result({:?})",
                ctx.message.text()
            ))
        },
    ))
}

#[tokio::test]
async fn every_message_hook_fires_at_its_place_around_the_store_writes() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Adding.")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("5"),
    ]);
    let builder = AgentBuilder::new("hooked")
        .model(model)
        .tool(Add::traced(&trace))
        .store(TracedStore::shared(&trace))
        .record_all(&trace);
    let agent = record_message_hooks(builder, &trace).build().unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "store.has_rows",
            "on_session_start",
            "before_run(2+3?)",
            "store.load",
            "filter_messages(0 rows)",
            "before_create_message(user)",
            "store.insert(user completed \"2+3?\")",
            "after_create_message(1)",
            "before_turn",
            "before_step(0)",
            "prefilter_llm_history(0 1 messages)",
            "on_llm_start(0)",
            "before_create_message(assistant)",
            "store.insert(assistant pending \"\")",
            "after_create_message(2)",
            "on_chunk(text:Adding.)",
            "on_chunk(tool_start:c1 add)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 add)",
            "on_llm_end(0)",
            "post_process_message(\"Adding.\")",
            "before_update_message(2)",
            "store.update(2 completed \"Adding.\")",
            "after_update_message(2)",
            "before_tool_call(add c1)",
            "add(2,3)",
            "after_tool_call_success(c1 \"5\")",
            "after_tool_call(add c1 executed)",
            "before_store_tool_result(\"5\")",
            "before_create_message(tool)",
            "store.insert(tool completed \"5\")",
            "after_create_message(3)",
            "on_chunk(tool_result:c1 add ok)",
            "on_step_finish(0)",
            "before_step(1)",
            "prefilter_llm_history(1 3 messages)",
            "on_llm_start(1)",
            "before_create_message(assistant)",
            "store.insert(assistant pending \"\")",
            "after_create_message(4)",
            "on_chunk(text:5)",
            "on_llm_end(1)",
            "post_process_message(\"5\")",
            "before_update_message(4)",
            "store.update(4 completed \"5\")",
            "after_update_message(4)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
            "on_session_end(completed)",
        ])
    );
}

#[tokio::test]
async fn transform_hooks_chain_and_a_failing_one_keeps_the_last_good_value() {
    for failure in [Failure::Error, Failure::Panic, Failure::Timeout] {
        let model = ScriptedModel::new([ScriptedStep::new().text("Hi")]);
        let agent = AgentBuilder::new("chained")
            .model(model)
            .hook(Hook::<event::PostProcessMessage>::sync("a", |ctx| {
                Message::assistant(format!("{} [a]", ctx.message.text()))
            }))
            .hook(failing::<event::PostProcessMessage>("broken", failure))
            .hook(Hook::<event::PostProcessMessage>::sync("c", |ctx| {
                Message::assistant(format!("{} [c]", ctx.message.text()))
            }))
            // Runs first (lower priority): the create chain sees what the first hook made.
            .hook(
                Hook::<event::BeforeCreateMessage>::sync("upper", |ctx| {
                    let mut row = ctx.row.clone();
                    if let Message::User { content } = &mut row.message {
                        *content = content.to_uppercase().into();
                    }
                    row
                })
                .priority(-1),
            )
            .hook(failing::<event::BeforeCreateMessage>("broken", failure))
            .hook(Hook::<event::BeforeCreateMessage>::sync("mark", |ctx| {
                let mut row = ctx.row.clone();
                if let Message::User { content } = &mut row.message {
                    *content = format!("{content}!").into();
                }
                row
            }))
            .build()
            .unwrap();
        let conversation = agent.conversation();
        let result = conversation.run("hello").await;
        assert_eq!(
            result.status,
            TurnStatus::Completed,
            "{failure:?}: {result:?}"
        );
        assert_eq!(result.text, "Hi [a] [c]", "{failure:?}");
        let stored: Vec<(&str, String)> = conversation
            .rows()
            .await
            .unwrap()
            .iter()
            .map(|row| (row.message.role(), row.message.text().to_owned()))
            .collect();
        assert_eq!(
            stored,
            [
                ("user", "HELLO!".to_owned()),
                ("assistant", "Hi [a] [c]".to_owned())
            ],
            "{failure:?}"
        );
    }
}

#[tokio::test]
async fn a_prefilter_block_stores_its_message_and_never_calls_the_model() {
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new().text("never")]);
    let builder = AgentBuilder::new("blocked")
        .model(model.clone())
        .store(TracedStore::shared(&trace))
        .record_turn(&trace)
        .hook(Hook::<event::PrefilterLlmHistory>::sync("keep", |_| {
            HistoryDecision::Keep
        }))
        .hook(Hook::<event::PrefilterLlmHistory>::sync("gate", |ctx| {
            HistoryDecision::Block(Message::assistant(format!(
                "Not now ({} messages).",
                ctx.messages.len()
            )))
        }))
        .hook(Hook::<event::PrefilterLlmHistory>::sync(
            "after",
            |_| -> HistoryDecision { panic!("a blocked chain stops") },
        ));
    let agent = builder.build().unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("hi").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "Not now (1 messages).");
    assert!(model.requests().is_empty());
    assert_eq!(model.remaining(), 1);
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(hi)",
            "store.load",
            "store.insert(user completed \"hi\")",
            "before_turn",
            "before_step(0)",
            "store.insert(assistant completed \"Not now (1 messages).\")",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    assert_eq!(
        conversation.history().await.unwrap(),
        [
            Message::user("hi"),
            Message::assistant("Not now (1 messages).")
        ]
    );
}

/// Messages a hook gives the model to read are paired as the history is: a call without its
/// result is taken out of its message (the message goes when nothing is left of it), a result
/// without its call is left out. Sent as given, a provider refuses the request ("tool_calls
/// must be followed by tool messages") and the turn failed on the hook's slip.
#[tokio::test]
async fn messages_a_hook_gives_are_sent_paired() {
    let calling = |text: &str, id: &str| Message::Assistant {
        content: text.into(),
        reasoning: Default::default(),
        tool_calls: vec![ToolCall::new(id, "add", "{}")].into(),
        reasoning_signature: None,
        provider_blocks: Vec::new(),
    };
    let result = |id: &str| Message::Tool {
        call_id: id.into(),
        name: "add".into(),
        content: "5".into(),
        is_error: false,
    };
    let given = vec![
        Message::user("earlier"),
        calling("Adding.", "x1"),
        calling("", "x2"),
        result("ghost"),
        calling("", "x3"),
        result("x3"),
        Message::user("one"),
    ];
    let sent = [
        Message::user("earlier"),
        Message::assistant("Adding."),
        calling("", "x3"),
        result("x3"),
        Message::user("one"),
    ];
    let turn = given.clone();
    let step = given.clone();
    let prefilter = given.clone();
    let hooks: [Box<dyn Fn(AgentBuilder) -> AgentBuilder>; 3] = [
        Box::new(move |builder| {
            let turn = turn.clone();
            builder.hook(Hook::<event::BeforeTurn>::sync("given", move |_| {
                Some(agent_core::TurnConfig::default().messages(turn.clone()))
            }))
        }),
        Box::new(move |builder| {
            let step = step.clone();
            builder.hook(Hook::<event::BeforeStep>::sync("given", move |_| {
                agent_core::StepConfig::default().messages(step.clone())
            }))
        }),
        Box::new(move |builder| {
            let prefilter = prefilter.clone();
            builder.hook(Hook::<event::PrefilterLlmHistory>::sync(
                "given",
                move |_| HistoryDecision::Replace(prefilter.clone()),
            ))
        }),
    ];
    for (event, hook) in ["before_turn", "before_step", "prefilter_llm_history"]
        .into_iter()
        .zip(hooks)
    {
        let model = ScriptedModel::new([ScriptedStep::new().text("ok")]);
        let agent = hook(AgentBuilder::new("given").model(model.clone()))
            .build()
            .unwrap();
        let result = agent.run("one").await;
        assert_eq!(result.status, TurnStatus::Completed, "{event}: {result:?}");
        assert_eq!(*model.requests()[0].messages, sent, "{event}");
        assert!(agent_core::is_paired(&model.requests()[0].messages));
    }
}

#[tokio::test]
async fn filter_and_prefilter_change_what_the_model_reads_but_never_the_store() {
    let model = ScriptedModel::new([
        ScriptedStep::new().text("first"),
        ScriptedStep::new().text("second"),
    ]);
    let agent = AgentBuilder::new("filtered")
        .model(model.clone())
        // Only the rows of the last turn (user + assistant) reach the history.
        .hook(Hook::<event::FilterMessages>::sync("recent", |ctx| {
            let keep = ctx.rows.len().saturating_sub(1);
            ctx.rows[keep..].to_vec()
        }))
        .hook(Hook::<event::PrefilterLlmHistory>::sync("note", |ctx| {
            let mut messages = vec![Message::user("(note)")];
            messages.extend(ctx.messages.iter().cloned());
            HistoryDecision::Replace(messages)
        }))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    assert!(conversation.run("one").await.is_completed());
    assert!(conversation.run("two").await.is_completed());
    let requests = model.requests();
    assert_eq!(
        *requests[0].messages,
        [Message::user("(note)"), Message::user("one")]
    );
    assert_eq!(
        *requests[1].messages,
        [
            Message::user("(note)"),
            Message::assistant("first"),
            Message::user("two")
        ]
    );
    assert_eq!(
        conversation.history().await.unwrap(),
        [
            Message::user("one"),
            Message::assistant("first"),
            Message::user("two"),
            Message::assistant("second")
        ]
    );
}

/// A before_create_message hook that tags user and tool rows, and a before_update_message
/// hook that signs every assistant reply.
fn tagging(builder: AgentBuilder) -> AgentBuilder {
    builder
        .hook(Hook::<event::BeforeCreateMessage>::sync("tag", |ctx| {
            let mut row = ctx.row.clone();
            match &mut row.message {
                Message::User { content } => *content = format!("[user] {content}").into(),
                Message::Tool { content, .. } => *content = format!("[tool] {content}").into(),
                _ => {}
            }
            row
        }))
        .hook(Hook::<event::BeforeUpdateMessage>::sync("sign", |ctx| {
            let mut update = ctx.update.clone();
            if let Some(Message::Assistant { content, .. }) = &mut update.message {
                *content = format!("{content} (signed)").into();
            }
            update
        }))
}

#[tokio::test]
async fn the_turn_reads_the_rows_as_the_create_and_update_hooks_stored_them() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Adding.")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("5"),
        ScriptedStep::new().text("Bye."),
    ]);
    let builder = AgentBuilder::new("tagged")
        .model(model.clone())
        .tool(Add::traced(&trace));
    let agent = tagging(builder).build().unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert!(conversation.run("thanks").await.is_completed());

    let stored = [
        Message::user("[user] 2+3?"),
        assistant("Adding. (signed)", vec![call("c1", 2, 3)]),
        tool("c1", "[tool] 5", false),
        Message::assistant("5 (signed)"),
    ];
    assert_eq!(conversation.history().await.unwrap()[..4], stored);
    // The turn's second step reads its first step's rows as stored, as the next turn does.
    let requests = model.requests();
    assert_eq!(*requests[0].messages, stored[..1]);
    assert_eq!(*requests[1].messages, stored[..3]);
    let mut next = stored.to_vec();
    next.push(Message::user("[user] thanks"));
    assert_eq!(*requests[2].messages, next);
    // The turn's result holds its messages as stored too.
    assert_eq!(result.messages, stored[1..]);
}

/// A tool row a before_create_message hook changed is what the model reads: the result's
/// chunk and the step's record say so too, after the row's write.
#[tokio::test]
async fn a_tool_result_is_shown_and_recorded_as_the_create_hook_stored_it() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Adding.")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("5"),
    ]);
    let t = trace.clone();
    let builder = AgentBuilder::new("tagged")
        .model(model)
        .tool(Add::traced(&trace))
        .store(TracedStore::shared(&trace))
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            if let Chunk::ToolResult {
                id,
                content,
                is_error,
                ..
            } = &ctx.chunk
            {
                t.push(format!("on_chunk(result {id} {content:?} {is_error})"));
            }
        }));
    let agent = tagging(builder).build().unwrap();
    let mut stream = agent.conversation().stream("2+3?");
    let mut streamed = Vec::new();
    let mut finished = None;
    while let Some(event) = stream.next().await {
        match event {
            agent_core::TurnEvent::Chunk {
                chunk: Chunk::ToolResult { content, .. },
                ..
            } => streamed.push(content.to_string()),
            agent_core::TurnEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    let result = finished.expect("the stream ends with Finished");
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(streamed, ["[tool] 5"]);
    assert_eq!(result.steps[0].tool_results[0].content, "[tool] 5");
    assert_eq!(
        trace.take(),
        lines(&[
            "store.load",
            "store.insert(user completed \"[user] 2+3?\")",
            "store.insert(assistant pending \"\")",
            "store.update(2 completed \"Adding. (signed)\")",
            "add(2,3)",
            "store.insert(tool completed \"[tool] 5\")",
            "on_chunk(result c1 \"[tool] 5\" false)",
            "store.insert(assistant pending \"\")",
            "store.update(4 completed \"5 (signed)\")",
        ])
    );
}

fn call(id: &str, a: i64, b: i64) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "add".into(),
        arguments: format!(r#"{{"a":{a},"b":{b}}}"#).into(),
        metadata: None,
    }
}

fn tool(id: &str, content: &str, is_error: bool) -> Message {
    Message::Tool {
        call_id: id.into(),
        name: "add".into(),
        content: content.into(),
        is_error,
    }
}

fn assistant(text: &str, calls: Vec<ToolCall>) -> Message {
    Message::Assistant {
        content: text.into(),
        reasoning: Default::default(),
        tool_calls: calls.into(),
        reasoning_signature: None,
        provider_blocks: Vec::new(),
    }
}

#[tokio::test]
async fn dropping_a_call_keeps_every_other_call_paired_with_its_result() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Adding.")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c2", "add", r#"{"a":1,"b":1}"#),
        ScriptedStep::new().text("2"),
    ]);
    let agent = AgentBuilder::new("dropping")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .store(TracedStore::shared(&trace))
        .hook(Hook::<event::AfterToolCallSuccess>::sync(
            "drop c1",
            |ctx| {
                if ctx.call.id == "c1" {
                    ToolResultDecision::Drop
                } else {
                    ToolResultDecision::Keep
                }
            },
        ))
        .hook(Hook::<event::AfterToolCallSuccess>::sync("tag", |ctx| {
            ToolResultDecision::Replace {
                content: format!("sum={}", ctx.content),
                is_error: false,
            }
        }))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("sums").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "store.load",
            "store.insert(user completed \"sums\")",
            "store.insert(assistant pending \"\")",
            "store.update(2 completed \"Adding.\")",
            "add(2,3)",
            "add(1,1)",
            "store.insert(tool completed \"sum=2\")",
            "store.update(2 - \"Adding.\")",
            "store.insert(assistant pending \"\")",
            "store.update(4 completed \"2\")",
        ])
    );
    let paired = [
        Message::user("sums"),
        assistant("Adding.", vec![call("c2", 1, 1)]),
        tool("c2", "sum=2", false),
    ];
    assert_eq!(*model.requests()[1].messages, paired);
    let mut history = paired.to_vec();
    history.push(Message::assistant("2"));
    assert_eq!(conversation.history().await.unwrap(), history);
    assert_eq!(result.messages, history[1..]);
    assert_eq!(result.steps[0].tool_results.len(), 1);
    assert_eq!(result.steps[0].tool_results[0].content, "sum=2");
}

/// A success hook's Replace changes what the model reads; the observers after it (after_tool_call,
/// an extension's afterToolCall) see that text, whether a hook replaced it, and still the
/// tool's own output.
#[tokio::test]
async fn observers_see_the_result_a_success_hook_replaced_beside_the_tools_output() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().tool_call("c2", "add", r#"{"a":1,"b":1}"#),
        ScriptedStep::new().text("done"),
    ]);
    let (t1, t2, t3, t4) = (trace.clone(), trace.clone(), trace.clone(), trace.clone());
    let agent = AgentBuilder::new("replacing")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .hook(Hook::<event::AfterToolCallSuccess>::sync(
            "five",
            move |ctx| {
                t1.push(format!(
                    "after_tool_call_success({} {})",
                    ctx.call.id, ctx.content
                ));
                if ctx.call.id == "c1" {
                    ToolResultDecision::Replace {
                        content: "five".to_owned(),
                        is_error: false,
                    }
                } else {
                    ToolResultDecision::Keep
                }
            },
        ))
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<Value>>::sync("audit", move |ctx| {
                let read = &ctx.model_result;
                t2.push(format!(
                    "after_tool_call({} {} output={} reads={} error={} replaced={} dropped={})",
                    ctx.call_id,
                    ctx.outcome.kind(),
                    ctx.output().map_or("-".to_owned(), Value::to_string),
                    read.content,
                    read.is_error,
                    read.replaced,
                    read.dropped,
                ));
            }),
        )
        .extension(
            Extension::new("audit", move |event, snapshot| {
                t3.push(format!("{}({})", event.as_str(), snapshot["modelResult"]));
                async { Ok(Value::Null) }
            })
            .subscribe([ExtensionEvent::AfterToolCall]),
        )
        .hook(Hook::<event::OnChunk>::sync("results", move |ctx| {
            if let Chunk::ToolResult { id, content, .. } = &ctx.chunk {
                t4.push(format!("on_chunk(tool_result {id} {content})"));
            }
        }))
        .build()
        .unwrap();
    let result = agent.run("sums").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let replaced = r#"{"content":"five","dropped":false,"isError":false,"replaced":true}"#;
    let kept = r#"{"content":"2","dropped":false,"isError":false,"replaced":false}"#;
    assert_eq!(
        trace.take(),
        lines(&[
            "add(2,3)",
            "after_tool_call_success(c1 5)",
            "after_tool_call(c1 executed output=5 reads=five error=false replaced=true dropped=false)",
            &format!("afterToolCall({replaced})"),
            "on_chunk(tool_result c1 five)",
            "add(1,1)",
            "after_tool_call_success(c2 2)",
            "after_tool_call(c2 executed output=2 reads=2 error=false replaced=false dropped=false)",
            &format!("afterToolCall({kept})"),
            "on_chunk(tool_result c2 2)",
        ])
    );
    assert_eq!(result.steps[0].tool_results[0].content, "five");
    assert_eq!(result.steps[1].tool_results[0].content, "2");
}

#[tokio::test]
async fn dropping_the_only_call_of_a_textless_reply_hides_the_reply() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("done"),
    ]);
    let agent = AgentBuilder::new("hiding")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .store(TracedStore::shared(&trace))
        .hook(Hook::<event::AfterToolCallSuccess>::sync("drop", |_| {
            ToolResultDecision::Drop
        }))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("add").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "store.load",
            "store.insert(user completed \"add\")",
            "store.insert(assistant pending \"\")",
            "store.update(2 completed \"\")",
            "add(2,3)",
            "store.update(2 - \"\" silent)",
            "store.insert(assistant pending \"\")",
            "store.update(3 completed \"done\")",
        ])
    );
    assert_eq!(*model.requests()[1].messages, [Message::user("add")]);
    let rows = conversation.rows().await.unwrap();
    assert!(rows[1].silent);
    assert_eq!(rows[1].message, assistant("", Vec::new()));
    assert_eq!(
        conversation.history().await.unwrap(),
        [Message::user("add"), Message::assistant("done")]
    );
}

#[tokio::test]
async fn failure_hooks_replace_an_error_result_before_it_is_stored() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", format!(r#"{{"a":{},"b":1}}"#, i64::MAX)),
        ScriptedStep::new().text("ok"),
    ]);
    let trace = Trace::new();
    let t = trace.clone();
    let agent = AgentBuilder::new("failing")
        .model(model.clone())
        .tool(Add::default())
        .hook(Hook::<event::AfterToolCallSuccess>::sync(
            "never",
            |_| -> ToolResultDecision { panic!("the call failed") },
        ))
        .hook(Hook::<event::AfterToolCallFailure>::sync(
            "soften",
            move |ctx| {
                t.push(format!("failure({} {})", ctx.outcome, ctx.content));
                ToolResultDecision::Replace {
                    content: "too big".to_owned(),
                    is_error: false,
                }
            },
        ))
        .hook(failing::<event::AfterToolCallFailure>(
            "broken",
            Failure::Error,
        ))
        .hook(Hook::<event::BeforeStoreToolResult>::sync(
            "wrong call",
            |_| tool("other", "misplaced", false),
        ))
        .hook(Hook::<event::BeforeStoreToolResult>::sync(
            "suffix",
            |ctx| tool("c1", &format!("{}.", ctx.message.text()), false),
        ))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("overflow").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(trace.take(), ["failure(failed the sum overflows)"]);
    assert_eq!(
        model.requests()[1].messages[2],
        tool("c1", "too big.", false)
    );
    let rows = conversation.rows().await.unwrap();
    assert_eq!(rows[2].tool_status, Some(ToolStatus::Success));
    assert_eq!(rows[2].status, MessageStatus::Completed);
}

#[tokio::test]
async fn session_start_fires_on_the_first_turn_only_and_session_end_after_every_turn() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().text("one"),
        ScriptedStep::new().fail("the provider broke"),
    ]);
    let t1 = trace.clone();
    let t2 = trace.clone();
    let agent = AgentBuilder::new("sessions")
        .model(model)
        .record_turn(&trace)
        .hook(Hook::<event::OnSessionStart>::sync("start", move |ctx| {
            t1.push(format!("on_session_start({})", ctx.agent.name))
        }))
        .hook(Hook::<event::OnSessionEnd>::sync("end", move |ctx| {
            t2.push(format!(
                "on_session_end({} {})",
                status_name(ctx.status),
                ctx.error
                    .as_ref()
                    .map(|e| e.message.as_str())
                    .unwrap_or("-")
            ))
        }))
        .hook(failing::<event::OnSessionEnd>("broken", Failure::Panic))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    assert!(conversation.run("first").await.is_completed());
    let second = conversation.run("second").await;
    assert_eq!(second.status, TurnStatus::Error);
    assert_eq!(
        trace.take(),
        lines(&[
            "on_session_start(sessions)",
            "before_run(first)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:one)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
            "on_session_end(completed -)",
            "before_run(second)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_llm_end(0)",
            "classify_chat_error(stream)",
            "on_chat_error(stream)",
            "on_chat_response(error)",
            "on_session_end(error the provider broke)",
        ])
    );
}

#[tokio::test]
async fn session_start_fires_once_even_when_the_first_turn_stored_nothing() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().text("one"),
        ScriptedStep::new().text("two"),
    ]);
    let t = trace.clone();
    let agent = AgentBuilder::new("sessions")
        .model(model)
        .store(TracedStore::shared(&trace))
        .hook(Hook::<event::OnSessionStart>::sync("start", move |_| {
            t.push("on_session_start")
        }))
        .input_guardrail(Guardrail::new("no secrets", |text| {
            match text.contains("password") {
                true => GuardrailVerdict::trip("it mentions a password"),
                false => GuardrailVerdict::Pass,
            }
        }))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let tripped = conversation.run("my password is hunter2").await;
    assert_eq!(tripped.status, TurnStatus::Error, "{tripped:?}");
    assert!(conversation.run("first").await.is_completed());
    assert!(conversation.run("second").await.is_completed());
    let reads_and_starts = |trace: Vec<String>| -> Vec<String> {
        let kept = |line: &String| {
            line.starts_with("store.load")
                || line.starts_with("store.has")
                || line == "on_session_start"
        };
        trace.into_iter().filter(kept).collect()
    };
    assert_eq!(
        reads_and_starts(trace.take()),
        lines(&[
            // The tripped turn: whether the session has rows, then no history read.
            "store.has_rows",
            "on_session_start",
            // Each later turn reads its history only: the start is settled.
            "store.load",
            "store.load",
        ])
    );
}

#[tokio::test]
async fn session_end_fires_after_a_turn_that_ended_before_taking_its_session() {
    let model = ScriptedModel::new([ScriptedStep::new()
        .sleep(std::time::Duration::from_millis(200))
        .text("slow")]);
    let trace = Trace::new();
    let (responses, ends) = (trace.clone(), trace.clone());
    let agent = AgentBuilder::new("single")
        .model(model)
        .turn_overlap(agent_core::TurnOverlap::Reject)
        .hook(Hook::<event::OnChatResponse>::sync(
            "responses",
            move |ctx| responses.push(format!("on_chat_response({})", status_name(ctx.status))),
        ))
        .hook(Hook::<event::OnSessionEnd>::sync("ends", move |ctx| {
            ends.push(format!("on_session_end({})", status_name(ctx.status)))
        }))
        .build()
        .unwrap();
    let conversation = agent.conversation();

    // Cancelled before it starts: aborted, nothing stored.
    let token = agent_core::CancelToken::new();
    token.cancel();
    let aborted = conversation
        .run(agent_core::TurnRequest::new("never").cancel(token))
        .await;
    assert_eq!(aborted.status, TurnStatus::Aborted, "{aborted:?}");
    assert_eq!(
        trace.take(),
        ["on_chat_response(aborted)", "on_session_end(aborted)"]
    );

    // Rejected while another turn of the session runs (Busy).
    let first = tokio::spawn({
        let conversation = conversation.clone();
        async move { conversation.run("one").await }
    });
    while conversation.rows().await.unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    let busy = conversation.run("two").await;
    assert_eq!(busy.status, TurnStatus::Error, "{busy:?}");
    assert_eq!(
        trace.take(),
        ["on_chat_response(error)", "on_session_end(error)"]
    );
    assert!(first.await.unwrap().is_completed());
    assert_eq!(
        trace.take(),
        ["on_chat_response(completed)", "on_session_end(completed)"]
    );
}

#[tokio::test]
async fn inject_message_appends_rows_the_next_turn_reads() {
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new().text("seen")]);
    let t = trace.clone();
    let agent = AgentBuilder::new("injecting")
        .model(model.clone())
        .store(TracedStore::shared(&trace))
        .hook(Hook::<event::AfterCreateMessage>::sync(
            "created",
            move |ctx| {
                t.push(format!(
                    "after_create_message({} silent={} in_turn={})",
                    ctx.row.message.role(),
                    ctx.row.silent,
                    ctx.request_id.is_some()
                ))
            },
        ))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let row = conversation
        .inject_message(Message::user("context"))
        .await
        .unwrap();
    assert_eq!(row.status, MessageStatus::Completed);
    conversation
        .inject_silent_message(Message::user("a note for people"))
        .await
        .unwrap();
    assert!(conversation.run("go").await.is_completed());
    assert_eq!(
        trace.take(),
        lines(&[
            "store.insert(user completed \"context\")",
            "after_create_message(user silent=false in_turn=false)",
            "store.insert(user completed \"a note for people\")",
            "after_create_message(user silent=true in_turn=false)",
            "store.load",
            "store.insert(user completed \"go\")",
            "after_create_message(user silent=false in_turn=true)",
            "store.insert(assistant pending \"\")",
            "after_create_message(assistant silent=false in_turn=true)",
            "store.update(4 completed \"seen\")",
        ])
    );
    assert_eq!(
        *model.requests()[0].messages,
        [Message::user("context"), Message::user("go")]
    );
}

/// A post_process_message hook repairs a call whose arguments do not parse before it is read
/// (as the AI SDK's `experimental_repairToolCall`): the repaired call runs, and the model and
/// the store read it as repaired.
#[tokio::test]
async fn post_process_message_repairs_a_malformed_call_before_it_runs() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":2,"b":3"#),
        ScriptedStep::new().text("5"),
    ]);
    let agent = AgentBuilder::new("repairing")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .hook(Hook::<event::PostProcessMessage>::sync("repair", |ctx| {
            let mut message = ctx.message.clone();
            let Message::Assistant { tool_calls, .. } = &mut message else {
                return None;
            };
            let repaired = tool_calls.iter().map(|call| {
                let mut call = call.clone();
                if serde_json::from_str::<Value>(&call.arguments).is_err() {
                    call.arguments = format!("{}}}", call.arguments).into();
                }
                call
            });
            *tool_calls = repaired.collect();
            Some(message)
        }))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(trace.take(), ["add(2,3)"]);
    let stored = [
        Message::user("2+3?"),
        assistant("", vec![call("c1", 2, 3)]),
        tool("c1", "5", false),
    ];
    assert_eq!(*model.requests()[1].messages, stored);
    assert_eq!(conversation.history().await.unwrap()[..3], stored);
}
