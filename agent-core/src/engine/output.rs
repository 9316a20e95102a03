//! Typed output in the turn: how each step asks for the answer (native schema, final-answer
//! tool or prompt), parsing and validating what the model answered, and sending it back to fix
//! an answer that failed until the output retries run out.

use std::sync::Arc;

use serde_json::{Value, json};

use super::events::TurnEvent;
use super::plan::TurnPlan;
use super::state::{End, Flow, Turn};
use super::step::Reply;
use super::tool_call::CallResult;
use crate::hooks::output::{OutputKind, ValidateScope, Validator};
use crate::hooks::{
    Chunk, ErrorStage, Output, OutputCheck, OutputFailure, OutputMode, OutputReport, StopReason,
    ToolOutcomeKind, ToolResultRecord, TurnError, TurnErrorKind,
};
use crate::message::{Message, ToolCall};
use crate::model::{Model, ModelRequest, OutputSchema, ToolChoice};
use crate::partial_json::PartialJson;
use crate::tool::ToolSpec;

/// An agent's output type and how its answers are asked for and checked.
pub(crate) struct OutputSpec {
    pub(crate) kind: OutputKind,
    pub(crate) mode: OutputMode,
    /// How many failed answers are sent back to be fixed before the turn fails.
    pub(crate) retries: usize,
    /// The schema the native mode sends.
    pub(crate) schema: OutputSchema,
    /// The final-answer tool.
    pub(crate) tool: Arc<ToolSpec>,
    /// The tool's arguments hold the answer under `response` (a type whose schema is not an
    /// object: tool arguments must be one).
    pub(crate) wrapped: bool,
    /// validate_output hooks, in run order.
    pub(crate) validators: Vec<Arc<dyn Validator>>,
    /// One final-answer tool per variant of an internally tagged enum, offered instead of
    /// `tool` (`AgentBuilder::output_tool_per_variant`); empty otherwise.
    pub(crate) variants: Vec<Variant>,
}

/// The final-answer tool of one variant of an internally tagged enum: its arguments are the
/// variant's fields, and the tag goes back in before the answer is parsed.
pub(crate) struct Variant {
    pub(crate) tool: Arc<ToolSpec>,
    /// The tag's key (`kind` in `#[serde(tag = "kind")]`) and this variant's value.
    key: String,
    tag: String,
}

impl OutputSpec {
    /// The spec of an output type; the final-answer tool is named and described as given, else
    /// `final_result` and a sentence saying what calling it does.
    pub(crate) fn new(
        kind: OutputKind,
        mode: OutputMode,
        retries: usize,
        tool_name: Option<String>,
        tool_description: Option<String>,
        validators: Vec<Arc<dyn Validator>>,
        per_variant: bool,
    ) -> Self {
        let short = kind.type_name.rsplit("::").next().unwrap_or(kind.type_name);
        let schema_name: String = short
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(64)
            .collect();
        let wrapped = kind.schema.get("type").and_then(Value::as_str) != Some("object");
        let parameters = if wrapped {
            // `$defs` stay at the root, where the schema's references point.
            let mut inner = kind.schema.clone();
            let defs = inner.as_object_mut().and_then(|map| map.remove("$defs"));
            let mut wrapper = json!({
                "type": "object",
                "properties": { "response": inner },
                "required": ["response"],
                "additionalProperties": false,
            });
            if let Some(defs) = defs {
                wrapper["$defs"] = defs;
            }
            wrapper
        } else {
            kind.schema.clone()
        };
        let tool = ToolSpec {
            name: tool_name.unwrap_or_else(|| "final_result".to_owned()),
            description: tool_description.unwrap_or_else(|| {
                "Give the final answer: calling this ends the turn, once the arguments are valid."
                    .to_owned()
            }),
            parameters,
        };
        let variants = match per_variant {
            true => variants(&kind.schema, &tool).unwrap_or_default(),
            false => Vec::new(),
        };
        OutputSpec {
            schema: OutputSchema {
                name: schema_name,
                schema: kind.schema.clone(),
            },
            kind,
            mode,
            retries,
            tool: Arc::new(tool),
            wrapped,
            validators,
            variants,
        }
    }

    /// Whether a call of this tool gives the answer.
    fn answers(&self, name: &str) -> bool {
        match self.variants.as_slice() {
            [] => self.tool.name == name,
            variants => variants.iter().any(|variant| variant.tool.name == name),
        }
    }

    /// The final-answer tools, as a failure names them.
    fn tool_names(&self) -> String {
        match self.variants.as_slice() {
            [] => format!("the `{}` tool", self.tool.name),
            variants => {
                let names: Vec<String> = variants
                    .iter()
                    .map(|variant| format!("`{}`", variant.tool.name))
                    .collect();
                format!("one of the tools {}", names.join(", "))
            }
        }
    }

