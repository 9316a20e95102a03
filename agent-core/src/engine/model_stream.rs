//! Reading one model stream: on_chunk per chunk, accumulation (linear: text is appended, never
//! re-copied), cancellation, and the rule that a stream without its end marker is an error.

use std::future::Future;
use std::pin::Pin;
use std::sync::PoisonError;
use std::task::Poll;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::events::TurnEvent;
use super::output::PartialAnswer;
use crate::hooks::{Chunk, ChunkContext, TurnError, TurnErrorKind};
use crate::message::ToolCall;
use crate::model::{
    DeltaText, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelStream, Usage,
};
use crate::util::catch_panic;

use super::state::Turn;
use crate::hooks::extension::{self as extensions, ExtensionEvent};
use crate::hooks::{observe, observe_now};

/// What one model call streamed.
pub(super) struct Streamed {
    pub(super) text: String,
    pub(super) reasoning: String,
    pub(super) reasoning_signature: Option<String>,
    pub(super) tool_calls: Vec<ToolCall>,
    pub(super) usage: Usage,
    pub(super) provider_metadata: Vec<serde_json::Value>,
    pub(super) provider_blocks: Vec<serde_json::Value>,
    /// The finish reason, or why the stream broke (`None`: the turn was cancelled).
    pub(super) finish: Result<FinishReason, Option<TurnError>>,
}

/// The chunks of one step (its model stream, its tools' preliminary results, its tool
/// results) on their way to on_chunk and the stream API.
pub(super) struct StepStream<'t, 'a> {
    turn: &'t Turn<'a>,
    step: usize,
    /// The on_chunk context, made at the first chunk shown: each chunk is put in it in turn, so
    /// a chunk costs no reference count for the agent or the request id, and a stream that
    /// shows none (a tool step nobody listens to) costs none either.
    ctx: Option<ChunkContext>,
    /// The typed answer read as it streams, for the stream API.
    partial: Option<PartialAnswer>,
    /// Whether this step's chunks are held back (an agent with output guardrails), read from
    /// the turn at the first chunk: holding starts before a step streams (`call_model`) and
    /// ends when the held chunks are released, through a `StepStream` of its own, so it never
    /// changes while one reads. Reading it once saves a lock per chunk (about 10 ns,
    /// `agent-providers/benches/chunks.rs`).
    holding: Option<bool>,
}

impl<'t, 'a> StepStream<'t, 'a> {
    pub(super) fn new(turn: &'t Turn<'a>, step: usize) -> Self {
        StepStream {
            turn,
            step,
            ctx: None,
            partial: None,
            holding: None,
        }
    }

    /// Reads the typed answer as it streams and gives it to the stream API.
    pub(super) fn partials(mut self, partial: Option<PartialAnswer>) -> Self {
        self.partial = partial;
        self
    }

    /// Whether anyone sees chunks (an on_chunk hook or the stream API): when nobody does, the
    /// copies made only to build a chunk are skipped.
    pub(super) fn listening(&self) -> bool {
        !self.turn.current.hooks.on_chunk.is_empty()
            || self.turn.sink.is_some()
            || self
                .turn
                .extensions
                .iter()
                .any(|e| e.wants(ExtensionEvent::OnChunk))
    }

    /// Fires on_chunk for one chunk and forwards it to the stream API.
    pub(super) async fn chunk(&mut self, chunk: Chunk) -> Result<(), TurnError> {
        if let Some(rest) = self.chunk_now(chunk)? {
            rest.await?;
        }
        Ok(())
    }

