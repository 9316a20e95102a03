//! Parsing `#[agent(...)]` options and collecting the impl block's tools and hooks.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Ident, ImplItem, ItemImpl, LitInt, LitStr, Path, Token, Type};

use crate::common::{
    AttrKind, Doc, attr_kind, doc_text, int_option, parse_crate_value, unknown_option,
};
use crate::ctxt::Ctxt;
use crate::hook::{HookAttr, HookFn, parse_hook};
use crate::tool::{ToolAttr, ToolFn, parse_tool};

/// The options of `#[agent(...)]`.
#[derive(Default)]
pub(crate) struct AgentAttr {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) instructions: Option<LitStr>,
    pub(crate) max_steps: Option<LitInt>,
    /// `stop_at_tools("a", "b")`: the tools whose answered call ends the turn.
    pub(crate) stop_at_tools: Option<Vec<LitStr>>,
    pub(crate) tools: Vec<Path>,
    pub(crate) hooks: Vec<Path>,
    /// `context = T`: the type of the run context every turn carries.
    pub(crate) context: Option<Type>,
    /// `output = T`: the type the agent's final answer parses into.
    pub(crate) output: Option<Type>,
    /// `output_retries = N`: how many failed answers go back to the model to fix.
    pub(crate) output_retries: Option<LitInt>,
    /// `handoffs(a, b)`: the names of the agents this one may hand a turn to.
    pub(crate) handoffs: Vec<Ident>,
    /// `subagents(a, b)`: the names of the agents this one may call as tools.
    pub(crate) subagents: Vec<Ident>,
    /// Whether `handoffs(...)` or `subagents(...)` is written (even empty, after an error): the
    /// agent is then built with its targets, `builder_with`.
    pub(crate) declares_targets: bool,
    pub(crate) crate_path: Option<Path>,
}

/// Every `#[agent]` option, for "did you mean" and "expected one of" messages.
const OPTIONS: &[&str] = &[
    "name",
    "description",
    "instructions",
    "max_steps",
    "stop_at_tools",
    "tools",
    "hooks",
    "context",
    "output",
    "output_retries",
    "handoffs",
    "subagents",
    "crate",
];

fn set<T>(
    meta: &syn::meta::ParseNestedMeta<'_>,
    slot: &mut Option<T>,
    key: &str,
    value: T,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error(format!("duplicate `{key}` option: give it once")));
    }
    *slot = Some(value);
    Ok(())
}

impl AgentAttr {
    pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> AgentAttr {
        let mut attr = AgentAttr::default();
        let (mut saw_tools, mut saw_hooks) = (false, false);
        let (mut saw_handoffs, mut saw_subagents) = (false, false);
        let parser = syn::meta::parser(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "name" => set(&meta, &mut attr.name, "name", meta.value()?.parse()?),
                "description" => set(
                    &meta,
                    &mut attr.description,
                    "description",
                    meta.value()?.parse()?,
                ),
                "instructions" => set(
                    &meta,
                    &mut attr.instructions,
                    "instructions",
                    meta.value()?.parse()?,
                ),
                "max_steps" => {
                    let what =
                        "`max_steps` takes a whole number from 1, for example `max_steps = 8`";
                    let (lit, steps) = int_option::<usize>(&meta, what, what)?;
                    if steps == 0 {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`max_steps` must be at least 1",
                        ));
                    }
                    set(&meta, &mut attr.max_steps, "max_steps", lit)
                }
                "stop_at_tools" => {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let what = "`stop_at_tools` takes the names of the agent's tools whose result ends the turn, for example `stop_at_tools(\"report\")`";
                    let names = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)
                        .map_err(|error| syn::Error::new(error.span(), what))?;
                    set(
                        &meta,
                        &mut attr.stop_at_tools,
                        "stop_at_tools",
                        names.into_iter().collect(),
                    )
                }
                "tools" | "hooks" => {
                    let seen = if key == "tools" {
                        &mut saw_tools
                    } else {
                        &mut saw_hooks
                    };
                    if std::mem::replace(seen, true) {
                        return Err(meta.error(format!("duplicate `{key}` option: give it once")));
                    }
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let paths = Punctuated::<Path, Token![,]>::parse_terminated(&content)?;
                    let list = if key == "tools" {
                        &mut attr.tools
                    } else {
                        &mut attr.hooks
                    };
                    list.extend(paths);
                    Ok(())
                }
                "context" => {
                    let ty = parse_context_type(&meta)?;
                    set(&meta, &mut attr.context, "context", ty)
                }
                "output" => {
                    let what = "`output` takes the final answer's type, for example `output = Invoice` (a type deriving `Serialize`, `Deserialize` and `JsonSchema`)";
                    let ty = parse_type_value(&meta, what)?;
                    set(&meta, &mut attr.output, "output", ty)
                }
                "output_retries" => {
                    let what = "`output_retries` takes a whole number from 0, for example `output_retries = 2`";
                    let (lit, _) = int_option::<usize>(&meta, what, what)?;
                    set(&meta, &mut attr.output_retries, "output_retries", lit)
                }
                "handoffs" | "subagents" => {
                    let seen = if key == "handoffs" {
                        &mut saw_handoffs
                    } else {
                        &mut saw_subagents
                    };
                    if std::mem::replace(seen, true) {
                        return Err(meta.error(format!("duplicate `{key}` option: give it once")));
                    }
                    attr.declares_targets = true;
                    let names = parse_target_names(cx, &meta, &key)?;
                    let list = if key == "handoffs" {
                        &mut attr.handoffs
                    } else {
                        &mut attr.subagents
                    };
                    list.extend(names);
                    Ok(())
                }
                "crate" => {
                    let path = parse_crate_value(&meta)?;
                    set(&meta, &mut attr.crate_path, "crate", path)
                }
                _ => Err(meta.error(unknown_option("agent", &key, OPTIONS))),
            }
        });
        if let Err(error) = parser.parse2(args) {
            cx.syn_error(error);
        }
        if let (Some(first), Some(output)) = (
            attr.stop_at_tools.as_ref().and_then(|names| names.first()),
            &attr.output,
        ) {
            cx.error_spanned_by(
                first,
                format!(
                    "`stop_at_tools` makes a tool's result the answer, but the agent answers with `output = {}`: drop one of them",
                    quote::ToTokens::to_token_stream(output)
                ),
            );
        }
        if let (Some(retries), None) = (&attr.output_retries, &attr.output) {
            cx.error_spanned_by(
                retries,
                "`output_retries` needs an output type: add `output = T`",
            );
        }
        attr
    }
}