    /// Makes one step's request ask for the answer, and says how it asked: natively when
    /// the mode allows, the model takes a schema and the step offers no tools; by the
    /// final-answer tool (required when the tool choice is `auto`); or in the system prompt.
    pub(super) fn shape(&self, model: &dyn Model, request: &mut ModelRequest) -> Asked {
        let toolless = request.tools.is_empty();
        let asked = match self.mode {
            OutputMode::Auto if toolless && model.supports_output_schema() => Asked::Native,
            OutputMode::Native if toolless => Asked::Native,
            OutputMode::Prompted => Asked::Prompted,
            _ => Asked::Tool,
        };
        match asked {
            Asked::Native => request.output_schema = Some(self.schema.clone()),
            Asked::Tool => {
                match self.variants.as_slice() {
                    [] => request.tools.push(self.tool.clone()),
                    variants => request
                        .tools
                        .extend(variants.iter().map(|variant| variant.tool.clone())),
                }
                if request.tool_choice == ToolChoice::Auto {
                    request.tool_choice = ToolChoice::Required;
                }
            }
            Asked::Prompted => {
                let schema = serde_json::to_string(&self.kind.schema).unwrap_or_default();
                let prompt = format!(
                    "Give your final answer as one JSON value matching this JSON Schema, and \
                     nothing else:\n{schema}"
                );
                request.system = Some(match request.system.take() {
                    Some(system) => format!("{system}\n\n{prompt}"),
                    None => prompt,
                });
            }
        }
        asked
    }
}

/// The typed answer read from a step's stream as it comes, for
/// [`TurnEvent::PartialOutput`].
pub(super) struct PartialAnswer {
    json: PartialJson,
    /// Where the answer streams: the final-answer call's arguments (`Some(wrapped)`: under
    /// `response` when wrapped), or the text.
    tool: Option<bool>,
    /// The final-answer call read (the step's first call).
    call: Option<String>,
    /// The text's start is being skipped: leading spaces, and a Markdown fence's first line.
    lead: Lead,
}

/// Where the text answer's JSON starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lead {
    Start,
    Fence,
    Json,
}

impl OutputSpec {
    /// Reading the answer from a step's stream, when the request asks for it as text or by
    /// the final-answer tool as its only tool (with other tools, which call is the answer is
    /// only known once the calls are complete).
    pub(super) fn partials(&self, request: &ModelRequest) -> Option<PartialAnswer> {
        let tool = match request.tools.as_slice() {
            [] => None,
            [only] if only.name == self.tool.name => Some(self.wrapped),
            _ => return None,
        };
        Some(PartialAnswer {
            json: PartialJson::new(),
            tool,
            call: None,
            lead: Lead::Start,
        })
    }
}

impl PartialAnswer {
    /// Reads a chunk of the step; the answer so far when it changed enough to be given.
    pub(super) fn read(&mut self, chunk: &Chunk) -> Option<Value> {
        match (chunk, self.tool) {
            (Chunk::TextDelta(delta), None) => self.text(delta),
            (Chunk::ToolInputDelta { id, delta }, Some(_))
                if self.call.as_ref().is_none_or(|call| call == id) =>
            {
                self.call.get_or_insert_with(|| id.clone());
                self.json.push(delta);
            }
            (Chunk::Discarded { .. }, _) => {
                self.json = PartialJson::new();
                self.call = None;
                self.lead = Lead::Start;
            }
            _ => {}
        }
        let value = self.json.snapshot()?;
        match (self.tool, value) {
            (Some(true), Value::Object(mut args)) => args.remove("response"),
            (Some(true), _) => None,
            (_, value) => Some(value),
        }
    }

    /// Reads answer text, skipping leading spaces and the first line of a fenced block.
    fn text(&mut self, delta: &str) {
        let mut rest = delta;
        if self.lead == Lead::Start {
            rest = rest.trim_start();
            match rest.chars().next() {
                None => return,
                Some('`') => self.lead = Lead::Fence,
                Some(_) => self.lead = Lead::Json,
            }
        }
        if self.lead == Lead::Fence {
            let Some((_, after)) = rest.split_once('\n') else {
                return;
            };
            rest = after;
            self.lead = Lead::Json;
        }
        self.json.push(rest);
    }
}

/// How a step asked for the typed answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Asked {
    Native,
    Tool,
    Prompted,
}

/// What a step's reply did about the typed answer.
pub(super) enum Verdict {
    /// It gave no answer (it called other tools): the turn goes on.
    None,
    /// The answer parsed and passed the validators.
    Accepted(Output),
    /// The answer failed, for this reason; `by_tool` when the model reads it as the
    /// final-answer call's error result.
    Failed { reason: String, by_tool: bool },
}