    /// [`Self::chunk`] on the spot when nothing in it awaits (sync on_chunk hooks, no extension
    /// asking for chunks, room in the stream API's channel), so a chunk costs no future and no
    /// allocation; otherwise what is left, boxed. A reader waiting for its next chunk so keeps
    /// no room for one chunk's hooks and event (1.25 KB of the reader's future).
    fn chunk_now(&mut self, chunk: Chunk) -> Result<Option<ChunkRest<'_>>, TurnError> {
        if !self.listening() {
            return Ok(None);
        }
        let (turn, step) = (self.turn, self.step);
        // Held back until the step's reply passed the output guardrails (`Turn::release`).
        let held = || turn.held.lock().unwrap_or_else(PoisonError::into_inner);
        if *self.holding.get_or_insert_with(|| held().is_some())
            && let Some(held) = held().as_mut()
        {
            held.push(chunk);
            return Ok(None);
        }
        let hooks = &turn.current.hooks.on_chunk;
        let ctx = self.ctx.get_or_insert_with(|| ChunkContext {
            agent: turn.me.clone(),
            request_id: turn.request_id.clone(),
            step,
            chunk: EMPTY,
        });
        ctx.chunk = chunk;
        let extension = turn
            .extensions
            .iter()
            .any(|e| e.wants(ExtensionEvent::OnChunk));
        // `None`: an on_chunk hook is async (none has run).
        let ran = if extension {
            None
        } else {
            observe_now(hooks, ctx)
        };
        let Some(ran) = ran else {
            return Ok(Some(Box::pin(self.chunk_rest(None))));
        };
        ran?;
        // Only build the event when someone streams: `TurnEvent` is large, and moving it into
        // `emit` costs more per chunk than the hooks do.
        let Some(sink) = &turn.sink else {
            return Ok(None);
        };
        let event = TurnEvent::Chunk {
            step,
            chunk: std::mem::replace(&mut ctx.chunk, EMPTY),
        };
        Ok(emit_now(sink, event).map(|event| Box::pin(self.chunk_rest(Some(event))) as _))
    }

    /// What is left of a chunk that awaits: its hooks, its extensions and its event, all
    /// (`None`), or only the event, when the stream API's channel was full.
    async fn chunk_rest(&mut self, event: Option<TurnEvent>) -> Result<(), TurnError> {
        let (turn, step) = (self.turn, self.step);
        if let Some(event) = event {
            turn.emit(event).await;
            return Ok(());
        }
        let Some(ctx) = self.ctx.as_mut() else {
            return Ok(());
        };
        observe(&turn.current.hooks.on_chunk, ctx).await?;
        extensions::dispatch_chunk(&turn.extensions, &ctx.chunk).await;
        if turn.sink.is_some() {
            turn.emit(TurnEvent::Chunk {
                step,
                chunk: std::mem::replace(&mut ctx.chunk, EMPTY),
            })
            .await;
        }
        Ok(())
    }

    /// Reads the model's stream (or the error its creation ended in) to its end. A panic
    /// while the stream is polled ends the step as that model's error.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn would keep the reader and the stream twice while it reads"
    )]
    pub(super) fn read(
        mut self,
        stream: Result<ModelStream, TurnError>,
    ) -> impl Future<Output = Streamed> + Send {
        // An `async move` block, not an `async fn`: the reader and the stream are used in
        // place rather than kept beside a copy of them (448 bytes).
        async move {
            let mut out = Streamed {
                text: String::new(),
                reasoning: String::new(),
                reasoning_signature: None,
                tool_calls: Vec::new(),
                usage: Usage::default(),
                provider_metadata: Vec::new(),
                provider_blocks: Vec::new(),
                finish: Err(None),
            };
            let mut stream = match stream {
                Ok(stream) => stream,
                Err(error) => {
                    out.finish = Err(Some(error));
                    return out;
                }
            };
            let cancel = &self.turn.cancel;
            let cancelled = cancel.cancelled();
            tokio::pin!(cancelled);
            let listening = self.listening();
            out.finish = loop {
                // Cancellation wins over a ready event. The flag is an atomic load per event; the
                // token's waiter (a lock and a waker clone per poll) is only polled when the stream
                // is pending, so a burst of ready chunks does not pay for it on each one.
                let polled = std::future::poll_fn(|cx| {
                    if cancel.is_cancelled() {
                        return Poll::Ready(None);
                    }
                    match catch_panic(|| stream.as_mut().poll_next(cx)) {
                        Ok(Poll::Ready(event)) => return Poll::Ready(Some(event)),
                        Ok(Poll::Pending) => {}
                        Err(message) => {
                            let panicked = ModelError::new(
                                ModelErrorKind::Other,
                                format!("the model's stream panicked: {message}"),
                            );
                            return Poll::Ready(Some(Some(Err(panicked))));
                        }
                    }
                    cancelled.as_mut().poll(cx).map(|()| None)
                })
                .await;
                // `None`: the turn was cancelled.
                let Some(polled) = polled else {
                    break Err(None);
                };
                let event = match event_of(polled) {
                    Ok(event) => event,
                    Err(error) => break Err(Some(error)),
                };
                match out.absorb(event, listening) {
                    Absorbed::Chunk(chunk) => {
                        let partial = self.partial.as_mut().and_then(|p| p.read(&chunk));
                        match self.chunk_now(chunk) {
                            Ok(None) => {}
                            Ok(Some(rest)) => {
                                if let Err(error) = rest.await {
                                    break Err(Some(error));
                                }
                            }
                            Err(error) => break Err(Some(error)),
                        }
                        if let (Some(value), Some(sink)) = (partial, &self.turn.sink) {
                            let event = TurnEvent::PartialOutput {
                                step: self.step,
                                value,
                            };
                            // Boxed as it is made: the event is not kept beside the box.
                            let full =
                                emit_now(sink, event).map(|event| Box::pin(self.turn.emit(event)));
                            if let Some(send) = full {
                                send.await;
                            }
                        }
                    }
                    Absorbed::Quiet => {}
                    Absorbed::CallStart { id, name } => {
                        if let Some(partial) = self.partial.as_mut() {
                            partial.start(&id, &name);
                        }
                    }
                    Absorbed::End(end) => break end,
                }
            };
            out
        }
    }
}

