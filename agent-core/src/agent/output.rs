//! Typed output on the builder: the agent's output type, how its answer is asked for, the
//! retries a failed answer gets, and the validators it passes.

use hashbrown::HashMap;
use std::sync::Arc;

use super::AgentBuilder;
use crate::engine::output_variants::variants;
use crate::engine::runtime::OutputSpec;
use crate::hooks::event::ValidateOutput;
use crate::hooks::output::{OutputKind, Validator};
use crate::hooks::{Hook, OutputMode, OutputType};
use crate::tool::is_valid_tool_name;

/// What the builder gathers about the agent's output type.
#[derive(Default)]
pub(super) struct OutputOptions {
    kind: Option<OutputKind>,
    mode: OutputMode,
    retries: Option<usize>,
    tool: (Option<String>, Option<String>),
    validators: Vec<Arc<dyn Validator>>,
    per_variant: bool,
}

impl OutputOptions {
    /// The agent's output spec; a validator typed on another type, or a final-answer tool
    /// name that is invalid or taken, is a problem.
    pub(super) fn build(
        self,
        tools: &HashMap<String, usize>,
        problems: &mut Vec<String>,
    ) -> Option<Arc<OutputSpec>> {
        let OutputOptions {
            kind,
            mode,
            retries,
            tool: (tool_name, tool_description),
            mut validators,
            per_variant,
        } = self;
        let Some(kind) = kind else {
            for validator in &validators {
                problems.push(format!(
                    "validate_output hook `{}`: the agent has no output type; set one with `.output::<T>()`",
                    validator.name()
                ));
            }
            return None;
        };
        for validator in &validators {
            if validator.type_id() != kind.type_id {
                problems.push(format!(
                    "validate_output hook `{}` is typed on another type than the agent's output type `{}`",
                    validator.name(),
                    kind.type_name
                ));
            }
        }
        validators.sort_by_key(|validator| validator.priority());
        let spec = OutputSpec::new(
            kind,
            mode,
            retries.unwrap_or(1),
            tool_name,
            tool_description,
            validators,
            per_variant,
        );
        if per_variant && let Err(why) = variants(&spec.kind.schema, &spec.tool) {
            problems.push(format!(
                "`output_tool_per_variant`: `{}` cannot be offered as one tool per variant: {why}; \
                 it takes an enum tagged externally (serde's default), internally \
                 (`#[serde(tag = \"...\")]`) or adjacently (`#[serde(tag = \"...\", content = \"...\")]`)",
                spec.kind.type_name
            ));
        }
        if mode == OutputMode::Native && (spec.wrapped || per_variant) {
            problems.push(format!(
                "`OutputMode::Native` asks for `{}` as the reply's own JSON, and a provider's \
                 native structured output takes only an object (a struct) there; use \
                 `OutputMode::Auto` or `OutputMode::Tool` for an enum or another non-object type",
                spec.kind.type_name
            ));
        }
        let names = std::iter::once(&spec.tool).chain(spec.variants.iter().map(|v| &v.tool));
        for name in names.map(|tool| &tool.name) {
            if !is_valid_tool_name(name) {
                problems.push(format!(
                    "invalid final-answer tool name `{name}`: use 1 to 64 of `[A-Za-z0-9_-]`"
                ));
            }
            if tools.contains_key(name) {
                problems.push(format!(
                    "the final-answer tool name `{name}` is taken by a tool; name it with `output_tool`"
                ));
            }
        }
        Some(Arc::new(spec))
    }
}

impl AgentBuilder {
    /// Makes the agent's final answer a `T`: the model is asked for JSON matching `T`'s schema
    /// (see [`OutputMode`]), the answer is parsed (a failure names the JSON path) and
    /// validated, and [`TurnResult::output`](crate::TurnResult::output) returns it. An answer
    /// that fails is sent back to the model to fix, up to
    /// [`output_retries`](Self::output_retries) times; then the turn fails with
    /// [`TurnErrorKind::Output`](crate::TurnErrorKind::Output).
    pub fn output<T: OutputType>(mut self) -> Self {
        self.output.kind = Some(OutputKind::of::<T>());
        self
    }

    /// How the typed answer is asked for (default [`OutputMode::Auto`]).
    pub fn output_mode(mut self, mode: OutputMode) -> Self {
        self.output.mode = mode;
        self
    }

    /// How many failed answers are sent back to the model to fix before the turn fails
    /// (default 1); a turn may set its own with
    /// [`TurnRequest::output_retries`](crate::TurnRequest::output_retries).
    pub fn output_retries(mut self, retries: usize) -> Self {
        self.output.retries = Some(retries);
        self
    }

    /// Names and describes the final-answer tool (default `final_result`).
    pub fn output_tool(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.output.tool = (Some(name.into()), Some(description.into()));
        self
    }

    /// Offers an enum as one final-answer tool per variant, named `{tool}_{variant}` with the
    /// variant in snake case (`final_result_approve`), instead of one tool taking the tagged
    /// schema under `response`. A tool's arguments are its variant's content: the fields of
    /// an object, anything else under `response`, none for a unit variant. The model picks the
    /// variant by the tool it calls, and the answer is put back in the enum's own JSON before
    /// it is parsed. The enum may be tagged externally (serde's default), internally
    /// (`#[serde(tag = "kind")]`) or adjacently (`#[serde(tag = "t", content = "c")]`); an
    /// output type that is no such enum (a struct, an untagged enum) does not build.
    pub fn output_tool_per_variant(mut self) -> Self {
        self.output.per_variant = true;
        self
    }

    /// Adds a validate_output hook: it reads each answer that parsed, and may send it back
    /// with [`OutputCheck::Retry`](crate::OutputCheck::Retry). Hooks run by priority, then in
    /// order, until one sends the answer back; a failing one fails the turn.
    pub fn validate_output<T: OutputType>(mut self, hook: Hook<ValidateOutput<T>>) -> Self {
        self.output.validators.push(Arc::new(hook));
        self
    }
}