/// What the turn keeps of its answers.
#[derive(Default)]
pub(super) struct Attempts {
    /// Why each answer failed, in order.
    pub(super) reasons: Vec<String>,
    /// The last answer as the model sent it, and whether it validated; `None` before one.
    pub(super) last: Option<OutputReport>,
}

impl Attempts {
    /// Reads an answer as the model sent it (not validated yet).
    fn read(&mut self, raw: &str) {
        self.last = Some(OutputReport {
            raw: raw.to_owned(),
            validated: false,
        });
    }
}

impl<'a> Turn<'a> {
    /// Parses and validates the step's answer, when the agent has an output type and the
    /// reply gives one; a final-answer call's result is set on the plan for the call to take.
    /// `Err` when a validator failed closed.
    pub(super) async fn check_output(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
        reply: &Reply,
    ) -> Flow<Verdict> {
        plan.output_answers.clear();
        let (Some(spec), Some(asked)) = (self.current.output.as_deref(), plan.asked) else {
            return Ok(Verdict::None);
        };
        let by_tool = asked == Asked::Tool;
        let answered = match (by_tool, reply.tool_calls.is_empty()) {
            (true, true) => Err(format!(
                "the answer was text: give it by calling {}",
                spec.tool_names()
            )),
            (true, false) => {
                let mut finals = reply
                    .tool_calls
                    .iter()
                    .enumerate()
                    .filter(|(_, call)| spec.answers(&call.name));
                let Some((position, call)) = finals.next() else {
                    return Ok(Verdict::None);
                };
                for (other, call) in finals {
                    let why = format!("only one `{}` call per step is read", call.name);
                    plan.output_answers.push((other, answer(call, why, false)));
                }
                self.outcome.attempts.read(&call.arguments);
                let parsed = from_tool(spec, call);
                let verdict = self.validate(spec, step, parsed).await?;
                let (content, accepted) = match &verdict {
                    Ok(_) => ("The final answer was accepted.".to_owned(), true),
                    Err(reason) => (
                        format!(
                            "{reason}\nCall `{}` again with a corrected answer.",
                            call.name
                        ),
                        false,
                    ),
                };
                plan.output_answers
                    .push((position, answer(call, content, accepted)));
                return Ok(match verdict {
                    Ok(output) => Verdict::Accepted(output),
                    Err(reason) => Verdict::Failed { reason, by_tool },
                });
            }
            (false, true) => {
                self.outcome.attempts.read(&reply.text);
                from_text(&reply.text)
            }
            (false, false) => return Ok(Verdict::None),
        };
        let parsed = answered.and_then(|json| (spec.kind.parse)(&json));
        Ok(match self.validate(spec, step, parsed).await? {
            Ok(output) => Verdict::Accepted(output),
            Err(reason) => Verdict::Failed {
                reason,
                by_tool: false,
            },
        })
    }

    /// Runs the validators on a parsed answer, in order, until one sends it back.
    async fn validate(
        &self,
        spec: &OutputSpec,
        step: usize,
        parsed: Result<Output, String>,
    ) -> Flow<Result<Output, String>> {
        let output = match parsed {
            Ok(output) => output,
            Err(reason) => return Ok(Err(reason)),
        };
        let scope = ValidateScope {
            agent: &self.me,
            request_id: &self.request_id,
            step,
            attempt: self.outcome.attempts.reasons.len(),
        };
        for validator in &spec.validators {
            match validator.check(&scope, &output).await {
                Ok(OutputCheck::Accept) => {}
                Ok(OutputCheck::Retry(message)) => return Ok(Err(message)),
                Err(error) => return Err(End::Failed(error, ErrorStage::Turn)),
            }
        }
        Ok(Ok(output))
    }

    /// What the step's verdict makes of the turn once the step is recorded (`next`): an
    /// accepted answer completes it; a failed one is sent back (as the final-answer call's
    /// error result, or a user message) while retries remain, else fails the turn.
    pub(super) async fn settle_output(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
        verdict: Verdict,
        next: Flow<Option<usize>>,
    ) -> Flow<Option<usize>> {
        let ended = |next: &Flow<Option<usize>>| matches!(next, Err(end) if !matches!(end, End::Completed(StopReason::Finished)));
        match verdict {
            Verdict::None => next,
            _ if ended(&next) => next,
            Verdict::Accepted(output) => {
                self.outcome.text = output.json.to_string();
                if let Some(last) = &mut self.outcome.attempts.last {
                    last.validated = true;
                }
                if self.sink.is_some() {
                    let output = output.clone();
                    self.emit(TurnEvent::Output { step, output }).await;
                }
                self.outcome.output = Some(output);
                Err(End::Completed(StopReason::Finished))
            }
            Verdict::Failed { reason, by_tool } => {
                self.outcome.attempts.reasons.push(reason.clone());
                let retries = plan
                    .output_retries
                    .unwrap_or_else(|| self.current.output.as_ref().map_or(0, |spec| spec.retries));
                let attempts = &self.outcome.attempts;
                if attempts.reasons.len() > retries {
                    let message = format!(
                        "no valid answer after {} attempts: {}",
                        attempts.reasons.len(),
                        attempts.reasons.join("; ")
                    );
                    let failure = OutputFailure {
                        raw: attempts
                            .last
                            .as_ref()
                            .map(|last| last.raw.clone())
                            .unwrap_or_default(),
                        reasons: attempts.reasons.clone(),
                    };
                    let error = TurnError::new(TurnErrorKind::Output(failure), message);
                    return Err(End::Failed(error, ErrorStage::Turn));
                }
                if by_tool {
                    return next;
                }
                let retry = Message::user(format!(
                    "Your answer was not accepted: {reason}\nAnswer again, correcting it."
                ));
                self.add(retry.clone()).await?;
                plan.history_mut().push(retry);
                Ok(None)
            }
        }
    }
}

