//! The `#[agent]`, `#[tool]`, `#[hook]` and `#[run_hooks]` attributes of `agent-core`.
//!
//! Use them through `agent_core::{agent, tool, hook, run_hooks}`; this crate is an implementation detail.
//! Each attribute lives in its own module, split into parse (syntax to a typed model that keeps
//! spans), check (rules across items, such as matchers against the agent's tools) and expand
//! (model to code against agent-core's public builder API).
#![forbid(unsafe_code)]

mod agent;
mod common;
mod ctxt;
mod hook;
mod run_hooks;
mod tool;

#[cfg(test)]
mod expand_tests;

use proc_macro::TokenStream;

/// Makes a function a tool the model can call.
///
/// The doc comment is the tool's description (required). Parameters become a generated args
/// struct (serde + JSON Schema 2020-12); a parameter's doc comment describes it, `Option<T>`
/// parameters are optional and `#[arg(default = EXPR)]` gives a default. A parameter of type
/// `ToolContext` receives the call's context and is not part of the schema. Options:
/// `name = "..."` (1 to 64 of `[A-Za-z0-9_-]`), `timeout_ms = N` (the tool's own call timeout,
/// `Tool::TIMEOUT`), `needs_approval` (every call waits for a person's approval) or
/// `needs_approval = path` (a function `fn(&Args) -> bool` deciding per call;
/// `Tool::needs_approval`), `idempotent` (`Tool::IDEMPOTENT`), `retries = N` (the tool's own
/// retry limit, `Tool::RETRIES`), `crate = path`.
///
/// # Generated names
///
/// `#[tool] fn read_file` generates the module `read_file_tool` beside the function (with its
/// visibility), holding the tool type `read_file_tool::ReadFile` and its arguments
/// `read_file_tool::ReadFileArgs`; so the tool never collides with a type of yours named
/// `ReadFile`. A tool method of an `#[agent]` impl is generated in the agent's module instead
/// (see [`macro@agent`]). The args struct is declared in the module, which glob-imports its
/// parent: parameter types are the ones in scope at the function, except a type declared
/// inside a function body (a tool taking one belongs at module level).
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    tool::entry(args.into(), input.into()).into()
}

/// Makes a function a lifecycle hook: `#[hook(EVENT, ...)]`.
///
/// Options: `tool = "name"`, `tools = ["a", "b"]`, `match = "regex"` (tool events only),
/// `dynamic`, `priority = N`, `on_error = "fail_open" | "fail_closed"`, `timeout_ms = N`,
/// `crate = path`. Inside an `#[agent]` impl the matcher is checked against the agent's tools at
/// compile time; on a free function it is checked when the agent is built.
#[proc_macro_attribute]
pub fn hook(args: TokenStream, input: TokenStream) -> TokenStream {
    hook::entry(args.into(), input.into()).into()
}

/// Makes an impl block an agent, collecting its `#[tool]` and `#[hook]` methods.
///
/// Options: `name = "..."` (default: the type's name), `description = "..."` (default: the
/// impl block's doc comment), `instructions = "..."`, `max_steps = N` (default 10),
/// `stop_at_tools("name", ...)` (tools whose result ends the turn as its answer, as
/// `AgentBuilder::stop_at_tools`; each must be one of the agent's tools, and the agent may not
/// have an output type), `tools(path, ...)` for tools defined elsewhere, `hooks(path, ...)` for hooks defined
/// elsewhere, `output = Type` (the final answer's type, as `AgentBuilder::output`; its
/// `#[hook(validate_output)]` methods take the answer `&Type`, its `&OutputContext<Type>`, or
/// both) with `output_retries = N` (default 1), `crate = path` (agent-core under another
/// name; the inner `#[path::tool]` and `#[path::hook]` are then recognised too). A tool or
/// hook method cannot be under `#[cfg]` (the agent registers it in every configuration): make
/// it a free function under `#[cfg]`, added to the builder under the same `#[cfg]`.
///
/// Multi-agent options: `context = Type` registers `context_type::<Type>()` and lets tool and
/// hook methods take a parameter `&Type` (recognised by the type's last path segment and
/// generic arguments), passed from `agent_core::run_context::<Type>()` and left out of a
/// tool's schema. `handoffs(name, ...)` and `subagents(name, ...)` name the agent's targets:
/// the agent is then built with `builder_with(<agent>_targets::Targets { name: Handoff::to(&a),
/// .. })` (or `shared_builder_with`), does not implement `AgentSpec`, and calling `builder()`
/// on it is a compile error naming `builder_with`.
///
/// # Generated names
///
/// The tool methods of `#[agent] impl FileAgent` generate the module `file_agent_tools` (the
/// agent's name in snake case) holding each tool's type and arguments:
/// `file_agent_tools::ReadFile` and `file_agent_tools::ReadFileArgs` for `read_file`. Two
/// agents with a `read_file` tool in one module therefore do not collide. A tool listed in
/// `tools(read_file)` is `read_file_tool::ReadFile` (see [`macro@tool`]). Hook signatures name
/// these paths: `ctx: &ToolCallContext<file_agent_tools::ReadFileArgs>`. The enum of all the
/// agent's tool inputs (`<Agent>Input`) and the enums named in hook signatures are generated
/// beside the impl block. An agent with handoffs or subagents generates the module
/// `<agent>_targets` (`triage_targets` for `Triage`) holding the struct `Targets`.
#[proc_macro_attribute]
pub fn agent(args: TokenStream, input: TokenStream) -> TokenStream {
    agent::entry(args.into(), input.into()).into()
}

/// Makes an impl block a type's run hooks: writes `impl RunHooks` for the type with its
/// methods, each checked against the trait's method of its name.
///
/// ```ignore
/// #[run_hooks]
/// impl Timeline {
///     fn on_agent_start(&self, agent: &RunAgent) { /* ... */ }
///     fn on_handoff(&self, from: &RunAgent, to: &str) { /* ... */ }
/// }
/// ```
///
/// The methods are any of `on_agent_start(&self, agent: &RunAgent)`,
/// `on_agent_end(&self, agent: &RunAgent, output: &str)`, `on_handoff(&self, from: &RunAgent,
/// to: &str)`, `on_tool_start(&self, agent: &RunAgent, call: &ToolCall)`,
/// `on_tool_end(&self, agent: &RunAgent, result: &ToolResultRecord)`,
/// `on_llm_start(&self, agent: &RunAgent, request: &ModelRequest)` and
/// `on_llm_end(&self, agent: &RunAgent, text: &str, tool_calls: usize)`; the others keep
/// their defaults, which do nothing. A method of another name, another signature, `async` or
/// without `&self` is a compile error on it. Generic impl blocks are supported. Options:
/// `crate = path`.
#[proc_macro_attribute]
pub fn run_hooks(args: TokenStream, input: TokenStream) -> TokenStream {
    run_hooks::entry(args.into(), input.into()).into()
}
