//! A model that plays back a script: for tests and offline examples.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::{
    DeltaText, FinishReason, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest,
    ModelStream, Usage,
};
use crate::message::ToolCall;
use crate::text::Text;

/// A model that answers each call with the next [`ScriptedStep`] and records every request.
/// The requests are kept until [`take_requests`](Self::take_requests) takes them: a process
/// that runs many turns on one scripted model (a soak test, an offline demo left running)
/// takes them as it goes, or its memory grows with every call.
///
/// ```
/// use agent_core::{AgentBuilder, ScriptedModel, ScriptedStep};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let model = ScriptedModel::new([
///     ScriptedStep::new().tool_call("c1", "get_time", "{}"),
///     ScriptedStep::new().text("It is noon."),
/// ]);
/// assert_eq!(model.remaining(), 2);
/// let agent = AgentBuilder::new("clock").model(model.clone()).build().unwrap();
/// agent.run("What time is it?").await;
/// assert_eq!(model.take_requests().len(), 2, "the call, then its result");
/// assert!(model.requests().is_empty());
/// # }
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    id: String,
    inner: Arc<Mutex<ScriptState>>,
    output_schema: bool,
}

#[derive(Default)]
struct ScriptState {
    steps: VecDeque<ScriptedStep>,
    requests: Vec<ModelRequest>,
}

/// One scripted model call: the events to stream, in order.
#[derive(Clone, Debug, Default)]
pub struct ScriptedStep {
    items: Vec<ScriptItem>,
    end: StepEnd,
}

#[derive(Clone, Debug)]
enum ScriptItem {
    Event(ModelEvent),
    Sleep(Duration),
}

#[derive(Clone, Debug, Default)]
enum StepEnd {
    /// Finish with the reason given, or the natural one (tool calls or stop).
    #[default]
    Natural,
    Finish(FinishReason),
    Fail(ModelError),
    Truncate,
}

impl ScriptedModel {
    /// A model that plays these steps, one per call, with id `scripted`.
    pub fn new(steps: impl IntoIterator<Item = ScriptedStep>) -> Self {
        Self::with_id("scripted", steps)
    }

    /// A model with the given id.
    pub fn with_id(id: impl Into<String>, steps: impl IntoIterator<Item = ScriptedStep>) -> Self {
        let state = ScriptState {
            steps: steps.into_iter().collect(),
            requests: Vec::new(),
        };
        ScriptedModel {
            id: id.into(),
            inner: Arc::new(Mutex::new(state)),
            output_schema: false,
        }
    }

    /// Says the model honours [`ModelRequest::output_schema`], as a provider with structured
    /// output does (default: it does not), so typed output takes the native mode.
    pub fn supporting_output_schema(mut self) -> Self {
        self.output_schema = true;
        self
    }

    /// Appends steps to the script.
    pub fn push(&self, step: ScriptedStep) {
        self.lock().steps.push_back(step);
    }

    /// Every request received so far (since the last [`take_requests`](Self::take_requests)),
    /// in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// Takes the requests received so far, in order: the model keeps none of them after.
    pub fn take_requests(&self) -> Vec<ModelRequest> {
        std::mem::take(&mut self.lock().requests)
    }

    /// How many scripted steps are left.
    pub fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ScriptState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Model for ScriptedModel {
    fn supports_output_schema(&self) -> bool {
        self.output_schema
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let step = {
            let mut state = self.lock();
            state.requests.push(request);
            state.steps.pop_front()
        };
        Box::pin(async_stream::stream! {
            let Some(step) = step else {
                yield Err(ModelError::new(ModelErrorKind::Provider, "scripted model: no scripted step left"));
                return;
            };
            let mut called_tools = false;
            for item in step.items {
                match item {
                    ScriptItem::Event(event) => {
                        called_tools |= matches!(event, ModelEvent::ToolCall(_));
                        yield Ok(event);
                    }
                    ScriptItem::Sleep(duration) => tokio::time::sleep(duration).await,
                }
            }
            match step.end {
                StepEnd::Natural => {
                    let reason = if called_tools { FinishReason::ToolCalls } else { FinishReason::Stop };
                    yield Ok(ModelEvent::Finish(reason));
                }
                StepEnd::Finish(reason) => yield Ok(ModelEvent::Finish(reason)),
                StepEnd::Fail(error) => yield Err(error),
                StepEnd::Truncate => {}
            }
        })
    }
}

impl ScriptedStep {
    /// An empty step (it finishes with `stop`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Streams a piece of text.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.event(ModelEvent::TextDelta(DeltaText::from(text.into())))
    }

    /// Streams a piece of reasoning.
    pub fn reasoning(self, text: impl Into<String>) -> Self {
        self.event(ModelEvent::ReasoningDelta(DeltaText::from(text.into())))
    }

    /// Streams a tool call: its start, its arguments as one input delta, then the complete
    /// call. The arguments are sent as given, so invalid JSON and unknown tools can be
    /// scripted.
    pub fn tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        let arguments: String = arguments.into();
        self.streamed_tool_call(id, name, [arguments])
    }

    /// Streams a tool call whose arguments come in these pieces: its start, one input delta
    /// per piece, then the complete call (the pieces joined).
    pub fn streamed_tool_call<P: Into<String>>(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        pieces: impl IntoIterator<Item = P>,
    ) -> Self {
        let (id, name) = (Text::from(id.into()), Text::from(name.into()));
        let mut arguments = String::new();
        let start = ModelEvent::ToolCallStart {
            id: id.clone(),
            name: name.clone(),
        };
        let mut step = self.event(start);
        for piece in pieces {
            let delta: String = piece.into();
            arguments.push_str(&delta);
            step = step.event(ModelEvent::ToolInputDelta {
                id: id.clone(),
                delta: delta.into(),
            });
        }
        step.event(ModelEvent::ToolCall(ToolCall::new(id, name, arguments)))
    }

    /// Reports token usage.
    pub fn usage(self, input_tokens: u64, output_tokens: u64) -> Self {
        self.event(ModelEvent::Usage(Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }))
    }

    /// Reports an error inside the stream (as providers do with an error event).
    pub fn in_band_error(self, message: impl Into<String>) -> Self {
        self.event(ModelEvent::Error(message.into()))
    }

    /// Streams any event.
    pub fn event(mut self, event: ModelEvent) -> Self {
        self.items.push(ScriptItem::Event(event));
        self
    }

    /// Waits before the next event (for cancellation and timeout tests).
    pub fn sleep(mut self, duration: Duration) -> Self {
        self.items.push(ScriptItem::Sleep(duration));
        self
    }

    /// Ends the stream with this finish reason instead of the natural one.
    pub fn finish(mut self, reason: FinishReason) -> Self {
        self.end = StepEnd::Finish(reason);
        self
    }

    /// Breaks the stream after the scripted events with a transport error.
    pub fn fail(mut self, message: impl Into<String>) -> Self {
        self.end = StepEnd::Fail(ModelError::new(ModelErrorKind::Transport, message));
        self
    }

    /// Ends the stream after the scripted events without its end marker.
    pub fn truncate(mut self) -> Self {
        self.end = StepEnd::Truncate;
        self
    }
}
