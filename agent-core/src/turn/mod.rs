//! One turn, from the user's input to on_chat_response: every turn-wide hook fires here, in the
//! order of docs/design.md §5. Model streams are read in `stream.rs`; tool calls run in `tool_call/`.

mod classify;
mod compact;
pub(crate) mod dispatch;
mod history;
mod lifecycle;
pub(crate) mod persist;
mod stream;

use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::Instrument;

pub use classify::{default_classifier, is_context_overflow};
use dispatch::{each, observe};
use persist::{WriteError, Writer};
use stream::StepStream;

use crate::agent::{AgentInner, Conversation, ToolSlot, TurnEvent, TurnOverlap, TurnRequest};
use crate::hooks::{
    ChatErrorContext, ChatResponse, ErrorStage, LlmEndContext, LlmStartContext, RunContext,
    StepConfig, StepContext, StepRecord, StopContext, StopDecision, StopReason, TurnConfig,
    TurnContext, TurnError, TurnErrorKind, TurnResult, TurnStatus,
};
use crate::message::Message;
use crate::model::{Model, ModelRequest, ToolChoice, Usage};
use crate::store::{self, MessageStatus, MessageUpdate, NewMessage, StoredMessage};
use crate::tool_call::{CallResult, CallScope, TurnTools};
use crate::util::{catch_panic, catch_unwind};
use crate::util::{join_ordered, new_id};

/// Runs one turn of `conversation`; events go to `sink` when streaming.
pub(crate) async fn run_turn(
    conversation: &Conversation,
    request: TurnRequest,
    sink: Option<mpsc::Sender<TurnEvent>>,
) -> TurnResult {
    let agent = &*conversation.agent.inner;
    let request_id: Arc<str> = new_id("req").into();
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {}", agent.name),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %agent.name,
        gen_ai.conversation.id = %conversation.session,
        gen_ai.request.id = %request_id,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    );
    let turn = Turn {
        agent,
        conversation,
        request_id,
        continuation: request.continuation,
        cancel: request.cancel.clone(),
        sink,
        outcome: Outcome::default(),
        session: compact::SessionTurn::default(),
        span: span.clone(),
    };
    turn.run(request).instrument(span).await
}

struct Turn<'a> {
    agent: &'a AgentInner,
    conversation: &'a Conversation,
    request_id: Arc<str>,
    continuation: bool,
    cancel: crate::CancelToken,
    sink: Option<mpsc::Sender<TurnEvent>>,
    outcome: Outcome,
    /// What the turn tracks of its session (`compact.rs`).
    session: compact::SessionTurn,
    /// The turn's `invoke_agent` span, to record usage on when the turn ends.
    span: tracing::Span,
}

/// What the turn has produced so far.
#[derive(Default)]
struct Outcome {
    steps: Vec<StepRecord>,
    /// Messages this turn adds to the history (after the user's).
    added: Vec<Message>,
    usage: Usage,
    /// The last step's text (the answer), or partial text when a stream broke.
    text: String,
    user_persisted: bool,
}

/// How the step loop ended.
enum End {
    Completed(StopReason),
    Failed(TurnError, ErrorStage),
    Aborted,
}