/// What is left of a chunk that awaits, boxed (see [`StepStream::chunk_now`]).
type ChunkRest<'s> = Pin<Box<dyn Future<Output = Result<(), TurnError>> + Send + 's>>;

/// Sends `event` to the stream API if its channel has room now; gives it back when the
/// channel is full (the caller then awaits room). A closed channel drops it: a dropped stream
/// only stops the events, as in [`Turn::emit`].
fn emit_now(sink: &mpsc::Sender<TurnEvent>, event: TurnEvent) -> Option<TurnEvent> {
    match sink.try_send(event) {
        Err(TrySendError::Full(event)) => Some(event),
        Ok(()) | Err(TrySendError::Closed(_)) => None,
    }
}

/// What the reused chunk context holds between chunks (an empty string does not allocate).
const EMPTY: Chunk = Chunk::TextDelta(DeltaText::new());

/// What one model event did to the step.
enum Absorbed {
    /// It is shown as this chunk (on_chunk and the stream API).
    Chunk(Chunk),
    /// It was only recorded.
    Quiet,
    /// A tool call began (only the typed answer's reader reads it).
    CallStart { id: String, name: String },
    /// It ended the stream: finished, or an in-band error.
    End(Result<FinishReason, Option<TurnError>>),
}

/// A polled stream item as an event: an error item, or the stream's end without its finish
/// event (a truncated stream), is the model's error.
fn event_of(polled: Option<Result<ModelEvent, ModelError>>) -> Result<ModelEvent, TurnError> {
    match polled {
        Some(Ok(event)) => Ok(event),
        Some(Err(error)) => Err(TurnError::new(
            TurnErrorKind::Model(error.kind),
            error.message,
        )),
        None => Err(TurnError::new(
            TurnErrorKind::Model(ModelErrorKind::StreamTruncated),
            "the model's stream ended without its end marker (truncated stream)",
        )),
    }
}

impl Streamed {
    /// Why the stream broke, when it did (not when the turn was cancelled).
    pub(super) fn error(&self) -> Option<TurnError> {
        match &self.finish {
            Err(Some(error)) => Some(error.clone()),
            _ => None,
        }
    }

    /// Records one event (accumulating linearly: text is appended, never re-copied). Tool
    /// calls are cloned into a chunk only when someone is `listening`.
    fn absorb(&mut self, event: ModelEvent, listening: bool) -> Absorbed {
        let chunk = match event {
            ModelEvent::TextDelta(delta) => {
                self.text.push_str(&delta);
                Chunk::TextDelta(delta)
            }
            ModelEvent::ReasoningDelta(delta) => {
                self.reasoning.push_str(&delta);
                Chunk::ReasoningDelta(delta)
            }
            ModelEvent::ToolCallStart { id, name } => return Absorbed::CallStart { id, name },
            ModelEvent::ToolInputDelta { id, delta } => Chunk::ToolInputDelta { id, delta },
            ModelEvent::ToolCall(call) if listening => {
                self.tool_calls.push(call.clone());
                Chunk::ToolCall(call)
            }
            ModelEvent::ToolCall(call) => {
                self.tool_calls.push(call);
                return Absorbed::Quiet;
            }
            ModelEvent::ReasoningSignature(signature) => {
                self.reasoning_signature = Some(signature);
                return Absorbed::Quiet;
            }
            ModelEvent::Usage(usage) => {
                self.usage = usage;
                return Absorbed::Quiet;
            }
            ModelEvent::Finish(reason) => return Absorbed::End(Ok(reason)),
            ModelEvent::ProviderMetadata(value) => {
                self.provider_metadata.push(value);
                return Absorbed::Quiet;
            }
            ModelEvent::ProviderBlock(block) => {
                self.provider_metadata.push(block.clone());
                self.provider_blocks.push(block);
                return Absorbed::Quiet;
            }
            ModelEvent::Discard { reason } => {
                // The provider retries a broken stream from the start of the step.
                self.text.clear();
                self.reasoning.clear();
                self.reasoning_signature = None;
                self.tool_calls.clear();
                self.usage = Usage::default();
                self.provider_metadata.clear();
                self.provider_blocks.clear();
                Chunk::Discarded { reason }
            }
            ModelEvent::Error(message) => {
                return Absorbed::End(Err(Some(TurnError::new(
                    TurnErrorKind::ModelInBand,
                    format!("the model reported an error: {message}"),
                ))));
            }
        };
        Absorbed::Chunk(chunk)
    }
}
