//! Reading one model stream: on_chunk per chunk, accumulation (linear: text is appended, never
//! re-copied), cancellation, and the rule that a stream without its end marker is an error.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll};

use serde_json::Value;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::events::TurnEvent;
use super::output_spec::PartialAnswer;
use crate::hooks::{Chunk, ChunkContext, TurnError, TurnErrorKind};
use crate::message::{self, ToolCall};
use crate::model::{
    DeltaText, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelStream, Usage,
};
use crate::text::Text;
use crate::util::{BoxFuture, panic_message};

use super::state::Turn;
use crate::hooks::extension::{self as extensions, ExtensionEvent};
use crate::hooks::{observe, observe_now};

/// What one model call streamed.
pub(super) struct Streamed {
    /// The answer's text as its deltas' bytes, appended without reading each delta as a `str`
    /// (which checks a short delta's bytes again: about 110 instructions a chunk,
    /// `agent-providers/benches/chunks.rs`); checked once, whole, by [`Self::take_text`].
    text: Vec<u8>,
    /// The reasoning's text, as `text`.
    reasoning: Vec<u8>,
    pub(super) reasoning_signature: Option<String>,
    pub(super) tool_calls: Vec<ToolCall>,
    /// The calls whose [`Chunk::ToolInputStart`] was shown in this attempt, in the order shown,
    /// each with whether its call came whole since (kept only while someone listens; the list
    /// is made at a step's first call): a start the model sends again for the call it is
    /// streaming is shown once, and a call the model never started gets one made before it.
    started: Vec<(Text, bool)>,
    /// Whether the model sent any of those starts (else each was made for a call already
    /// whole, so none is of the call coming next).
    model_started: bool,
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
    // This, `context`, `chunk_now` and `Streamed::absorb` are inlined into the reader's burst
    // (`ready`): called from another codegen unit for each chunk, they cost about 25
    // instructions more per chunk, with the chunk copied once more
    // (`agent-providers/benches/chunks.rs`).
    #[inline]
    pub(super) fn listening(&self) -> bool {
        !self.turn.current.hooks.on_chunk.is_empty()
            || self.turn.sink.is_some()
            || extensions::subscribed(&self.turn.extensions, ExtensionEvent::OnChunk)
    }

    /// Fires on_chunk for one chunk and forwards it to the stream API.
    pub(super) async fn chunk(&mut self, chunk: Chunk) -> Result<(), TurnError> {
        match self.show(chunk)? {
            None => Ok(()),
            Some(rest) => self.rest(rest).await,
        }
    }

    /// [`Self::chunk`] on the spot: `None` when the chunk is shown (or nobody listens), else
    /// what is left of it to await with [`Self::rest`]. A caller that shows a chunk so (a
    /// step's tool results) makes no future for it, nor polls one (the slope of
    /// `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
    pub(super) fn show(&mut self, chunk: Chunk) -> Result<Option<ChunkRest>, TurnError> {
        if !self.listening() {
            return Ok(None);
        }
        self.context().chunk = chunk;
        self.chunk_now()
    }

