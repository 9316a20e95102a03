//! Streamed chunks reach on_chunk and the stream API in order, whether a chunk's work is done
//! on the spot (sync hooks, room in the stream's channel) or awaited (an async hook, a full
//! channel): more chunks than the channel holds (64). Each tool call starts once, before its
//! arguments, whatever its model sends.

use agent_core::{
    AgentBuilder, ChunkContext, Guardrail, GuardrailVerdict, Hook, Message, ModelEvent,
    ScriptedModel, ScriptedStep, ToolCall, TurnEvent, TurnResult, TurnStatus, event,
};
use tests::{Add, Trace, describe_chunk, lines, shown_chunks};

/// Streams `count` text chunks (`0`, `1`, ...) through `hooks` and the stream API; returns
/// what the stream showed of them.
async fn stream_chunks(count: usize, hooks: Vec<Hook<event::OnChunk>>) -> Vec<String> {
    let step = (0..count).fold(ScriptedStep::new(), |step, i| step.text(i.to_string()));
    let mut builder = AgentBuilder::new("chunks").model(ScriptedModel::new([step]));
    for hook in hooks {
        builder = builder.hook(hook);
    }
    let agent = builder.build().unwrap();
    let (shown, result) = shown_chunks(agent.conversation().stream("count")).await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        result.text,
        (0..count).map(|i| i.to_string()).collect::<String>()
    );
    shown
}

fn texts(count: usize, prefix: &str) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}text:{i}")).collect()
}

#[tokio::test]
async fn sync_hooks_and_a_full_stream_channel_keep_every_chunk_in_order() {
    let trace = Trace::new();
    let seen = trace.clone();
    let hook = Hook::<event::OnChunk>::sync("sync", move |ctx| {
        seen.push(describe_chunk(&ctx.chunk));
    });
    let shown = stream_chunks(200, vec![hook]).await;
    assert_eq!(shown, texts(200, ""));
    assert_eq!(trace.take(), texts(200, ""));
}

#[tokio::test]
async fn an_async_on_chunk_hook_runs_in_order_with_a_sync_one_on_every_chunk() {
    let trace = Trace::new();
    let seen = trace.clone();
    let sync = Hook::<event::OnChunk>::sync("sync", move |ctx| {
        seen.push(format!("sync {}", describe_chunk(&ctx.chunk)));
    });
    let awaited = Hook::<event::OnChunk>::new_async_with(
        "async",
        trace.clone(),
        async |trace: &Trace, ctx: &ChunkContext| {
            tokio::task::yield_now().await;
            trace.push(format!("async {}", describe_chunk(&ctx.chunk)));
        },
    );
    let shown = stream_chunks(100, vec![sync, awaited]).await;
    assert_eq!(shown, texts(100, ""));
    let expected: Vec<String> = (0..100)
        .flat_map(|i| [format!("sync text:{i}"), format!("async text:{i}")])
        .collect();
    assert_eq!(trace.take(), expected);
}

/// A step whose calls come every way a model may send them: `a` started, with its start sent
/// twice; `b` whole, with no start and no arguments streamed; `c` started, then whole; then,
/// after a discarded attempt, `a` again under the same id. None of the tools exists: each call
/// is an error result.
fn calls_every_way() -> ScriptedModel {
    let start = |id: &str, name: &str| ModelEvent::ToolCallStart {
        id: id.into(),
        name: name.into(),
    };
    let input = |id: &str, delta: &str| ModelEvent::ToolInputDelta {
        id: id.into(),
        delta: delta.into(),
    };
    let whole = |id: &str, name: &str| ModelEvent::ToolCall(ToolCall::new(id, name, "{}"));
    let step = ScriptedStep::new()
        .event(start("a", "search"))
        .event(input("a", "{"))
        .event(start("a", "search"))
        .event(input("a", "}"))
        .event(whole("a", "search"))
        .text("and")
        .event(whole("b", "fetch"))
        .event(start("c", "list"))
        .event(whole("c", "list"))
        .event(ModelEvent::Discard {
            reason: "broken".to_owned(),
        })
        .event(start("a", "search"))
        .event(input("a", "{}"))
        .event(whole("a", "search"))
        .event(whole("b", "fetch"));
    ScriptedModel::new([step, ScriptedStep::new().text("done")])
}

