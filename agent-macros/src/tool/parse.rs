//! Parsing a tool function into a [`ToolFn`]: its name, description, parameters and output.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, Ident, LitInt, LitStr, Pat, Path, ReturnType, Signature, Type, Visibility,
};

use crate::common::{
    ContextParam, Doc, check_tool_name, context_param, doc_text, generic_args, int_option,
    is_helper_type, last_ident, parse_crate_value, pascal_case, unknown_option,
    wrong_context_message,
};
use crate::ctxt::Ctxt;

/// The options of `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolAttr {
    pub(crate) name: Option<LitStr>,
    /// `timeout_ms = N`: the tool's own call timeout (`Tool::TIMEOUT`).
    pub(crate) timeout_ms: Option<LitInt>,
    /// The span of `timeout_ms`, where a plain `fn`'s is reported.
    pub(crate) timeout_span: Option<Span>,
    /// `needs_approval` or `needs_approval = predicate`: calls wait for a person's approval
    /// (`Tool::needs_approval`).
    pub(crate) needs_approval: Option<Approval>,
    /// `idempotent`: running a call twice does no more than once (`Tool::IDEMPOTENT`).
    pub(crate) idempotent: Option<Span>,
    /// `retries = N`: the tool's own retry limit (`Tool::RETRIES`).
    pub(crate) retries: Option<LitInt>,
    pub(crate) crate_path: Option<Path>,
}

/// When a tool's calls wait for approval.
pub(crate) enum Approval {
    /// Every call (`needs_approval`).
    Always,
    /// When this function of the arguments says so (`needs_approval = path`).
    When(Path),
}

/// Every `#[tool]` option, for "did you mean" and "expected one of" messages.
const OPTIONS: &[&str] = &[
    "name",
    "timeout_ms",
    "needs_approval",
    "idempotent",
    "retries",
    "crate",
];

impl ToolAttr {
    pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> ToolAttr {
        let mut attr = ToolAttr::default();
        let parser = syn::meta::parser(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let duplicate = |meta: &syn::meta::ParseNestedMeta<'_>| {
                Err(meta.error(format!("duplicate `{key}` option: give it once")))
            };
            match key.as_str() {
                "name" => {
                    if attr.name.is_some() {
                        return duplicate(&meta);
                    }
                    attr.name = Some(meta.value()?.parse()?);
                }
                "timeout_ms" => {
                    if attr.timeout_ms.is_some() {
                        return duplicate(&meta);
                    }
                    let (lit, ms) = int_option::<u64>(
                        &meta,
                        "`timeout_ms` takes a whole number of milliseconds, for example `timeout_ms = 5000`",
                        &format!(
                            "`timeout_ms` takes a whole number of milliseconds from 1 to {}, for example `timeout_ms = 5000`",
                            u64::MAX
                        ),
                    )?;
                    if ms == 0 {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`timeout_ms` must be at least 1 (leave it out to use the agent's tool timeout)",
                        ));
                    }
                    attr.timeout_ms = Some(lit);
                    attr.timeout_span = Some(meta.path.span());
                }
                "needs_approval" => {
                    if attr.needs_approval.is_some() {
                        return duplicate(&meta);
                    }
                    attr.needs_approval = Some(
                        if meta.input.is_empty() || meta.input.peek(syn::Token![,]) {
                            Approval::Always
                        } else {
                            let value = meta.value()?;
                            let path: Path = value.parse().map_err(|error| {
                            syn::Error::new(
                                error.span(),
                                "`needs_approval` takes no value (every call waits for approval) or the path of a function `fn(&Args) -> bool` deciding per call, for example `needs_approval = is_large`",
                            )
                        })?;
                            Approval::When(path)
                        },
                    );
                }
                "idempotent" => {
                    if attr.idempotent.is_some() {
                        return duplicate(&meta);
                    }
                    if meta.input.peek(syn::Token![=]) {
                        let value: syn::Expr = meta.value()?.parse()?;
                        return Err(syn::Error::new_spanned(
                            value,
                            "`idempotent` takes no value: write `#[tool(idempotent)]`",
                        ));
                    }
                    attr.idempotent = Some(meta.path.span());
                }
                "retries" => {
                    if attr.retries.is_some() {
                        return duplicate(&meta);
                    }
                    let (lit, _) = int_option::<usize>(
                        &meta,
                        "`retries` takes a whole number of failed calls the model may follow with another, for example `retries = 2`",
                        "`retries` takes a whole number from 0 up, for example `retries = 2`",
                    )?;
                    attr.retries = Some(lit);
                }
                "crate" => {
                    if attr.crate_path.is_some() {
                        return duplicate(&meta);
                    }
                    attr.crate_path = Some(parse_crate_value(&meta)?);
                }
                _ => return Err(meta.error(unknown_option("tool", &key, OPTIONS))),
            }
            Ok(())
        });
        if let Err(error) = parser.parse2(args) {
            cx.syn_error(error);
        }
        attr
    }
}