    /// What is left of a chunk [`Self::show`] could not show on the spot, boxed: its code and
    /// state stay out of the caller's.
    pub(super) fn rest(&mut self, rest: ChunkRest) -> BoxFuture<'_, Result<(), TurnError>> {
        Box::pin(self.chunk_rest(rest))
    }

    /// The on_chunk context, made at the first chunk shown: each chunk is put in it in turn.
    #[inline]
    fn context(&mut self) -> &mut ChunkContext {
        let (turn, step) = (self.turn, self.step);
        self.ctx.get_or_insert_with(|| ChunkContext {
            agent: turn.me.clone(),
            request_id: turn.request_id.clone(),
            step,
            chunk: EMPTY,
        })
    }

    /// Shows the chunk just put in the context ([`Self::context`]; someone is listening):
    /// [`Self::chunk`] on the spot when nothing in it awaits (sync on_chunk hooks, no
    /// extension asking for chunks, room in the stream API's channel), so a chunk costs no
    /// future and no allocation; otherwise what is left, for [`Self::chunk_rest`] (boxed by
    /// the caller). A reader waiting for its next chunk so keeps no room for one chunk's hooks
    /// and event (1.25 KB of the reader's future).
    // Always inlined, as `observe_now` and `run_now` under it: with two callers in one codegen
    // unit (`show` and the burst) LLVM called them instead, about 45 instructions more per
    // chunk (+2,300 a turn of 50 chunks, `whole_turn_agent` in agent-providers/benches/stream.rs).
    #[inline(always)]
    fn chunk_now(&mut self) -> Result<Option<ChunkRest>, TurnError> {
        let (turn, step) = (self.turn, self.step);
        let Some(ctx) = self.ctx.as_mut() else {
            return Ok(None);
        };
        // Held back until the step's reply passed the output guardrails (`Turn::release`).
        let held = || turn.held.lock().unwrap_or_else(PoisonError::into_inner);
        if *self.holding.get_or_insert_with(|| held().is_some())
            && let Some(held) = held().as_mut()
        {
            held.push(std::mem::replace(&mut ctx.chunk, EMPTY));
            return Ok(None);
        }
        let extension = extensions::subscribed(&turn.extensions, ExtensionEvent::OnChunk);
        // `None`: an on_chunk hook is async (none has run).
        let ran = if extension {
            None
        } else {
            observe_now(&turn.current.hooks.on_chunk, ctx)
        };
        let Some(ran) = ran else {
            return Ok(Some(ChunkRest::Hooks));
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
        // A full channel gives the chunk back to the context, where `chunk_rest` takes it
        // again: what is left stays small (an event is 352 bytes).
        match emit_now(sink, event) {
            Some(TurnEvent::Chunk { chunk, .. }) => {
                ctx.chunk = chunk;
                Ok(Some(ChunkRest::Event))
            }
            _ => Ok(None),
        }
    }

    /// What is left of a chunk that awaits (see [`ChunkRest`]).
    async fn chunk_rest(&mut self, rest: ChunkRest) -> Result<(), TurnError> {
        let (turn, step) = (self.turn, self.step);
        let Some(ctx) = self.ctx.as_mut() else {
            return Ok(());
        };
        if let ChunkRest::Hooks = rest {
            observe(&turn.current.hooks.on_chunk, ctx).await?;
            extensions::dispatch_chunk(&turn.extensions, &ctx.chunk).await;
        }
        if turn.sink.is_some() {
            turn.emit(TurnEvent::Chunk {
                step,
                chunk: std::mem::replace(&mut ctx.chunk, EMPTY),
            })
            .await;
        }
        Ok(())
    }

    /// Handles every event the model's stream has ready, on the spot, until one ends the
    /// stream or leaves something to await (a chunk's async hooks, a full stream API
    /// channel), or the stream is pending. One poll of the reader so reads a burst of ready
    /// chunks without going through its future (and a `poll_fn`) for each one.
    ///
    /// A panic while the model's stream is polled ends the step as that model's error. The
    /// guard is set once per burst, not once per poll (which moved each polled event through
    /// the guard's return value, about 27 instructions per chunk,
    /// `agent-providers/benches/chunks.rs`); a panic elsewhere in the burst (the engine's own
    /// code: hooks catch their own) goes on unwinding, as it did outside the guard.
    fn ready(
        &mut self,
        cx: &mut Context<'_>,
        stream: &mut ModelStream,
        out: &mut Streamed,
        listening: bool,
        cancelled: Pin<&mut impl Future<Output = ()>>,
    ) -> Poll<Wait<'t>> {
        // Whether the panic, if one unwinds, came from the model's stream.
        let mut polling = false;
        let burst = catch_unwind(AssertUnwindSafe(|| {
            self.burst(cx, stream, out, listening, cancelled, &mut polling)
        }));
        match burst {
            Ok(wait) => wait,
            Err(payload) if polling => {
                let panicked = TurnError::new(
                    TurnErrorKind::Model(ModelErrorKind::Other),
                    format!("the model's stream panicked: {}", panic_message(&*payload)),
                );
                Poll::Ready(Wait::End(Err(Some(panicked))))
            }
            Err(payload) => resume_unwind(payload),
        }
    }

    /// [`Self::ready`] within its panic guard: `polling` is set while the model's stream is
    /// polled.
    fn burst(
        &mut self,
        cx: &mut Context<'_>,
        stream: &mut ModelStream,
        out: &mut Streamed,
        listening: bool,
        mut cancelled: Pin<&mut impl Future<Output = ()>>,
        polling: &mut bool,
    ) -> Poll<Wait<'t>> {
        loop {
            // Cancellation wins over a ready event. The flag is an atomic load per event; the
            // token's waiter (a lock and a waker clone per poll) is only polled when the
            // stream is pending, so a burst of ready chunks does not pay for it on each one.
            if self.turn.cancel.is_cancelled() {
                return Poll::Ready(Wait::End(Err(None)));
            }
            *polling = true;
            let polled = stream.as_mut().poll_next(cx);
            *polling = false;
            // The chunk is made in the context, where the hooks read it, from the event where
            // the stream left it: not moved there through the calls between (two 104-byte
            // copies and a call, about 50 instructions per chunk,
            // `agent-providers/benches/chunks.rs`).
            let absorbed = match polled {
                Poll::Ready(Some(Ok(event))) => {
                    out.absorb(event, listening.then(|| &mut self.context().chunk))
                }
                Poll::Ready(broken) => {
                    let error = stream_error(broken.and_then(Result::err));
                    return Poll::Ready(Wait::End(Err(Some(error))));
                }
                Poll::Pending => {
                    return cancelled.as_mut().poll(cx).map(|()| Wait::End(Err(None)));
                }
            };
            match absorbed {
                Absorbed::Chunk => {
                    let partial = match (&mut self.partial, &self.ctx) {
                        (Some(partial), Some(ctx)) => partial.read(&ctx.chunk),
                        _ => None,
                    };
                    match self.chunk_now() {
                        Ok(None) => {}
                        Ok(Some(rest)) => return Poll::Ready(Wait::Chunk(rest, partial)),
                        Err(error) => return Poll::Ready(Wait::End(Err(Some(error)))),
                    }
                    if partial.is_some()
                        && let Some(send) = self.partial_now(partial)
                    {
                        return Poll::Ready(Wait::Send(send));
                    }
                }
                Absorbed::Quiet => {}
                // A call the model did not start: the start made for it, then the call.
                Absorbed::MadeStart => {
                    let shown = match self.chunk_now() {
                        Ok(None) => self.made_call(out),
                        Ok(Some(rest)) => return Poll::Ready(Wait::MadeStart(rest)),
                        Err(error) => Err(error),
                    };
                    match shown {
                        Ok(None) => {}
                        Ok(Some(rest)) => return Poll::Ready(Wait::Chunk(rest, None)),
                        Err(error) => return Poll::Ready(Wait::End(Err(Some(error)))),
                    }
                }
                Absorbed::End(end) => return Poll::Ready(Wait::End(end)),
            }
        }
    }

    /// Shows the call streamed last, after the start made for it ([`Absorbed::MadeStart`]),
    /// as [`Self::chunk_now`] does (its texts shared, not copied).
    fn made_call(&mut self, out: &Streamed) -> Result<Option<ChunkRest>, TurnError> {
        let Some(call) = out.tool_calls.last() else {
            return Ok(None);
        };
        self.context().chunk = Chunk::ToolCall(call.clone());
        self.chunk_now()
    }

    /// The typed answer so far once `chunk` is read, when partial answers are read (see
    /// [`Self::partials`]): for chunks the engine makes rather than streams.
    pub(super) fn read_partial(&mut self, chunk: &Chunk) -> Option<Value> {
        self.partial.as_mut()?.read(chunk)
    }

    /// Sends a partial typed value, if any, to the stream API.
    pub(super) async fn send_partial(&self, partial: Option<Value>) -> Result<(), TurnError> {
        match self.partial_now(partial) {
            Some(send) => send.await,
            None => Ok(()),
        }
    }

    /// Sends a partial typed value to the stream API when its channel has room; otherwise
    /// gives back the send to await, boxed as it is made (the event is not kept beside it).
    fn partial_now(&self, partial: Option<Value>) -> Option<Boxed<'t>> {
        let (Some(value), Some(sink)) = (partial, &self.turn.sink) else {
            return None;
        };
        let event = TurnEvent::PartialOutput {
            step: self.step,
            value,
        };
        let turn = self.turn;
        emit_now(sink, event).map(|event| {
            Box::pin(async move {
                turn.emit(event).await;
                Ok(())
            }) as _
        })
    }

    /// Reads the model's stream (or the error its creation ended in) to its end. A panic
    /// while the stream is polled, or as it is dropped once read, ends the step as that
    /// model's error.
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
            let mut out = Streamed::empty();
            let mut stream = match stream {
                Ok(stream) => stream,
                Err(error) => {
                    out.finish = Err(Some(error));
                    return out;
                }
            };
            let cancelled = self.turn.cancel.cancelled();
            tokio::pin!(cancelled);
            let listening = self.listening();
            out.finish = loop {
                // What is left to await, boxed as it is made: the reader waiting for its next
                // chunk keeps only the box, not the room for what it awaits.
                let rest: Boxed<'_> = match std::future::poll_fn(|cx| {
                    self.ready(cx, &mut stream, &mut out, listening, cancelled.as_mut())
                })
                .await
                {
                    Wait::End(end) => break end,
                    Wait::Chunk(rest, partial) => {
                        let this = &mut self;
                        Box::pin(async move {
                            this.chunk_rest(rest).await?;
                            if let Some(send) = this.partial_now(partial) {
                                send.await?;
                            }
                            Ok(())
                        })
                    }
                    Wait::MadeStart(rest) => {
                        let (this, out) = (&mut self, &out);
                        Box::pin(async move {
                            this.chunk_rest(rest).await?;
                            match this.made_call(out)? {
                                Some(rest) => this.chunk_rest(rest).await,
                                None => Ok(()),
                            }
                        })
                    }
                    Wait::Send(send) => send,
                };
                if let Err(error) = rest.await {
                    break Err(Some(error));
                }
            };
            dropped(stream, &mut out);
            // Kept for a reply a post_process_message hook replaces (`Turn::partials`).
            if !self.turn.current.hooks.post_process_message.is_empty() {
                let partial = self.partial.take().map(Box::new);
                *self
                    .turn
                    .partials
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = partial;
            }
            out
        }
    }
}

