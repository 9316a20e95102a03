//! Expansion snapshots: representative inputs of each attribute, expanded and pretty-printed,
//! compared with `snapshots/<name>.expanded.rs`. Set `UPDATE_EXPANSIONS=1` to rewrite them.

use std::path::PathBuf;

use proc_macro2::TokenStream;
use quote::quote;

fn check(name: &str, expanded: TokenStream) {
    let file: syn::File = syn::parse2(expanded).expect("the expansion parses as a file");
    let pretty = prettyplease::unparse(&file);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("snapshots")
        .join(format!("{name}.expanded.rs"));
    if std::env::var_os("UPDATE_EXPANSIONS").is_some() {
        std::fs::write(&path, &pretty).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}; run with UPDATE_EXPANSIONS=1",
            path.display()
        )
    });
    assert_eq!(
        pretty, expected,
        "expansion of `{name}` changed; rerun with UPDATE_EXPANSIONS=1 and review the diff"
    );
}

#[test]
fn free_tool_with_options() {
    let expanded = crate::tool::entry(
        quote!(name = "search-notes", timeout_ms = 5000),
        quote! {
            /// Search the notes.
            pub async fn search(
                /// What to look for.
                query: String,
                #[arg(default = 10)]
                limit: u32,
                tag: Option<String>,
                ctx: ToolContext,
            ) -> Result<Vec<String>, std::io::Error> {
                Ok(vec![query])
            }
        },
    );
    check("free_tool", expanded);
}

#[test]
fn streaming_tool() {
    let expanded = crate::tool::entry(
        quote!(),
        quote! {
            /// Index the files, reporting progress.
            async fn index(root: String) -> Result<ToolStream<Progress, Summary>, std::io::Error> {
                Ok(ToolStream::new(updates(root)))
            }
        },
    );
    check("streaming_tool", expanded);
}

#[test]
fn tool_with_approval_options() {
    let expanded = crate::tool::entry(
        quote!(needs_approval = over_a_thousand, idempotent, retries = 2),
        quote! {
            /// Transfer money.
            fn transfer(amount: u32) -> String {
                format!("sent {amount}")
            }
        },
    );
    check("tool_approval", expanded);
}

#[test]
fn free_hook_with_matcher() {
    let expanded = crate::hook::entry(
        quote!(before_tool_call, match = "^rm_", dynamic, priority = -5, on_error = "fail_open", timeout_ms = 250),
        quote! {
            async fn no_deletes(ctx: &ToolCallContext<Value>) -> ToolCallDecision<Value> {
                ToolCallDecision::block("no")
            }
        },
    );
    check("free_hook", expanded);
}

#[test]
fn agent_with_tools_hooks_and_enum() {
    let expanded = crate::agent::entry(
        quote!(
            instructions = "Be careful.",
            max_steps = 8,
            tools(current_time),
            hooks(audit_all)
        ),
        quote! {
            impl FileAgent {
                /// Read a UTF-8 text file.
                #[tool]
                async fn read_file(&self, path: String) -> Result<String, ToolError> {
                    Ok(path)
                }

                /// Replace a file's contents.
                #[tool]
                fn write_file(&self, path: String, contents: String) -> usize {
                    contents.len()
                }

                #[hook(before_tool_call, match = "..._file")]
                async fn sandbox(&self, ctx: &ToolCallContext<FileCall>) -> ToolCallDecision<FileCall> {
                    ToolCallDecision::Allow
                }

                #[hook(after_tool_call, tool = "write_file")]
                fn audit(&self, ctx: &ToolCallResultContext<file_agent_tools::WriteFileArgs, usize>) {}

                #[hook(on_chunk)]
                fn meter(&self, ctx: &ChunkContext) {}
            }
        },
    );
    check("agent", expanded);
}

#[test]
fn errors_are_reported_together_and_the_item_is_kept() {
    let expanded = crate::tool::entry(
        quote!(name = "bad name", colour = "red"),
        quote! {
            fn read(path: &str) -> String { path.to_owned() }
        },
    );
    let text = expanded.to_string();
    assert!(
        text.contains("fn read"),
        "the item is still emitted: {text}"
    );
    assert!(text.contains("unknown `#[tool]` option"), "{text}");
    assert!(text.contains("has no description"), "{text}");
    assert!(text.contains("must be an owned type"), "{text}");
}

#[test]
fn agent_with_context_handoffs_and_subagents() {
    let expanded = crate::agent::entry(
        quote!(
            name = "triage",
            context = User,
            handoffs(billing, tech),
            subagents(ledger)
        ),
        quote! {
            impl Triage {
                /// The name of the user asking.
                #[tool]
                async fn whoami(&self, ctx: ToolContext, user: &User) -> String {
                    user.name.clone()
                }

                #[hook(before_handoff)]
                fn admins_only(&self, ctx: &HandoffContext, user: &User) -> HandoffDecision {
                    HandoffDecision::Allow
                }

                #[hook(on_subagent_start)]
                async fn started(&self, user: &User, ctx: &SubagentStartContext) {}
            }
        },
    );
    check("agent_multi", expanded);
}

#[test]
fn agent_with_output_validators() {
    let expanded = crate::agent::entry(
        quote!(output = Invoice, output_retries = 2),
        quote! {
            impl Clerk {
                #[hook(validate_output)]
                fn non_zero(&self, invoice: &Invoice) -> OutputCheck {
                    OutputCheck::Accept
                }

                #[hook(validate_output, priority = 1)]
                async fn numbered(&self, ctx: &OutputContext<Invoice>, invoice: &Invoice) -> OutputCheck {
                    OutputCheck::Accept
                }
            }
        },
    );
    check("agent_output", expanded);
}

#[test]
fn run_hooks_on_a_generic_impl() {
    let expanded = crate::run_hooks::entry(
        quote!(),
        quote! {
            impl<T: Display + Send + Sync + 'static> Timeline<T> {
                fn on_agent_start(&self, agent: &RunAgent) {
                    println!("[{}] {}", self.tag, agent.path);
                }

                fn on_handoff(&self, from: &RunAgent, to: &str) {
                    println!("[{}] {} -> {to}", self.tag, from.name);
                }
            }
        },
    );
    check("run_hooks", expanded);
}