/// A parsed tool.
pub(crate) struct ToolFn {
    pub(crate) attr: ToolAttr,
    pub(crate) vis: Visibility,
    /// The function's name.
    pub(crate) ident: Ident,
    /// The tool's name, as the model calls it.
    pub(crate) name: String,
    pub(crate) name_span: Span,
    pub(crate) description: Doc,
    pub(crate) is_async: bool,
    pub(crate) has_receiver: bool,
    /// The arguments, in declaration order.
    pub(crate) params: Vec<ToolParam>,
    /// The function's parameters in order.
    pub(crate) call_order: Vec<Slot>,
    pub(crate) output: Output,
}

/// What the tool function receives in one parameter.
pub(crate) enum Slot {
    /// The argument `params[index]`, from the model's JSON.
    Arg(usize),
    /// The call's `ToolContext`.
    ToolContext,
    /// The agent's run context, borrowed: `T` of `#[agent(context = T)]`, and the parameter's
    /// type (where a mismatch between the two is reported).
    RunContext(Box<Type>, Box<Type>),
}

pub(crate) struct ToolParam {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) docs: Vec<Attribute>,
    pub(crate) default: Option<syn::Expr>,
}

/// The error type of a tool returning `Result<T, E>`, which must be `Display` (the model reads
/// a failed call's error as text).
pub(crate) enum ErrorType {
    /// `E`, as written: where an error type without `Display` is reported.
    Written(Box<Type>),
    /// A `Result` alias without the error type (`io::Result<T>`): reported on `Result`.
    Implied(Span),
}

/// What the function returns.
pub(crate) enum Output {
    /// No return type.
    Unit,
    /// `-> T`.
    Plain(Type),
    /// `-> Result<T, E>` (any path ending in `Result` with a type argument).
    Fallible(Type, ErrorType),
    /// `-> ToolStream<P, T>` or `-> Result<ToolStream<P, T>, E>`: preliminary results of type
    /// `progress`, then the final value of type `output`.
    Stream {
        progress: Box<Type>,
        output: Box<Type>,
        /// For `Result<ToolStream<P, T>, E>`: the error type.
        fallible: Option<ErrorType>,
    },
    /// `ToolStream` without its two type arguments: rustc reports that on the return type, so
    /// the tool's impls are stubs that add nothing to its one error.
    MalformedStream,
}

impl ToolFn {
    /// The generated tool type's name (`read_file` -> `ReadFile`).
    pub(crate) fn type_ident(&self) -> Ident {
        Ident::new(&pascal_case(&self.ident.to_string()), self.ident.span())
    }

    /// The module a free tool's types are generated in (`read_file` -> `read_file_tool`).
    pub(crate) fn module_ident(&self) -> Ident {
        Ident::new(
            &format!("{}_tool", self.ident.to_string().trim_start_matches("r#")),
            self.ident.span(),
        )
    }