/// Drops the model's stream, read to its end, with a panic of its `Drop` caught (see
/// [`stream_drop_panicked`]).
#[inline]
fn dropped(stream: ModelStream, out: &mut Streamed) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| drop(stream))) {
        stream_drop_panicked(&*payload, out);
    }
}

/// A model's stream panicked as it was dropped: a stream that ended cleanly ends the step as
/// that model's error, as a panic while it is polled does; one that had already failed, or
/// was cancelled, keeps that end, the panic logged.
#[cold]
#[inline(never)]
fn stream_drop_panicked(payload: &(dyn std::any::Any + Send), out: &mut Streamed) {
    let message = format!(
        "the model's stream panicked as it was dropped: {}",
        panic_message(payload)
    );
    if out.finish.is_ok() {
        let panicked = TurnError::new(TurnErrorKind::Model(ModelErrorKind::Other), message);
        out.finish = Err(Some(panicked));
    } else {
        tracing::warn!("{message} (the step had already ended without its answer)");
    }
}

/// What is left of the chunk in the context when it awaits (see [`StepStream::chunk_now`]).
pub(super) enum ChunkRest {
    /// Its hooks (one is async, or an extension asks for chunks), its extensions and its
    /// event: all of it.
    Hooks,
    /// Only its event, the stream API's channel being full.
    Event,
}

