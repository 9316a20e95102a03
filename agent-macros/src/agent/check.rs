//! Rules across the agent's items: unique tool names and type names, matchers resolved against the tool set,
//! and which hook input enums to generate.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Ident, Path};

use super::parse::AgentModel;
use crate::common::{
    closest, crate_path, generic_args, is_json_value, last_ident, pascal_case, snake_case,
};
use crate::ctxt::Ctxt;
use crate::hook::{HookFn, MatcherSpec};

/// A tool the agent knows at compile time.
pub(crate) struct StaticTool {
    pub(crate) name: String,
    /// The tool type (`ReadFile`, or `files::ReadFile` for a tool listed in `tools(...)`).
    pub(crate) ty: TokenStream,
    /// The args struct (`files_tools::ReadFileArgs`, or `files::read_file_tool::ReadFileArgs`
    /// for a tool listed in `tools(...)`): generated enums hold it by this path, not as
    /// `<ty as Tool>::Args`, so that after an error (when the tool is a stub whose `Args` is
    /// JSON) a hook matching on the enum still reads the struct's fields.
    pub(crate) args: TokenStream,
    /// The enum variant naming it in generated input enums.
    pub(crate) variant: Ident,
    /// The args type's name, when the agent generates it.
    pub(crate) args_ident: Option<Ident>,
    /// For tools listed in `tools(...)`: the path written there.
    pub(crate) external: Option<Path>,
    /// The tool type's visibility (generated enums holding it get no more than this).
    pub(crate) vis: syn::Visibility,
}

/// What the agent does with one hook.
pub(crate) struct HookPlan {
    /// The static tools the matcher resolved to (tool events only).
    pub(crate) matched: Vec<usize>,
    /// Index into `Plan::enums` when this hook's input is a generated enum.
    pub(crate) generated_enum: Option<usize>,
}

/// An input enum to generate: one variant per matched tool.
pub(crate) struct EnumDef {
    pub(crate) ident: Ident,
    pub(crate) tools: Vec<usize>,
}

pub(crate) struct Plan {
    pub(crate) krate: TokenStream,
    /// The module the agent's own tools are generated in (`FileAgent` -> `file_agent_tools`).
    pub(crate) module: Ident,
    pub(crate) tools: Vec<StaticTool>,
    pub(crate) hooks: Vec<HookPlan>,
    pub(crate) enums: Vec<EnumDef>,
    /// The enum of all the agent's tool inputs (`<Agent>Input`).
    pub(crate) all_enum: Option<Ident>,
    /// The module of the agent's targets struct (`Triage` -> `triage_targets`), when it
    /// declares handoffs or subagents.
    pub(crate) targets_module: Option<Ident>,
}

/// Two tools of one agent share neither a name nor a generated type name (`v1_2` and `v12` are
/// both `V12`): each later one is reported and left out of the model, so that nothing generated
/// for it collides with the earlier one's and the error is the only one.
pub(crate) fn drop_colliding_tools(cx: &Ctxt, model: &mut AgentModel) {
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut keep = |name: String, ty: String, span: Span| {
        let message = if seen.iter().any(|(earlier, _)| *earlier == name) {
            format!("duplicate tool name `{name}`: every tool of an agent needs its own name")
        } else if let Some((earlier, _)) = seen.iter().find(|(_, earlier)| *earlier == ty) {
            format!(
                "tools `{earlier}` and `{name}` both generate the type name `{ty}`: rename one of the two functions"
            )
        } else {
            seen.push((name, ty));
            return true;
        };
        cx.error_at(span, message);
        false
    };
    model.tools.retain(|tool| {
        keep(
            tool.name.clone(),
            tool.type_ident().to_string(),
            tool.name_span,
        )
    });
    model.attr.tools.retain(|path| {
        let Some(last) = path.segments.last() else {
            return true;
        };
        let name = last.ident.to_string();
        let ty = pascal_case(&name);
        keep(name, ty, last.ident.span())
    });
}