    /// The generated args type's name (`ReadFileArgs`).
    pub(crate) fn args_ident(&self) -> Ident {
        Ident::new(
            &format!("{}Args", pascal_case(&self.ident.to_string())),
            self.ident.span(),
        )
    }
}

/// Parses a tool function's signature; strips the parameter attributes it consumes from `sig`.
/// Always returns a tool (what could not be parsed is left out and reported in `cx`), so the
/// tool's types are generated, as stubs, even after an error.
pub(crate) fn parse_tool(
    cx: &Ctxt,
    attr: ToolAttr,
    krate: Option<&Path>,
    context: Option<&Type>,
    attrs: &[Attribute],
    vis: &Visibility,
    sig: &mut Signature,
) -> ToolFn {
    let (name, name_span) = match &attr.name {
        Some(lit) => (lit.value(), lit.span()),
        None => (
            sig.ident.to_string().trim_start_matches("r#").to_owned(),
            sig.ident.span(),
        ),
    };
    check_tool_name(cx, &name, name_span);
    let description = doc_text(attrs).unwrap_or_else(|| {
        cx.error_spanned_by(
            &sig.ident,
            format!("tool `{name}` has no description: add a `///` doc comment saying what it does (the model reads it)"),
        );
        Doc::Text(String::new())
    });
    if !crate::common::lifetimes_only(&sig.generics) {
        cx.error_spanned_by(
            &sig.generics,
            "a tool function cannot be generic: its arguments must have one JSON Schema",
        );
    }
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        cx.error_spanned_by(
            unsafety,
            "a tool function cannot be `unsafe`: the engine calls it with whatever arguments the model sends; make it safe, with an `unsafe` block inside it for the unsafe code",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool function cannot be variadic");
    }
    if let Some(receiver) = sig.receiver()
        && !crate::common::is_shared_receiver(receiver)
    {
        cx.error_spanned_by(
            receiver,
            "a tool method takes `&self` (agents are shared between concurrent calls)",
        );
    }

    let mut params = Vec::new();
    let mut call_order = Vec::new();
    for input in sig.inputs.iter_mut() {
        let FnArg::Typed(typed) = input else { continue };
        let docs: Vec<Attribute> = typed
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect();
        let mut default = None;
        for arg_attr in typed.attrs.iter().filter(|a| a.path().is_ident("arg")) {
            let result = arg_attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("default") {
                    if default.is_some() {
                        return Err(meta.error("duplicate `default` option"));
                    }
                    if !meta.input.peek(syn::Token![=]) {
                        return Err(meta.error(
                            "`default` takes the parameter's default value: `#[arg(default = EXPR)]`",
                        ));
                    }
                    default = Some(meta.value()?.parse::<syn::Expr>()?);
                    Ok(())
                } else {
                    Err(meta.error("unknown `#[arg]` option; expected `default`"))
                }
            });
            if let Err(error) = result {
                cx.syn_error(error);
            }
        }
        typed
            .attrs
            .retain(|a| !a.path().is_ident("doc") && !a.path().is_ident("arg"));
        // A parameter the engine passes is no argument of the model's: a default would be
        // ignored.
        let no_default = |what: &str| {
            if let Some(default) = &default {
                cx.error_spanned_by(
                    default,
                    format!("a {what} parameter takes no `#[arg(default = ...)]`: the engine passes it, the model never sends it; remove the attribute"),
                );
            }
        };
        if is_helper_type(&typed.ty, "ToolContext", krate) {
            no_default("`ToolContext`");
            if call_order
                .iter()
                .any(|slot| matches!(slot, Slot::ToolContext))
            {
                cx.error_spanned_by(
                    &typed.ty,
                    "a tool takes at most one `ToolContext` parameter",
                );
            }
            call_order.push(Slot::ToolContext);
            continue;
        }
        match context_param(&typed.ty, context) {
            ContextParam::Context => {
                no_default("run context");
                if let Some(declared) = context {
                    call_order.push(Slot::RunContext(
                        Box::new(declared.clone()),
                        typed.ty.clone(),
                    ));
                }
                continue;
            }
            ContextParam::WrongType(written) => {
                if let Some(declared) = context {
                    cx.error_spanned_by(written, wrong_context_message(declared, written));
                }
                continue;
            }
            ContextParam::No => {}
        }
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                cx.error_spanned_by(
                    other,
                    "a tool parameter must be a plain name: it becomes a field of the arguments",
                );
                continue;
            }
        };
        if let Type::Reference(reference) = &*typed.ty {
            cx.error_spanned_by(
                reference,
                "a tool parameter must be an owned type (the model's JSON is deserialized into it): use `String` for `&str`",
            );
            continue;
        }
        if let Type::ImplTrait(impl_trait) = &*typed.ty {
            cx.error_spanned_by(
                impl_trait,
                "a tool parameter needs a concrete type (it gets a JSON Schema)",
            );
            continue;
        }
        call_order.push(Slot::Arg(params.len()));
        params.push(ToolParam {
            ident,
            ty: (*typed.ty).clone(),
            docs,
            default,
        });
    }

    let output = match &sig.output {
        ReturnType::Default => Output::Unit,
        ReturnType::Type(_, ty) => {
            if let Type::ImplTrait(impl_trait) = &**ty {
                cx.error_spanned_by(
                    impl_trait,
                    "a tool must return a concrete type that implements `Serialize`, or a `ToolStream<P, T>` (wrap a stream in `ToolStream::new`)",
                );
                Output::Unit
            } else {
                let result = last_ident(ty).filter(|ident| *ident == "Result");
                let args = generic_args(ty);
                let ok = args.first().copied().filter(|_| result.is_some());
                let error = || match (args.get(1), result) {
                    // The error type is named beside the function, outside any impl block:
                    // one naming `Self` is left to inference.
                    (Some(error), _) if crate::common::mentions_self(error) => {
                        ErrorType::Implied(error.span())
                    }
                    (Some(error), _) => ErrorType::Written(Box::new((*error).clone())),
                    (None, Some(result)) => ErrorType::Implied(result.span()),
                    (None, None) => ErrorType::Implied(ty.span()),
                };
                match ok {
                    Some(ok) if is_helper_type(ok, "ToolStream", krate) => {
                        stream_output(ok, Some(error()))
                    }
                    Some(ok) => Output::Fallible(ok.clone(), error()),
                    None if is_helper_type(ty, "ToolStream", krate) => stream_output(ty, None),
                    None => Output::Plain((**ty).clone()),
                }
            }
        }
    };

    // A plain `fn` runs inline, on the spot, where nothing can stop it; a stream it returns
    // is polled as the call runs, and can be.
    if let (Some(span), None, false) = (
        attr.timeout_span,
        &sig.asyncness,
        matches!(output, Output::Stream { .. } | Output::MalformedStream),
    ) {
        cx.error_at(
            span,
            "`timeout_ms` applies to async tools: a plain `fn` runs inline and cannot be stopped; make it an `async fn`, or remove `timeout_ms`",
        );
    }

    if !crate::common::lifetimes_only(&sig.generics) {
        // The parameters' types may name the generics, which the args struct does not have
        // (parameters are owned, so they name no lifetime).
        params.clear();
        call_order.clear();
    }
    ToolFn {
        vis: vis.clone(),
        ident: sig.ident.clone(),
        name,
        name_span,
        description,
        is_async: sig.asyncness.is_some(),
        has_receiver: sig.receiver().is_some(),
        params,
        call_order,
        output,
        attr,
    }
}

/// The output of a tool returning `ty`, a `ToolStream`.
fn stream_output(ty: &Type, fallible: Option<ErrorType>) -> Output {
    match generic_args(ty)[..] {
        [progress, output] => Output::Stream {
            progress: Box::new(progress.clone()),
            output: Box::new(output.clone()),
            fallible,
        },
        _ => Output::MalformedStream,
    }
}