/// What the reader awaits before it reads on (see [`StepStream::ready`]).
enum Wait<'t> {
    /// The stream ended: finished, broken (`Err(Some)`) or cancelled (`Err(None)`).
    End(Result<FinishReason, Option<TurnError>>),
    /// What is left of a chunk, then the partial typed value it made, if any.
    Chunk(ChunkRest, Option<Value>),
    /// What is left of the start made for a call the model did not start; the call (the
    /// last one streamed) is shown after it.
    MadeStart(ChunkRest),
    /// A partial typed value's event, awaiting room in the stream API's channel.
    Send(Boxed<'t>),
}

/// A boxed wait of the reader's (see [`Wait`]).
type Boxed<'s> = Pin<Box<dyn Future<Output = Result<(), TurnError>> + Send + 's>>;

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
    /// It is shown as the chunk it made (on_chunk and the stream API).
    Chunk,
    /// It was only recorded.
    Quiet,
    /// A call the model did not start came whole: the context holds the start made for it,
    /// to show before the call's own chunk (the last call streamed).
    MadeStart,
    /// It ended the stream: finished, or an in-band error.
    End(Result<FinishReason, Option<TurnError>>),
}

/// Puts a chunk in `shown` when someone is listening ([`Streamed::absorb`]). Inlined into
/// each arm, so the chunk is made in place rather than moved there.
#[inline(always)]
fn shown_as(shown: Option<&mut Chunk>, chunk: Chunk) -> Absorbed {
    match shown {
        Some(slot) => {
            *slot = chunk;
            Absorbed::Chunk
        }
        None => Absorbed::Quiet,
    }
}

