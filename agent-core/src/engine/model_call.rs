//! A step's model call: on_llm_start, the reply's pending row, the stream read to its end
//! (`model_stream`), on_llm_end, and what a broken stream leaves behind.

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::model_stream::{StepStream, Streamed};
use super::output_spec::PartialAnswer;
use super::state::{End, Flow, Turn};
use super::traced::in_span;
use crate::hooks::{ErrorStage, LlmEndContext, LlmStartContext, TurnError, TurnErrorKind, observe};
use crate::message::{Message, ToolCall};
use crate::model::{FinishReason, Model, ModelErrorKind, ModelRequest, ModelStream, Usage};
use crate::store::{self, MessageStatus, MessageUpdate, NewMessage};
use crate::text::Text;
use crate::util::{BoxFuture, catch_panic};

/// What the model answered in one step, its reply stored pending in row `row`.
pub(super) struct Answer {
    pub(super) row: i64,
    pub(super) text: Text,
    pub(super) reasoning: Text,
    pub(super) reasoning_signature: Option<String>,
    pub(super) tool_calls: Arc<[ToolCall]>,
    pub(super) provider_blocks: Vec<serde_json::Value>,
    pub(super) provider_metadata: Vec<serde_json::Value>,
    pub(super) finish_reason: FinishReason,
    pub(super) usage: Usage,
}

impl Answer {
    /// The answer of a finished stream, its text and calls (passed through on_llm_end) taken
    /// out of it. Its text and reasoning are made shared once here, as its calls were when
    /// taken: the reply's message, its stored row, the history, the turn's added messages, the
    /// step's record and the turn's text hold them, not copies (`whole_turn_agent` in
    /// `agent-providers/benches/stream.rs`).
    fn of(
        row: i64,
        span: &tracing::Span,
        text: String,
        tool_calls: Arc<[ToolCall]>,
        finish_reason: FinishReason,
        mut streamed: Streamed,
    ) -> Self {
        span.record("gen_ai.response.finish_reasons", finish_reason.as_str());
        Answer {
            row,
            text: Text::from(text),
            reasoning: Text::from(streamed.take_reasoning()),
            reasoning_signature: streamed.reasoning_signature,
            tool_calls,
            provider_blocks: streamed.provider_blocks,
            provider_metadata: streamed.provider_metadata,
            finish_reason,
            usage: streamed.usage,
        }
    }
}