/// The final-answer call's result, as the model reads it.
fn answer(call: &ToolCall, content: String, accepted: bool) -> ToolResultRecord {
    ToolResultRecord {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error: !accepted,
        outcome: if accepted {
            ToolOutcomeKind::Executed
        } else {
            ToolOutcomeKind::Rejected
        },
        duration: std::time::Duration::ZERO,
    }
}

/// A final-answer call of the step at `position`, answered by [`Turn::check_output`]: no tool
/// runs for it.
pub(super) fn answered(plan: &TurnPlan<'_>, position: usize) -> Option<CallResult> {
    let (_, record) = plan.output_answers.iter().find(|(at, _)| *at == position)?;
    Some(CallResult {
        record: record.clone(),
        error: None,
        dropped: false,
        handoff: None,
        pending: Vec::new(),
        via: None,
    })
}

/// The answer in a final-answer call's arguments (a variant's tag put back in).
fn from_tool(spec: &OutputSpec, call: &ToolCall) -> Result<Output, String> {
    let args: Value = serde_json::from_str(&call.arguments)
        .map_err(|error| format!("the arguments are not JSON: {error}"))?;
    if let Some(variant) = spec.variants.iter().find(|v| v.tool.name == call.name) {
        let Value::Object(mut fields) = args else {
            return Err("the arguments are not an object".to_owned());
        };
        fields.insert(variant.key.clone(), Value::String(variant.tag.clone()));
        return (spec.kind.parse)(&Value::Object(fields));
    }
    let json = match (spec.wrapped, args) {
        (true, Value::Object(mut map)) => map
            .remove("response")
            .ok_or_else(|| "the arguments lack `response`".to_owned())?,
        (true, _) => return Err("the arguments are not an object with `response`".to_owned()),
        (false, args) => args,
    };
    (spec.kind.parse)(&json)
}

/// The variants of an internally tagged enum's schema (`oneOf` objects sharing a property
/// that holds one constant string), each as a final-answer tool named `{tool}_{tag}` taking
/// the variant's other fields; `None` when the schema is not one.
fn variants(schema: &Value, tool: &ToolSpec) -> Option<Vec<Variant>> {
    let defs = schema.get("$defs");
    let mut key: Option<String> = None;
    let mut out = Vec::new();
    for variant in schema.get("oneOf")?.as_array()? {
        let properties = variant.get("properties")?.as_object()?;
        let (tag_key, tag) = properties.iter().find_map(|(name, property)| {
            let tag = property.get("const")?.as_str()?;
            (key.is_none() || key.as_deref() == Some(name.as_str())).then_some((name, tag))
        })?;
        key = Some(tag_key.clone());
        let mut parameters = variant.clone();
        let object = parameters.as_object_mut()?;
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            properties.remove(tag_key);
        }
        if let Some(Value::Array(required)) = object.get_mut("required") {
            required.retain(|name| name != tag_key);
        }
        let description = object
            .remove("description")
            .and_then(|d| d.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("{} The answer is `{tag}`.", tool.description));
        if let Some(defs) = defs {
            object.insert("$defs".to_owned(), defs.clone());
        }
        out.push(Variant {
            tool: Arc::new(ToolSpec {
                name: format!("{}_{tag}", tool.name),
                description,
                parameters,
            }),
            key: tag_key.clone(),
            tag: tag.to_owned(),
        });
    }
    (!out.is_empty()).then_some(out)
}

/// The JSON answer in a reply's text: the whole text, or its fenced ```` ```json ```` block.
fn from_text(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed);
    if body.is_empty() {
        return Err("the answer was empty: answer with JSON".to_owned());
    }
    serde_json::from_str(body).map_err(|error| format!("the answer is not JSON: {error}"))
}