/// Why a stream broke: an error item, or (`None`) the stream's end without its finish event
/// (a truncated stream), each the model's error.
fn stream_error(error: Option<ModelError>) -> TurnError {
    match error {
        Some(error) => TurnError::new(TurnErrorKind::Model(error.kind), error.message),
        None => TurnError::new(
            TurnErrorKind::Model(ModelErrorKind::StreamTruncated),
            "the model's stream ended without its end marker (truncated stream)",
        ),
    }
}

/// Deltas' bytes appended whole, as text. Each delta is whole UTF-8 text, so their
/// concatenation is too and the check cannot fail; were it to, the text is kept, with
/// replacement characters, rather than lost.
fn whole(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

impl Streamed {
    /// Nothing streamed yet; ended by a cancel unless the stream says otherwise.
    fn empty() -> Self {
        Streamed {
            text: Vec::new(),
            reasoning: Vec::new(),
            reasoning_signature: None,
            tool_calls: Vec::new(),
            started: Vec::new(),
            model_started: false,
            usage: Usage::default(),
            provider_metadata: Vec::new(),
            provider_blocks: Vec::new(),
            finish: Err(None),
        }
    }

    /// The answer's text so far (the stream's is left empty).
    pub(super) fn take_text(&mut self) -> String {
        whole(std::mem::take(&mut self.text))
    }

    /// The answer's tool calls, made one shared list (the stream's is left empty): the
    /// reply's message, its stored row, the history, the turn's messages and the step's record
    /// hold it, not copies (`whole_turn_calls_agent` in `agent-providers/benches/stream.rs`).
    pub(super) fn take_calls(&mut self) -> Arc<[ToolCall]> {
        message::shared_calls(std::mem::take(&mut self.tool_calls))
    }

    /// The reasoning's text so far (the stream's is left empty).
    pub(super) fn take_reasoning(&mut self) -> String {
        whole(std::mem::take(&mut self.reasoning))
    }

    /// Why the stream broke, when it did (not when the turn was cancelled).
    pub(super) fn error(&self) -> Option<TurnError> {
        match &self.finish {
            Err(Some(error)) => Some(error.clone()),
            _ => None,
        }
    }

    /// Whether the call `id`, the next of this attempt's calls to come whole, had its start
    /// shown. One compare when the model starts its calls in the order they come whole, as the
    /// providers do: the start at the call's place in `started`. A scan only when that is not
    /// it and the model started calls of its own (not one compare per start shown before, which
    /// cost a step of 32 calls about 800 instructions a call: `whole_turn_calls_agent` in
    /// `agent-providers/benches/stream.rs`).
    /// Marks the start found as its call's (calls of one reply may share an id).
    fn was_started(&mut self, id: &Text) -> bool {
        let own = |(start, whole): &&mut (Text, bool)| !*whole && start == id;
        let found = match self.started.get_mut(self.tool_calls.len()) {
            Some(at) if own(&at) => Some(at),
            _ if self.model_started => self.started.iter_mut().find(own),
            _ => None,
        };
        found.map(|(_, whole)| *whole = true).is_some()
    }

    /// Records one event (accumulating linearly: text is appended, never re-copied). When
    /// someone is listening, the chunk it makes is put in `shown` (tool calls are only cloned
    /// into one then).
    #[inline]
    fn absorb(&mut self, event: ModelEvent, shown: Option<&mut Chunk>) -> Absorbed {
        match event {
            ModelEvent::TextDelta(delta) => {
                self.text.extend_from_slice(delta.as_bytes());
                match shown {
                    // The chunk before was most likely text too: only its text is replaced,
                    // not the whole chunk dropped and copied over (about 25 instructions per
                    // chunk, `agent-providers/benches/chunks.rs`).
                    Some(Chunk::TextDelta(text)) => {
                        *text = delta;
                        Absorbed::Chunk
                    }
                    shown => shown_as(shown, Chunk::TextDelta(delta)),
                }
            }
            ModelEvent::ReasoningDelta(delta) => {
                self.reasoning.extend_from_slice(delta.as_bytes());
                shown_as(shown, Chunk::ReasoningDelta(delta))
            }
            ModelEvent::ToolCallStart { id, name } => match shown {
                Some(slot) if !matches!(self.started.last(), Some((last, false)) if *last == id) => {
                    self.started.push((id.clone(), false));
                    self.model_started = true;
                    *slot = Chunk::ToolInputStart { id, name };
                    Absorbed::Chunk
                }
                _ => Absorbed::Quiet,
            },
            // Not replaced in place as a text chunk is: for argument chunks that ran 17
            // instructions fewer and 50 ns longer (`anthropic_call_agent` in
            // `agent-providers/benches/chunks.rs`).
            ModelEvent::ToolInputDelta { id, delta } => {
                shown_as(shown, Chunk::ToolInputDelta { id, delta })
            }
            ModelEvent::ToolCall(call) if shown.is_some() => {
                if self.was_started(&call.id) {
                    self.tool_calls.push(call.clone());
                    return shown_as(shown, Chunk::ToolCall(call));
                }
                self.started.push((call.id.clone(), true));
                let start = Chunk::ToolInputStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                };
                self.tool_calls.push(call);
                shown_as(shown, start);
                Absorbed::MadeStart
            }
            ModelEvent::ToolCall(call) => {
                self.tool_calls.push(call);
                Absorbed::Quiet
            }
            ModelEvent::ReasoningSignature(signature) => {
                self.reasoning_signature = Some(signature);
                Absorbed::Quiet
            }
            ModelEvent::Usage(usage) => {
                self.usage = usage;
                Absorbed::Quiet
            }
            ModelEvent::Finish(reason) => Absorbed::End(Ok(reason)),
            ModelEvent::ProviderMetadata(value) => {
                self.provider_metadata.push(value);
                Absorbed::Quiet
            }
            ModelEvent::ProviderBlock(block) => {
                self.provider_metadata.push(block.clone());
                self.provider_blocks.push(block);
                Absorbed::Quiet
            }
            ModelEvent::Discard { reason } => {
                // The provider retries a broken stream from the start of the step.
                self.text.clear();
                self.reasoning.clear();
                self.reasoning_signature = None;
                self.tool_calls.clear();
                self.started.clear();
                self.model_started = false;
                self.usage = Usage::default();
                self.provider_metadata.clear();
                self.provider_blocks.clear();
                shown_as(shown, Chunk::Discarded { reason })
            }
            ModelEvent::Error(message) => Absorbed::End(Err(Some(TurnError::new(
                TurnErrorKind::ModelInBand,
                format!("the model reported an error: {message}"),
            )))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Streamed;
    use crate::model::ModelEvent;

    /// Deltas appended as bytes read back as the text they make, multi-byte characters,
    /// deltas held inline and on the heap alike; a discarded attempt leaves nothing.
    #[test]
    fn deltas_append_to_whole_text() {
        let mut out = Streamed::empty();
        let long = "a delta longer than what is held inline: ✓✓✓";
        out.absorb(ModelEvent::TextDelta("lost".into()), None);
        out.absorb(
            ModelEvent::Discard {
                reason: "retried".into(),
            },
            None,
        );
        for delta in ["héllo ", "wörld ✓", "", long] {
            out.absorb(ModelEvent::TextDelta(delta.into()), None);
        }
        out.absorb(ModelEvent::ReasoningDelta("pensé".into()), None);
        assert_eq!(out.take_text(), format!("héllo wörld ✓{long}"));
        assert_eq!(out.take_reasoning(), "pensé");
        assert_eq!(out.take_text(), "");
    }
}