pub(crate) fn check(cx: &Ctxt, model: &AgentModel) -> Plan {
    let krate = crate_path(model.attr.crate_path.as_ref());
    let module = tools_module(&model.self_ty);
    let mut tools: Vec<StaticTool> = Vec::new();
    for tool in &model.tools {
        tools.push(StaticTool {
            name: tool.name.clone(),
            ty: {
                let ty = tool.type_ident();
                quote!(#module::#ty)
            },
            args: {
                let args = tool.args_ident();
                quote!(#module::#args)
            },
            variant: tool.type_ident(),
            args_ident: Some(tool.args_ident()),
            external: None,
            vis: tool.vis.clone(),
        });
    }
    for path in &model.attr.tools {
        let Some(last) = path.segments.last() else {
            continue;
        };
        let name = last.ident.to_string();
        let variant = format_ident!("{}", pascal_case(&name), span = last.ident.span());
        // `tools(files::read_file)` -> `files::read_file_tool::ReadFile`.
        let mut ty_path = path.clone();
        if let Some(segment) = ty_path.segments.last_mut() {
            segment.ident = format_ident!("{}_tool", name, span = last.ident.span());
        }
        let mut args_path = ty_path.clone();
        ty_path
            .segments
            .push(syn::PathSegment::from(variant.clone()));
        args_path
            .segments
            .push(syn::PathSegment::from(format_ident!(
                "{}Args",
                variant,
                span = last.ident.span()
            )));
        tools.push(StaticTool {
            name,
            ty: quote!(#ty_path),
            args: quote!(#args_path),
            variant,
            args_ident: None,
            external: Some(path.clone()),
            vis: syn::parse_quote!(pub),
        });
    }
    check_target_names(cx, &model.attr.handoffs, &model.attr.subagents);
    for name in model.attr.stop_at_tools.iter().flatten() {
        let value = name.value();
        if !tools.iter().any(|tool| tool.name == value) {
            let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
            cx.error_spanned_by(
                name,
                format!(
                    "`stop_at_tools`: `{value}` is none of the agent's tools ({}){}",
                    names.join(", "),
                    unknown_name_hint(&value, &tools)
                ),
            );
        }
    }
    let targets_module = model
        .attr
        .declares_targets
        .then(|| agent_module(&model.self_ty, "targets"));

    let all_enum = (!tools.is_empty())
        .then(|| last_ident(&model.self_ty).map(|ident| format_ident!("{}Input", ident)))
        .flatten();
    let mut enums: Vec<EnumDef> = Vec::new();
    let hooks = model
        .hooks
        .iter()
        .map(|hook| plan_hook(cx, hook, &tools, all_enum.as_ref(), &mut enums))
        .collect();
    Plan {
        krate,
        module,
        tools,
        hooks,
        enums,
        all_enum,
        targets_module,
    }
}

/// Handoff and subagent names are fields of one struct: each name once, across both lists.
fn check_target_names(cx: &Ctxt, handoffs: &[Ident], subagents: &[Ident]) {
    let all: Vec<(&Ident, &str)> = handoffs
        .iter()
        .map(|name| (name, "handoffs"))
        .chain(subagents.iter().map(|name| (name, "subagents")))
        .collect();
    for (index, (name, list)) in all.iter().enumerate() {
        if let Some((_, earlier)) = all[..index].iter().find(|(other, _)| other == name) {
            let place = if earlier == list {
                format!("`{list}`")
            } else {
                format!("`{earlier}` and `{list}`")
            };
            cx.error_spanned_by(
                name,
                format!(
                    "duplicate target name `{name}` in {place}: each handoff and subagent is a field of the agent's targets struct, so give each its own name"
                ),
            );
        }
    }
}

/// The module of an agent's generated tool types: `FileAgent` -> `file_agent_tools`.
pub(crate) fn tools_module(self_ty: &syn::Type) -> Ident {
    agent_module(self_ty, "tools")
}

/// A module of an agent's generated items: `FileAgent`, `tools` -> `file_agent_tools`.
fn agent_module(self_ty: &syn::Type, suffix: &str) -> Ident {
    match last_ident(self_ty) {
        Some(ident) => format_ident!(
            "{}_{suffix}",
            snake_case(&ident.to_string()),
            span = ident.span()
        ),
        None => format_ident!("agent_{suffix}"),
    }
}

/// `AgentBuilder::build`'s sentence for a matcher that matches none of the agent's tools.
fn matches_none(hook: &str, matcher: &str, tools: &[&str]) -> String {
    let tools = if tools.is_empty() {
        "it has none".to_owned()
    } else {
        tools.join(", ")
    };
    format!(
        "hook `{hook}`: `{matcher}` matches none of the agent's tools ({tools}); add `dynamic` if tools are added at run time"
    )
}

/// A matcher as the user wrote it: `match = "^rm_"`, or `every tool` for none.
fn describe(spec: Option<&MatcherSpec>) -> String {
    match spec {
        None => "every tool".to_owned(),
        Some(MatcherSpec::Tool(lit)) => format!("tool = \"{}\"", lit.value()),
        Some(MatcherSpec::Tools(lits)) => {
            let values: Vec<String> = lits.iter().map(syn::LitStr::value).collect();
            format!("tools = {values:?}")
        }
        Some(MatcherSpec::Match(lit, _)) => format!("match = \"{}\"", lit.value()),
    }
}

/// What to do about a tool name the agent does not have: name a renamed tool by its name, not
/// its function's, fix a misspelling, or list a `#[tool]` function defined elsewhere in
/// `tools(...)`.
fn unknown_name_hint(name: &str, tools: &[StaticTool]) -> String {
    let renamed = tools
        .iter()
        .find(|tool| tool.variant == pascal_case(name) && tool.name != name);
    if let Some(tool) = renamed {
        return format!(
            "; `{name}` is the function of the tool `{}`: name the tool as the model calls it, `{}`",
            tool.name, tool.name
        );
    }
    match closest(name, tools.iter().map(|tool| tool.name.as_str())) {
        Some(best) => format!("; did you mean `{best}`?"),
        None if syn::parse_str::<Ident>(name).is_ok() => {
            format!("; if `{name}` is a `#[tool]` function, list it in `#[agent(tools({name}))]`")
        }
        None => String::new(),
    }
}

fn plan_hook(
    cx: &Ctxt,
    hook: &HookFn,
    tools: &[StaticTool],
    all_enum: Option<&Ident>,
    enums: &mut Vec<EnumDef>,
) -> HookPlan {
    let mut plan = HookPlan {
        matched: Vec::new(),
        generated_enum: None,
    };
    if !hook.event.tool {
        return plan;
    }
    let dynamic = hook.attr.dynamic;
    let position = |name: &str| tools.iter().position(|t| t.name == name);
    let spec = hook.attr.matcher.as_ref().map(|(spec, _)| spec);
    plan.matched = match spec {
        None => (0..tools.len()).collect(),
        Some(MatcherSpec::Tool(lit)) => position(&lit.value()).into_iter().collect(),
        Some(MatcherSpec::Tools(lits)) => lits
            .iter()
            .filter_map(|lit| position(&lit.value()))
            .collect(),
        Some(MatcherSpec::Match(_, regex)) => (0..tools.len())
            .filter(|&i| regex.is_match(&tools[i].name))
            .collect(),
    };
    if !dynamic {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let hook_name = hook.ident.to_string();
        // The sentences are `AgentBuilder::build`'s, word for word (a test compares them), so a
        // matcher reads the same whether the macro or the builder finds it; the macro adds what
        // to do about a name it does not know.
        let unknown = |lit: &syn::LitStr| position(&lit.value()).is_none();
        if plan.matched.is_empty() {
            let ident = &hook.ident;
            // Spanned on the first name the agent does not have, the regex, or the hook's name.
            let (span_tokens, first_unknown) = match spec {
                None => (quote!(#ident), None),
                Some(MatcherSpec::Tool(lit)) => (quote!(#lit), Some(lit)),
                Some(MatcherSpec::Tools(lits)) => {
                    let first = lits.first();
                    (quote!(#first), first)
                }
                Some(MatcherSpec::Match(lit, _)) => (quote!(#lit), None),
            };
            let message = format!(
                "{}{}",
                matches_none(&hook_name, &describe(spec), &names),
                first_unknown
                    .map(|lit| unknown_name_hint(&lit.value(), tools))
                    .unwrap_or_default()
            );
            cx.error_spanned_by(span_tokens, message);
        } else if let Some(MatcherSpec::Tools(lits)) = spec {
            for lit in lits.iter().filter(|lit| unknown(lit)) {
                cx.error_spanned_by(
                    lit,
                    format!(
                        "hook `{hook_name}`: no tool named `{}` (tools: {}){}",
                        lit.value(),
                        names.join(", "),
                        unknown_name_hint(&lit.value(), tools)
                    ),
                );
            }
        }
    }

    let Some(input) = &hook.input_ty else {
        return plan;
    };
    if dynamic && plan.matched.is_empty() && !is_json_value(input) {
        // Typed hooks never see a tool added at run time (its input is JSON), so a typed
        // dynamic hook that matches no static tool could never fire.
        let matcher = describe(spec);
        cx.error_spanned_by(
            input,
            format!(
                "hook `{}`: `{matcher}` matches none of the agent's static tools, so it only sees tools added at run time, whose input is JSON: take `serde_json::Value` here",
                hook.ident
            ),
        );
        return plan;
    }
    if plan.matched.len() >= 2
        && !is_json_value(input)
        && generic_args(input).is_empty()
        && let syn::Type::Path(path) = input
        && let Some(ident) = path.path.get_ident()
        && all_enum != Some(ident)
        && !tools.iter().any(|t| t.args_ident.as_ref() == Some(ident))
    {
        match enums.iter().position(|e| e.ident == *ident) {
            Some(existing) if enums[existing].tools == plan.matched => plan.generated_enum = Some(existing),
            Some(_) => cx.error_spanned_by(
                input,
                format!("`{ident}` is already generated for another set of tools; give this hook's input enum its own name"),
            ),
            None => {
                enums.push(EnumDef { ident: ident.clone(), tools: plan.matched.clone() });
                plan.generated_enum = Some(enums.len() - 1);
            }
        }
    }
    if let Some(output) = &hook.output_ty
        && !is_json_value(output)
        && plan.matched.len() > 1
    {
        cx.error_spanned_by(
            output,
            format!(
                "this hook matches several tools ({}): it receives their outputs as `serde_json::Value`",
                plan.matched.iter().map(|&i| format!("`{}`", tools[i].name)).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    plan
}