/// The value of `context = T`: a type path (the type `agent_core::run_context::<T>()` reads).
fn parse_context_type(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Type> {
    let what = "`context` takes the run context's type, for example `context = User` (the type every turn gives with `TurnRequest::context`)";
    parse_type_value(meta, what)
}

/// The value of an option that takes a type path; `what` says what it takes.
fn parse_type_value(meta: &syn::meta::ParseNestedMeta<'_>, what: &str) -> syn::Result<Type> {
    let value = meta.value()?;
    let error = |span| syn::Error::new(span, what);
    if value.peek(syn::Lit) {
        let lit: syn::Lit = value.parse()?;
        return Err(error(lit.span()));
    }
    let ty: Type = value.parse().map_err(|e| error(e.span()))?;
    match &ty {
        Type::Path(path) if path.qself.is_none() => Ok(ty),
        other => Err(syn::Error::new_spanned(other, what)),
    }
}

/// The names in `handoffs(...)` or `subagents(...)`: Rust identifiers (each is a field of the
/// generated targets struct), at least one.
fn parse_target_names(
    cx: &Ctxt,
    meta: &syn::meta::ParseNestedMeta<'_>,
    key: &str,
) -> syn::Result<Vec<Ident>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let names = Punctuated::<Ident, Token![,]>::parse_terminated(&content).map_err(|error| {
        syn::Error::new(
            error.span(),
            format!("`{key}` lists names, each a Rust identifier (a field of the targets struct the agent is built with), for example `{key}(billing, tech)`"),
        )
    })?;
    if names.is_empty() {
        // Reported without ending the parse: the agent still gets its targets struct and
        // `builder_with`, so code building it reports nothing more.
        cx.error_spanned_by(
            &meta.path,
            format!("`{key}()` is empty: name each agent, for example `{key}(billing)`, or leave `{key}` out"),
        );
    }
    Ok(names.into_iter().collect())
}

/// Everything `#[agent]` found.
pub(crate) struct AgentModel {
    pub(crate) attr: AgentAttr,
    pub(crate) self_ty: Type,
    pub(crate) description: Option<Doc>,
    pub(crate) tools: Vec<ToolFn>,
    pub(crate) hooks: Vec<HookFn>,
}

