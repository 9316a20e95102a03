//! Streamed chunks reach on_chunk and the stream API in order, whether a chunk's work is done
//! on the spot (sync hooks, room in the stream's channel) or awaited (an async hook, a full
//! channel): more chunks than the channel holds (64).

use agent_core::{
    AgentBuilder, ChunkContext, Hook, ScriptedModel, ScriptedStep, TurnEvent, TurnStatus, event,
};
use tests::{Trace, describe_chunk};

/// Streams `count` text chunks (`0`, `1`, ...) through `hooks` and the stream API; returns
/// what the stream showed of them.
async fn stream_chunks(count: usize, hooks: Vec<Hook<event::OnChunk>>) -> Vec<String> {
    let step = (0..count).fold(ScriptedStep::new(), |step, i| step.text(i.to_string()));
    let mut builder = AgentBuilder::new("chunks").model(ScriptedModel::new([step]));
    for hook in hooks {
        builder = builder.hook(hook);
    }
    let agent = builder.build().unwrap();
    let mut stream = agent.conversation().stream("count");
    let mut shown = Vec::new();
    let mut finished = None;
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::Chunk { chunk, .. } => shown.push(describe_chunk(&chunk)),
            TurnEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    let result = finished.expect("the stream ends with Finished");
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
