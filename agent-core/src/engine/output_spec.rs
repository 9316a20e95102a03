//! An agent's output type at run time: how each step asks for the typed answer (native
//! schema, final-answer tool or prompt), how its partial answers are read as it streams, and
//! what a turn keeps of its answers. Checking a reply's answer is `output.rs`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::output_variants::{Variant, variants};
use crate::hooks::output::{OutputKind, Validator};
use crate::hooks::{Chunk, OutputMode, OutputReport};
use crate::model::{Model, ModelRequest, OutputSchema, ToolChoice};
use crate::partial_json::PartialJson;
use crate::text::Text;
use crate::tool::ToolSpec;

/// An agent's output type and how its answers are asked for and checked.
pub(crate) struct OutputSpec {
    pub(crate) kind: OutputKind,
    pub(crate) mode: OutputMode,
    /// How many failed answers are sent back to be fixed before the turn fails.
    pub(crate) retries: usize,
    /// The schema the native mode sends (shared by each request, not copied).
    pub(crate) schema: OutputSchema,
    /// What the prompted mode appends to the system prompt: the schema, written once.
    prompt: String,
    /// The final-answer tool.
    pub(crate) tool: Arc<ToolSpec>,
    /// The tool's arguments hold the answer under `response` (a type whose schema is not an
    /// object: tool arguments must be one).
    pub(crate) wrapped: bool,
    /// validate_output hooks, in run order.
    pub(crate) validators: Vec<Arc<dyn Validator>>,
    /// One final-answer tool per variant of an enum, offered instead of `tool`
    /// (`AgentBuilder::output_tool_per_variant`); empty otherwise. Shared with a step's
    /// partial answer.
    pub(crate) variants: Arc<[Variant]>,
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
            true => variants(&kind.schema, &tool).unwrap_or_default().into(),
            false => Arc::default(),
        };
        let prompt = format!(
            "Give your final answer as one JSON value matching this JSON Schema, and nothing \
             else:\n{}",
            kind.schema
        );
        OutputSpec {
            schema: OutputSchema::new(schema_name, kind.schema.clone()),
            prompt,
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
    pub(super) fn answers(&self, name: &str) -> bool {
        match &*self.variants {
            [] => self.tool.name == name,
            variants => variants.iter().any(|variant| variant.tool.name == name),
        }
    }

    /// The final-answer tools, as a failure names them.
    pub(super) fn tool_names(&self) -> String {
        match &*self.variants {
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
    /// `Auto` asks natively only for an object (OpenAI's response format and Anthropic's
    /// answer tool take no other root) offered as one answer (not one tool per variant).
    pub(super) fn shape(&self, model: &dyn Model, request: &mut ModelRequest) -> Asked {
        let toolless = request.tools.is_empty();
        let native = !self.wrapped && self.variants.is_empty() && model.supports_output_schema();
        let asked = match self.mode {
            OutputMode::Auto if toolless && native => Asked::Native,
            OutputMode::Native if toolless => Asked::Native,
            OutputMode::Prompted => Asked::Prompted,
            _ => Asked::Tool,
        };
        match asked {
            Asked::Native => request.output_schema = Some(self.schema.clone()),
            Asked::Tool => {
                match &*self.variants {
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
                let prompt = &self.prompt;
                request.system = Some(match request.system.take() {
                    Some(system) => format!("{system}\n\n{prompt}"),
                    None => prompt.clone(),
                });
            }
        }
        asked
    }
}

/// The typed answer read from a step's stream as it comes, for
/// [`TurnEvent::PartialOutput`](crate::TurnEvent::PartialOutput).
pub(super) struct PartialAnswer {
    json: PartialJson,
    /// Where the answer streams: the final-answer call's arguments (`Some(wrapped)`: under
    /// `response` when wrapped), or the text.
    tool: Option<bool>,
    /// The final-answer call read: see [`Named`].
    call: Option<Text>,
    /// Which call is the answer.
    named: Named,
    /// With one tool per variant: the variant whose tool the call read calls.
    variant: Option<usize>,
    /// The text's start is being skipped: leading spaces, a sentence before a fenced block,
    /// and the fence's first line.
    lead: Lead,
}

/// Which of a step's calls gives the answer, as its partials are read.
enum Named {
    /// The step's first call: the final-answer tool (given) is the only one offered, or none
    /// is. A model that names its calls as they start may still call another tool (one not
    /// offered): from such a start on, only a call started under the tool's name is read.
    First(Option<Arc<ToolSpec>>),
    /// The first call started under this tool's name, the step offering other tools too:
    /// which call is the answer is known only from a call's start
    /// ([`ModelEvent::ToolCallStart`]).
    ///
    /// [`ModelEvent::ToolCallStart`]: crate::ModelEvent::ToolCallStart
    Tool(Arc<ToolSpec>),
    /// The first call started under one of these variants' tools (one tool per variant): its
    /// arguments are given back as the enum's own JSON.
    Variants(Arc<[Variant]>),
}

/// Where the text answer's JSON starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lead {
    Start,
    /// A sentence before the answer's fenced block ("Here it is:"), as the answer is read
    /// whole (`from_text`): skipped up to a line that opens with three backticks, with how
    /// many of them the current line opened with so far (`None` past its start).
    Prose(Option<u8>),
    Fence,
    Json,
}

impl OutputSpec {
    /// Reading the answer from a step's stream, when the request asks for it as text, by the
    /// final-answer tool (the only tool offered, or beside others: then the answer is the
    /// step's first call started under its name), or by one tool per variant (the step's first
    /// call started under a variant's tool).
    pub(super) fn partials(&self, request: &ModelRequest) -> Option<PartialAnswer> {
        let single = self.variants.is_empty();
        let variant = |name: &str| self.variants.iter().any(|v| v.tool.name == name);
        let (tool, named) = match request.tools.as_slice() {
            [] => (None, Named::First(None)),
            [only] if single && only.name == self.tool.name => {
                (Some(self.wrapped), Named::First(Some(self.tool.clone())))
            }
            tools if single && tools.iter().any(|t| t.name == self.tool.name) => {
                (Some(self.wrapped), Named::Tool(self.tool.clone()))
            }
            tools if tools.iter().any(|t| variant(&t.name)) => {
                (Some(false), Named::Variants(self.variants.clone()))
            }
            _ => return None,
        };
        Some(PartialAnswer {
            json: PartialJson::new(),
            tool,
            call: None,
            named,
            variant: None,
            lead: Lead::Start,
        })
    }
}

impl PartialAnswer {
    /// A tool call of the step began: with other tools offered, or one per variant, the first
    /// one calling a final-answer tool is the one read.
    fn start(&mut self, id: &Text, name: &str) {
        if self.call.is_some() {
            return;
        }
        match &self.named {
            Named::First(None) => {}
            Named::First(Some(tool)) if tool.name == name => self.call = Some(id.clone()),
            Named::First(Some(tool)) => self.named = Named::Tool(tool.clone()),
            Named::Tool(tool) => {
                if tool.name == name {
                    self.call = Some(id.clone());
                }
            }
            Named::Variants(variants) => {
                if let Some(at) = variants.iter().position(|v| v.tool.name == name) {
                    self.call = Some(id.clone());
                    self.variant = Some(at);
                }
            }
        }
    }

    /// Reads a chunk of the step; the answer so far when it changed enough to be given.
    pub(super) fn read(&mut self, chunk: &Chunk) -> Option<Value> {
        match (chunk, self.tool) {
            (Chunk::TextDelta(delta), None) => self.text(delta),
            (Chunk::ToolInputStart { id, name }, Some(_)) => self.start(id, name),
            (Chunk::ToolInputDelta { id, delta }, Some(_))
                if self
                    .call
                    .as_ref()
                    .map_or(matches!(self.named, Named::First(_)), |call| call == id) =>
            {
                self.call.get_or_insert_with(|| id.clone());
                self.json.push(delta);
            }
            (Chunk::Discarded { .. }, _) => {
                self.json = PartialJson::new();
                self.call = None;
                self.variant = None;
                self.lead = Lead::Start;
            }
            _ => {}
        }
        let value = self.json.snapshot()?;
        match (self.tool, value) {
            (Some(true), Value::Object(mut args)) => args.remove("response"),
            (Some(true), _) => None,
            (Some(false), value) => match (&self.named, self.variant) {
                // A variant's content is given once the enum's JSON can be made of it (a
                // content under `response` once that member started).
                (Named::Variants(variants), Some(at)) => {
                    variants.get(at)?.rebuild_value(value).ok()
                }
                _ => Some(value),
            },
            (None, value) => Some(value),
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
                // What a JSON value may start with (`true`, `false` and `null` among them).
                Some('{' | '[' | '"' | '-' | '0'..='9' | 't' | 'f' | 'n') => self.lead = Lead::Json,
                Some(_) => self.lead = Lead::Prose(None),
            }
        }
        if let Lead::Prose(mut ticks) = self.lead {
            let mut opened = None;
            for (at, c) in rest.char_indices() {
                ticks = match (c, ticks) {
                    ('\n', _) => Some(0),
                    ('`', Some(2)) => {
                        opened = Some(at + 1);
                        break;
                    }
                    ('`', Some(n)) => Some(n + 1),
                    _ => None,
                };
            }
            match opened {
                Some(at) => {
                    rest = &rest[at..];
                    self.lead = Lead::Fence;
                }
                None => {
                    self.lead = Lead::Prose(ticks);
                    return;
                }
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

/// What the turn keeps of its answers.
#[derive(Default)]
pub(super) struct Attempts {
    /// Why each answer failed, in order.
    pub(super) reasons: Vec<String>,
    /// The last answer as the model sent it, and whether it validated; `None` before one.
    pub(super) last: Option<OutputReport>,
}

impl Attempts {
    /// Reads an answer as the model sent it (not validated yet): kept once, shared with the
    /// output's text when that is the same text.
    pub(super) fn read(&mut self, raw: &str) -> Arc<str> {
        let raw: Arc<str> = Arc::from(raw);
        self.last = Some(OutputReport {
            raw: raw.clone(),
            validated: false,
        });
        raw
    }
}