/// Collects `#[tool]` and `#[hook]` methods, removing those attributes from the impl block.
pub(crate) fn collect(cx: &Ctxt, attr: AgentAttr, item: &mut ItemImpl) -> AgentModel {
    if let Some((trait_path, _)) = &item.trait_ {
        let self_ty = &item.self_ty;
        cx.error_spanned_by(
            trait_path,
            format!(
                "`#[agent]` goes on the agent's own impl block, not a trait impl: move it to `impl {} {{ ... }}` holding the agent's tools and hooks",
                quote::quote!(#self_ty).to_string().replace(' ', "")
            ),
        );
    }
    if !item.generics.params.is_empty() {
        cx.error_spanned_by(
            &item.generics,
            "`#[agent]` does not support generic impl blocks: put it on an impl of a concrete type, holding what varies in a field (a `Box<dyn Trait>` or an enum)",
        );
    }
    let description = doc_text(&item.attrs);
    let mut tools = Vec::new();
    let mut hooks = Vec::new();
    let mut reported_other_path = false;
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let krate = attr.crate_path.as_ref();
        let is = |a: &syn::Attribute, name: &str, kind: AttrKind| attr_kind(a, name, krate) == kind;
        let tool_attrs: Vec<_> = method
            .attrs
            .iter()
            .filter(|a| is(a, "tool", AttrKind::Ours))
            .cloned()
            .collect();
        let hook_attrs: Vec<_> = method
            .attrs
            .iter()
            .filter(|a| is(a, "hook", AttrKind::Ours))
            .cloned()
            .collect();
        // One mistake (a renamed crate without `crate =`), one error: on the first attribute.
        for other in method
            .attrs
            .iter()
            .filter(|a| is(a, "tool", AttrKind::OtherPath) || is(a, "hook", AttrKind::OtherPath))
            .take(usize::from(!reported_other_path))
        {
            reported_other_path = true;
            let path = other.path();
            let mut prefix = path.clone();
            prefix.segments.pop();
            prefix.segments.pop_punct();
            let prefix = quote::quote!(#prefix).to_string().replace(' ', "");
            let path = quote::quote!(#path).to_string().replace(' ', "");
            let name = other
                .path()
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let hint = match krate {
                Some(krate) => {
                    let krate = quote::quote!(#krate).to_string().replace(' ', "");
                    format!(
                        "write `#[{krate}::{name}]` or `#[{name}]`, as this agent's `crate = {krate}` says"
                    )
                }
                None => format!(
                    "add `crate = {prefix}` to `#[agent(...)]` if `{prefix}` is agent-core under another name"
                ),
            };
            cx.error_spanned_by(
                other.path(),
                format!("`#[agent]` does not recognise `#[{path}]` as its tool or hook attribute: {hint}"),
            );
        }
        method.attrs.retain(|a| {
            !["tool", "hook"]
                .iter()
                .any(|name| attr_kind(a, name, krate) != AttrKind::No)
        });
        if !tool_attrs.is_empty() || !hook_attrs.is_empty() {
            report_cfg(cx, &mut method.attrs, !tool_attrs.is_empty());
        }
        if tool_attrs.len() + hook_attrs.len() > 1 {
            cx.error_spanned_by(
                &method.sig.ident,
                "a method is either one `#[tool]` or one `#[hook]`, not several",
            );
            continue;
        }
        if let Some(tool_attr) = tool_attrs.first() {
            let args = attr_args(cx, tool_attr);
            let parsed = ToolAttr::parse(cx, args);
            tools.push(parse_tool(
                cx,
                parsed,
                krate,
                attr.context.as_ref(),
                &method.attrs,
                &method.vis,
                &mut method.sig,
            ));
        }
        if let Some(hook_attr) = hook_attrs.first() {
            let args = attr_args(cx, hook_attr);
            let parsed = HookAttr::parse(cx, args, syn::spanned::Spanned::span(hook_attr));
            if let Some(hook) = parse_hook(
                cx,
                parsed,
                krate,
                attr.context.as_ref(),
                attr.output.as_ref(),
                &method.sig,
            ) {
                hooks.push(hook);
            }
        }
    }
    AgentModel {
        attr,
        self_ty: (*item.self_ty).clone(),
        description,
        tools,
        hooks,
    }
}

/// `#[cfg]` on a tool or hook method: `#[agent]` registers the method whatever the
/// configuration, so where the `cfg` is off the registration would name a method that is gone.
/// One error on each `cfg`, which is removed so that nothing else fails.
fn report_cfg(cx: &Ctxt, attrs: &mut Vec<syn::Attribute>, is_tool: bool) {
    let hint = if is_tool {
        "make the tool a free `#[tool]` function under `#[cfg]` and add it with `builder.tool(...)` under the same `#[cfg]`"
    } else {
        "make the hook a free `#[hook]` function under `#[cfg]` and add it with `builder.hooks(...)` under the same `#[cfg]`"
    };
    attrs.retain(|attr| {
        if !attr.path().is_ident("cfg") {
            return true;
        }
        cx.error_spanned_by(
            attr,
            format!(
                "`#[cfg]` cannot go on a {} method of `#[agent]`, which registers it in every configuration: {hint}",
                if is_tool { "tool" } else { "hook" }
            ),
        );
        false
    });
}

/// The tokens inside `#[tool(...)]`, or none for `#[tool]`.
fn attr_args(cx: &Ctxt, attr: &syn::Attribute) -> TokenStream {
    match &attr.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(list) => list.tokens.clone(),
        syn::Meta::NameValue(nv) => {
            cx.error_spanned_by(nv, "expected `#[tool]` or `#[tool(...)]`");
            TokenStream::new()
        }
    }
}