impl Turn<'_> {
    async fn run(mut self, request: TurnRequest) -> TurnResult {
        let lock = self.conversation.lock.clone();
        let guard = match self.agent.overlap {
            TurnOverlap::Wait => lock.lock_owned().await,
            TurnOverlap::Reject => match lock.try_lock_owned() {
                Ok(guard) => guard,
                Err(_) => return self.busy().await,
            },
        };
        // A panic in code the turn runs outside any hook or tool still ends the turn through
        // its error hooks and on_chat_response.
        let end = match catch_unwind(Box::pin(self.drive(request))).await {
            Ok(end) => end,
            Err(message) => End::Failed(
                TurnError::new(
                    TurnErrorKind::Panicked,
                    format!("the turn panicked: {message}"),
                ),
                ErrorStage::Turn,
            ),
        };
        self.finish(end, guard).await
    }

    /// The result of a turn rejected because another turn of its session is running.
    async fn busy(self) -> TurnResult {
        let message = format!(
            "a turn of session `{}` is already running",
            self.conversation.session
        );
        let error = TurnError::new(TurnErrorKind::Busy, message);
        let result = TurnResult {
            request_id: self.request_id.clone(),
            status: TurnStatus::Error,
            text: String::new(),
            stop_reason: None,
            steps: Vec::new(),
            messages: Vec::new(),
            usage: Usage::default(),
            error: Some(error),
            classification: Some(crate::ChatErrorClassification::Transient),
        };
        self.emit(TurnEvent::Finished(result.clone())).await;
        result
    }

    async fn emit(&self, event: TurnEvent) {
        if let Some(sink) = &self.sink {
            // A dropped stream only stops the events; the turn still completes.
            let _ = sink.send(event).await;
        }
    }

    /// Stores a row of this session; a failure ends the turn at stage `persist`.
    async fn insert(&self, row: NewMessage) -> Result<i64, End> {
        match self.writer().insert(row).await {
            Ok(stored) => Ok(stored.id),
            Err(error) => Err(write_failed(error)),
        }
    }

    /// Writes this session's rows through the message hooks (`persist.rs`).
    fn writer(&self) -> Writer<'_> {
        Writer {
            agent: self.agent,
            session: &self.conversation.session,
            request_id: Some(&self.request_id),
        }
    }

    /// Updates a row of this session; a failure ends the turn at stage `persist`.
    async fn update(&self, id: i64, update: MessageUpdate) -> Result<(), End> {
        self.writer().update(id, update).await.map_err(write_failed)
    }

    /// Finishes what a turn cut off by a crash left behind (see [`store::repairs`]), and
    /// returns the session's rows as they now stand.
    async fn repair(&self, rows: Vec<StoredMessage>) -> Result<Vec<StoredMessage>, End> {
        let repairs = store::repairs(&rows);
        if repairs == store::Repairs::default() {
            return Ok(rows);
        }
        tracing::warn!(
            session = %self.conversation.session,
            stale = repairs.stale.len(),
            unanswered = repairs.unanswered.len(),
            "repairing a session whose last turn was cut off"
        );
        for id in repairs.stale {
            let failed = MessageUpdate {
                status: Some(MessageStatus::Failed),
                ..MessageUpdate::default()
            };
            self.update(id, failed).await?;
        }
        for message in repairs.unanswered {
            self.insert(NewMessage::completed(message)).await?;
        }
        match self.agent.store.load(&self.conversation.session).await {
            Ok(rows) => Ok(rows),
            Err(error) => Err(End::Failed(store_error(error), ErrorStage::Persist)),
        }
    }

    /// Stores a message this turn adds and keeps it for the turn's result.
    async fn add(&mut self, message: Message) -> Result<(), End> {
        self.insert(NewMessage::completed(message.clone())).await?;
        self.outcome.added.push(message);
        Ok(())
    }

    /// before_run, before_turn and the step loop.
    async fn drive(&mut self, request: TurnRequest) -> End {
        let agent = self.agent;
        let hooks = &agent.hooks;
        let run_ctx = RunContext {
            agent: agent.name.clone(),
            request_id: self.request_id.clone(),
            input: request.input,
            continuation: request.continuation,
        };
        if let Err(end) = self.session_start().await {
            return end;
        }
        if let Err(error) = observe(&hooks.before_run, &run_ctx).await {
            return End::Failed(error, ErrorStage::Turn);
        }

        let rows = match agent.store.load(&self.conversation.session).await {
            Ok(rows) => rows,
            Err(error) => return End::Failed(store_error(error), ErrorStage::Persist),
        };
        let rows = match self.repair(rows).await {
            Ok(rows) => rows,
            Err(end) => return end,
        };
        let session = &self.conversation.session;
        let rows = match history::filter_rows(hooks, &self.request_id, session, rows).await {
            Ok(rows) => rows,
            Err(error) => return End::Failed(error, ErrorStage::Turn),
        };
        let mut messages = store::history(&rows);
        // The request's messages, then its input (none for a continuation), are stored before
        // anything reads them.
        let input = (!run_ctx.input.is_empty()).then(|| Message::user(run_ctx.input));
        for message in request.messages.into_iter().chain(input) {
            if let Err(end) = self.insert(NewMessage::completed(message.clone())).await {
                return end;
            }
            messages.push(message);
        }
        self.outcome.user_persisted = true;

        let system = match self.system_prompt().await {
            Ok(system) => system,
            Err(end) => return end,
        };
        let turn_ctx = TurnContext {
            request_id: self.request_id.clone(),
            system,
            messages,
            tools: agent.specs.clone(),
            model: agent.model.id().to_owned(),
            continuation: self.continuation,
            body: request.body,
        };
        let mut config = TurnConfig::default();
        if let Err(error) = each(&hooks.before_turn, &turn_ctx, |c| {
            if let Some(c) = c {
                config.merge(c)
            }
        })
        .await
        {
            return End::Failed(error, ErrorStage::Turn);
        }
        let TurnContext {
            system, messages, ..
        } = turn_ctx;
        let plan = TurnPlan::new(agent, config, system, messages);
        self.steps_recovering(plan).await
    }

    async fn steps(&mut self, plan: &mut TurnPlan<'_>) -> End {
        for step in 0..plan.max_steps {
            if self.cancel.is_cancelled() {
                return End::Aborted;
            }
            let span = tracing::info_span!(
                "step",
                otel.name = %format_args!("step {step}"),
                gen_ai.agent.step = step,
            );
            if let Some(end) = self.step(plan, step).instrument(span).await {
                return end;
            }
        }
        self.stop(StopReason::MaxSteps).await
    }

    /// One step: before_step, the model call, its tool calls, on_step_finish. `None` when the
    /// turn goes on to another step.
    async fn step(&mut self, plan: &mut TurnPlan<'_>, step: usize) -> Option<End> {
        if let Err(end) = self.compact_before_step(plan).await {
            return Some(end);
        }
        let hooks = &self.agent.hooks;
        // before_step
        let step_ctx = StepContext {
            request_id: self.request_id.clone(),
            step,
            // Only before_step hooks read the earlier steps: without one, copying every earlier
            // step's record on each step would make a long turn quadratic for nothing.
            previous: if hooks.before_step.is_empty() {
                Vec::new()
            } else {
                self.outcome.steps.clone()
            },
            messages: plan.messages.clone(),
        };
        let mut step_config = StepConfig::default();
        if let Err(error) = each(&hooks.before_step, &step_ctx, |c| {
            if let Some(c) = c {
                step_config.merge(c)
            }
        })
        .await
        {
            return Some(End::Failed(error, ErrorStage::Turn));
        }
        let StepContext {
            messages: step_messages,
            ..
        } = step_ctx;
        let model = step_config
            .model
            .clone()
            .unwrap_or_else(|| plan.model.clone());
        let mut request = plan.request(&*model, step_config, step_messages);
        let messages = std::mem::take(&mut request.messages);
        match history::prefilter(hooks, &self.request_id, step, messages).await {
            Ok(history::Prefiltered::Send(messages)) => request.messages = messages,
            Ok(history::Prefiltered::Block(message)) => return Some(self.blocked(message).await),
            Err(error) => return Some(End::Failed(error, ErrorStage::Turn)),
        }

        // on_llm_start
        let start = LlmStartContext {
            request_id: self.request_id.clone(),
            step,
            request,
        };
        if let Err(error) = observe(&hooks.on_llm_start, &start).await {
            return Some(End::Failed(error, ErrorStage::Turn));
        }
        let span = tracing::info_span!(
            "chat",
            otel.name = %format_args!("chat {}", model.id()),
            gen_ai.operation.name = "chat",
            gen_ai.request.model = %model.id(),
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
        );
        // The assistant message is stored pending while the model answers.
        let pending = NewMessage {
            message: Message::assistant(""),
            status: MessageStatus::Pending,
            request_sent_at: Some(store::now_micros()),
            silent: false,
        };
        let row = match self.insert(pending).await {
            Ok(row) => row,
            Err(end) => return Some(end),
        };
        let started = std::time::Instant::now();
        let stream = catch_panic(|| model.stream(start.request)).map_err(|message| {
            TurnError::new(
                TurnErrorKind::Model(crate::model::ModelErrorKind::Other),
                format!("the model panicked: {message}"),
            )
        });
        let streamed = StepStream::new(self, step)
            .read(stream)
            .instrument(span.clone())
            .await;
        span.record("gen_ai.usage.input_tokens", streamed.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", streamed.usage.output_tokens);

        // on_llm_end
        let end_ctx = LlmEndContext {
            request_id: self.request_id.clone(),
            step,
            model: model.id().to_owned(),
            text: streamed.text,
            tool_calls: streamed.tool_calls,
            finish_reason: streamed.finish.as_ref().ok().cloned(),
            usage: streamed.usage,
            latency: started.elapsed(),
            error: streamed
                .finish
                .as_ref()
                .err()
                .and_then(|e| e.as_ref().map(|e| e.message.clone())),
        };
        self.outcome.usage.add(&end_ctx.usage);
        let llm_end = observe(&hooks.on_llm_end, &end_ctx).await;
        let LlmEndContext {
            text,
            tool_calls,
            usage,
            ..
        } = end_ctx;
        let finish_reason = match streamed.finish {
            Ok(reason) => reason,
            Err(error) => {
                // A broken stream keeps its partial text, stored as a failed message; its tool
                // calls never run.
                self.outcome.text = text.clone();
                let partial = Message::Assistant {
                    content: text,
                    reasoning: streamed.reasoning,
                    tool_calls: Vec::new(),
                    reasoning_signature: streamed.reasoning_signature,
                    provider_blocks: Vec::new(),
                };
                let produced = !partial.text().is_empty()
                    || matches!(&partial, Message::Assistant { reasoning, .. } if !reasoning.is_empty());
                let settled = if produced {
                    let failed = MessageUpdate {
                        message: Some(partial.clone()),
                        status: Some(MessageStatus::Failed),
                        response_completed_at: Some(store::now_micros()),
                        silent: None,
                    };
                    self.update(row, failed).await
                } else {
                    self.discard(row).await
                };
                if let Err(end) = settled {
                    return Some(end);
                }
                if produced {
                    self.outcome.added.push(partial);
                }
                return Some(match error {
                    // A fail-closed on_chunk hook breaks the stream too, but the stream
                    // itself was fine: the failure belongs to the turn's hooks.
                    Some(error) if matches!(error.kind, TurnErrorKind::Hook { .. }) => {
                        End::Failed(error, ErrorStage::Turn)
                    }
                    Some(error) => End::Failed(error, ErrorStage::Stream),
                    None => End::Aborted,
                });
            }
        };
        if let Err(error) = llm_end {
            return Some(End::Failed(error, ErrorStage::Turn));
        }
        span.record("gen_ai.response.finish_reasons", finish_reason.as_str());

        let assistant = Message::Assistant {
            content: text.clone(),
            reasoning: streamed.reasoning.clone(),
            tool_calls: tool_calls.clone(),
            reasoning_signature: streamed.reasoning_signature.clone(),
            provider_blocks: streamed.provider_blocks,
        };
        let reply = history::Reply {
            message: assistant,
            text,
            tool_calls,
        };
        let (assistant, text, tool_calls) =
            match history::post_process(hooks, &self.request_id, step, reply).await {
                Ok(reply) => (reply.message, reply.text, reply.tool_calls),
                Err(error) => return Some(End::Failed(error, ErrorStage::Turn)),
            };
        self.outcome.text = text.clone();
        // Where the reply sits, should a hook drop one of its calls.
        let at = (self.outcome.added.len(), plan.messages.len());
        if let Err(end) = self.settle_reply(row, assistant, plan).await {
            return Some(end);
        }
        let mut dropped = std::collections::HashSet::new();

        // Tool calls: concurrently, results in the model's order.
        let mut tool_results = Vec::with_capacity(tool_calls.len());
        let mut failed_hook = None;
        if !tool_calls.is_empty() {
            // Only tool-call hooks read the history; skip the copy when no called tool has one.
            let hooked = tool_calls.iter().any(|call| {
                plan.tools
                    .get(&call.name)
                    .is_some_and(|slot| !slot.before.is_empty() || !slot.after.is_empty())
            });
            let step_messages = Arc::new(if hooked {
                plan.messages.clone()
            } else {
                Vec::new()
            });
            let scope = CallScope {
                request_id: &self.request_id,
                step,
                messages: &step_messages,
                cancel: &self.cancel,
                tools: &plan.tools,
            };
            let calls = tool_calls
                .iter()
                .map(|call| {
                    Box::pin(crate::tool_call::execute(&scope, call))
                        as crate::BoxFuture<'_, CallResult>
                })
                .collect();
            let joined = join_ordered(calls, self.agent.tool_concurrency);
            let results = tokio::select! {
                biased;
                () = self.cancel.cancelled() => None,
                results = joined => Some(results),
            };
            let Some(results) = results else {
                // The assistant message is kept with its tool calls: answer each one, so
                // the stored history stays valid for the next turn.
                for call in &tool_calls {
                    let cut = Message::Tool {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: format!(
                            "tool `{}` did not finish: the turn was aborted",
                            call.name
                        ),
                        is_error: true,
                    };
                    if let Err(end) = self.add(cut).await {
                        return Some(end);
                    }
                }
                return Some(End::Aborted);
            };
            for result in results {
                let mut record = result.record;
                failed_hook = failed_hook.or(result.error);
                if result.dropped {
                    dropped.insert(record.call_id);
                    continue;
                }
                let message =
                    match history::tool_result(hooks, &self.request_id, step, &mut record).await {
                        Ok(message) => message,
                        Err(error) => return Some(End::Failed(error, ErrorStage::Turn)),
                    };
                let stream = StepStream::new(self, step);
                if stream.listening() {
                    let chunk = crate::hooks::Chunk::ToolResult {
                        id: record.call_id.clone(),
                        name: record.name.clone(),
                        content: record.content.clone(),
                        is_error: record.is_error,
                    };
                    if let Err(error) = stream.chunk(chunk).await {
                        return Some(End::Failed(error, ErrorStage::Turn));
                    }
                }
                // Each result is stored as it is appended, in the model's call order.
                if let Err(end) = self.add(message.clone()).await {
                    return Some(end);
                }
                plan.messages.push(message);
                tool_results.push(record);
            }
            if !dropped.is_empty()
                && let Err(end) = self.drop_calls(row, at, &dropped, &mut plan.messages).await
            {
                return Some(end);
            }
        }

        let record = StepRecord {
            step,
            model: model.id().to_owned(),
            text,
            reasoning: streamed.reasoning,
            tool_calls,
            tool_results,
            finish_reason,
            usage,
            provider_metadata: streamed.provider_metadata,
        };
        if let Err(error) = observe(&hooks.on_step_finish, &record).await {
            return Some(End::Failed(error, ErrorStage::Turn));
        }
        let more = !record.tool_calls.is_empty();
        if self.sink.is_some() {
            // Cloned only for a stream: a record holds the step's whole text.
            self.emit(TurnEvent::StepFinished(record.clone())).await;
        }
        self.outcome.steps.push(record);
        if let Some(error) = failed_hook {
            return Some(End::Failed(error, ErrorStage::Turn));
        }
        if self.cancel.is_cancelled() {
            return Some(End::Aborted);
        }
        if !more {
            return Some(End::Completed(StopReason::Finished));
        }
        None
    }

    /// Stores a step's reply as completed and adds it to the history, or, when it is empty (no
    /// text, no tool call and no provider block, whatever reasoning it holds), deletes its
    /// pending row: an empty
    /// assistant message is never stored nor sent back to the model (providers reject one).
    async fn settle_reply(
        &mut self,
        row: i64,
        assistant: Message,
        plan: &mut TurnPlan<'_>,
    ) -> Result<(), End> {
        let empty = matches!(&assistant, Message::Assistant { content, tool_calls, provider_blocks, .. }
            if content.is_empty() && tool_calls.is_empty() && provider_blocks.is_empty());
        if empty {
            return self.discard(row).await;
        }
        let completed = MessageUpdate {
            message: Some(assistant.clone()),
            status: Some(MessageStatus::Completed),
            response_completed_at: Some(store::now_micros()),
            silent: None,
        };
        self.update(row, completed).await?;
        self.outcome.added.push(assistant.clone());
        plan.messages.push(assistant);
        Ok(())
    }

    /// Deletes the pending assistant row of a model call that produced nothing. No message hook
    /// fires: the row never held a message.
    async fn discard(&self, row: i64) -> Result<(), End> {
        self.agent
            .store
            .delete(&self.conversation.session, row)
            .await
            .map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))
    }

    /// on_stop: a limit ended the turn.
    async fn stop(&mut self, reason: StopReason) -> End {
        let ctx = StopContext {
            request_id: self.request_id.clone(),
            reason,
            steps: self.outcome.steps.len(),
            text: self.outcome.text.clone(),
        };
        let mut decision = StopDecision::Complete;
        if let Err(error) = each(&self.agent.hooks.on_stop, &ctx, |d| decision = d).await {
            return End::Failed(error, ErrorStage::Turn);
        }
        match decision {
            StopDecision::Complete => End::Completed(reason),
            StopDecision::Output(text) => {
                if let Err(end) = self.add(Message::assistant(text.clone())).await {
                    return end;
                }
                self.outcome.text = text;
                End::Completed(reason)
            }
            StopDecision::Fail(message) => End::Failed(
                TurnError::new(TurnErrorKind::Stopped, message),
                ErrorStage::Turn,
            ),
        }
    }

    /// Builds the result, runs after_run (whose failure fails the turn after its result is
    /// built), classifies an error and runs on_chat_error, then the response hooks.
    async fn finish(self, end: End, guard: tokio::sync::OwnedMutexGuard<()>) -> TurnResult {
        let Turn {
            agent,
            conversation,
            request_id,
            continuation,
            outcome,
            sink,
            span,
            session,
            ..
        } = self;
        let hooks = &agent.hooks;
        let mut result = TurnResult {
            request_id: request_id.clone(),
            status: TurnStatus::Completed,
            text: outcome.text,
            stop_reason: None,
            steps: outcome.steps,
            messages: outcome.added,
            usage: outcome.usage,
            error: None,
            classification: None,
        };
        span.record("gen_ai.usage.input_tokens", result.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", result.usage.output_tokens);
        let failed = match end {
            End::Completed(reason) => {
                result.stop_reason = Some(reason);
                // after_run sees the completed result; failing (its default policy) it fails
                // the turn, keeping what the result holds.
                observe(&hooks.after_run, &result)
                    .await
                    .err()
                    .map(|error| (error, ErrorStage::Turn, None))
            }
            End::Aborted => {
                result.status = TurnStatus::Aborted;
                None
            }
            End::Failed(error, stage) => Some((error, stage, session.classification)),
        };
        if let Some((error, stage, classification)) = failed {
            tracing::warn!(stage = stage.as_str(), "turn failed: {error}");
            let classification = match classification {
                Some(classification) => classification,
                None => compact::classify(hooks, &request_id, &error, stage).await,
            };
            let ctx = ChatErrorContext {
                request_id: request_id.clone(),
                error,
                stage,
                messages_persisted: outcome.user_persisted,
                classification,
                partial_text: result.text.clone(),
            };
            let mut surfaced = None;
            let _ = each(&hooks.on_chat_error, &ctx, |e| {
                surfaced = e.or(surfaced.take())
            })
            .await;
            result.status = TurnStatus::Error;
            result.error = Some(surfaced.unwrap_or(ctx.error));
            result.classification = Some(classification);
        }
        // The turn lock is released before on_chat_response, so the hook may start a new turn.
        drop(guard);
        let message = result
            .messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::Assistant { .. }))
            .cloned()
            .unwrap_or_else(|| Message::assistant(""));
        let response = ChatResponse {
            request_id,
            message,
            continuation,
            status: result.status,
            error: result.error.clone(),
        };
        let _ = observe(&hooks.on_chat_response, &response).await;
        lifecycle::session_end(agent, &conversation.session, &result).await;
        if let Some(sink) = &sink {
            let _ = sink.send(TurnEvent::Finished(result.clone())).await;
        }
        result
    }
}