/// What `calls_every_way` shows, in order.
const EVERY_WAY: [&str; 17] = [
    "tool_start:a search",
    "tool_input:a",
    "tool_input:a",
    "tool_call:a search",
    "text:and",
    "tool_start:b fetch",
    "tool_call:b fetch",
    "tool_start:c list",
    "tool_call:c list",
    "discarded:broken",
    "tool_start:a search",
    "tool_input:a",
    "tool_call:a search",
    "tool_start:b fetch",
    "tool_call:b fetch",
    "tool_result:a search error",
    "tool_result:b fetch error",
];

/// Runs `calls_every_way` with `hook` on on_chunk; what the hook and the stream API saw.
async fn every_way(hook: Hook<event::OnChunk>, trace: &Trace) -> (Vec<String>, Vec<String>) {
    let agent = AgentBuilder::new("starts")
        .model(calls_every_way())
        .hook(hook)
        .build()
        .unwrap();
    let (shown, result) = shown_chunks(agent.conversation().stream("go")).await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    (trace.take(), shown)
}

#[tokio::test]
async fn each_call_starts_once_before_its_arguments_whatever_its_model_sends() {
    let trace = Trace::new();
    let seen = trace.clone();
    let hook = Hook::<event::OnChunk>::sync("sync", move |ctx| {
        seen.push(describe_chunk(&ctx.chunk));
    });
    let mut expected = lines(&EVERY_WAY);
    expected.push("text:done".to_owned());
    let (hooked, streamed) = every_way(hook, &trace).await;
    assert_eq!(hooked, expected);
    assert_eq!(streamed, expected);
}

/// A start the engine makes for a call that came whole goes through an async hook (the
/// start's hook awaited, then the call's) in the same order.
#[tokio::test]
async fn a_start_made_for_a_whole_call_keeps_its_place_through_an_async_hook() {
    let trace = Trace::new();
    let hook = Hook::<event::OnChunk>::new_async_with(
        "async",
        trace.clone(),
        async |trace: &Trace, ctx: &ChunkContext| {
            tokio::task::yield_now().await;
            trace.push(describe_chunk(&ctx.chunk));
        },
    );
    let mut expected = lines(&EVERY_WAY);
    expected.push("text:done".to_owned());
    let (hooked, streamed) = every_way(hook, &trace).await;
    assert_eq!(hooked, expected);
    assert_eq!(streamed, expected);
}

/// More whole calls than the stream's channel holds: each start made for one, and its call,
/// in order, whether the channel has room or not.
#[tokio::test]
async fn starts_made_for_whole_calls_keep_their_place_through_a_full_stream_channel() {
    let step = (0..50).fold(ScriptedStep::new(), |step, i| {
        step.event(ModelEvent::ToolCall(ToolCall::new(
            format!("c{i}"),
            "nothing",
            "{}",
        )))
    });
    let agent = AgentBuilder::new("starts")
        .model(ScriptedModel::new([step, ScriptedStep::new().text("done")]))
        .build()
        .unwrap();
    let mut stream = agent.conversation().stream("go");
    let mut shown = Vec::new();
    while let Some(event) = stream.next().await {
        if let TurnEvent::Chunk { chunk, .. } = event {
            shown.push(describe_chunk(&chunk));
        }
    }
    let mut expected: Vec<String> = (0..50)
        .flat_map(|i| {
            [
                format!("tool_start:c{i} nothing"),
                format!("tool_call:c{i} nothing"),
            ]
        })
        .collect();
    expected.extend((0..50).map(|i| format!("tool_result:c{i} nothing error")));
    expected.push("text:done".to_owned());
    assert_eq!(shown, expected);
}

/// Calls of one reply that share an id (providers reuse ids such as `call_0`), started by the
/// model or coming whole: each call has its own start, in order.
#[tokio::test]
async fn calls_sharing_an_id_each_start_once() {
    let whole = |name: &str| ModelEvent::ToolCall(ToolCall::new("x", name, "{}"));
    let started = ScriptedStep::new()
        .event(ModelEvent::ToolCallStart {
            id: "x".into(),
            name: "list".into(),
        })
        .event(whole("list"));
    let step = ScriptedStep::new()
        .event(whole("search"))
        .event(whole("fetch"));
    let agent = AgentBuilder::new("starts")
        .model(ScriptedModel::new([
            step,
            started.event(whole("search")),
            ScriptedStep::new().text("done"),
        ]))
        .build()
        .unwrap();
    let mut stream = agent.conversation().stream("go");
    let mut shown = Vec::new();
    while let Some(event) = stream.next().await {
        if let TurnEvent::Chunk { chunk, .. } = event {
            shown.push(describe_chunk(&chunk));
        }
    }
    assert_eq!(
        shown,
        lines(&[
            "tool_start:x search",
            "tool_call:x search",
            "tool_start:x fetch",
            "tool_call:x fetch",
            "tool_result:x search error",
            "tool_result:x fetch error",
            "tool_start:x list",
            "tool_call:x list",
            "tool_start:x search",
            "tool_call:x search",
            "tool_result:x list error",
            "tool_result:x search error",
            "text:done",
        ])
    );
}

