//! A provider retrying a broken stream sends `ModelEvent::Discard`: the engine drops what the
//! step streamed so far (text, reasoning, tool calls, usage), observers and the stream API see
//! `Chunk::Discarded`, and only the retried attempt's tool calls run, once.

use agent_core::{
    AgentBuilder, Chunk, Hook, ModelEvent, ScriptedModel, ScriptedStep, TurnEvent, TurnStatus,
    event,
};
use tests::{Add, Trace, describe_chunk};

#[tokio::test]
async fn a_discarded_attempt_leaves_no_trace_in_the_step() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Adding")
            .tool_call("c1", "add", r#"{"a":1,"b":1}"#)
            .usage(10, 1)
            .event(ModelEvent::Discard {
                reason: "stream truncated".to_owned(),
            })
            .text("Adding again")
            .tool_call("c2", "add", r#"{"a":2,"b":3}"#)
            .usage(10, 4),
        ScriptedStep::new().text("5"),
    ]);
    let trace = Trace::new();
    let chunks = trace.clone();
    let agent = AgentBuilder::new("retrying")
        .model(model)
        .tool(Add::traced(&trace))
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            if ctx.step == 0 {
                chunks.push(describe_chunk(&ctx.chunk));
            }
        }))
        .build()
        .unwrap();
    let mut stream = agent.conversation().stream("add");
    let mut discarded = 0;
    let mut result = None;
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::Chunk {
                chunk: Chunk::Discarded { .. },
                ..
            } => discarded += 1,
            TurnEvent::Finished(finished) => result = Some(finished),
            _ => {}
        }
    }
    let result = result.expect("the stream ends with Finished");
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(discarded, 1);
    assert_eq!(
        trace.take(),
        [
            "text:Adding",
            "tool_start:c1 add",
            "tool_input:c1",
            "tool_call:c1 add",
            "discarded:stream truncated",
            "text:Adding again",
            "tool_start:c2 add",
            "tool_input:c2",
            "tool_call:c2 add",
            "add(2,3)",
            "tool_result:c2 add ok",
        ]
    );
    let step = &result.steps[0];
    assert_eq!(step.text, "Adding again");
    assert_eq!(step.tool_calls.len(), 1);
    assert_eq!(step.usage.output_tokens, 4);
}

#[tokio::test]
async fn a_reasoning_signature_is_kept_on_the_assistant_message_and_dropped_with_a_discard() {
    let model = ScriptedModel::new([ScriptedStep::new()
        .reasoning("first try")
        .event(ModelEvent::ReasoningSignature("sig-broken".to_owned()))
        .event(ModelEvent::Discard {
            reason: "disconnected".to_owned(),
        })
        .reasoning("Think.")
        .event(ModelEvent::ReasoningSignature("sig-1".to_owned()))
        .text("Answer.")]);
    let agent = AgentBuilder::new("thinker").model(model).build().unwrap();
    let result = agent.run("q").await;
    assert_eq!(
        result.messages,
        [agent_core::Message::Assistant {
            content: "Answer.".into(),
            reasoning: "Think.".into(),
            tool_calls: Default::default(),
            reasoning_signature: Some("sig-1".to_owned()),
            provider_blocks: Vec::new(),
        }]
    );
}

#[tokio::test]
async fn provider_metadata_reaches_the_step_record_and_goes_with_a_discard() {
    let kept = serde_json::json!({"type": "server_tool_use", "id": "srvtoolu_2"});
    let model = ScriptedModel::new([ScriptedStep::new()
        .event(ModelEvent::ProviderMetadata(
            serde_json::json!({"type": "server_tool_use", "id": "srvtoolu_1"}),
        ))
        .event(ModelEvent::Discard {
            reason: "stream truncated".to_owned(),
        })
        .event(ModelEvent::ProviderMetadata(kept.clone()))
        .text("Searched.")]);
    let records = tests::Seen::new();
    let agent = AgentBuilder::new("meta")
        .model(model)
        .hook(records.hook::<event::OnStepFinish>("record"))
        .build()
        .unwrap();
    let result = agent.run("search").await;
    assert_eq!(result.status, TurnStatus::Completed);
    let records: Vec<agent_core::StepRecord> = records.take();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].provider_metadata, [kept]);
    assert_eq!(
        result.steps[0].provider_metadata,
        records[0].provider_metadata
    );
}