impl Turn<'_> {
    /// Calls the model for one step. A stream that broke ends the turn (its partial reply kept
    /// as a failed row); so does a fail-closed on_llm_start or on_llm_end hook.
    ///
    /// The request comes boxed and is handed on before the stream is read (`open_stream`):
    /// this future waits on the model for as long as the model takes, and an argument (or a
    /// local something borrowed) would keep its 264 bytes reserved in it all that time, per
    /// turn in flight (`cargo bench -p agent-core --bench sessions`).
    pub(super) async fn call_model(
        &mut self,
        step: usize,
        model: &Arc<dyn Model>,
        request: Box<ModelRequest>,
    ) -> Flow<Answer> {
        // Without a hook no context is built (the request moved into one and back, 264 bytes
        // twice, and two counted references) and no future is made (`whole_turn_agent` in
        // agent-providers/benches/stream.rs).
        let request = if self.current.hooks.on_llm_start.is_empty() {
            unboxed(request)
        } else {
            self.llm_start(step, request).await?
        };
        let request = self.llm_started(request);
        let span = chat_span(&**model);
        if !self.current.output_guardrails.is_empty() {
            *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(Vec::new());
        }
        let row = self.open_reply_row().await?;
        let started = Instant::now();
        let (stream, partial) = self.open_stream(&**model, request);
        let mut streamed = in_span!(
            span.clone(),
            StepStream::new(self, step).partials(partial).read(stream)
        );
        span.record("gen_ai.usage.input_tokens", streamed.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", streamed.usage.output_tokens);
        // Nobody reads the step's end and the stream finished (the common case): the answer
        // is made on the spot, without the future that awaits hooks or settles a broken
        // stream, whose code a step then skips (25 fewer code lines a turn, `whole_turn_agent`
        // in agent-providers/benches/stream.rs); boxed when it is needed, its 1.3 KB are not
        // reserved in this future (1,504 -> 1,312 bytes, `-Zprint-type-sizes`).
        if self.current.hooks.on_llm_end.is_empty()
            && self.run.is_none()
            && let Ok(reason) = &mut streamed.finish
        {
            let reason = std::mem::replace(reason, FinishReason::Stop);
            let (text, calls) = self.unread_end(model.id(), &mut streamed);
            return Ok(Answer::of(row, &span, text, calls, reason, streamed));
        }
        let answer: BoxFuture<'_, _> =
            Box::pin(self.answer(step, &**model, row, &span, started, streamed));
        answer.await
    }

    /// What the model streamed, through on_llm_end: the step's answer, or the end of the turn
    /// (a broken stream, a fail-closed on_llm_end hook). The rare path of `call_model`: a
    /// step with an on_llm_end hook, a run's hooks, or a broken stream.
    async fn answer(
        &mut self,
        step: usize,
        model: &dyn Model,
        row: i64,
        span: &tracing::Span,
        started: Instant,
        mut streamed: Streamed,
    ) -> Flow<Answer> {
        let (llm_end, text, tool_calls) =
            if self.current.hooks.on_llm_end.is_empty() && self.run.is_none() {
                // Nobody reads the step's end: no context is made (the model's id copied, the
                // text and calls moved in and back, the error cloned).
                let (text, calls) = self.unread_end(model.id(), &mut streamed);
                (Ok(()), text, calls)
            } else {
                let end_ctx = LlmEndContext {
                    agent: self.me.clone(),
                    request_id: self.request_id.clone(),
                    step,
                    model: model.id().to_owned(),
                    text: streamed.take_text(),
                    tool_calls: streamed.take_calls(),
                    finish_reason: streamed.finish.as_ref().ok().cloned(),
                    usage: streamed.usage,
                    latency: started.elapsed(),
                    error: streamed.error(),
                };
                self.llm_end(end_ctx).await
            };
        let finish = std::mem::replace(&mut streamed.finish, Ok(FinishReason::Stop));
        let finish_reason = match finish {
            Ok(reason) => reason,
            Err(error) => {
                let partial = Partial {
                    text: Text::from(text),
                    reasoning: Text::from(streamed.take_reasoning()),
                    reasoning_signature: streamed.reasoning_signature,
                };
                // Boxed: a broken stream is rare, and its future (1.5 KB) need not be
                // reserved in every model call's.
                return Err(Box::pin(self.broken(row, partial, error)).await);
            }
        };
        if let Err(error) = llm_end {
            self.open.partial(&Message::Assistant {
                content: Text::from(text),
                reasoning: Text::from(streamed.take_reasoning()),
                tool_calls: Arc::default(),
                reasoning_signature: streamed.reasoning_signature,
                provider_blocks: Vec::new(),
            });
            return Err(End::turn(error));
        }
        Ok(Answer::of(
            row,
            span,
            text,
            tool_calls,
            finish_reason,
            streamed,
        ))
    }

    /// A step's end that nobody reads: its usage counted, its text and calls taken out.
    fn unread_end(&mut self, model: &str, streamed: &mut Streamed) -> (String, Arc<[ToolCall]>) {
        self.count_usage(model, &streamed.usage);
        let calls = streamed.take_calls();
        (streamed.take_text(), calls)
    }

    /// Asks the model for its stream of `request`, with the typed answer's partial reader when
    /// partial answers go to the stream API (not while guardrails hold the reply back).
    fn open_stream(
        &self,
        model: &dyn Model,
        request: ModelRequest,
    ) -> (Result<ModelStream, TurnError>, Option<PartialAnswer>) {
        let partial = match (&self.sink, &self.current.output) {
            (Some(_), Some(spec)) if self.current.output_guardrails.is_empty() => {
                spec.partials(&request)
            }
            _ => None,
        };
        let stream = catch_panic(|| model.stream(request)).map_err(|message| {
            TurnError::new(
                TurnErrorKind::Model(ModelErrorKind::Other),
                format!("the model panicked: {message}"),
            )
        });
        (stream, partial)
    }

    /// The run hooks' on_llm_start; gives the request back. A function of its own: borrowed in
    /// `call_model`, the request (264 bytes) would keep its room in that future while the
    /// model answers (`cargo bench -p agent-core --bench sessions`).
    fn llm_started(&self, request: ModelRequest) -> ModelRequest {
        if let Some(run) = &self.run {
            run.fire(&self.me, "on_llm_start", |hooks, agent| {
                hooks.on_llm_start(agent, &request)
            });
        }
        request
    }

    /// The on_llm_start hooks (which may fail the turn), with the request in their context;
    /// gives it back.
    async fn llm_start(&mut self, step: usize, request: Box<ModelRequest>) -> Flow<ModelRequest> {
        let start = LlmStartContext {
            agent: self.me.clone(),
            request_id: self.request_id.clone(),
            step,
            request: *request,
        };
        observe(&self.current.hooks.on_llm_start, &start)
            .await
            .map_err(End::turn)?;
        Ok(start.request)
    }

    /// Stores the step's reply pending while the model answers; gives its row.
    async fn open_reply_row(&mut self) -> Flow<i64> {
        let pending = NewMessage {
            message: Message::assistant(""),
            status: MessageStatus::Pending,
            request_sent_at: Some(store::now_micros()),
            silent: false,
        };
        let (row, _, flow) = self.insert_tracked(pending).await;
        if let Some(row) = row {
            self.open.pending(row);
        }
        flow?;
        Ok(row.unwrap_or_default())
    }

    /// Counts the call's usage, then on_llm_end and the run hooks' on_llm_end; gives back the
    /// hooks' verdict with the reply's text and tool calls.
    async fn llm_end(
        &mut self,
        end: LlmEndContext,
    ) -> (Result<(), TurnError>, String, Arc<[ToolCall]>) {
        self.count_usage(&end.model, &end.usage);
        let verdict = observe(&self.current.hooks.on_llm_end, &end).await;
        if let Some(run) = &self.run {
            let calls = end.tool_calls.len();
            run.fire(&self.me, "on_llm_end", |hooks, agent| {
                hooks.on_llm_end(agent, &end.text, calls)
            });
        }
        (verdict, end.text, end.tool_calls)
    }

    /// Adds a model call's usage to the turn's and to the limits' counts.
    fn count_usage(&mut self, model: &str, usage: &Usage) {
        self.outcome.usage.add(usage);
        if let Some(limits) = &self.limits {
            limits.count(model, usage);
        }
    }

    /// A broken stream keeps its partial text, stored as a failed message (the pending row is
    /// deleted when nothing was produced); its tool calls never run. `error` is `None` when the
    /// turn was cancelled.
    async fn broken(&mut self, row: i64, partial: Partial, error: Option<TurnError>) -> End {
        self.outcome.text = partial.text.clone();
        let produced = !partial.text.is_empty() || !partial.reasoning.is_empty();
        let partial = Message::Assistant {
            content: partial.text,
            reasoning: partial.reasoning,
            tool_calls: Arc::default(),
            reasoning_signature: partial.reasoning_signature,
            provider_blocks: Vec::new(),
        };
        // Should this write fail, the turn's settling stores the partial reply instead.
        self.open.partial(&partial);
        let settled = if produced {
            let failed = MessageUpdate {
                message: Some(partial.clone()),
                status: Some(MessageStatus::Failed),
                response_completed_at: Some(store::now_micros()),
                silent: None,
            };
            let (written, _, flow) = self.update_tracked(row, failed).await;
            if written {
                self.open.reply_settled(&[]);
            }
            flow
        } else {
            self.discard(row).await
        };
        if let Err(end) = settled {
            return end;
        }
        self.open.reply_settled(&[]);
        if produced {
            self.outcome.added.push(partial);
        }
        match error {
            // A fail-closed on_chunk hook breaks the stream too, but the stream itself was
            // fine: the failure belongs to the turn's hooks.
            Some(error) if matches!(error.kind, TurnErrorKind::Hook { .. }) => {
                End::Failed(error, ErrorStage::Turn)
            }
            Some(error) => End::Failed(error, ErrorStage::Stream),
            None => End::Aborted,
        }
    }
}

/// The `chat` span of one model call (OpenTelemetry gen_ai attributes).
fn chat_span(model: &dyn Model) -> tracing::Span {
    tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {}", model.id()),
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %model.id(),
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.response.finish_reasons = tracing::field::Empty,
    )
}

/// What a broken stream produced before it broke.
struct Partial {
    text: Text,
    reasoning: Text,
    reasoning_signature: Option<String>,
}

/// The request out of its box, in a function of its own: moved out of the box in `call_model`,
/// the box's pointer and drop flag would keep their room in that future while the model
/// answers.
fn unboxed(request: Box<ModelRequest>) -> ModelRequest {
    *request
}