/// A post_process_message hook that keeps only the call `c2` and rewrites the reply's text
/// when it has calls (what a redacting or call-filtering hook does); `rewrite` false leaves
/// every reply as it is.
fn keeping_c2(rewrite: bool) -> Hook<event::PostProcessMessage> {
    Hook::<event::PostProcessMessage>::sync("keep c2", move |ctx| {
        let Message::Assistant {
            reasoning,
            tool_calls,
            reasoning_signature,
            provider_blocks,
            ..
        } = &ctx.message
        else {
            return None;
        };
        (rewrite && !tool_calls.is_empty()).then(|| Message::Assistant {
            content: "Adding [redacted].".into(),
            reasoning: reasoning.clone(),
            tool_calls: tool_calls
                .iter()
                .filter(|c| c.id == "c2")
                .cloned()
                .collect(),
            reasoning_signature: reasoning_signature.clone(),
            provider_blocks: provider_blocks.clone(),
        })
    })
}

/// Streams a step of two calls through `keeping_c2(rewrite)`, with on_chunk recording and
/// output guardrails when `guarded`; what on_chunk and the stream API saw, and the turn.
async fn post_processed(rewrite: bool, guarded: bool) -> (Vec<String>, Vec<String>, TurnResult) {
    let trace = Trace::new();
    let seen = trace.clone();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Adding 2 and 3.")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c2", "add", r#"{"a":1,"b":1}"#),
        ScriptedStep::new().text("2"),
    ]);
    let mut builder = AgentBuilder::new("post")
        .model(model)
        .tool(Add::traced(&Trace::new()))
        .hook(keeping_c2(rewrite))
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            seen.push(describe_chunk(&ctx.chunk));
        }));
    if guarded {
        builder = builder.output_guardrail(Guardrail::new("pass", |_| GuardrailVerdict::Pass));
    }
    let agent = builder.build().unwrap();
    let (shown, result) = shown_chunks(agent.conversation().stream("sums")).await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    (trace.take(), shown, result)
}

/// The model's chunks of `post_processed`'s first step.
const STREAMED: [&str; 7] = [
    "text:Adding 2 and 3.",
    "tool_start:c1 add",
    "tool_input:c1",
    "tool_call:c1 add",
    "tool_start:c2 add",
    "tool_input:c2",
    "tool_call:c2 add",
];

/// The chunks after the first step's reply was settled.
const ANSWERED: [&str; 2] = ["tool_result:c2 add ok", "text:2"];

#[tokio::test]
async fn a_reply_post_process_message_replaced_is_shown_again_after_a_discard() {
    let (hooked, shown, result) = post_processed(true, false).await;
    let mut expected = lines(&STREAMED);
    expected.extend(lines(&[
        "discarded:a post_process_message hook replaced the reply",
        "text:Adding [redacted].",
        "tool_start:c2 add",
        "tool_call:c2 add",
    ]));
    expected.extend(lines(&ANSWERED));
    assert_eq!(shown, expected);
    assert_eq!(hooked, expected);
    assert_eq!(result.steps[0].text, "Adding [redacted].");
    let ran: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| &*r.call_id)
        .collect();
    assert_eq!(ran, ["c2"]);
}

#[tokio::test]
async fn a_held_reply_post_process_message_replaced_is_shown_only_as_replaced() {
    let (hooked, shown, _) = post_processed(true, true).await;
    let mut expected = lines(&[
        "text:Adding [redacted].",
        "tool_start:c2 add",
        "tool_call:c2 add",
    ]);
    expected.extend(lines(&ANSWERED));
    assert_eq!(shown, expected);
    assert_eq!(hooked, expected);
}

#[tokio::test]
async fn a_reply_post_process_message_kept_is_shown_once() {
    for guarded in [false, true] {
        let (hooked, shown, _) = post_processed(false, guarded).await;
        let mut expected = lines(&STREAMED);
        expected.extend(lines(&["tool_result:c1 add ok"]));
        expected.extend(lines(&ANSWERED));
        assert_eq!(shown, expected, "guarded: {guarded}");
        assert_eq!(hooked, expected, "guarded: {guarded}");
    }
}