/// A failed write ends the turn: at stage `persist` when the store failed, `turn` when a
/// fail-closed message hook did.
fn write_failed(error: WriteError) -> End {
    match error {
        WriteError::Store(error) => End::Failed(store_error(error), ErrorStage::Persist),
        WriteError::Hook(error) => End::Failed(error, ErrorStage::Turn),
    }
}

fn store_error(error: crate::store::StoreError) -> TurnError {
    TurnError::new(
        TurnErrorKind::Store,
        format!("history store failed: {error}"),
    )
}

/// The turn after before_turn: its model, prompt, messages, tools and settings.
struct TurnPlan<'a> {
    model: Arc<dyn Model>,
    system: Option<String>,
    messages: Vec<Message>,
    tools: TurnTools<'a>,
    tool_choice: ToolChoice,
    max_steps: usize,
    send_reasoning: bool,
    settings: crate::model::CallSettings,
    provider_options: serde_json::Map<String, serde_json::Value>,
    stall_timeout: Option<std::time::Duration>,
    output_schema: Option<crate::model::OutputSchema>,
}

impl<'a> TurnPlan<'a> {
    fn new(
        agent: &'a AgentInner,
        config: TurnConfig,
        system: Option<String>,
        messages: Vec<Message>,
    ) -> Self {
        let extra = config
            .tools
            .into_iter()
            .map(|tool| ToolSlot::resolve(tool, true, &agent.before_hooks, &agent.after_hooks))
            .collect();
        let mut provider_options = agent.provider_options.clone();
        provider_options.extend(config.provider_options.unwrap_or_default());
        TurnPlan {
            model: config.model.unwrap_or_else(|| agent.model.clone()),
            system: config.system.or(system),
            messages: config.messages.unwrap_or(messages),
            tools: TurnTools {
                agent,
                extra,
                active: config.active_tools,
                step_active: None,
            },
            tool_choice: config.tool_choice.unwrap_or_default(),
            max_steps: config.max_steps.unwrap_or(agent.max_steps).max(1),
            send_reasoning: config.send_reasoning.unwrap_or(false),
            settings: config.settings.or(&agent.settings),
            provider_options,
            stall_timeout: config.stall_timeout,
            output_schema: config.output_schema,
        }
    }

    /// The model request of one step, with that step's overrides.
    fn request(
        &mut self,
        model: &dyn Model,
        config: StepConfig,
        messages: Vec<Message>,
    ) -> ModelRequest {
        self.tools.step_active = config.active_tools;
        let tools = self
            .tools
            .agent
            .tools
            .iter()
            .chain(&self.tools.extra)
            .map(|slot| slot.spec())
            .filter(|spec| self.tools.is_active(&spec.name))
            .cloned()
            .collect();
        ModelRequest {
            model: model.id().to_owned(),
            system: config.system.or_else(|| self.system.clone()),
            messages: config.messages.unwrap_or(messages),
            tools,
            tool_choice: config
                .tool_choice
                .unwrap_or_else(|| self.tool_choice.clone()),
            settings: self.settings.clone(),
            send_reasoning: self.send_reasoning,
            provider_options: self.provider_options.clone(),
            stall_timeout: self.stall_timeout,
            output_schema: self.output_schema.clone(),
        }
    }
}
